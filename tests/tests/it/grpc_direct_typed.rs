//! The stock gRPC Java client 5.0.7 straight at this broker's gRPC
//! endpoint, on both consume-queue backends:
//!
//! - typed topics: a FIFO message to a NORMAL topic is refused by the
//!   client itself (the route and settings the broker gave it say so); one
//!   sent on a stale FIFO route after the topic became NORMAL reaches the
//!   broker, which refuses it with MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
//!   (40014) and the text Apache's proxy gives;
//! - SQL92: a SimpleConsumer with an SQL92 filter on user properties gets
//!   exactly the matching messages (`enablePropertyFilter=true`);
//! - max attempts: a message never acked is delivered 1 + the group's
//!   retryMaxTimes times, then moved to `%DLQ%<group>` (by the receive that
//!   finds it past its attempts), intact.
//!
//! RecallMessage is not here: the 5.0.7 client has no recall call (neither
//! in its API nor in the stubs it bundles).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, PullRequest};
use rmq_common::config::CqBackend;
use rmq_common::constants::property;
use rmq_common::message::MessageToStore;
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_tests::java::JavaRun;
use tokio::task::JoinHandle;

use crate::grpc_direct::start_direct;
use crate::proxy_grpc::{create_topic, lines, scenario, Line, CALL_TIMEOUT, RUN_TIMEOUT};
use crate::proxy_grpc_pop::{create_group, received_in_order};

/// The status text of Apache's proxy for a FIFO message to a NORMAL topic
/// (`DefaultTopicMessageTypeValidator`), after the client's own prefix.
const TYPE_CONFLICT: &str = "response-code=40014] TopicMessageType validate failed, \
     the expected type is NORMAL, but actual type is FIFO";
/// retryMaxTimes of the DLQ test's group: attempts = 1 + this.
const RETRY_MAX_TIMES: i32 = 1;
/// Longest wait for the never-acked message in the DLQ: two invisible
/// times of 10 s, the revive and a receive, with room for a busy machine.
const DLQ_TIMEOUT: Duration = Duration::from_secs(50);
/// Longest one pull of the DLQ waits for a message.
const LONG_POLL: Duration = Duration::from_secs(2);

/// Runs a GrpcSuite scenario in the background (it waits for files the
/// test creates).
fn spawn_scenario(home: &Path, args: &[&str]) -> JoinHandle<JavaRun> {
    let home = home.to_path_buf();
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    tokio::spawn(async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        scenario(&home, &args).await
    })
}

