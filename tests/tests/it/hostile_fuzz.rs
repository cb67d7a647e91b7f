//! Issue 15: the hostile client, generated. Every request code the broker
//! knows (and unknown ones) is sent with out-of-range and random fields
//! over a real connection (to an in-process broker, or to a child process
//! where its memory is measured): each gets an answer
//! (a refusal carries a remark), nothing is stored or created by a refused
//! request, the broker's disk and memory stay within a bound, and a normal
//! client is still served afterwards.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rmq_broker::broker::Broker;
use rmq_client::RemotingClient;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::fuzz_harness::{HOSTILE_FIELDS as FIELDS, HOSTILE_VALUES};
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tests::start_broker;

use crate::broker_process::BrokerProcess;

/// Longest any single answer may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// What the broker holds that a refused request must not change.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    log_end: i64,
    topics: Vec<String>,
    groups: Vec<String>,
}

fn snapshot(b: &Broker) -> Snapshot {
    let ctx = b.context();
    let mut topics: Vec<String> = ctx.topics.table().topic_config_table.into_keys().collect();
    topics.sort();
    let mut groups: Vec<String> = ctx.groups.all().into_iter().map(|g| g.group_name).collect();
    groups.sort();
    Snapshot {
        log_end: ctx.store.max_phy_offset(),
        topics,
        groups,
    }
}

fn dir_bytes(p: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![p.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.metadata() {
                // CommitLog segments are allocated whole (1 GiB): what was
                // written there is measured by the log's end instead.
                Ok(m) if m.is_dir() && e.file_name() == "commitlog" => {}
                Ok(m) if m.is_dir() => stack.push(e.path()),
                // Allocated blocks.
                Ok(m) => total += std::os::unix::fs::MetadataExt::blocks(&m) * 512,
                Err(_) => {}
            }
        }
    }
    total
}

fn request(code: i32, ext: &BTreeMap<String, String>, body: Option<Vec<u8>>) -> RemotingCommand {
    let mut req = RemotingCommand::request(0);
    req.code = code;
    req.ext_fields = ext.clone();
    match body {
        Some(b) => req.with_body(b),
        None => req,
    }
}

async fn normal_round_trip(c: &RemotingClient) {
    let m = OutMessage {
        body: b"still served".to_vec(),
        tags: None,
        keys: Vec::new(),
        properties: Vec::new(),
    };
    let r = tokio::time::timeout(
        ANSWER_TIMEOUT,
        sdk::send(c, SendCode::V2, "normal", "NormalTopic", 0, &[m]),
    )
    .await
    .expect("a normal send is answered")
    .expect("a normal send is stored");
    assert!(r.queue_offset >= 0);
}

