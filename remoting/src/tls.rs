//! TLS on the broker's and the NameServer's ports, as RocketMQ offers it
//! (`tls.server.mode`, here `tlsMode`):
//! - `disabled`: plain only (a TLS hello is not a frame and is refused as
//!   one);
//! - `permissive`: plain and TLS on the same port, told apart by the first
//!   byte a client sends (0x16, a TLS handshake record, starts TLS; a plain
//!   frame starts with its length's high byte, 0x00);
//! - `enforcing`: TLS only; a plain client is closed at its first byte.
//!
//! The certificate and key come from `tlsServerCertPath` / `tlsServerKeyPath`
//! (PEM; RocketMQ wants PKCS#8); without them `tlsTestModeEnable` (on by
//! default, as RocketMQ's `tls.test.mode.enable`) serves a self-signed
//! certificate made at start. Client certificates are asked for with
//! `tlsServerNeedClientAuth` (none | optional | require) and checked
//! against `tlsServerTrustCertPath`. RocketMQ's `tls.properties` keys
//! (`tls.server.*`, `tls.client.*`, `tls.test.mode.enable`) name the same
//! settings in broker.conf; in the file `tlsConfigFile` names they
//! override the broker keys.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmq_client::tls::{load_certs, load_key, load_roots, provider, TlsClientOptions, TlsError};
use rmq_client::TlsClient;
use rmq_common::ConfigError;
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// The first byte of a TLS handshake record.
pub const HANDSHAKE_BYTE: u8 = 0x16;

/// Time a new connection has to send its first byte and, for TLS, to
/// finish the handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// `tlsMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain only.
    Disabled,
    /// Plain and TLS on one port.
    Permissive,
    /// TLS only.
    Enforcing,
}

impl TlsMode {
    /// Reads RocketMQ's names (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "disabled" => Some(Self::Disabled),
            "permissive" => Some(Self::Permissive),
            "enforcing" => Some(Self::Enforcing),
            _ => None,
        }
    }
}

/// Whether and how a client's certificate is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// Not asked for.
    None,
    /// Asked for; a client without one is still taken.
    Optional,
    /// A client without a valid one is refused.
    Require,
}

/// Every TLS setting of the broker, after `tlsConfigFile` was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The ports' mode.
    pub mode: TlsMode,
    /// Server certificate chain (PEM).
    pub cert_path: Option<PathBuf>,
    /// Its key (PEM, unencrypted).
    pub key_path: Option<PathBuf>,
    /// Client certificates.
    pub client_auth: ClientAuth,
    /// CA client certificates must chain to.
    pub trust_cert_path: Option<PathBuf>,
    /// Without a certificate, serve a self-signed one.
    pub test_mode: bool,
    /// The broker's own connections (NameServers, its master) use TLS.
    pub outbound: bool,
    /// How those connections check the server and show themselves.
    pub client: TlsClientOptions,
}

fn path(s: &str) -> Option<PathBuf> {
    let s = s.trim();
    (!s.is_empty()).then(|| PathBuf::from(s))
}

fn flag(key: &'static str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" | "" => Ok(false),
        _ => Err(ConfigError::new(key, format!("{v:?} is not true or false"))),
    }
}

