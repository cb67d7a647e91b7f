//! TLS towards a broker or NameServer, as RocketMQ's clients speak it
//! (`useTLS`, `-Dtls.enable=true`): the client opens TLS at once, with no
//! probing and no fallback to plain. Like RocketMQ's default
//! (`tls.client.authServer=false`) the server's certificate may be trusted
//! without a check; given a CA (`tls.client.trustCertPath`) it is checked
//! against it, and the server is named by the IP address dialled. A client
//! certificate (`tls.client.certPath` / `tls.client.keyPath`) is offered
//! when the server asks for one.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Why TLS settings cannot be used; names the file and the problem.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file cannot be read.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A file holds no usable PEM item of the kind wanted.
    #[error("{path}: {why}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// rustls refused the material (a key that does not match, ...).
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The crypto every TLS config here uses: ring. rustls 0.23.48 marks it
/// deprecated for lacking post-quantum key exchange, which RocketMQ's Java
/// clients (JDK TLS) do not offer either; aws-lc-rs would add a second
/// large C build to CI for nothing a RocketMQ client can use.
#[allow(deprecated)]
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate of a PEM file, in order.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let text = std::fs::read(path).map_err(|source| TlsError::File {
        path: path.to_owned(),
        source,
    })?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut text.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.to_owned(),
            why: format!("not PEM: {e}"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_owned(),
            why: "no CERTIFICATE in it".into(),
        });
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8 as RocketMQ wants it, or
/// PKCS#1 / SEC1), unencrypted.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let text = std::fs::read(path).map_err(|source| TlsError::File {
        path: path.to_owned(),
        source,
    })?;
    let pem = |why: String| TlsError::Pem {
        path: path.to_owned(),
        why,
    };
    if String::from_utf8_lossy(&text).contains("ENCRYPTED PRIVATE KEY") {
        return Err(pem(
            "an encrypted key: give it unencrypted (PKCS#8 PEM); keyPassword is not supported"
                .into(),
        ));
    }
    rustls_pemfile::private_key(&mut text.as_slice())
        .map_err(|e| pem(format!("not PEM: {e}")))?
        .ok_or_else(|| pem("no PRIVATE KEY in it".into()))
}

/// A CA bundle as trust roots.
pub fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path)? {
        roots.add(cert)?;
    }
    Ok(roots)
}

/// How a client checks the server and what it shows of itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsClientOptions {
    /// CA the server's certificate must chain to (`None`: any certificate
    /// is taken, as RocketMQ's `tls.client.authServer=false`).
    pub trust_cert_path: Option<PathBuf>,
    /// Certificate chain offered when the server asks for one.
    pub cert_path: Option<PathBuf>,
    /// Its private key.
    pub key_path: Option<PathBuf>,
}

/// The TLS side of client connections. Cheap to clone.
#[derive(Clone)]
pub struct TlsClient {
    connector: TlsConnector,
    checks_server: bool,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("checks_server", &self.checks_server)
            .finish_non_exhaustive()
    }
}

impl TlsClient {
    /// Built from `options`; the error names the file at fault.
    pub fn new(options: &TlsClientOptions) -> Result<Self, TlsError> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?;
        let builder = match &options.trust_cert_path {
            Some(ca) => builder.with_root_certificates(load_roots(ca)?),
            None => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyServer(provider))),
        };
        let config = match (&options.cert_path, &options.key_path) {
            (Some(cert), Some(key)) => {
                builder.with_client_auth_cert(load_certs(cert)?, load_key(key)?)?
            }
            (None, None) => builder.with_no_client_auth(),
            (Some(p), None) | (None, Some(p)) => {
                return Err(TlsError::Pem {
                    path: p.clone(),
                    why: "a client certificate needs both its cert and its key".into(),
                })
            }
        };
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            checks_server: options.trust_cert_path.is_some(),
        })
    }

    /// Trusts any server certificate (RocketMQ's default).
    pub fn trust_any() -> Result<Self, TlsError> {
        Self::new(&TlsClientOptions::default())
    }

    /// Runs the handshake over `tcp`, connected to `addr`.
    pub async fn handshake(
        &self,
        tcp: TcpStream,
        addr: SocketAddr,
    ) -> io::Result<TlsStream<TcpStream>> {
        self.connector
            .connect(ServerName::IpAddress(addr.ip().into()), tcp)
            .await
    }
}

/// Takes any server certificate, but still checks that the handshake is
/// signed by its key (what RocketMQ's insecure trust manager amounts to).
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
