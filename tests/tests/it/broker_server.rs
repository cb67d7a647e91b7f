//! Black-box tests of the broker over its real protocol, on 127.0.0.1 with
//! ports chosen by the OS.

use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, PullRequest, SendCode};
use rmq_common::config::CqBackend;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tests::{broker_settings, start_broker};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Longest a held pull may take beyond its suspend time.
const LONG_POLL_SLACK: Duration = Duration::from_secs(5);

fn msg(body: &str, tag: &str) -> OutMessage {
    OutMessage {
        body: body.as_bytes().to_vec(),
        tags: Some(tag.into()),
        keys: vec![format!("key-{body}")],
        properties: Vec::new(),
    }
}

fn pull_req(topic: &str, queue_id: i32, offset: i64, sub: &str) -> PullRequest {
    PullRequest {
        group: "g1".into(),
        topic: topic.into(),
        queue_id,
        offset,
        max_msgs: 32,
        subscription: Some(sub.into()),
        suspend: None,
        commit_offset: None,
    }
}

async fn send_pull_round_trip(backend: CqBackend) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), backend).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let r1 = sdk::send(&c, SendCode::V1, "p", "RT", 0, &[msg("a", "TagA")])
        .await
        .unwrap();
    let r2 = sdk::send(&c, SendCode::V2, "p", "RT", 0, &[msg("b", "TagB")])
        .await
        .unwrap();
    let r3 = sdk::send(
        &c,
        SendCode::V2,
        "p",
        "RT",
        0,
        &[msg("c", "TagA"), msg("d", "TagB")],
    )
    .await
    .unwrap();
    assert_eq!(
        (r1.queue_offset, r2.queue_offset, r3.queue_offset),
        (0, 1, 2)
    );
    assert_eq!(
        r3.msg_id.split(',').count(),
        2,
        "one offsetMsgId per batch message"
    );
    // The batch flag on code 10 (one real client sends batches that way).
    let mut header = rmq_common::remoting::SendMessageRequestHeader::from_ext(
        &RemotingCommand::request(0)
            .with_ext_fields(
                [
                    ("producerGroup", "p"),
                    ("topic", "RT"),
                    ("queueId", "0"),
                    ("batch", "true"),
                ]
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            )
            .ext(),
    )
    .unwrap();
    header.batch = true;
    let body = rmq_common::message::batch::encode_batch(&[rmq_common::message::batch::BatchItem {
        flag: 0,
        body: b"e".to_vec(),
        properties: b"TAGS\x01TagB\x02".to_vec(),
    }]);
    let req = RemotingCommand::request(RequestCode::SendMessage)
        .with_ext_fields(header.to_ext())
        .with_body(body);
    let resp = c.invoke(req, sdk::DEFAULT_TIMEOUT).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);

    // Sends are answered once stored; dispatch follows. A long poll waits
    // for the consume queue to have all five.
    let mut req = pull_req("RT", 0, 0, "*");
    req.suspend = Some(Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(20);
    let all = loop {
        let r = sdk::pull(&c, &req).await.unwrap();
        if r.max_offset == 5 && r.messages.len() == 5 {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "five messages never became readable"
        );
    };
    assert_eq!(all.code, 0);
    let bodies: Vec<&[u8]> = all.messages.iter().map(|m| m.body.as_slice()).collect();
    assert_eq!(bodies, vec![&b"a"[..], b"b", b"c", b"d", b"e"]);
    assert_eq!(
        (all.next_begin_offset, all.min_offset, all.max_offset),
        (5, 0, 5)
    );
    let only_b = sdk::pull(&c, &pull_req("RT", 0, 0, "TagB")).await.unwrap();
    let bodies: Vec<&[u8]> = only_b.messages.iter().map(|m| m.body.as_slice()).collect();
    assert_eq!(bodies, vec![&b"b"[..], b"d", b"e"]);
    let none = sdk::pull(&c, &pull_req("RT", 0, 5, "*")).await.unwrap();
    assert_eq!(none.code, i32::from(ResponseCode::PullNotFound));
    let moved = sdk::pull(&c, &pull_req("RT", 0, 50, "*")).await.unwrap();
    assert_eq!(moved.code, i32::from(ResponseCode::PullOffsetMoved));

    // Route lookup through the embedded NameServer sees the auto-created topic.
    let ns = sdk::connect(broker.namesrv_addr().unwrap()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let route = loop {
        let resp = ns
            .invoke(
                sdk::request(RequestCode::GetRouteInfoByTopic, &[("topic", "RT".into())]),
                sdk::DEFAULT_TIMEOUT,
            )
            .await
            .unwrap();
        if resp.code == 0 {
            break resp;
        }
        assert!(Instant::now() < deadline, "route never appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let json: serde_json::Value = serde_json::from_slice(route.body.as_deref().unwrap()).unwrap();
    assert_eq!(
        json["brokerDatas"][0]["brokerAddrs"]["0"],
        broker.addr().to_string()
    );
    assert_eq!(json["queueDatas"][0]["writeQueueNums"], 4);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_pull_round_trip_file() {
    send_pull_round_trip(CqBackend::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_pull_round_trip_rocksdb() {
    send_pull_round_trip(CqBackend::Rocksdb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_polling_wakes_on_arrival_and_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    sdk::send(&c, SendCode::V2, "p", "LP", 1, &[msg("first", "T")])
        .await
        .unwrap();
    // A consumer reaches offset 1 only after reading offset 0; doing the same
    // here also waits until reput has dispatched "first" (a pull past a
    // queue's max would be OFFSET_MOVED, not a long poll).
    let mut first = pull_req("LP", 1, 0, "*");
    first.suspend = Some(LONG_POLL_SLACK);
    let r = sdk::pull(&c, &first).await.unwrap();
    assert_eq!((r.code, r.messages.len()), (0, 1));
    // Nothing new: answered PULL_NOT_FOUND once the suspend time has passed.
    let mut req = pull_req("LP", 1, 1, "*");
    req.suspend = Some(Duration::from_millis(400));
    let started = Instant::now();
    let r = sdk::pull(&c, &req).await.unwrap();
    assert_eq!(r.code, i32::from(ResponseCode::PullNotFound));
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert!(started.elapsed() < Duration::from_millis(400) + LONG_POLL_SLACK);

    // A held pull is answered as soon as a message arrives.
    req.suspend = Some(Duration::from_secs(30));
    let c2 = sdk::connect(broker.addr()).await.unwrap();
    let held = tokio::spawn(async move {
        let started = Instant::now();
        (sdk::pull(&c2, &req).await.unwrap(), started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    sdk::send(&c, SendCode::V2, "p", "LP", 1, &[msg("second", "T")])
        .await
        .unwrap();
    let (r, waited) = tokio::time::timeout(LONG_POLL_SLACK, held)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.code, 0);
    assert_eq!(r.messages[0].body, b"second");
    assert!(waited < Duration::from_secs(30));
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::Rocksdb).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    for i in 0..5 {
        sdk::send(
            &c,
            SendCode::V2,
            "p",
            "Off",
            0,
            &[msg(&format!("m{i}"), "T")],
        )
        .await
        .unwrap();
    }
    sdk::commit_offset(&c, "g1", "Off", 0, 3).await.unwrap();
    // A pull with the commit flag also stores progress (for queue 1: none yet).
    let mut p = pull_req("Off", 0, 3, "*");
    p.commit_offset = Some(4);
    sdk::pull(&c, &p).await.unwrap();
    let query = |q: i32| {
        sdk::request(
            RequestCode::QueryConsumerOffset,
            &[
                ("consumerGroup", "g1".into()),
                ("topic", "Off".into()),
                ("queueId", q.to_string()),
            ],
        )
    };
    assert_eq!(
        sdk::call(&c, query(0))
            .await
            .unwrap()
            .ext()
            .req_i64("offset")
            .unwrap(),
        4
    );
    // Dispatch follows the append: the max offset reaches 5 shortly after.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let max = sdk::call(
            &c,
            sdk::request(
                RequestCode::GetMaxOffset,
                &[("topic", "Off".into()), ("queueId", "0".into())],
            ),
        )
        .await
        .unwrap();
        if max.ext().req_i64("offset").unwrap() == 5 {
            break;
        }
        assert!(Instant::now() < deadline, "max offset never reached 5");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    c.close().await;
    broker.shutdown().await;

    let broker = start_broker(dir.path(), CqBackend::Rocksdb).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    assert_eq!(
        sdk::call(&c, query(0))
            .await
            .unwrap()
            .ext()
            .req_i64("offset")
            .unwrap(),
        4
    );
    // Nothing stored for queue 1 while its data starts at 0: SUCCESS with 0.
    assert_eq!(
        sdk::call(&c, query(1))
            .await
            .unwrap()
            .ext()
            .req_i64("offset")
            .unwrap(),
        0
    );
    let r = sdk::pull(&c, &pull_req("Off", 0, 4, "*")).await.unwrap();
    assert_eq!(r.messages.len(), 1);
    // ali-ons commits -1 for a queue it has not consumed: Java 4.9.7 takes
    // it (SUCCESS) and then answers as for a group with no offset there.
    sdk::commit_offset(&c, "g1", "Off", 1, -1)
        .await
        .expect("commitOffset -1 is taken, as Java 4.9.7 takes it");
    let after = sdk::call(&c, query(1)).await.unwrap();
    assert_eq!(after.ext().req_i64("offset").unwrap(), 0);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_documented_outcomes_and_the_broker_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let good = sdk::connect(broker.addr()).await.unwrap();

    // Garbage bytes: that connection is closed.
    let mut raw = tokio::net::TcpStream::connect(broker.addr()).await.unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(10), raw.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without an answer");

    // A frame announcing more than 16 MiB: closed before it is buffered.
    let mut raw = tokio::net::TcpStream::connect(broker.addr()).await.unwrap();
    raw.write_all(&(17 * 1024 * 1024i32).to_be_bytes())
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(10), raw.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0);

    // Unknown code.
    let resp = good
        .invoke(RemotingCommand::request(9999), sdk::DEFAULT_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(resp.code, i32::from(ResponseCode::RequestCodeNotSupported));
    assert!(resp.remark.unwrap_or_default().contains("9999"));

    // Illegal topic.
    let err = sdk::send(&good, SendCode::V2, "p", "bad/topic", 0, &[msg("x", "T")])
        .await
        .unwrap_err();
    assert!(
        matches!(err, sdk::SdkError::Refused { code: 1, ref remark } if remark.contains("bad/topic")),
        "{err}"
    );

    // Oversized body.
    let big = OutMessage {
        body: vec![0u8; 1024 * 1024 + 1],
        ..OutMessage::default()
    };
    let err = sdk::send(&good, SendCode::V2, "p", "Big", 0, &[big])
        .await
        .unwrap_err();
    assert!(
        matches!(err, sdk::SdkError::Refused { code: 13, .. }),
        "{err}"
    );

    // A header field that is not a number.
    let mut req = RemotingCommand::request(RequestCode::PullMessage);
    req.put_ext("consumerGroup", "g");
    req.put_ext("topic", "Big");
    req.put_ext("queueId", "zero");
    let resp = good.invoke(req, sdk::DEFAULT_TIMEOUT).await.unwrap();
    assert_eq!(resp.code, i32::from(ResponseCode::SystemError));
    assert!(resp.remark.unwrap_or_default().contains("queueId"));

    // The good connection still works.
    let r = sdk::send(&good, SendCode::V2, "p", "StillOk", 0, &[msg("y", "T")])
        .await
        .unwrap();
    assert_eq!(r.queue_offset, 0);
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_registers_with_a_standalone_namesrv_over_tcp() {
    let ns_dir = tempfile::tempdir().unwrap();
    let mut ns_settings = broker_settings(ns_dir.path(), CqBackend::File);
    ns_settings.broker.namesrv_listen_port = 0;
    let ns = rmq_broker::broker::run_namesrv_only(&ns_settings)
        .await
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut settings = broker_settings(dir.path(), CqBackend::File);
    settings.broker.namesrv_listen_port = -1;
    settings.broker.namesrv_addr = ns.addr().to_string();
    settings.broker.broker_name = "broker-remote".into();
    let broker = Broker::start(settings).await.unwrap();
    assert!(broker.namesrv_addr().is_none(), "no embedded NameServer");
    // Registration happened before start returned.
    let cluster = rmq_tools::admin::cluster_list(&rmq_client::Connector::new(), ns.addr())
        .await
        .unwrap();
    assert!(
        cluster.contains("broker-remote") && cluster.contains(&broker.addr().to_string()),
        "{cluster}"
    );
    broker.shutdown().await;
    ns.shutdown().await;
}

/// A broker whose `config/topics.json` is damaged does not start, and says
/// which file is wrong (not a store offset); nothing of the store is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_topics_file_stops_start_up_with_the_file_named_and_what_started_stops() {
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = start_broker(dir.path(), CqBackend::File).await;
        let c = sdk::connect(broker.addr()).await.unwrap();
        let sent = sdk::send(&c, SendCode::V2, "p", "meta-t", 0, &[msg("kept", "A")])
            .await
            .unwrap();
        assert_eq!(sent.queue_offset, 0);
        broker.shutdown().await;
    }
    let topics = dir.path().join("config").join("topics.json");
    let good = std::fs::read(&topics).unwrap();
    std::fs::write(&topics, b"{\"topicConfigTable\": {\"meta-t\": ").unwrap();
    // The embedded NameServer starts before the tables are read, on a port
    // picked here so it can be looked at after the failure.
    let namesrv_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut settings = broker_settings(dir.path(), CqBackend::File);
    settings.broker.namesrv_listen_port = i32::from(namesrv_port);
    let err = Broker::start(settings)
        .await
        .expect_err("a damaged topics.json stops start-up");
    let text = err.to_string();
    assert!(text.contains("topics.json"), "{text}");
    assert!(text.contains("is not valid"), "{text}");
    assert!(!text.contains("message store"), "{text}");
    // What the failed start had started stopped with it: its NameServer's
    // port is free again.
    std::net::TcpListener::bind(("127.0.0.1", namesrv_port))
        .unwrap_or_else(|e| panic!("the failed start's NameServer still holds its port: {e}"));

    std::fs::write(&topics, good).unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let c = sdk::connect(broker.addr()).await.unwrap();
    let pulled = sdk::pull(&c, &pull_req("meta-t", 0, 0, "*")).await.unwrap();
    assert_eq!(pulled.messages.len(), 1);
    broker.shutdown().await;
}

/// RocketMQ's fast (VIP) port: listenPort - 2, serving the same requests
/// (a Java slave copies its master's topics there; clients with
/// `vipChannelEnabled` send there). With listenPort 0 the pair is picked
/// together; `fastListenPort=-1` opens none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fast_port_is_listen_port_minus_2_and_serves_the_same_requests() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), CqBackend::File).await;
    let fast = broker.fast_addr().expect("a fast port by default");
    assert_eq!(fast.ip(), broker.addr().ip());
    assert_eq!(fast.port(), broker.addr().port() - 2);
    let c = sdk::connect(fast).await.unwrap();
    sdk::call(
        &c,
        sdk::request(
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", "Vip".into()),
                ("readQueueNums", "1".into()),
                ("writeQueueNums", "1".into()),
            ],
        ),
    )
    .await
    .unwrap();
    let r = sdk::send(&c, SendCode::V2, "p", "Vip", 0, &[msg("over-vip", "T")])
        .await
        .unwrap();
    assert_eq!(r.code, 0);
    // What the fast port took, the main port serves, and the other way.
    let main = sdk::connect(broker.addr()).await.unwrap();
    let got = sdk::pull(&main, &pull_req("Vip", 0, 0, "*")).await.unwrap();
    assert_eq!(got.messages.len(), 1);
    let req = RemotingCommand::request(RequestCode::GetAllTopicConfig);
    let topics = sdk::call(&c, req).await.unwrap();
    assert!(String::from_utf8_lossy(topics.body.as_deref().unwrap()).contains("\"Vip\""));
    broker.shutdown().await;

    let dir = tempfile::tempdir().unwrap();
    let mut s = broker_settings(dir.path(), CqBackend::File);
    s.broker.fast_listen_port = -1;
    let broker = Broker::start(s).await.unwrap();
    assert!(broker.fast_addr().is_none());
    broker.shutdown().await;
}