/// The run of `task`, its panic passed on.
async fn join(task: &mut JoinHandle<JavaRun>) -> JavaRun {
    match task.await {
        Ok(run) => run,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Waits (bounded) until `path` exists; a run that ended before is reported.
async fn await_file(path: &Path, mut task: JoinHandle<JavaRun>) -> JoinHandle<JavaRun> {
    let deadline = Instant::now() + RUN_TIMEOUT;
    while !path.exists() {
        if task.is_finished() {
            let run = join(&mut task).await;
            panic!(
                "{}",
                run.report(&format!("ended before {}", path.display()))
            );
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    task
}

fn file(home: &Path, name: &str) -> PathBuf {
    home.join(name)
}

/// The lines `kind <tab> rest` of a run.
fn tagged<'a>(run: &'a JavaRun, kind: &str) -> Vec<&'a str> {
    let prefix = format!("{kind}\t");
    run.stdout
        .lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .collect()
}

async fn typed(backend: CqBackend) {
    let d = start_direct(backend, |_| {}).await;
    let (normal, flipped) = ("GrpcTypedNormal", "GrpcTypedFlipped");
    create_topic(&d.broker, normal, 2, "NORMAL").await;
    create_topic(&d.broker, flipped, 2, "FIFO").await;
    let (ready, go) = (file(&d.home, "typed.ready"), file(&d.home, "typed.go"));
    let task = spawn_scenario(
        &d.home,
        &[
            "--scenario",
            "typed",
            "--endpoint",
            &d.endpoint,
            "--normal-topic",
            normal,
            "--topic",
            flipped,
            "--ready-file",
            ready.to_str().unwrap(),
            "--go-file",
            go.to_str().unwrap(),
        ],
    );
    let mut task = await_file(&ready, task).await;
    // The client holds the FIFO route now; the topic becomes NORMAL.
    create_topic(&d.broker, flipped, 2, "NORMAL").await;
    std::fs::write(&go, "go").unwrap();
    let run = join(&mut task).await;
    let local = tagged(&run, "LOCAL");
    assert!(
        local.len() == 1 && local[0].contains("not match with topic accept message types"),
        "the client must refuse a FIFO message to NORMAL {normal} itself\n{}",
        run.report("typed")
    );
    let refused = tagged(&run, "REFUSED");
    assert!(
        refused.len() == 1 && refused[0].contains(TYPE_CONFLICT),
        "the broker must refuse a FIFO message to a NORMAL topic with {TYPE_CONFLICT:?}\n{}",
        run.report("typed")
    );
    // The one FIFO message sent while the topic was FIFO, and nothing else.
    let sent = lines(&run, "SENT");
    assert_eq!(sent.len(), 1, "{}", run.report("typed"));
    let stored = |topic: &str| -> i64 {
        (0..2)
            .map(|q| {
                d.broker
                    .context()
                    .store
                    .max_offset_in_queue(topic, q)
                    .unwrap()
            })
            .sum()
    };
    assert_eq!(
        (stored(normal), stored(flipped)),
        (0, 1),
        "{}",
        run.report("typed")
    );
    d.broker.shutdown().await;
}

async fn sql92(backend: CqBackend) {
    let d = start_direct(backend, |s| s.broker.enable_property_filter = true).await;
    let (topic, group) = ("GrpcSqlTopic", "GrpcSqlGroup");
    create_topic(&d.broker, topic, 4, "NORMAL").await;
    create_group(&d.broker, group, false).await;
    let run = scenario(
        &d.home,
        &[
            "--scenario",
            "send",
            "--endpoint",
            &d.endpoint,
            "--topic",
            topic,
            "--count",
            "10",
            "--props",
            "true",
        ],
    )
    .await;
    let sent = lines(&run, "SENT");
    assert_eq!(sent.len(), 10, "{}", run.report("send"));
    // Message i has color red (even i) or blue, and index i.
    let index = |l: &Line| -> usize { l.3.rsplit('-').next().unwrap().parse().unwrap() };
    let want: BTreeSet<Line> = sent
        .iter()
        .filter(|l| index(l) % 2 == 0 && index(l) > 3)
        .cloned()
        .collect();
    assert_eq!(want.len(), 3);
    let run = scenario(
        &d.home,
        &[
            "--scenario",
            "simple",
            "--endpoint",
            &d.endpoint,
            "--topic",
            topic,
            "--group",
            group,
            "--filter-type",
            "sql92",
            "--filter",
            "color = 'red' AND index > 3",
            "--count",
            &want.len().to_string(),
        ],
    )
    .await;
    let got = received_in_order(&run);
    let distinct: BTreeSet<Line> = got.iter().cloned().collect();
    assert_eq!(
        (got.len(), &distinct),
        (want.len(), &want),
        "the SQL92 consumer must get exactly the matching messages, each once\n{}",
        run.report("simple sql92")
    );
    d.broker.shutdown().await;
}

/// Creates `group` with retryMaxTimes `max`.
async fn create_group_with_retries(broker: &Broker, group: &str, max: i32) {
    let client = sdk::connect(broker.addr()).await.unwrap();
    let mut req = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup);
    let body = serde_json::json!({"groupName": group, "retryMaxTimes": max});
    req.body = Some(body.to_string().into_bytes().into());
    let resp = client.invoke(req, CALL_TIMEOUT).await.unwrap();
    assert_eq!(resp.code, 0, "create group {group}: {:?}", resp.remark);
}

/// Pulls queue 0 of `topic` until a message is there (bounded) while
/// `task` runs; a run that ended before is reported.
async fn first_message(
    broker: &Broker,
    topic: &str,
    task: &mut JoinHandle<JavaRun>,
) -> MessageToStore {
    let client = sdk::connect(broker.addr()).await.unwrap();
    let deadline = Instant::now() + DLQ_TIMEOUT;
    loop {
        let req = PullRequest {
            group: "DlqObserver".into(),
            topic: topic.into(),
            queue_id: 0,
            offset: 0,
            max_msgs: 8,
            subscription: Some("*".into()),
            suspend: Some(LONG_POLL),
            commit_offset: None,
        };
        if let Ok(mut r) = sdk::pull(&client, &req).await {
            if !r.messages.is_empty() {
                assert_eq!(r.messages.len(), 1, "more than one message in {topic}");
                return r.messages.remove(0);
            }
        }
        if task.is_finished() {
            let run = join(task).await;
            panic!(
                "{}",
                run.report(&format!("ended before a message was in {topic}"))
            );
        }
        assert!(
            Instant::now() < deadline,
            "nothing in {topic} within {DLQ_TIMEOUT:?}"
        );
        // A topic not made yet answers at once.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn max_attempts_to_dlq(backend: CqBackend) {
    let d = start_direct(backend, |_| {}).await;
    let (topic, group) = ("GrpcDlqTopic", "GrpcDlqGroup");
    create_topic(&d.broker, topic, 1, "NORMAL").await;
    create_group_with_retries(&d.broker, group, RETRY_MAX_TIMES).await;
    let run = scenario(
        &d.home,
        &[
            "--scenario",
            "send",
            "--endpoint",
            &d.endpoint,
            "--topic",
            topic,
            "--count",
            "1",
        ],
    )
    .await;
    let sent: Vec<Line> = lines(&run, "SENT").into_iter().collect();
    assert_eq!(sent.len(), 1, "{}", run.report("send"));
    let attempts = (1 + RETRY_MAX_TIMES).to_string();
    let stop = file(&d.home, "dlq.stop");
    let mut task = spawn_scenario(
        &d.home,
        &[
            "--scenario",
            "dlq",
            "--endpoint",
            &d.endpoint,
            "--topic",
            topic,
            "--group",
            group,
            "--attempts",
            &attempts,
            "--stop-file",
            stop.to_str().unwrap(),
        ],
    );
    let dlq = first_message(&d.broker, &format!("%DLQ%{group}"), &mut task).await;
    std::fs::write(&stop, "stop").unwrap();
    let run = join(&mut task).await;
    let got = received_in_order(&run);
    assert_eq!(
        got,
        [sent.clone(), sent.clone()].concat(),
        "the message must be delivered exactly {attempts} times\n{}",
        run.report("dlq")
    );
    let (id, tag, keys, body) = &sent[0];
    let prop = |k: &str| dlq.properties.get(k).map(|v| v.to_string());
    assert_eq!(
        (
            prop(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            prop(property::TAGS),
            prop(property::KEYS),
            String::from_utf8_lossy(&dlq.body).into_owned(),
        ),
        (
            Some(id.clone()),
            Some(tag.clone()),
            Some(keys.clone()),
            body.clone()
        ),
        "the DLQ message\n{}",
        run.report("dlq")
    );
    d.broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_fifo_message_to_normal_topic_refused_file() {
    typed(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_fifo_message_to_normal_topic_refused_rocksdb() {
    typed(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_sql92_simple_consumer_file() {
    sql92(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_sql92_simple_consumer_rocksdb() {
    sql92(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_max_attempts_to_dlq_file() {
    max_attempts_to_dlq(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_direct_max_attempts_to_dlq_rocksdb() {
    max_attempts_to_dlq(CqBackend::Rocksdb).await;
}