impl TlsSettings {
    /// The settings the TLS keys name, as broker.conf spells them
    /// (`tlsMode`, `tlsServerCertPath`, ... each with its raw value), with
    /// the keys of `config_file` (`tlsConfigFile`, RocketMQ's names)
    /// applied over them; the error names the key at fault.
    pub fn from_keys(
        mut raw: Vec<(&'static str, String)>,
        config_file: &str,
    ) -> Result<Self, ConfigError> {
        if let Some(file) = path(config_file) {
            for (java, value) in read_tls_properties(&file)? {
                let Some(ours) = JAVA_KEYS.iter().find(|(j, _)| *j == java).map(|(_, o)| *o) else {
                    tracing::warn!(file = %file.display(), key = %java, "unknown TLS key ignored");
                    continue;
                };
                if let Some(slot) = raw.iter_mut().find(|(k, _)| *k == ours) {
                    slot.1 = value;
                }
            }
        }
        let get = |k: &str| {
            raw.iter()
                .find(|(key, _)| *key == k)
                .map_or("", |(_, v)| v.as_str())
        };
        let mode = TlsMode::parse(get("tlsMode")).ok_or_else(|| {
            ConfigError::new(
                "tlsMode",
                format!(
                    "{:?} is none of disabled, permissive, enforcing",
                    get("tlsMode")
                ),
            )
        })?;
        let client_auth = match get("tlsServerNeedClientAuth")
            .trim()
            .to_ascii_lowercase()
            .as_str()
        {
            "" | "none" => ClientAuth::None,
            "optional" => ClientAuth::Optional,
            "require" => ClientAuth::Require,
            other => {
                return Err(ConfigError::new(
                    "tlsServerNeedClientAuth",
                    format!("{other:?} is none of none, optional, require"),
                ))
            }
        };
        if !get("tlsServerKeyPassword").is_empty() {
            return Err(ConfigError::new(
                "tlsServerKeyPassword",
                "encrypted keys are not supported: give tlsServerKeyPath an unencrypted PKCS#8 key",
            ));
        }
        let auth_client = flag("tlsServerAuthClient", get("tlsServerAuthClient"))?;
        let trust_cert_path = path(get("tlsServerTrustCertPath"));
        if client_auth != ClientAuth::None && !(auth_client && trust_cert_path.is_some()) {
            return Err(ConfigError::new(
                "tlsServerNeedClientAuth",
                "client certificates are checked against a CA here: set tlsServerAuthClient=true and tlsServerTrustCertPath",
            ));
        }
        let auth_server = flag("tlsClientAuthServer", get("tlsClientAuthServer"))?;
        let client_trust = path(get("tlsClientTrustCertPath"));
        if auth_server && client_trust.is_none() {
            return Err(ConfigError::new(
                "tlsClientAuthServer",
                "checking the server needs tlsClientTrustCertPath",
            ));
        }
        Ok(Self {
            mode,
            cert_path: path(get("tlsServerCertPath")),
            key_path: path(get("tlsServerKeyPath")),
            client_auth,
            trust_cert_path,
            test_mode: flag("tlsTestModeEnable", get("tlsTestModeEnable"))?,
            outbound: flag("tlsEnable", get("tlsEnable"))? || mode == TlsMode::Enforcing,
            client: TlsClientOptions {
                trust_cert_path: client_trust.filter(|_| auth_server),
                cert_path: path(get("tlsClientCertPath")),
                key_path: path(get("tlsClientKeyPath")),
            },
        })
    }

    /// The TLS side of the broker's own connections, when `outbound`.
    pub fn client(&self) -> Result<Option<TlsClient>, TlsError> {
        self.outbound
            .then(|| TlsClient::new(&self.client))
            .transpose()
    }

    /// The server side of the ports (`None` when disabled); `names` are
    /// the addresses a self-signed test certificate is made for.
    pub fn server(&self, names: &[String]) -> Result<Option<Arc<TlsServer>>, TlsError> {
        if self.mode == TlsMode::Disabled {
            return Ok(None);
        }
        let provider = provider();
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?;
        let builder = match (&self.client_auth, &self.trust_cert_path) {
            (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
            (auth, Some(ca)) => {
                let roots = Arc::new(load_roots(ca)?);
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
                let verifier = if *auth == ClientAuth::Optional {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let verifier = verifier.build().map_err(|e| TlsError::Pem {
                    path: ca.clone(),
                    why: format!("not usable as client CA: {e}"),
                })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let (certs, key) = match (&self.cert_path, &self.key_path) {
            (Some(cert), Some(key)) => (load_certs(cert)?, load_key(key)?),
            (None, None) if self.test_mode => {
                tracing::warn!(
                    "TLS with a self-signed test certificate (tlsTestModeEnable; set tlsServerCertPath and tlsServerKeyPath for a real one): clients that check the server refuse it"
                );
                self_signed(names)?
            }
            (Some(p), None) | (None, Some(p)) => {
                return Err(TlsError::Pem {
                    path: p.clone(),
                    why: "tlsServerCertPath and tlsServerKeyPath go together".into(),
                })
            }
            (None, None) => {
                return Err(TlsError::Pem {
                    path: PathBuf::new(),
                    why: "tlsMode needs tlsServerCertPath and tlsServerKeyPath (or tlsTestModeEnable=true)".into(),
                })
            }
        };
        let config = builder.with_single_cert(certs, key)?;
        Ok(Some(Arc::new(TlsServer {
            mode: self.mode,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })))
    }
}

/// RocketMQ's tls.properties keys and the broker keys they set; also
/// taken as names of those keys in broker.conf, the environment and --set.
pub const JAVA_KEYS: &[(&str, &str)] = &[
    ("tls.server.mode", "tlsMode"),
    ("tls.server.certPath", "tlsServerCertPath"),
    ("tls.server.keyPath", "tlsServerKeyPath"),
    ("tls.server.keyPassword", "tlsServerKeyPassword"),
    ("tls.server.need.client.auth", "tlsServerNeedClientAuth"),
    ("tls.server.authClient", "tlsServerAuthClient"),
    ("tls.server.trustCertPath", "tlsServerTrustCertPath"),
    ("tls.test.mode.enable", "tlsTestModeEnable"),
    ("tls.enable", "tlsEnable"),
    ("tls.client.authServer", "tlsClientAuthServer"),
    ("tls.client.trustCertPath", "tlsClientTrustCertPath"),
    ("tls.client.certPath", "tlsClientCertPath"),
    ("tls.client.keyPath", "tlsClientKeyPath"),
];

/// A Java properties file's `key=value` (or `key: value`) lines.
fn read_tls_properties(file: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| ConfigError::new("tlsConfigFile", format!("{}: {e}", file.display())))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| {
            let at = l.find(['=', ':'])?;
            Some((l[..at].trim().to_owned(), l[at + 1..].trim().to_owned()))
        })
        .collect())
}

fn self_signed(
    names: &[String],
) -> Result<
    (
        Vec<rustls::pki_types::CertificateDer<'static>>,
        rustls::pki_types::PrivateKeyDer<'static>,
    ),
    TlsError,
> {
    let mut names = names.to_vec();
    names.push("localhost".into());
    let cert = rcgen::generate_simple_self_signed(names).map_err(|e| TlsError::Pem {
        path: PathBuf::new(),
        why: format!("self-signed test certificate: {e}"),
    })?;
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());
    Ok((vec![cert.cert.der().clone()], key.into()))
}

/// The TLS side of a listening port.
pub struct TlsServer {
    mode: TlsMode,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// What a new connection turned out to be.
pub enum Accepted {
    /// A plain client.
    Plain(TcpStream),
    /// A TLS client, handshake done.
    Tls(Box<TlsStream<TcpStream>>),
}

impl TlsServer {
    /// The mode.
    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// The same server offering `protocols` by ALPN (gRPC needs `h2`).
    pub fn with_alpn(&self, protocols: &[&[u8]]) -> Self {
        let mut config = ServerConfig::clone(self.acceptor.config());
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Self {
            mode: self.mode,
            acceptor: TlsAcceptor::from(Arc::new(config)),
        }
    }

