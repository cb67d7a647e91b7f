//! Timer messages (RocketMQ 5.x) end to end, once per timer store (wheel,
//! rocksdb): sends with TIMER_DELIVER_MS, TIMER_DELAY_SEC and
//! TIMER_DELAY_MS over the wire, each delivered to its real topic no
//! earlier than its due time less the precision and within
//! [`LATE_BOUND_MS`] after; 5.x's refusals; RECALL_MESSAGE; a crash
//! (`Broker::halt`, as kill -9 leaves the files) with timers pending, after
//! which a restart delivers every one (at least once), and a clean stop,
//! after which it delivers each exactly once. `java_timer_*` runs the same
//! checks through the stock 5.3.3 Java client (`Message.setDeliverTimeMs`,
//! `setDelayTimeSec`, `setDelayTimeMs`, `DefaultMQProducer.recallMessage`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_broker::config::Settings;
use rmq_client::RemotingClient;
use rmq_common::config::{CqBackend, TimerStoreType};
use rmq_common::constants::{property, AUTO_CREATE_TOPIC};
use rmq_common::message::batch::{encode_batch, BatchItem};
use rmq_common::message::record::RecordView;
use rmq_common::message::Properties;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode, SendMessageRequestHeader};
use rmq_store::{GetRequest, GetStatus, MessageStore, TagFilter};
use rmq_tests::broker_settings;
use rmq_tests::java::{self, Client};

/// timerPrecisionMs of these brokers (the default).
const PRECISION_MS: i64 = 1_000;
/// Past its due time, how late a message may arrive on a running broker.
const LATE_BOUND_MS: i64 = 3_000;
/// Longest any test waits for deliveries.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Poll interval while waiting for deliveries (reads of the real topic).
const POLL: Duration = Duration::from_millis(50);
/// Any request's answer.
const RPC_TIMEOUT: Duration = Duration::from_secs(10);

fn settings(root: &Path, timer: TimerStoreType) -> Settings {
    let mut s = broker_settings(root, CqBackend::File);
    s.store.timer_store_type = timer;
    s.broker.recall_message_enable = true;
    s
}

fn send_request(topic: &str, key: &str, timer: &[(&str, String)]) -> RemotingCommand {
    let mut props = Properties::new();
    props.insert(property::KEYS, key);
    props.insert(
        property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        format!("UNIQ-{key}"),
    );
    for (k, v) in timer {
        props.insert(*k, v.as_str());
    }
    let encoded = props.encode().unwrap();
    let header = SendMessageRequestHeader {
        producer_group: "TimerP".into(),
        topic: topic.into(),
        default_topic: AUTO_CREATE_TOPIC.into(),
        default_topic_queue_nums: 1,
        queue_id: 0,
        sys_flag: 0,
        born_timestamp: rmq_common::time::now_ms(),
        flag: 0,
        properties: Some(String::from_utf8(encoded).unwrap()),
        reconsume_times: 0,
        unit_mode: false,
        max_reconsume_times: None,
        batch: false,
        broker_name: None,
    };
    RemotingCommand::request(RequestCode::SendMessageV2)
        .with_ext_fields(header.to_ext_v2())
        .with_body(format!("body of {key}").into_bytes())
}

fn recall_request(topic: &str, handle: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::RecallMessage).with_ext_fields(
        [
            ("producerGroup", "TimerP"),
            ("topic", topic),
            ("recallHandle", handle),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect(),
    )
}

/// Sends one timer message; returns the answer and the earliest and
/// latest due time (a delay counts from the broker's receive time).
async fn send(
    c: &RemotingClient,
    topic: &str,
    key: &str,
    prop: &str,
    value: i64,
) -> (RemotingCommand, (i64, i64)) {
    let before = rmq_common::time::now_ms();
    let resp = c
        .invoke(
            send_request(topic, key, &[(prop, value.to_string())]),
            RPC_TIMEOUT,
        )
        .await
        .unwrap();
    let after = rmq_common::time::now_ms();
    let due = match prop {
        property::TIMER_DELAY_SEC => (before + value * 1000, after + value * 1000),
        property::TIMER_DELAY_MS => (before + value, after + value),
        _ => (value, value),
    };
    (resp, due)
}

/// One delivered copy: its key, store time and properties.
#[derive(Debug, Clone)]
struct Delivered {
    key: String,
    store_ms: i64,
    props: Properties,
}

