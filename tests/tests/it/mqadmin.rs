//! mqadmin (org.apache.rocketmq:rocketmq-tools 4.9.8, `MQAdminStartup`)
//! against the broker, on both backends: every command an operator runs
//! daily, each checked by what it prints. mqadmin exits 0 even when a
//! command fails (it prints the exception), so the output is the verdict.
//!
//! Needs Java and the jars `scripts/setup.sh` fetches with Maven into
//! `tests/java/target/dependency`.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::RequestCode;
use rmq_tests::java::{self, Client, JavaRun};

/// Longest one mqadmin command may run (it waits 5 s per request at most).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest the routes may take to show a topic's creation or deletion.
const ROUTE_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) const ADMIN_MAIN: &str = "org.apache.rocketmq.tools.command.MQAdminStartup";

/// A minimal logback config: mqadmin refuses to run without
/// `$ROCKETMQ_HOME/conf/logback_tools.xml`.
pub(crate) const LOGBACK_TOOLS: &str = r#"<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d %-5level %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"#;

struct Admin {
    home: tempfile::TempDir,
    ns: SocketAddr,
}

impl Admin {
    fn new(ns: SocketAddr) -> Self {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("conf")).unwrap();
        std::fs::write(home.path().join("conf/logback_tools.xml"), LOGBACK_TOOLS).unwrap();
        Self { home, ns }
    }

    /// Runs `mqadmin <args> -n <ns>`; returns the run (stdout, stderr).
    async fn run(&self, args: &[&str]) -> JavaRun {
        let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        all.push("-n".into());
        all.push(self.ns.to_string());
        let home = self.home.path().to_path_buf();
        let run = java::run_main(Client::V4, ADMIN_MAIN, &all, &home, COMMAND_TIMEOUT).await;
        eprintln!(
            "$ mqadmin {} ({:?})\n{}{}",
            args.join(" "),
            run.elapsed,
            run.stdout,
            run.stderr
        );
        assert!(
            run.succeeded(),
            "{}",
            run.report(&format!("mqadmin {}", args.join(" ")))
        );
        run
    }

    /// Runs a command that must print `want` on stdout and no exception.
    async fn expect(&self, args: &[&str], want: &[&str]) -> JavaRun {
        let run = self.run(args).await;
        for w in want {
            assert!(
                run.stdout.contains(w) && !run.stderr.contains("Exception"),
                "mqadmin {} should print {w:?}\n{}",
                args.join(" "),
                run.report("mqadmin")
            );
        }
        run
    }
}

/// A UNIQ_KEY in the Java client's form (32 hex digits) whose time part is
/// 0, so mqadmin's search from "the id's time - 1 s" starts at the month's
/// start and finds a message stored now.
fn uniq_key(n: u8) -> String {
    format!("7F00000100AB0000AAAA00000000{n:04X}")
}

async fn heartbeat(client: &rmq_client::RemotingClient, body: serde_json::Value) {
    let req = sdk::request(RequestCode::HeartBeat, &[]).with_body(body.to_string().into_bytes());
    sdk::call(client, req).await.unwrap();
}

