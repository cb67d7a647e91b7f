//! TLS on the broker's, the NameServer's and the HA port (`tlsMode`):
//! enforcing takes TLS clients only and closes a plain one; permissive takes
//! both on one port (told apart by the first byte); a client certificate is
//! checked against a CA when required; a slave follows its master over TLS;
//! the stock Java client with `-Dtls.enable=true` sends and consumes, and a
//! plain Java client works on a permissive port. Certificates are made by
//! the test (a CA, a server certificate for 127.0.0.1, a client one).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, SanType,
};
use rmq_broker::broker::Broker;
use rmq_broker::ha::BrokerRole;
use rmq_client::{self as sdk, Connector, OutMessage, SendCode, TlsClient, TlsClientOptions};
use rmq_common::config::CqBackend;
use rmq_common::remoting::RequestCode;

const TIMEOUT: Duration = Duration::from_secs(10);

/// A CA and what it signed, as PEM files in a folder.
pub(crate) struct Pki {
    dir: PathBuf,
}

impl Pki {
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

fn ca(name: &str) -> (Certificate, KeyPair) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    (cert, key)
}

fn issue(
    ca: &(Certificate, KeyPair),
    usage: ExtendedKeyUsagePurpose,
    dir: &Path,
    name: &str,
) -> (PathBuf, PathBuf) {
    let mut p = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    p.subject_alt_names
        .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    p.distinguished_name.push(DnType::CommonName, name);
    p.extended_key_usages = vec![usage];
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &ca.0, &ca.1).unwrap();
    let (c, k) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k)
}

/// ca.pem, server.pem/.key (127.0.0.1), client.pem/.key, and other-ca.pem
/// (a CA that signed nothing here).
pub(crate) fn pki(dir: &Path) -> Pki {
    let root = ca("rmq test CA");
    std::fs::write(dir.join("ca.pem"), root.0.pem()).unwrap();
    issue(&root, ExtendedKeyUsagePurpose::ServerAuth, dir, "server");
    issue(&root, ExtendedKeyUsagePurpose::ClientAuth, dir, "client");
    std::fs::write(dir.join("other-ca.pem"), ca("another CA").0.pem()).unwrap();
    Pki {
        dir: dir.to_path_buf(),
    }
}

pub(crate) fn settings(root: &Path, pki: &Pki, mode: &str) -> rmq_broker::config::Settings {
    let mut s = rmq_tests::broker_settings(root, CqBackend::File);
    s.broker.tls_mode = mode.into();
    s.broker.tls_server_cert_path = pki.file("server.pem").to_string_lossy().into_owned();
    s.broker.tls_server_key_path = pki.file("server.key").to_string_lossy().into_owned();
    s
}

fn tls_client(pki: &Pki, ca: &str, with_cert: bool) -> TlsClient {
    TlsClient::new(&TlsClientOptions {
        trust_cert_path: Some(pki.file(ca)),
        cert_path: with_cert.then(|| pki.file("client.pem")),
        key_path: with_cert.then(|| pki.file("client.key")),
    })
    .unwrap()
}

fn msg(i: usize) -> OutMessage {
    OutMessage {
        body: format!("tls-{i}").into_bytes(),
        tags: None,
        keys: vec![format!("k{i}")],
        properties: vec![],
    }
}