fn delivered(store: &MessageStore, topic: &str) -> Vec<Delivered> {
    let mut out = Vec::new();
    let mut offset = 0;
    let filter = TagFilter::all();
    for _ in 0..10_000 {
        let Ok(r) = store.get_message(&GetRequest::new(topic, 0, offset, 64, &filter)) else {
            break;
        };
        if r.status != GetStatus::Found || r.messages.is_empty() {
            break;
        }
        for sel in &r.messages {
            let v = RecordView::parse(sel.bytes(), true).unwrap();
            out.push(Delivered {
                key: v.property(property::KEYS).unwrap_or_default().into_owned(),
                store_ms: v.store_timestamp(),
                props: v.properties(),
            });
        }
        offset = r.next_begin_offset;
    }
    out
}

/// Waits until every key of `keys` was delivered to `topic`.
async fn await_keys(store: &MessageStore, topic: &str, keys: &[String]) -> Vec<Delivered> {
    let deadline = Instant::now() + DELIVERY_TIMEOUT;
    loop {
        let got = delivered(store, topic);
        let missing: Vec<&String> = keys
            .iter()
            .filter(|k| !got.iter().any(|d| &d.key == *k))
            .collect();
        if missing.is_empty() {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} timer messages not delivered within {DELIVERY_TIMEOUT:?}: {missing:?}",
            missing.len(),
            keys.len()
        );
        tokio::time::sleep(POLL).await;
    }
}

fn check_on_time(d: &Delivered, due: (i64, i64), late_bound: Option<i64>) {
    assert!(
        d.store_ms >= due.0 - PRECISION_MS,
        "{} delivered {} ms before its due time",
        d.key,
        due.0 - d.store_ms
    );
    if let Some(late) = late_bound {
        assert!(
            d.store_ms <= due.1 + late,
            "{} delivered {} ms after its due time (bound {late} ms)",
            d.key,
            d.store_ms - due.1
        );
    }
    assert!(
        d.props.get(property::TIMER_OUT_MS).is_some(),
        "{}: {:?}",
        d.key,
        d.props
    );
    assert!(d.props.get(property::TIMER_DEQUEUE_MS).is_some());
    assert!(d.props.get(property::TIMER_ENQUEUE_MS).is_some());
    assert_eq!(d.props.get(property::REAL_TOPIC), None);
    assert_eq!(d.props.get(property::REAL_QUEUE_ID), None);
}

async fn each_property_is_delivered_on_time(timer: TimerStoreType) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), timer)).await.unwrap();
    let c = RemotingClient::connect(broker.addr()).await.unwrap();
    let topic = "TimerOnTime";
    let now = rmq_common::time::now_ms();
    let mut due = BTreeMap::new();
    for (key, prop, value) in [
        ("deliver-ms", property::TIMER_DELIVER_MS, now + 2_500),
        ("delay-sec", property::TIMER_DELAY_SEC, 2),
        ("delay-ms", property::TIMER_DELAY_MS, 2_300),
        // An exact multiple of the precision: filed one slot earlier, still
        // not delivered early.
        (
            "exact",
            property::TIMER_DELIVER_MS,
            now - now % 1000 + 3_000,
        ),
    ] {
        let (resp, d) = send(&c, topic, key, prop, value).await;
        assert_eq!(resp.code, 0, "{key}: {:?}", resp.remark);
        let handle = resp.ext_fields.get("recallHandle");
        assert!(
            handle.is_some_and(|h| !h.is_empty()),
            "{key}: {:?}",
            resp.ext_fields
        );
        due.insert(key.to_owned(), d);
    }
    // Stored in the timer topic, not the real one, until due.
    assert!(delivered(&broker.context().store, topic).is_empty());
    let keys: Vec<String> = due.keys().cloned().collect();
    let got = await_keys(&broker.context().store, topic, &keys).await;
    assert_eq!(got.len(), keys.len(), "each delivered once: {got:?}");
    for d in &got {
        check_on_time(d, due[&d.key], Some(LATE_BOUND_MS));
    }
    broker.shutdown().await;
}

