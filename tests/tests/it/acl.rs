//! Plain ACL on the broker (`aclEnable=true`): requests signed by the
//! client SDK as Java's AclClientRPCHook signs them. The right key sends and
//! reads; a wrong secret, an unknown key, a DENY topic, a non-admin
//! administration request and an unsigned request are each refused with
//! NO_PERMISSION and nothing is written; a request with any one byte
//! changed after signing is refused; the file reloads without a restart.

use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, RemotingClient, SendCode};
use rmq_common::acl::Credentials;
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode};

const TIMEOUT: Duration = Duration::from_secs(10);
const NO_PERMISSION: i32 = 16;

const FILE: &str = "
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - Allowed=PUB|SUB
      - Denied=DENY
  - accessKey: rocketmq2
    secretKey: 87654321
    admin: true
  - accessKey: outside1
    secretKey: outsideSecret
    whiteRemoteAddress: 10.10.103.*
    defaultTopicPerm: PUB
  - accessKey: inside01
    secretKey: insideSecret
    whiteRemoteAddress: 127.0.0.1
";

pub(crate) async fn start(root: &Path, backend: CqBackend) -> Broker {
    let file = root.join("plain_acl.yml");
    std::fs::write(&file, FILE).unwrap();
    let mut s = rmq_tests::broker_settings(&root.join("store"), backend);
    s.broker.acl_enable = true;
    s.broker.acl_file = file.to_string_lossy().into_owned();
    s.broker.acl_reload_interval_ms = 100;
    // It registers with its own (embedded) NameServer, which takes only
    // an admin account's signed registrations.
    s.broker.inner_client_authentication_credentials =
        r#"{"accessKey":"rocketmq2","secretKey":"87654321"}"#.into();
    Broker::start(s).await.unwrap()
}

pub(crate) async fn client(b: &Broker, ak: &str, sk: &str) -> RemotingClient {
    sdk::connect(b.addr())
        .await
        .unwrap()
        .with_credentials(Credentials::new(ak, sk))
}

pub(crate) fn create_topic(topic: &str) -> RemotingCommand {
    sdk::request(
        RequestCode::UpdateAndCreateTopic,
        &[
            ("topic", topic.into()),
            ("readQueueNums", "1".into()),
            ("writeQueueNums", "1".into()),
        ],
    )
}

fn msg() -> OutMessage {
    OutMessage {
        body: b"acl".to_vec(),
        tags: None,
        keys: vec![],
        properties: vec![],
    }
}

/// The send's response code (an SDK refusal carries it in its text).
pub(crate) async fn send_code(c: &RemotingClient, topic: &str) -> i32 {
    match sdk::send(c, SendCode::V2, "p", topic, 0, &[msg()]).await {
        Ok(r) => r.code,
        Err(sdk::SdkError::Refused { code, .. }) => code,
        Err(e) => panic!("{e}"),
    }
}