async fn wait_route(admin: &Admin, topic: &str, present: bool) {
    let start = Instant::now();
    loop {
        let run = admin.run(&["topicList"]).await;
        let listed = run.stdout.lines().any(|l| l.trim() == topic);
        if listed == present {
            return;
        }
        assert!(
            start.elapsed() < ROUTE_TIMEOUT,
            "topic {topic} should be listed: {present}\n{}",
            run.report("topicList")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn mqadmin_commands(backend: CqBackend) {
    java::require_java_and_jars(Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(rmq_tests::broker_settings(
        &dir.path().join("store"),
        backend,
    ))
    .await
    .unwrap();
    let ns = broker.namesrv_addr().expect("embedded NameServer");
    let addr = broker.addr().to_string();
    let admin = Admin::new(ns);
    let topic = format!("AdminTopic_{backend}");
    let group = format!("AdminGroup_{backend}");

    admin
        .expect(
            &[
                "updateTopic",
                "-b",
                &addr,
                "-t",
                &topic,
                "-r",
                "4",
                "-w",
                "4",
            ],
            &[
                &format!("create topic to {addr} success."),
                &format!(
                    "TopicConfig [topicName={topic}, readQueueNums=4, writeQueueNums=4, perm=RW-"
                ),
            ],
        )
        .await;
    wait_route(&admin, &topic, true).await;
    admin
        .expect(
            &["topicRoute", "-t", &topic],
            &["\"brokerName\":\"broker-a\"", "\"readQueueNums\":4", &addr],
        )
        .await;
    admin
        .expect(&["topicClusterList", "-t", &topic], &["DefaultCluster"])
        .await;

    // Ten messages, keys K0..K9, over the four queues; a producer and a
    // consumer heartbeat so the connection commands have someone to show.
    let client = sdk::connect(broker.addr()).await.unwrap();
    let mut sent = Vec::new();
    for i in 0..10u8 {
        let msg = OutMessage {
            body: format!("body-{i}").into_bytes(),
            tags: Some("TagA".into()),
            keys: vec![format!("K{i}")],
            properties: vec![("UNIQ_KEY".into(), uniq_key(i))],
        };
        let r = sdk::send(
            &client,
            SendCode::V2,
            "AdminProducer",
            &topic,
            i32::from(i % 4),
            &[msg],
        )
        .await
        .unwrap();
        sent.push(r);
    }
    heartbeat(
        &client,
        serde_json::json!({
            "clientID": "127.0.0.1@admin-test",
            "producerDataSet": [{"groupName": "AdminProducer"}],
            "consumerDataSet": [{
                "groupName": group, "consumeType": "CONSUME_PASSIVELY",
                "messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                "subscriptionDataSet": [{"topic": topic, "subString": "*", "subVersion": 1}]
            }]
        }),
    )
    .await;
    for q in 0..4 {
        sdk::commit_offset(&client, &group, &topic, q, 1)
            .await
            .unwrap();
    }
    broker.registrar().unwrap().register_now().await.unwrap();

    let status = admin
        .expect(
            &["topicStatus", "-t", &topic],
            &["#Broker Name", "broker-a"],
        )
        .await;
    let max_sum: i64 = status
        .stdout
        .lines()
        .filter(|l| l.starts_with("broker-a"))
        .map(|l| l.split_whitespace().nth(3).unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(max_sum, 10, "{}", status.stdout);

    admin
        .expect(
            &["updateSubGroup", "-b", &addr, "-g", &group, "-r", "3"],
            &[
                &format!("create subscription group to {addr} success."),
                &format!("SubscriptionGroupConfig [groupName={group}, consumeEnable=true"),
                "retryMaxTimes=3",
            ],
        )
        .await;
    let progress = admin
        .expect(
            &["consumerProgress", "-g", &group],
            &[&topic, "Diff Total: 6"],
        )
        .await;
    assert_eq!(
        progress
            .stdout
            .lines()
            .filter(|l| l.starts_with(&topic))
            .count(),
        4,
        "{}",
        progress.stdout
    );
    admin
        .expect(
            &["consumerConnection", "-g", &group],
            &[
                "127.0.0.1@admin-test",
                "ConsumeType: CONSUME_PASSIVELY",
                "MessageModel: CLUSTERING",
            ],
        )
        .await;
    admin
        .expect(
            &["producerConnection", "-g", "AdminProducer", "-t", &topic],
            &["127.0.0.1@admin-test"],
        )
        .await;

    let third = &sent[3];
    admin
        .expect(
            &["queryMsgById", "-i", &third.msg_id],
            &[
                &format!("OffsetID:            {}", third.msg_id),
                &topic,
                "[K3]",
            ],
        )
        .await;
    admin
        .expect(
            &["queryMsgByKey", "-t", &topic, "-k", "K5"],
            &[&uniq_key(5)],
        )
        .await;
    admin
        .expect(
            &["queryMsgByUniqueKey", "-i", &uniq_key(7), "-t", &topic],
            &[&topic, "[K7]"],
        )
        .await;
    admin
        .expect(
            &[
                "queryMsgByOffset",
                "-t",
                &topic,
                "-b",
                "broker-a",
                "-i",
                "0",
                "-o",
                "0",
            ],
            &[&topic, "[K0]"],
        )
        .await;
    // The consumer is "online" (its heartbeat connection is open) but never
    // applies a reset, so ask for the stored-offset path: the group goes
    // offline first and mqadmin falls back to resetting through the broker.
    drop(client);
    let start = Instant::now();
    loop {
        let run = admin.run(&["consumerConnection", "-g", &group]).await;
        if run.stderr.contains("CODE: 206") {
            break;
        }
        assert!(
            start.elapsed() < ROUTE_TIMEOUT,
            "{}",
            run.report("consumer still online")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    admin
        .expect(
            &["resetOffsetByTime", "-g", &group, "-t", &topic, "-s", "now"],
            &[
                "rollback consumer offset by specified consumerGroup",
                "#rollbackOffset",
            ],
        )
        .await;
    admin
        .expect(&["consumerProgress", "-g", &group], &["Diff Total: 0"])
        .await;

    admin
        .expect(
            &["clusterList"],
            &["DefaultCluster", "broker-a", &addr, "V4_9_8"],
        )
        .await;
    admin
        .expect(
            &["brokerStatus", "-b", &addr],
            &[
                "brokerVersionDesc",
                "msgPutTotalTodayNow",
                "pageCacheLockTimeMills",
                "putMessageFailedTimes",
                "putTps",
                "commitLogMaxOffset",
                "brokerRole",
                "ASYNC_MASTER",
                "haMaxLagBytes",
            ],
        )
        .await;
    admin
        .expect(
            &["getBrokerConfig", "-b", &addr],
            &[
                &format!("============{addr}============"),
                "brokerName",
                "broker-a",
            ],
        )
        .await;
    let refused = admin
        .run(&[
            "updateBrokerConfig",
            "-b",
            &addr,
            "-k",
            "flushDiskType",
            "-v",
            "SYNC_FLUSH",
        ])
        .await;
    assert!(
        refused
            .stderr
            .contains("cannot change while the broker runs")
            && refused.stderr.contains("flushDiskType"),
        "{}",
        refused.report("updateBrokerConfig")
    );
    admin
        .expect(
            &[
                "updateBrokerConfig",
                "-b",
                &addr,
                "-k",
                "maxReconsumeTimes",
                "-v",
                "5",
            ],
            &[&format!("update broker config success, {addr}")],
        )
        .await;
    let config = admin.run(&["getBrokerConfig", "-b", &addr]).await;
    assert!(
        config
            .stdout
            .lines()
            .any(|l| l.starts_with("maxReconsumeTimes") && l.ends_with("=  5")),
        "{}",
        config.report("getBrokerConfig after the update")
    );
    more_commands(&admin, &broker, &topic, &group).await;
    admin
        .expect(&["deleteExpiredCommitLog", "-b", &addr], &["success"])
        .await;
    admin
        .expect(&["cleanExpiredCQ", "-b", &addr], &["success"])
        .await;
    admin
        .expect(
            &["deleteSubGroup", "-b", &addr, "-g", &group, "-r", "true"],
            &[&format!(
                "delete subscription group [{group}] from broker [{addr}] success."
            )],
        )
        .await;
    admin
        .expect(
            &["deleteTopic", "-t", &topic, "-c", "DefaultCluster"],
            &[
                &format!("delete topic [{topic}] from cluster [DefaultCluster] success."),
                &format!("delete topic [{topic}] from NameServer success."),
            ],
        )
        .await;
    wait_route(&admin, &topic, false).await;
    let gone = admin.run(&["topicStatus", "-t", &topic]).await;
    assert!(
        gone.stderr.contains("CODE: 17"),
        "{}",
        gone.report("topicStatus after delete")
    );
    assert!(
        broker
            .context()
            .store
            .max_offset_in_queue(&topic, 0)
            .unwrap()
            == 0,
        "the deleted topic's consume queue is gone"
    );
    broker.shutdown().await;
    assert_store_files(dir.path(), &topic, backend);
}

/// The commands issue 22 adds: statsAll, cloneGroupOffset, queryCq,
/// wipeWritePerm/addWritePerm, updateKvConfig/deleteKvConfig and
/// getNamesrvConfig (consumerStatus needs a live Java consumer: the Java
/// admin scenario runs it).
async fn more_commands(admin: &Admin, broker: &Broker, topic: &str, group: &str) {
    let addr = broker.addr().to_string();
    let ns = broker.namesrv_addr().unwrap().to_string();
    // Drive the stats sampler an hour on, so every view has a span: the
    // ten messages stored show as the day's count.
    let items = &broker.context().items;
    items.sample(rmq_common::time::now_ms() + 3_600_000);
    let stats = admin
        .expect(&["statsAll", "-t", topic], &[topic, group])
        .await;
    let line = stats
        .stdout
        .lines()
        .find(|l| l.starts_with(topic))
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>();
    assert_eq!(line.get(1), Some(&group), "{}", stats.stdout);
    assert_eq!(line.get(5), Some(&"10"), "InMsg24Hour: {}", stats.stdout);
    admin
        .expect(
            &["cloneGroupOffset", "-s", group, "-d", "AdminClone", "-t", topic, "-o", "true"],
            &[&format!(
                "clone group offset success. srcGroup[{group}], destGroup=[AdminClone], topic[{topic}]"
            )],
        )
        .await;
    admin
        .expect(
            &[
                "queryCq", "-t", topic, "-q", "0", "-i", "0", "-c", "2", "-b", &addr,
            ],
            &[
                "Queue data: \nmax: 3, min: 0",
                "idx: 0",
                "idx: 1",
                "physicOffset=",
            ],
        )
        .await;
    let wiped = admin
        .expect(
            &["wipeWritePerm", "-b", "broker-a"],
            &[&format!(
                "wipe write perm of broker[broker-a] in name server[{ns}] OK, "
            )],
        )
        .await;
    let count = wiped.stdout.trim().rsplit(' ').next().unwrap().to_owned();
    admin
        .expect(
            &["addWritePerm", "-b", "broker-a"],
            &[&format!(
                "add write perm of broker[broker-a] in name server[{ns}] OK, {count}"
            )],
        )
        .await;
    admin
        .expect(
            &["updateKvConfig", "-s", "AdminNs", "-k", "k", "-v", "v"],
            &["create or update kv config to namespace success."],
        )
        .await;
    admin
        .expect(
            &["deleteKvConfig", "-s", "AdminNs", "-k", "k"],
            &["delete kv config from namespace success."],
        )
        .await;
    admin
        .expect(
            &["getNamesrvConfig"],
            &[
                &format!("============{ns}============"),
                "namesrvBrokerExpiry",
            ],
        )
        .await;
}

/// After the delete the file backend has no folder left for the topic.
fn assert_store_files(root: &Path, topic: &str, backend: CqBackend) {
    if backend == CqBackend::File {
        let cq = root.join("store").join("consumequeue").join(topic);
        assert!(!cq.exists(), "{} still exists", cq.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_file() {
    mqadmin_commands(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_rocksdb() {
    mqadmin_commands(CqBackend::Rocksdb).await;
}

/// mqadmin's ACL commands against a broker with `aclEnable`, signed with
/// the admin account of `$ROCKETMQ_HOME/conf/tools.yml`: an account created
/// (`updateAclConfig`) is written to the file and signs at once, the
/// version is listed (`clusterAclConfigVersion`), the global white list is
/// replaced (`updateGlobalWhiteAddr`), the account deleted
/// (`deleteAclConfig`) stops; without tools.yml every one is refused and
/// the file is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_acl_commands_file() {
    mqadmin_acl_commands(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_acl_commands_rocksdb() {
    mqadmin_acl_commands(CqBackend::Rocksdb).await;
}

async fn mqadmin_acl_commands(backend: CqBackend) {
    java::require_java_and_jars(Client::V4);
    let dir = tempfile::tempdir().unwrap();
    let b = crate::acl::start(dir.path(), backend).await;
    let admin = Admin::new(b.namesrv_addr().unwrap());
    let addr = b.addr().to_string();
    let acl_file = dir.path().join("plain_acl.yml");

    // Unsigned (no tools.yml): refused, nothing written.
    let before = std::fs::read_to_string(&acl_file).unwrap();
    let run = admin
        .run(&[
            "updateAclConfig",
            "-b",
            &addr,
            "-a",
            "mqadminUser",
            "-s",
            "mqadminSecret",
        ])
        .await;
    assert!(
        !run.stdout.contains("success") && run.stderr.contains("CODE: 16"),
        "{}",
        run.report("unsigned updateAclConfig")
    );
    assert_eq!(std::fs::read_to_string(&acl_file).unwrap(), before);

    std::fs::write(
        admin.home.path().join("conf/tools.yml"),
        "accessKey: rocketmq2\nsecretKey: 87654321\n",
    )
    .unwrap();
    admin
        .expect(
            &[
                "updateAclConfig",
                "-b",
                &addr,
                "-a",
                "mqadminUser",
                "-s",
                "mqadminSecret",
                "-i",
                "DENY",
                "-u",
                "SUB",
                "-t",
                "Allowed=PUB|SUB",
            ],
            &["create or update plain access config to", "success"],
        )
        .await;
    // mqadmin 4.9.8 has no getAclConfig (4.9.7's printed secrets): the file.
    let file = std::fs::read_to_string(&acl_file).unwrap();
    assert!(
        file.contains("mqadminUser") && file.contains("Allowed=PUB|SUB"),
        "{file}"
    );
    admin
        .expect(
            &["clusterAclConfigVersion", "-b", &addr],
            &["get broker's plain access config version success"],
        )
        .await;
    let user = crate::acl::client(&b, "mqadminUser", "mqadminSecret").await;
    assert_eq!(crate::acl::send_code(&user, "Allowed").await, 0);
    assert_eq!(crate::acl::send_code(&user, "Other").await, 16);

    admin
        .expect(
            &[
                "updateGlobalWhiteAddr",
                "-b",
                &addr,
                "-g",
                "10.10.103.*,192.168.0.*",
                "-p",
                &acl_file.to_string_lossy(),
            ],
            &["update global white remote addresses to", "success"],
        )
        .await;
    let file = std::fs::read_to_string(&acl_file).unwrap();
    assert!(file.contains("10.10.103.*"), "{file}");
    admin
        .expect(
            &["deleteAclConfig", "-b", &addr, "-a", "mqadminUser"],
            &["delete plain access config account from", "success"],
        )
        .await;
    let file = std::fs::read_to_string(&acl_file).unwrap();
    assert!(!file.contains("mqadminUser"), "{file}");
    assert_eq!(crate::acl::send_code(&user, "Allowed").await, 16);
    b.shutdown().await;
}