async fn refusals_and_recall(timer: TimerStoreType) {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(settings(dir.path(), timer)).await.unwrap();
    let c = RemotingClient::connect(broker.addr()).await.unwrap();
    let topic = "TimerRecall";

    let (resp, _) = send(&c, topic, "too-far", property::TIMER_DELAY_SEC, 259_201).await;
    assert_eq!(resp.code, ResponseCode::MessageIllegal as i32);
    assert!(
        resp.remark
            .as_deref()
            .unwrap_or("")
            .contains("max delay 259200000ms"),
        "{:?}",
        resp.remark
    );
    let bad = send_request(topic, "nan", &[(property::TIMER_DELAY_MS, "soon".into())]);
    let resp = c.invoke(bad, RPC_TIMEOUT).await.unwrap();
    assert_eq!(
        resp.code,
        ResponseCode::MessageIllegal as i32,
        "{:?}",
        resp.remark
    );
    let mut batch = send_request(topic, "batch", &[]);
    batch.code = RequestCode::SendBatchMessage as i32;
    batch.body = Some(
        encode_batch(&[BatchItem {
            flag: 0,
            body: b"b".to_vec(),
            properties: b"TIMER_DELAY_SEC\x015\x02".to_vec(),
        }])
        .into(),
    );
    let resp = c.invoke(batch, RPC_TIMEOUT).await.unwrap();
    assert_eq!(
        resp.code,
        ResponseCode::MessageIllegal as i32,
        "{:?}",
        resp.remark
    );

    let (kept, kept_due) = send(&c, topic, "kept", property::TIMER_DELAY_SEC, 2).await;
    let (gone, _) = send(&c, topic, "recalled", property::TIMER_DELAY_SEC, 2).await;
    assert_eq!((kept.code, gone.code), (0, 0));
    let handle = gone.ext_fields.get("recallHandle").cloned().unwrap();
    for (t, h, code, remark) in [
        (
            "NoSuchTopic",
            handle.as_str(),
            ResponseCode::TopicNotExist,
            "recall failed, the topic[NoSuchTopic] not exist",
        ),
        (
            topic,
            "not base64!",
            ResponseCode::IllegalOperation,
            "recall handle is invalid",
        ),
    ] {
        let resp = c.invoke(recall_request(t, h), RPC_TIMEOUT).await.unwrap();
        assert_eq!(resp.code, code as i32, "{:?}", resp.remark);
        assert_eq!(resp.remark.as_deref(), Some(remark));
    }
    // The send auto-created the other topic, so only the handle mismatches.
    let other = send_request("TimerOther", "x", &[]);
    assert_eq!(c.invoke(other, RPC_TIMEOUT).await.unwrap().code, 0);
    let resp = c
        .invoke(recall_request("TimerOther", &handle), RPC_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(resp.code, ResponseCode::IllegalOperation as i32);
    assert_eq!(
        resp.remark.as_deref(),
        Some("recall failed, topic not match")
    );

    let resp = c
        .invoke(recall_request(topic, &handle), RPC_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert_eq!(
        resp.ext_fields.get("msgId").map(String::as_str),
        Some("UNIQ-recalled")
    );

    let got = await_keys(&broker.context().store, topic, &["kept".to_owned()]).await;
    check_on_time(&got[0], kept_due, Some(LATE_BOUND_MS));
    // The recalled message shares the slot: it is decided with it, but
    // give the dequeue side a further slot before looking.
    tokio::time::sleep(Duration::from_millis(PRECISION_MS as u64 + 500)).await;
    let keys: Vec<String> = delivered(&broker.context().store, topic)
        .into_iter()
        .map(|d| d.key)
        .collect();
    assert_eq!(
        keys,
        vec!["kept".to_owned()],
        "the recalled message was delivered"
    );
    let timers = broker.context().timers.clone().unwrap();
    assert_eq!(
        timers
            .counts()
            .recalled
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    broker.shutdown().await;
}

/// Messages pending at a crash (kill -9: `halt` leaves the files as they
/// are, unflushed, with no last checkpoint) are all delivered after the
/// restart: none lost, duplicates allowed (at least once), none early.
async fn crash_with_timers_pending_delivers_every_one(timer: TimerStoreType) {
    let dir = tempfile::tempdir().unwrap();
    let topic = "TimerCrash";
    let mut due = BTreeMap::new();
    {
        let broker = Broker::start(settings(dir.path(), timer)).await.unwrap();
        let c = RemotingClient::connect(broker.addr()).await.unwrap();
        for i in 0..120i64 {
            let key = format!("k{i:03}");
            let (resp, d) = send(&c, topic, &key, property::TIMER_DELAY_MS, 1_000 + i * 25).await;
            assert_eq!(resp.code, 0, "{:?}", resp.remark);
            due.insert(key, d);
        }
        // Some are delivered, some pending, when the broker dies.
        let first = vec!["k000".to_owned()];
        await_keys(&broker.context().store, topic, &first).await;
        broker.halt().await;
    }
    let broker = Broker::start(settings(dir.path(), timer)).await.unwrap();
    let keys: Vec<String> = due.keys().cloned().collect();
    let got = await_keys(&broker.context().store, topic, &keys).await;
    for d in &got {
        check_on_time(d, due[&d.key], None);
    }
    eprintln!(
        "{timer}: {} timer messages, {} deliveries after a crash and a restart",
        keys.len(),
        got.len()
    );
    broker.shutdown().await;
}

/// A clean stop with timers pending checkpoints both positions: the
/// restart delivers each exactly once.
async fn clean_stop_with_timers_pending_delivers_each_once(timer: TimerStoreType) {
    let dir = tempfile::tempdir().unwrap();
    let topic = "TimerStop";
    let mut due = BTreeMap::new();
    {
        let broker = Broker::start(settings(dir.path(), timer)).await.unwrap();
        let c = RemotingClient::connect(broker.addr()).await.unwrap();
        for i in 0..60i64 {
            let key = format!("k{i:03}");
            let (resp, d) = send(&c, topic, &key, property::TIMER_DELAY_MS, 1_500 + i * 20).await;
            assert_eq!(resp.code, 0, "{:?}", resp.remark);
            due.insert(key, d);
        }
        broker.shutdown().await;
    }
    let broker = Broker::start(settings(dir.path(), timer)).await.unwrap();
    let keys: Vec<String> = due.keys().cloned().collect();
    let got = await_keys(&broker.context().store, topic, &keys).await;
    // Anything still in flight shows within another slot.
    tokio::time::sleep(Duration::from_millis(PRECISION_MS as u64)).await;
    let got_after = delivered(&broker.context().store, topic);
    assert_eq!(
        got_after.len(),
        keys.len(),
        "duplicates after a clean stop: {got:?}"
    );
    for d in &got_after {
        check_on_time(d, due[&d.key], None);
    }
    broker.shutdown().await;
}

macro_rules! per_timer_store {
    ($($name:ident),+ $(,)?) => {
        mod wheel {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name(rmq_common::config::TimerStoreType::Wheel).await } )+
        }
        mod rocksdb {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $name() { super::$name(rmq_common::config::TimerStoreType::Rocksdb).await } )+
        }
    };
}