async fn checks(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), backend).await;
    let store = std::sync::Arc::clone(&b.context().store);
    let admin = client(&b, "rocketmq2", "87654321").await;
    for t in ["Allowed", "Denied"] {
        let r = admin.invoke(create_topic(t), TIMEOUT).await.unwrap();
        assert_eq!(r.code, 0, "{:?}", r.remark);
    }
    let user = client(&b, "RocketMQ", "12345678").await;
    assert_eq!(send_code(&user, "Allowed").await, 0);
    let end = store.max_phy_offset();

    // Each refused with NO_PERMISSION naming code and account; nothing stored.
    let wrong = client(&b, "RocketMQ", "12345679").await;
    let unknown = client(&b, "Nobody99", "12345678").await;
    let plain = sdk::connect(b.addr()).await.unwrap();
    for (who, c, topic, says) in [
        ("wrong secret", &wrong, "Allowed", "signature"),
        ("unknown key", &unknown, "Allowed", "no account"),
        ("DENY topic", &user, "Denied", "topic Denied"),
        ("not listed (default DENY)", &user, "Other", "by default"),
        ("unsigned", &plain, "Allowed", "unsigned"),
    ] {
        let r = sdk::send(c, SendCode::V2, "p", topic, 0, &[msg()]).await;
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains(&NO_PERMISSION.to_string()) && e.contains(says),
            "{who}: {e}"
        );
        assert!(
            !e.contains("12345678") && !e.contains("87654321"),
            "{who}: a secret in {e}"
        );
    }
    let r = user.invoke(create_topic("ByUser"), TIMEOUT).await.unwrap();
    assert_eq!(r.code, NO_PERMISSION);
    assert!(r.remark.unwrap_or_default().contains("admin"));
    assert!(b.context().topics.get("ByUser").is_none(), "not created");
    // Unsigned reads are refused too.
    for req in [
        sdk::request(
            RequestCode::GetMaxOffset,
            &[("topic", "Allowed".into()), ("queueId", "0".into())],
        ),
        sdk::request(RequestCode::GetAllTopicConfig, &[]),
        sdk::request(
            RequestCode::QueryConsumerOffset,
            &[
                ("consumerGroup", "g".into()),
                ("topic", "Allowed".into()),
                ("queueId", "0".into()),
            ],
        ),
    ] {
        let code = req.code;
        let r = plain.invoke(req, TIMEOUT).await.unwrap();
        assert_eq!(r.code, NO_PERMISSION, "unsigned code {code}");
    }
    assert_eq!(
        store.max_phy_offset(),
        end,
        "nothing written by a refused request"
    );

    // The signed user reads what it may.
    let pulled = sdk::pull(
        &user,
        &sdk::PullRequest {
            group: "g".into(),
            topic: "Allowed".into(),
            queue_id: 0,
            offset: 0,
            max_msgs: 8,
            subscription: Some("*".into()),
            suspend: None,
            commit_offset: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(pulled.messages.len(), 1);

    // Reload: an account added works within seconds, one removed stops.
    let file = dir.path().join("plain_acl.yml");
    let text = FILE.replace(
        "  - accessKey: RocketMQ\n",
        "  - accessKey: Newcomer\n    secretKey: newSecret1\n    defaultTopicPerm: PUB\n  - accessKey: RocketMQ-gone\n",
    );
    std::fs::write(&file, text).unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(2);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let newcomer = client(&b, "Newcomer", "newSecret1").await;
    let deadline = Instant::now() + TIMEOUT;
    while send_code(&newcomer, "Allowed").await != 0 {
        assert!(
            Instant::now() < deadline,
            "the added account works within {TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(send_code(&user, "Allowed").await, NO_PERMISSION, "removed");
    b.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_checks_every_request_file() {
    checks(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_checks_every_request_rocksdb() {
    checks(CqBackend::Rocksdb).await;
}

/// A signed send with one byte changed after signing (in any field's value,
/// the signature or the body) is refused, and nothing is stored.
#[test]
fn a_signed_request_with_one_byte_changed_is_refused() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (b, c) = rt.block_on(async {
        let b = start(dir.path(), CqBackend::File).await;
        let admin = client(&b, "rocketmq2", "87654321").await;
        assert_eq!(
            admin
                .invoke(create_topic("Allowed"), TIMEOUT)
                .await
                .unwrap()
                .code,
            0
        );
        let c = sdk::connect(b.addr()).await.unwrap();
        (b, c)
    });
    let creds = Credentials::new("RocketMQ", "12345678");
    let signed = || {
        let mut req = sdk::request(
            RequestCode::SendMessageV2,
            &[
                ("a", "p".into()),
                ("b", "Allowed".into()),
                ("c", "TBW102".into()),
                ("d", "4".into()),
                ("e", "0".into()),
                ("f", "0".into()),
                ("g", "1700000000000".into()),
                ("h", "0".into()),
                ("i", "".into()),
                ("j", "0".into()),
                ("k", "false".into()),
            ],
        );
        req.body = Some(bytes::Bytes::from_static(b"a body of bytes"));
        creds.sign(&mut req.ext_fields, req.body.as_deref());
        req
    };
    // The unchanged request is taken.
    let r = rt.block_on(c.invoke(signed(), TIMEOUT)).unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let end = b.context().store.max_phy_offset();
    let fields: Vec<String> = signed().ext_fields.keys().cloned().collect();
    proptest!(ProptestConfig::with_cases(64), |(which in 0..fields.len() + 1, at in any::<prop::sample::Index>(), bit in 0u8..7)| {
        let mut req = signed();
        if which == fields.len() {
            let mut body = req.body.as_deref().unwrap_or_default().to_vec();
            let i = at.index(body.len());
            body[i] ^= 1 << bit;
            req.body = Some(body.into());
        } else {
            let v = req.ext_fields.get_mut(&fields[which]).unwrap();
            if v.is_empty() {
                v.push('x');
            } else {
                // An ASCII byte stays ASCII with one of its low 7 bits flipped.
                let mut raw = v.clone().into_bytes();
                let i = at.index(raw.len());
                raw[i] ^= 1 << bit;
                prop_assume!(raw[i] != 0);
                *v = String::from_utf8(raw).unwrap();
            }
        }
        let r = rt.block_on(c.invoke(req, TIMEOUT)).unwrap();
        prop_assert_eq!(r.code, NO_PERMISSION, "{:?}", r.remark);
    });
    assert_eq!(b.context().store.max_phy_offset(), end, "nothing stored");
    rt.block_on(b.shutdown());
}

/// The stock Java client 4.9.8 with `AclClientRPCHook` (scenario `acl` of
/// `tests/java`): the user account sends and consumes; a wrong secret, an
/// unknown key, a DENY topic and a non-admin topic create are each refused
/// with NO_PERMISSION.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_signs_and_is_checked_file() {
    java_client_signs_and_is_checked(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_signs_and_is_checked_rocksdb() {
    java_client_signs_and_is_checked(CqBackend::Rocksdb).await;
}

async fn java_client_signs_and_is_checked(backend: CqBackend) {
    use rmq_tests::java::{self, Client};
    java::require_java_and_jars(Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), backend).await;
    let ns = b.namesrv_addr().unwrap().to_string();
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    let args: Vec<String> = [
        "--namesrv",
        &ns,
        "--scenario",
        "acl",
        "--topic-prefix",
        "Acl",
        "--admin-key",
        "rocketmq2",
        "--admin-secret",
        "87654321",
        "--user-key",
        "RocketMQ",
        "--user-secret",
        "12345678",
        "--outside-key",
        "outside1",
        "--inside-key",
        "inside01",
        "--timeout-ms",
        "90000",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let r = java::run_main(
        Client::V4,
        "rmqcheck.ClientSuite",
        &args,
        &home,
        Duration::from_secs(120),
    )
    .await;
    assert!(r.succeeded(), "{}", r.report("java acl"));
    assert!(
        r.stdout.lines().any(|l| l.starts_with("PASS acl")),
        "{}",
        r.report("java acl printed no PASS line")
    );
    assert!(b.context().topics.get("ByUser").is_none());
    b.shutdown().await;
}

/// The ACL administration codes edit the file and the change is in force at
/// once: an account created (50) signs at once, shows in the config (54)
/// and the version (52), the global white list (53) lets unsigned requests
/// in and out again, a deleted account (51) stops; a non-admin is refused
/// every one of them, and bad input gets RocketMQ's failure codes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_administration_codes_change_the_file_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let b = start(dir.path(), CqBackend::File).await;
    let admin = client(&b, "rocketmq2", "87654321").await;
    assert_eq!(
        admin
            .invoke(create_topic("Allowed"), TIMEOUT)
            .await
            .unwrap()
            .code,
        0
    );
    let user = client(&b, "RocketMQ", "12345678").await;
    let create = |ak: &str, perms: &str| {
        sdk::request(
            RequestCode::UpdateAndCreateAclConfig,
            &[
                ("accessKey", ak.into()),
                ("secretKey", "created99".into()),
                ("defaultTopicPerm", "PUB".into()),
                ("topicPerms", perms.into()),
                ("admin", "false".into()),
            ],
        )
    };
    let r = user.invoke(create("Created1", ""), TIMEOUT).await.unwrap();
    assert_eq!(r.code, NO_PERMISSION, "a non-admin cannot edit the ACL");
    let r = admin
        .invoke(create("Created1", "Allowed=PUB|SUB"), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let created = client(&b, "Created1", "created99").await;
    assert_eq!(send_code(&created, "Allowed").await, 0, "in force at once");
    let r = admin
        .invoke(create("Created2", "Allowed=ALL"), TIMEOUT)
        .await
        .unwrap();
    assert_eq!(r.code, 209, "{:?}", r.remark);

    let config = admin
        .invoke(
            sdk::request(RequestCode::GetBrokerClusterAclConfig, &[]),
            TIMEOUT,
        )
        .await
        .unwrap();
    let body: serde_json::Value =
        serde_json::from_slice(config.body.as_deref().unwrap_or_default()).unwrap();
    let keys: Vec<&str> = body["plainAccessConfigs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["accessKey"].as_str())
        .collect();
    assert!(
        keys.contains(&"Created1") && keys.contains(&"RocketMQ"),
        "{body}"
    );
    let info = admin
        .invoke(
            sdk::request(RequestCode::GetBrokerClusterAclInfo, &[]),
            TIMEOUT,
        )
        .await
        .unwrap();
    let version: serde_json::Value =
        serde_json::from_str(info.ext_fields.get("version").unwrap()).unwrap();
    assert_eq!(version["counter"], 1, "{:?}", info.ext_fields);

    let plain = sdk::connect(b.addr()).await.unwrap();
    let white = |addrs: &str| {
        sdk::request(
            RequestCode::UpdateGlobalWhiteAddrsConfig,
            &[("globalWhiteAddrs", addrs.into())],
        )
    };
    assert_eq!(
        admin
            .invoke(white("127.0.0.1"), TIMEOUT)
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(send_code(&plain, "Allowed").await, 0, "white-listed");
    assert_eq!(
        admin.invoke(white("127.0.0"), TIMEOUT).await.unwrap().code,
        211
    );
    assert_eq!(admin.invoke(white(""), TIMEOUT).await.unwrap().code, 0);
    assert_eq!(send_code(&plain, "Allowed").await, NO_PERMISSION);

    let delete = || {
        sdk::request(
            RequestCode::DeleteAclConfig,
            &[("accessKey", "Created1".into())],
        )
    };
    assert_eq!(admin.invoke(delete(), TIMEOUT).await.unwrap().code, 0);
    assert_eq!(
        send_code(&created, "Allowed").await,
        NO_PERMISSION,
        "deleted"
    );
    assert_eq!(admin.invoke(delete(), TIMEOUT).await.unwrap().code, 210);
    // The file on disk is the one in force, with its version counted.
    let text = std::fs::read_to_string(dir.path().join("plain_acl.yml")).unwrap();
    assert!(
        text.contains("dataVersion") && !text.contains("Created1"),
        "{text}"
    );
    b.shutdown().await;
}

/// With ACL on, the NameServer takes broker registrations and its own
/// writes only when an admin account signed them (Java's NameServer checks
/// nothing); route lookups stay open. A broker turned to ACL as a 4.9 user
/// does it (`aclEnable=true` and a plain_acl.yml with an admin account, no
/// `innerClientAuthenticationCredentials`) signs with the file's admin
/// account and starts; a broker whose own file has no admin account is
/// refused by a NameServer with ACL, and the error names the key to set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namesrv_takes_writes_only_from_an_admin_account() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain_acl.yml");
    std::fs::write(&file, FILE).unwrap();
    let mut s = rmq_tests::broker_settings(&dir.path().join("default"), CqBackend::File);
    s.broker.acl_enable = true;
    s.broker.acl_file = file.to_string_lossy().into_owned();
    let default = Broker::start(s)
        .await
        .expect("a broker with aclEnable and an admin account in its file starts");
    default.shutdown().await;

    let b = start(dir.path(), CqBackend::File).await;
    let ns_addr = b.namesrv_addr().unwrap();

    let no_admin = dir.path().join("no_admin.yml");
    std::fs::write(
        &no_admin,
        "accounts:\n  - {accessKey: RocketMQ, secretKey: 12345678}\n",
    )
    .unwrap();
    let mut s = rmq_tests::broker_settings(&dir.path().join("unsigned"), CqBackend::File);
    s.broker.acl_enable = true;
    s.broker.acl_file = no_admin.to_string_lossy().into_owned();
    s.broker.namesrv_listen_port = -1;
    s.broker.namesrv_addr = ns_addr.to_string();
    let e = match Broker::start(s).await {
        Ok(_) => panic!("an unsigned registration was taken"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("16") && e.contains("unsigned"), "{e}");
    assert!(e.contains("innerClientAuthenticationCredentials"), "{e}");

    let admin = client(&b, "rocketmq2", "87654321").await;
    let r = admin.invoke(create_topic("Routed"), TIMEOUT).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let plain = sdk::connect(ns_addr).await.unwrap();
    let route = || {
        sdk::request(
            RequestCode::GetRouteInfoByTopic,
            &[("topic", "Routed".into())],
        )
    };
    let unregister = || {
        sdk::request(
            RequestCode::UnregisterBroker,
            &[
                (
                    "brokerName",
                    b.context().settings.broker.broker_name.clone(),
                ),
                ("brokerAddr", b.addr().to_string()),
                (
                    "clusterName",
                    b.context().settings.broker.broker_cluster_name.clone(),
                ),
                ("brokerId", "0".into()),
            ],
        )
    };
    let kv = || {
        sdk::request(
            RequestCode::PutKvConfig,
            &[
                ("namespace", "ORDER_TOPIC_CONFIG".into()),
                ("key", "Routed".into()),
                ("value", "broker-a:4".into()),
            ],
        )
    };
    let get_kv = || {
        sdk::request(
            RequestCode::GetKvConfig,
            &[
                ("namespace", "ORDER_TOPIC_CONFIG".into()),
                ("key", "Routed".into()),
            ],
        )
    };
    // Routes are registered (the broker signed) and readable unsigned.
    let deadline = Instant::now() + TIMEOUT;
    while plain.invoke(route(), TIMEOUT).await.unwrap().code != 0 {
        assert!(Instant::now() < deadline, "route of Routed never appeared");
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let user = sdk::connect(ns_addr)
        .await
        .unwrap()
        .with_credentials(Credentials::new("RocketMQ", "12345678"));
    let wrong = sdk::connect(ns_addr)
        .await
        .unwrap()
        .with_credentials(Credentials::new("rocketmq2", "87654320"));
    for (who, c, says) in [
        ("unsigned", &plain, "unsigned"),
        ("not admin", &user, "admin"),
        ("wrong secret", &wrong, "signature"),
    ] {
        for (what, req) in [("unregister", unregister()), ("kv put", kv())] {
            let r = c.invoke(req, TIMEOUT).await.unwrap();
            let remark = r.remark.unwrap_or_default();
            assert_eq!(r.code, NO_PERMISSION, "{who} {what}: {remark}");
            assert!(remark.contains(says), "{who} {what}: {remark}");
        }
    }
    // Nothing changed: the route is there, the KV key is not.
    assert_eq!(plain.invoke(route(), TIMEOUT).await.unwrap().code, 0);
    assert_ne!(plain.invoke(get_kv(), TIMEOUT).await.unwrap().code, 0);
    let ns_admin = sdk::connect(ns_addr)
        .await
        .unwrap()
        .with_credentials(Credentials::new("rocketmq2", "87654321"));
    assert_eq!(ns_admin.invoke(kv(), TIMEOUT).await.unwrap().code, 0);
    let got = plain.invoke(get_kv(), TIMEOUT).await.unwrap();
    assert_eq!(
        got.ext_fields.get("value").map(String::as_str),
        Some("broker-a:4")
    );
    b.shutdown().await;
}
