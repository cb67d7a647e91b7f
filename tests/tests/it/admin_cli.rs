//! `rmq-admin`'s output against a running broker.

use std::time::{Duration, Instant};

use rmq_broker::broker::Broker;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::config::CqBackend;
use rmq_tests::broker_settings;
use rmq_tools::admin;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_print_what_the_broker_holds() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::start(broker_settings(dir.path(), CqBackend::Rocksdb))
        .await
        .unwrap();
    let (b, ns) = (broker.addr(), broker.namesrv_addr().unwrap());

    let out = admin::topic_create(&rmq_client::Connector::new(), b, "Adm", 3, 6)
        .await
        .unwrap();
    assert!(out.contains("Adm") && out.contains("3 queues"), "{out}");
    let list = admin::topic_list(&rmq_client::Connector::new(), b)
        .await
        .unwrap();
    assert!(
        list.lines()
            .any(|l| l.starts_with("Adm ") && l.contains(" 3 ")),
        "{list}"
    );
    assert!(list.contains("TBW102"));

    let c = sdk::connect(b).await.unwrap();
    let mut last = None;
    for i in 0..7 {
        let m = OutMessage {
            body: format!("hello-{i}").into_bytes(),
            keys: vec![format!("order-{i}")],
            ..OutMessage::default()
        };
        last = Some(
            sdk::send(&c, SendCode::V2, "p", "Adm", i % 3, &[m])
                .await
                .unwrap(),
        );
    }
    // Wait (bounded) until dispatch made all seven visible.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let s = admin::topic_status(&rmq_client::Connector::new(), b, "Adm")
            .await
            .unwrap();
        if s.contains("             3")
            && s.lines().filter(|l| l.trim_end().ends_with(" 2")).count() == 2
        {
            break s;
        }
        assert!(Instant::now() < deadline, "{s}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(status.lines().count(), 4, "{status}");

    sdk::commit_offset(&c, "cg", "Adm", 0, 1).await.unwrap();
    let progress = admin::consumer_progress(&rmq_client::Connector::new(), b, "cg", "Adm")
        .await
        .unwrap();
    assert!(progress.contains("total lag: 6"), "{progress}");

    let by_key = admin::query_key(&rmq_client::Connector::new(), b, "Adm", "order-4")
        .await
        .unwrap();
    assert!(by_key.contains("body=\"hello-4\""), "{by_key}");
    let by_id = admin::query_id(&rmq_client::Connector::new(), &last.unwrap().msg_id)
        .await
        .unwrap();
    assert!(by_id.contains("body=\"hello-6\""), "{by_id}");

    let cluster = admin::cluster_list(&rmq_client::Connector::new(), ns)
        .await
        .unwrap();
    assert!(
        cluster.contains("DefaultCluster") && cluster.contains(&b.to_string()),
        "{cluster}"
    );
    let config = admin::broker_config(&rmq_client::Connector::new(), b)
        .await
        .unwrap();
    assert!(config.contains("consumeQueueStore=rocksdb"), "{config}");
    assert!(config.contains("brokerName=broker-a"));
    broker.shutdown().await;
}