/// Creates `topic`, sends one message, pulls it back and reads its route
/// at the NameServer, all through `conn`.
async fn round_trip(conn: &Connector, b: &Broker, topic: &str) -> Result<(), String> {
    let c = conn.connect(b.addr()).await.map_err(|e| e.to_string())?;
    let create = sdk::request(
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic.into()),
            ("readQueueNums", "1".into()),
            ("writeQueueNums", "1".into()),
        ],
    );
    sdk::call(&c, create).await.map_err(|e| e.to_string())?;
    let sent = sdk::send(&c, SendCode::V2, "p", topic, 0, &[msg(0)])
        .await
        .map_err(|e| e.to_string())?;
    if sent.code != 0 {
        return Err(format!("send answered {}", sent.code));
    }
    let pulled = sdk::pull(
        &c,
        &sdk::PullRequest {
            group: "g".into(),
            topic: topic.into(),
            queue_id: 0,
            offset: 0,
            max_msgs: 8,
            subscription: Some("*".into()),
            // Held until the message is dispatched.
            suspend: Some(Duration::from_secs(5)),
            commit_offset: None,
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    if pulled.messages.len() != 1 || pulled.messages[0].body != b"tls-0" {
        return Err(format!("pulled {} messages", pulled.messages.len()));
    }
    let ns = conn
        .connect(b.namesrv_addr().unwrap())
        .await
        .map_err(|e| e.to_string())?;
    let route = sdk::request(RequestCode::GetRouteInfoByTopic, &[("topic", topic.into())]);
    // The broker registers the new topic right after creating it.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let r = ns
            .invoke(route.clone(), TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        if r.code == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("no route for {topic}: {:?}", r.remark));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcing_takes_tls_only() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    // Enforcing: the broker registers with its own NameServer over TLS.
    let b = Broker::start(settings(&dir.path().join("store"), &pki, "enforcing"))
        .await
        .unwrap();
    let tls = Connector::new().with_tls(Some(tls_client(&pki, "ca.pem", false)));
    round_trip(&tls, &b, "TlsOnly").await.unwrap();
    let end = b.context().store.max_phy_offset();

    // A plain client is closed on its first byte, on both ports.
    for addr in [b.addr(), b.namesrv_addr().unwrap()] {
        let plain = sdk::connect(addr).await.unwrap();
        let r = sdk::send(&plain, SendCode::V2, "p", "TlsOnly", 0, &[msg(1)]).await;
        assert!(r.is_err(), "a plain client was answered on {addr}");
    }
    // A client checking against another CA refuses the server.
    let wrong = Connector::new().with_tls(Some(tls_client(&pki, "other-ca.pem", false)));
    let e = wrong
        .connect(b.addr())
        .await
        .err()
        .expect("handshake refused");
    assert!(e.to_string().contains("TLS"), "{e}");
    assert_eq!(b.context().store.max_phy_offset(), end, "nothing stored");
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissive_takes_plain_and_tls_on_one_port() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let b = Broker::start(settings(&dir.path().join("store"), &pki, "permissive"))
        .await
        .unwrap();
    let tls = Connector::new().with_tls(Some(tls_client(&pki, "ca.pem", false)));
    round_trip(&tls, &b, "ViaTls").await.unwrap();
    round_trip(&Connector::new(), &b, "ViaPlain").await.unwrap();
    b.shutdown().await;

    // Disabled: a TLS client gets no handshake.
    let mut s = settings(&dir.path().join("plain"), &pki, "disabled");
    s.broker.tls_mode = "disabled".into();
    let b = Broker::start(s).await.unwrap();
    assert!(tls.connect(b.addr()).await.is_err());
    round_trip(&Connector::new(), &b, "Plain").await.unwrap();
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_client_certificate_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut s = settings(&dir.path().join("store"), &pki, "enforcing");
    s.broker.tls_server_need_client_auth = "require".into();
    s.broker.tls_server_auth_client = true;
    s.broker.tls_server_trust_cert_path = pki.file("ca.pem").to_string_lossy().into_owned();
    // The broker's own connections show the client certificate.
    s.broker.tls_client_cert_path = pki.file("client.pem").to_string_lossy().into_owned();
    s.broker.tls_client_key_path = pki.file("client.key").to_string_lossy().into_owned();
    let b = Broker::start(s).await.unwrap();
    let with = Connector::new().with_tls(Some(tls_client(&pki, "ca.pem", true)));
    round_trip(&with, &b, "Mutual").await.unwrap();
    // Without a certificate: refused in the handshake or at the first
    // request (TLS 1.3 clients learn of it only when they read).
    let without = Connector::new().with_tls(Some(tls_client(&pki, "ca.pem", false)));
    let refused = match without.connect(b.addr()).await {
        Err(_) => true,
        Ok(c) => sdk::send(&c, SendCode::V2, "p", "Mutual", 0, &[msg(1)])
            .await
            .is_err(),
    };
    assert!(refused, "a client without a certificate was answered");
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tls_settings_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut s = settings(&dir.path().join("a"), &pki, "enforcing");
    s.broker.tls_server_need_client_auth = "require".into();
    let e = s.broker.validate().unwrap_err().to_string();
    assert!(e.contains("tlsServerNeedClientAuth"), "{e}");
    let pairs = [("tlsMode".to_owned(), "strict".to_owned())];
    let e = rmq_broker::config::Settings::from_pairs(pairs)
        .unwrap_err()
        .to_string();
    assert!(e.contains("tlsMode") && e.contains("strict"), "{e}");
    let mut s = settings(&dir.path().join("b"), &pki, "enforcing");
    s.broker.tls_server_key_path = pki.file("missing.key").to_string_lossy().into_owned();
    let e = match Broker::start(s).await {
        Ok(_) => panic!("started without its key"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("missing.key"), "{e}");
    // RocketMQ's TLS property names are names of the same keys.
    let conf = dir.path().join("broker.conf");
    std::fs::write(
        &conf,
        "tls.server.mode=permissive\ntls.server.need.client.auth=none\ntls.test.mode.enable=false\n",
    )
    .unwrap();
    let loaded = rmq_broker::config::Settings::load(&rmq_broker::config::Sources {
        file: Some(&conf),
        env: vec![],
        overrides: vec!["tls.server.certPath=/etc/x.pem".into()],
    })
    .unwrap();
    assert_eq!(loaded.broker.tls_mode, "permissive");
    assert!(!loaded.broker.tls_test_mode_enable);
    assert_eq!(loaded.broker.tls_server_cert_path, "/etc/x.pem");
    // RocketMQ's tls.properties keys, read from tlsConfigFile, override.
    let props = dir.path().join("tls.properties");
    std::fs::write(
        &props,
        format!(
            "# as RocketMQ reads it\ntls.server.mode=enforcing\ntls.server.certPath={}\ntls.server.keyPath={}\n",
            pki.file("server.pem").display(),
            pki.file("server.key").display()
        ),
    )
    .unwrap();
    let mut s = rmq_tests::broker_settings(&dir.path().join("c"), CqBackend::File);
    s.broker.tls_config_file = props.to_string_lossy().into_owned();
    let b = Broker::start(s).await.unwrap();
    let tls = Connector::new().with_tls(Some(tls_client(&pki, "ca.pem", false)));
    round_trip(&tls, &b, "FromProperties").await.unwrap();
    let plain = sdk::connect(b.addr()).await.unwrap();
    assert!(
        sdk::send(&plain, SendCode::V2, "p", "FromProperties", 0, &[msg(1)])
            .await
            .is_err()
    );
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_follows_its_master_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki(dir.path());
    let mut ms = settings(&dir.path().join("master"), &pki, "enforcing");
    ms.broker.broker_role = BrokerRole::SyncMaster;
    ms.broker.tls_client_auth_server = true;
    ms.broker.tls_client_trust_cert_path = pki.file("ca.pem").to_string_lossy().into_owned();
    let m = Broker::start(ms).await.unwrap();
    let mut ss = settings(&dir.path().join("slave"), &pki, "enforcing");
    ss.broker.broker_role = BrokerRole::Slave;
    ss.broker.broker_id = 1;
    ss.broker.namesrv_listen_port = -1;
    ss.broker.namesrv_addr = m.namesrv_addr().unwrap().to_string();
    ss.broker.tls_client_auth_server = true;
    ss.broker.tls_client_trust_cert_path = pki.file("ca.pem").to_string_lossy().into_owned();
    let s = Broker::start(ss).await.unwrap();
    let tls = Connector::new().with_tls(Some(tls_client(&pki, "ca.pem", false)));
    let c = tls.connect(m.addr()).await.unwrap();
    let create = sdk::request(
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", "HaTls".into()),
            ("readQueueNums", "1".into()),
            ("writeQueueNums", "1".into()),
        ],
    );
    sdk::call(&c, create).await.unwrap();
    // SYNC_MASTER: SEND_OK only once the slave acknowledged over TLS.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let r = sdk::send(&c, SendCode::V2, "p", "HaTls", 0, &[msg(7)])
            .await
            .unwrap();
        if r.code == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no SEND_OK from the sync master: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let end = m.context().store.max_phy_offset();
    assert!(s.context().store.max_phy_offset() >= end);
    s.shutdown().await;
    m.shutdown().await;
}

async fn java_send(ns: std::net::SocketAddr, home: &Path, jvm: &[&str], prefix: &str) {
    use rmq_tests::java::{self, Client};
    std::fs::create_dir_all(home).unwrap();
    let args: Vec<String> = [
        "--namesrv",
        &ns.to_string(),
        "--scenario",
        "send",
        "--topic-prefix",
        prefix,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let r = java::run_main_with(
        Client::V4,
        jvm,
        "rmqcheck.ClientSuite",
        &args,
        home,
        Duration::from_secs(120),
    )
    .await;
    let what = format!("java send {prefix} {jvm:?}");
    assert!(r.succeeded(), "{}", r.report(&what));
    assert!(
        r.stdout.lines().any(|l| l.starts_with("PASS send")),
        "{}",
        r.report(&format!("{what} printed no PASS line"))
    );
}

/// The stock Java client with TLS (`-Dtls.enable=true`; it takes any
/// server certificate, as by default) against an enforcing broker serving
/// a self-signed test certificate (`tlsTestModeEnable`); on a permissive
/// one, with and without TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_over_tls_file() {
    java_client_over_tls(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_over_tls_rocksdb() {
    java_client_over_tls(CqBackend::Rocksdb).await;
}

async fn java_client_over_tls(backend: CqBackend) {
    rmq_tests::java::require_java_and_jars(rmq_tests::java::Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let mut s = rmq_tests::broker_settings(&dir.path().join("enforcing"), backend);
    s.broker.tls_mode = "enforcing".into();
    let b = Broker::start(s).await.unwrap();
    let ns = b.namesrv_addr().unwrap();
    java_send(
        ns,
        &dir.path().join("java-tls"),
        &["-Dtls.enable=true"],
        "JavaTls",
    )
    .await;
    b.shutdown().await;

    let mut s = rmq_tests::broker_settings(&dir.path().join("permissive"), CqBackend::File);
    s.broker.tls_mode = "permissive".into();
    let b = Broker::start(s).await.unwrap();
    let ns = b.namesrv_addr().unwrap();
    java_send(
        ns,
        &dir.path().join("java-p-tls"),
        &["-Dtls.enable=true"],
        "JavaPTls",
    )
    .await;
    java_send(ns, &dir.path().join("java-p-plain"), &[], "JavaPPlain").await;
    b.shutdown().await;
}