/// Every known request code with every field out of range: each answer
/// comes, each refusal has a remark, and nothing is stored or created.
async fn every_code_refuses_out_of_range_fields(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), backend).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let before = snapshot(&broker);
    let mut bad = BTreeMap::new();
    for &f in FIELDS {
        let v = match f {
            "topic" => "no such/topic".to_owned(),
            "consumerGroup" | "producerGroup" | "group" | "groupName" => "bad group!".to_owned(),
            "key" | "msgId" => "x".repeat(300),
            _ => "-7".to_owned(),
        };
        bad.insert(f.to_owned(), v);
    }
    let body = br#"{"groupName":"bad group!","consumerGroup":"bad group!","mqSet":[{"topic":"bad topic","brokerName":"b","queueId":-3}],"topicConfigList":[{"topicName":"SCHEDULE_TOPIC_XXXX","readQueueNums":1,"writeQueueNums":1,"perm":6}],"consumerDataSet":[{"groupName":"bad group!","subscriptionDataSet":[]}],"producerDataSet":[],"clientID":"c"}"#;
    let mut answered = 0;
    for code in RequestCode::ALL
        .iter()
        .map(|c| c.code())
        .chain([-1, 9_999, i32::MAX])
    {
        let r = tokio::time::timeout(
            ANSWER_TIMEOUT,
            c.invoke(request(code, &bad, Some(body.to_vec())), ANSWER_TIMEOUT),
        )
        .await
        .unwrap_or_else(|_| panic!("request code {code} was not answered"))
        .unwrap_or_else(|e| panic!("request code {code}: connection failed: {e}"));
        answered += 1;
        if r.code != i32::from(ResponseCode::Success) {
            assert!(
                r.remark.as_deref().is_some_and(|m| !m.is_empty()),
                "request code {code}: refusal {} without a remark",
                r.code
            );
        }
        assert_eq!(
            snapshot(&broker),
            before,
            "request code {code} changed the broker"
        );
    }
    assert!(answered > 40, "{answered} codes answered");
    normal_round_trip(&c).await;
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_code_refuses_out_of_range_fields_file() {
    every_code_refuses_out_of_range_fields(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_code_refuses_out_of_range_fields_rocksdb() {
    every_code_refuses_out_of_range_fields(CqBackend::Rocksdb).await;
}

/// One generated request: a code (known, or any), some header fields with
/// values from the troublesome ones, and maybe a body.
fn hostile_request() -> impl Strategy<Value = (i32, BTreeMap<String, String>, Option<Vec<u8>>)> {
    let code = prop_oneof![
        4 => proptest::sample::select(RequestCode::ALL.iter().map(|c| c.code()).collect::<Vec<_>>()),
        1 => any::<i32>(),
    ];
    let value = prop_oneof![
        3 => proptest::sample::select(HOSTILE_VALUES).prop_map(str::to_owned),
        1 => "[a-zA-Z%|_-]{1,200}",
        1 => "\\PC{0,40}",
        1 => (0usize..4000).prop_map(|n| "T".repeat(n)),
    ];
    let fields = proptest::collection::btree_map(
        proptest::sample::select(FIELDS).prop_map(str::to_owned),
        value,
        0..8,
    );
    let body = proptest::option::of(prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        Just(b"{}".to_vec()),
        Just(br#"{"consumerDataSet":[{"groupName":"g1","subscriptionDataSet":[]}],"producerDataSet":[],"clientID":"fz"}"#.to_vec()),
    ]);
    (code, fields, body)
}

/// CommitLog end of the broker `c` talks to (GET_BROKER_RUNTIME_INFO).
async fn log_end(c: &RemotingClient) -> i64 {
    let req = RemotingCommand::request(RequestCode::GetBrokerRuntimeInfo);
    let r = sdk::call(c, req).await.unwrap();
    let v = rmq_common::json::parse::parse(r.body.as_deref().unwrap_or_default()).unwrap();
    v["table"]["commitLogMaxOffset"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("commitLogMaxOffset in the runtime info")
}

/// Random requests, many at a time: no answer is lost, the connection
/// survives, the disk and the broker process (a child, so that only its
/// memory is measured) grow by less than a bound, and a normal client is
/// served at the end. 300 cases per run; a failing case is shrunk and
/// printed by proptest.
#[test]
fn random_requests_of_every_code_hurt_no_one() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (ns, broker) = rt.block_on(BrokerProcess::with_namesrv(
        dir.path(),
        &["consumeQueueStore=rocksdb"],
    ));
    let c = rt.block_on(sdk::connect(broker.addr)).unwrap();
    rt.block_on(normal_round_trip(&c));
    let store = dir.path().join("store");
    let disk_before = dir_bytes(&store);
    let log_before = rt.block_on(log_end(&c));
    let rss_before = broker.rss_bytes();
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    });
    let pulls = [
        RequestCode::PullMessage.code(),
        RequestCode::LitePullMessage.code(),
    ];
    let result = runner.run(&hostile_request(), |(code, mut ext, body)| {
        // A pull may be held for its suspend time (long polling): ask for
        // an answer now, the rest of its fields as generated.
        if pulls.contains(&code) {
            ext.insert("sysFlag".into(), "0".into());
            ext.insert("suspendTimeoutMillis".into(), "0".into());
        }
        let answer = rt.block_on(async {
            tokio::time::timeout(
                ANSWER_TIMEOUT,
                c.invoke(request(code, &ext, body), ANSWER_TIMEOUT),
            )
            .await
        });
        match answer {
            Ok(Ok(r)) => {
                if r.code != i32::from(ResponseCode::Success)
                    && r.remark.as_deref().unwrap_or("").is_empty()
                {
                    return Err(TestCaseError::fail(format!(
                        "code {code}: refusal {} without a remark",
                        r.code
                    )));
                }
                Ok(())
            }
            Ok(Err(e)) => Err(TestCaseError::fail(format!(
                "code {code}: connection failed: {e}"
            ))),
            Err(_) => Err(TestCaseError::fail(format!(
                "code {code}: no answer in {ANSWER_TIMEOUT:?}"
            ))),
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    rt.block_on(normal_round_trip(&c));
    let disk_grew = dir_bytes(&store).saturating_sub(disk_before);
    let log_grew = rt.block_on(log_end(&c)) - log_before;
    let rss_grew = broker.rss_bytes().saturating_sub(rss_before);
    // 300 requests of at most a few KiB each: whatever some of them may
    // legitimately store, 64 MiB of disk and 256 MiB of memory are far
    // beyond it, and far below what the issue's attacks reached.
    assert!(
        disk_grew < 64 << 20,
        "store (CommitLog aside) grew by {disk_grew} bytes"
    );
    assert!(log_grew < 64 << 20, "CommitLog grew by {log_grew} bytes");
    assert!(rss_grew < 256 << 20, "the broker grew by {rss_grew} bytes");
    rt.block_on(broker.stop());
    rt.block_on(ns.stop());
}