per_timer_store!(
    each_property_is_delivered_on_time,
    refusals_and_recall,
    crash_with_timers_pending_delivers_every_one,
    clean_stop_with_timers_pending_delivers_each_once,
    java_timer,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_disabled_are_refused_with_5x_remark() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(dir.path(), TimerStoreType::Wheel);
    s.store.timer_wheel_enable = false;
    let broker = Broker::start(s).await.unwrap();
    let c = RemotingClient::connect(broker.addr()).await.unwrap();
    let (resp, _) = send(&c, "TimerOff", "off", property::TIMER_DELAY_SEC, 5).await;
    assert_eq!(resp.code, ResponseCode::SystemError as i32);
    assert_eq!(
        resp.remark.as_deref(),
        Some("accurate timer message is not enabled, timerWheelEnable is false")
    );
    assert!(!dir.path().join("timerwheel").exists());
    broker.shutdown().await;
}

/// The JVM's own deadline for the scenario, and the backstop kill.
const JAVA_DEADLINE: Duration = Duration::from_secs(60);
const JAVA_RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// The 5.3.3 Java client's scenario `timer` (`tests/java/src/v5`).
async fn java_timer(timer: TimerStoreType) {
    let client = Client::V5;
    java::require_java_and_jars(client);
    let main = client.target().join("classes/rmqcheck/TimerScenario.class");
    assert!(
        main.is_file(),
        "{} is missing; {}",
        main.display(),
        java::SETUP_HINT
    );
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("java");
    std::fs::create_dir_all(&home).unwrap();
    let broker = Broker::start(settings(&dir.path().join("store"), timer))
        .await
        .unwrap();
    let ns = broker.namesrv_addr().expect("embedded NameServer");
    let args: Vec<String> = [
        "--namesrv",
        &ns.to_string(),
        "--scenario",
        "timer",
        "--topic-prefix",
        &format!("JavaTimer{timer}"),
        "--timeout-ms",
        &JAVA_DEADLINE.as_millis().to_string(),
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let run = java::run_main(
        client,
        "rmqcheck.ClientSuite",
        &args,
        &home,
        JAVA_RUN_TIMEOUT,
    )
    .await;
    broker.shutdown().await;
    let what = format!(
        "java timer ({timer}; client log under {})",
        home.join("logs").display()
    );
    assert!(run.succeeded(), "{}", run.report(&what));
    assert!(
        run.stdout.lines().any(|l| l.starts_with("PASS timer")),
        "{}",
        run.report(&format!("{what} printed no PASS line"))
    );
}

/// Store level, manual clock: a timer 2.5 days out lies beyond the wheel's
/// roll window (2 days): the wheel files it at a roll point (1 day out),
/// puts it back into the timer topic there (`TIMER_ROLL_TIMES` 1), files
/// it again at its own slot and delivers it then, never before. RocksDB
/// has no horizon and files it directly.
async fn a_timer_beyond_the_roll_window_is_rolled_then_delivered(timer: TimerStoreType) {
    use rmq_broker::service::timer::{rewrite, PassEnd, Timers};
    use rmq_common::message::MessageToStore;
    use rmq_common::time::{Clock, ManualClock};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    const T0: i64 = 1_750_000_000_000;
    const DAY: i64 = 86_400_000;
    let dir = tempfile::tempdir().unwrap();
    let mut config = rmq_tests::small_config(dir.path(), CqBackend::File);
    config.timer_store_type = timer;
    let clock = Arc::new(ManualClock::new(T0));
    let store =
        Arc::new(rmq_tests::open_store_with_clock(&config, Arc::clone(&clock) as _).unwrap());
    let timers = Timers::open(Arc::clone(&store), Arc::clone(&store) as _).unwrap();
    let due = T0 + 5 * DAY / 2;
    let mut m = MessageToStore::new("TimerFar", 0, b"far".to_vec());
    m.properties.insert(property::KEYS, "far");
    m.properties
        .insert(property::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "UNIQ-far");
    m.properties
        .insert(property::TIMER_DELIVER_MS, due.to_string());
    assert_eq!(rewrite::apply(&mut m, T0, store.config()), Ok(true));
    store.put_message(&m).unwrap();
    rmq_tests::wait_dispatched(&store);
    // Runs both sides until neither has work at the clock's time.
    let settle = || {
        for _ in 0..1_000 {
            let e = timers.enqueue_pass().unwrap();
            let d = timers.dequeue_pass().unwrap();
            rmq_tests::wait_dispatched(&store);
            let idle = e != PassEnd::Budget && d != PassEnd::Budget;
            if idle && timers.enqueue_lag() == 0 && timers.read_ms() + 1_000 > clock.now_ms() {
                return;
            }
        }
        panic!("the timer service did not settle");
    };
    settle();
    assert_eq!(timers.backlog(), 1);
    let rolls = if timer == TimerStoreType::Wheel { 1 } else { 0 };
    // One day on: the wheel's roll point has passed.
    clock.set(T0 + DAY + 1_000);
    settle();
    assert_eq!(timers.counts().rolled.load(Ordering::Relaxed), rolls);
    assert!(delivered(&store, "TimerFar").is_empty());
    // Just before the due time: still nothing.
    clock.set(due - 1_000);
    settle();
    assert!(delivered(&store, "TimerFar").is_empty(), "delivered early");
    clock.set(due + 1_000);
    settle();
    let got = delivered(&store, "TimerFar");
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].store_ms >= due - PRECISION_MS);
    let roll_prop = got[0]
        .props
        .get(property::TIMER_ROLL_TIMES)
        .map(str::to_owned);
    assert_eq!(roll_prop, (rolls == 1).then(|| "1".to_owned()));
    assert_eq!(timers.backlog(), 0);
    store.shutdown().unwrap();
}

mod roll {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn wheel() {
        super::a_timer_beyond_the_roll_window_is_rolled_then_delivered(
            rmq_common::config::TimerStoreType::Wheel,
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rocksdb() {
        super::a_timer_beyond_the_roll_window_is_rolled_then_delivered(
            rmq_common::config::TimerStoreType::Rocksdb,
        )
        .await
    }
}
