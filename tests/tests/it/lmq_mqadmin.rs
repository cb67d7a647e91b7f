//! mqadmin 5.3.3 (`rocketmq-tools` 5.3.3, `MQAdminStartup`) on a light
//! message queue, on both backends: the commands whose `-c` takes "cluster
//! name or lmq parent topic" (the parent's route locates the broker; the
//! LMQ has none), each judged by what it prints: consumerProgress,
//! topicStatus, queryMsgByKey, resetOffsetByTime (and the group's offset
//! afterwards). printMsg with `-l <parent>` fails inside mqadmin before it
//! asks any broker (see the end of the test).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, RemotingClient, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::RequestCode;
use rmq_tests::java::{self, Client, JavaRun};

use crate::mqadmin::{ADMIN_MAIN, LOGBACK_TOOLS};

/// Longest one mqadmin command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest the NameServer may take to route a created topic.
const ROUTE_TIMEOUT: Duration = Duration::from_secs(10);
/// Messages sent before and after the reset point.
const HALF: usize = 5;

const PARENT: &str = "LmqAdminParent";
const LMQ: &str = "%LMQ%adm";
const GROUP: &str = "LmqAdminG";

/// Runs mqadmin 5.3.3 against `ns`; the run must end normally and print
/// no exception (mqadmin exits 0 even when a command fails).
async fn mqadmin(home: &std::path::Path, ns: SocketAddr, args: &[&str]) -> JavaRun {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_string()]);
    let run = java::run_main(Client::V5, ADMIN_MAIN, &all, home, COMMAND_TIMEOUT).await;
    let what = format!("mqadmin {}", args.join(" "));
    eprintln!("$ {what} ({:?})\n{}{}", run.elapsed, run.stdout, run.stderr);
    assert!(run.succeeded(), "{}", run.report(&what));
    assert!(
        !run.stdout.contains("Exception") && !run.stderr.contains("Exception"),
        "{}",
        run.report(&format!("{what} printed an exception"))
    );
    run
}

/// The whitespace-separated words of the stdout lines that start with `first`.
fn rows(run: &JavaRun, first: &str) -> Vec<Vec<String>> {
    run.stdout
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|w| w.first().map(String::as_str) == Some(first))
        .collect()
}

async fn committed(b: &RemotingClient) -> i64 {
    let r = sdk::call(
        b,
        sdk::request(
            RequestCode::QueryConsumerOffset,
            &[
                ("consumerGroup", GROUP.into()),
                ("topic", LMQ.into()),
                ("queueId", "0".into()),
            ],
        ),
    )
    .await
    .unwrap();
    r.ext().req_i64("offset").unwrap()
}

async fn wait_route(ns: SocketAddr, topic: &str) {
    let c = sdk::connect(ns).await.unwrap();
    let start = Instant::now();
    loop {
        let req = sdk::request(RequestCode::GetRouteInfoByTopic, &[("topic", topic.into())]);
        if sdk::call(&c, req).await.is_ok() {
            return;
        }
        assert!(start.elapsed() < ROUTE_TIMEOUT, "no route of {topic}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn lmq_commands(backend: CqBackend) {
    java::require_java_and_jars(Client::V5);
    let dir = tempfile::tempdir().unwrap();
    let mut settings = rmq_tests::broker_settings(&dir.path().join("store"), backend);
    settings.store.enable_lmq = true;
    settings.store.enable_multi_dispatch = true;
    let broker = Broker::start(settings).await.unwrap();
    let ns = broker.namesrv_addr().expect("embedded NameServer");
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("conf")).unwrap();
    std::fs::write(home.path().join("conf/logback_tools.xml"), LOGBACK_TOOLS).unwrap();
    let home = home.path();

    let b = sdk::connect(broker.addr()).await.unwrap();
    let r = sdk::call(
        &b,
        sdk::request(
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", PARENT.into()),
                ("readQueueNums", "2".into()),
                ("writeQueueNums", "2".into()),
            ],
        ),
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    wait_route(ns, PARENT).await;
    // Messages 0..HALF, a pause, then HALF..2*HALF: the reset point is
    // the pause. Each goes into the LMQ through the parent's queue i % 2.
    let mut reset_at = 0;
    for i in 0..2 * HALF {
        if i == HALF {
            tokio::time::sleep(Duration::from_millis(1_100)).await;
            reset_at = rmq_common::time::now_ms();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let m = OutMessage {
            body: format!("lmq body {i}").into_bytes(),
            keys: vec![format!("lmqkey-{i}")],
            properties: vec![("INNER_MULTI_DISPATCH".into(), LMQ.into())],
            ..OutMessage::default()
        };
        sdk::send(&b, SendCode::V2, "p", PARENT, (i % 2) as i32, &[m])
            .await
            .unwrap();
    }
    sdk::commit_offset(&b, GROUP, LMQ, 0, 3).await.unwrap();
    let max = (2 * HALF).to_string();

    // consumerProgress: the LMQ's queue 0 with the broker's max and the
    // group's offset.
    let run = mqadmin(
        home,
        ns,
        &["consumerProgress", "-g", GROUP, "-t", LMQ, "-c", PARENT],
    )
    .await;
    let lines = rows(&run, LMQ);
    assert_eq!(lines.len(), 1, "{}", run.report("consumerProgress"));
    assert_eq!(
        &lines[0][1..5],
        &["broker-a", "0", &max, "3"],
        "{}",
        run.report("consumerProgress")
    );
    assert!(
        run.stdout
            .contains(&format!("Consume Diff Total: {}", 2 * HALF - 3)),
        "{}",
        run.report("consumerProgress")
    );

    // topicStatus: broker, queue 0, min 0, max.
    let run = mqadmin(home, ns, &["topicStatus", "-t", LMQ, "-c", PARENT]).await;
    let lines = rows(&run, "broker-a");
    assert_eq!(lines.len(), 1, "{}", run.report("topicStatus"));
    assert_eq!(&lines[0][..4], &["broker-a", "0", "0", &max]);

    // queryMsgByKey: the index holds keys under the parent topic; -c
    // names it.
    let run = mqadmin(
        home,
        ns,
        &["queryMsgByKey", "-t", LMQ, "-k", "lmqkey-7", "-c", PARENT],
    )
    .await;
    let found: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.len() > 50 && !l.starts_with('#'))
        .collect();
    assert_eq!(found.len(), 1, "{}", run.report("queryMsgByKey"));
    let words: Vec<&str> = found[0].split_whitespace().collect();
    // Queue id and offset are the parent's (message 7: queue 1, offset 3).
    assert_eq!(&words[1..], &["1", "3"], "{}", run.report("queryMsgByKey"));

    // resetOffsetByTime to the pause: the group's LMQ offset becomes the
    // first message stored after it.
    let run = mqadmin(
        home,
        ns,
        &[
            "resetOffsetByTime",
            "-g",
            GROUP,
            "-t",
            LMQ,
            "-s",
            &reset_at.to_string(),
            "-c",
            PARENT,
        ],
    )
    .await;
    assert_eq!(
        committed(&b).await,
        HALF as i64,
        "{}",
        run.report("resetOffsetByTime")
    );

    // Not printMsg -t LMQ -l PARENT: mqadmin 5.3.3 asks the LMQ's min
    // offset (MQAdminImpl.minOffset) before it fills the broker address
    // from the parent's route, and fails in the client ("The broker[...]
    // not exist") whatever the broker.
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin5_lmq_commands_file() {
    lmq_commands(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin5_lmq_commands_rocksdb() {
    lmq_commands(CqBackend::Rocksdb).await;
}