    /// Looks at the first byte `peer` sends: TLS is started on a handshake
    /// record, a plain client goes on as it is (permissive) or is refused
    /// (enforcing). `Err` names why the connection is closed.
    pub async fn accept(&self, stream: TcpStream, peer: SocketAddr) -> Result<Accepted, String> {
        let mut first = [0u8; 1];
        let peeked = tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await;
        match peeked {
            Err(_) => return Err(format!("no byte within {HANDSHAKE_TIMEOUT:?}")),
            Ok(Err(e)) => return Err(e.to_string()),
            Ok(Ok(0)) => return Err("closed before sending anything".into()),
            Ok(Ok(_)) => {}
        }
        if first[0] != HANDSHAKE_BYTE {
            return match self.mode {
                TlsMode::Enforcing => Err(format!(
                    "a plain client on a TLS-only port (tlsMode=enforcing; first byte {:#04x})",
                    first[0]
                )),
                _ => Ok(Accepted::Plain(stream)),
            };
        }
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream)).await {
            Ok(Ok(tls)) => Ok(Accepted::Tls(Box::new(tls))),
            Ok(Err(e)) => Err(format!("TLS handshake failed: {e}")),
            Err(_) => Err(format!(
                "TLS handshake not done within {HANDSHAKE_TIMEOUT:?} ({peer})"
            )),
        }
    }
}
