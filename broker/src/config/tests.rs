//! Unit tests of the key handling: our keys, RocketMQ 5.3.3's, the three
//! sources.

use super::*;
use rmq_common::config::CqBackend;
use rmq_common::FlushDiskType;

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn negative_values_for_signed_keys_and_named_range_errors() {
    let s =
        Settings::from_pairs(pairs(&[("metricsPort", "-1"), ("namesrvListenPort", "-1")])).unwrap();
    assert_eq!(s.broker.metrics_port, -1);
    assert_eq!(s.broker.namesrv_listen_port, -1);
    let e = Settings::from_pairs(pairs(&[("listenPort", "-1")])).unwrap_err();
    assert!(e.to_string().contains("listenPort"), "{e}");
}

#[test]
fn defaults_and_overrides() {
    let s = Settings::from_pairs(pairs(&[
        ("listenPort", "10912"),
        ("BROKERNAME", "broker-b"),
        ("flushDiskType", "SYNC_FLUSH"),
        ("storeType", "rocksdb"),
        ("checkcrconrecover", "false"),
        ("brokerIP1", "10.1.2.3"),
    ]))
    .unwrap();
    assert_eq!(s.broker.listen_port, 10912);
    assert_eq!(s.broker.broker_name, "broker-b");
    assert_eq!(s.broker.broker_ip1, "10.1.2.3");
    assert_eq!(s.store.flush_disk_type, FlushDiskType::SyncFlush);
    assert_eq!(s.store.consume_queue_store, CqBackend::Rocksdb);
    assert!(!s.store.check_crc_on_recover);
    assert_eq!(
        Settings::from_pairs(Vec::new()).unwrap(),
        Settings::default()
    );
}

#[test]
fn errors_name_the_key() {
    let e = Settings::from_pairs(pairs(&[("listenPort", "abc")])).unwrap_err();
    assert_eq!(e.key, "listenPort");
    let e = Settings::from_pairs(pairs(&[("noSuchKey", "1")])).unwrap_err();
    assert!(e.to_string().contains("noSuchKey"), "{e}");
    let e = Settings::from_pairs(pairs(&[("consumeQueueStore", "leveldb")])).unwrap_err();
    assert!(
        e.to_string().contains("consumeQueueStore") || e.to_string().contains("leveldb"),
        "{e}"
    );
    let e = Settings::from_pairs(pairs(&[("mappedFileSizeCommitLog", "10")])).unwrap_err();
    assert_eq!(e.key, "mappedFileSizeCommitLog");
    let e = Settings::from_pairs(pairs(&[("namesrvAddr", "nowhere")])).unwrap_err();
    assert_eq!(e.key, "namesrvAddr");
    let e = Settings::from_pairs(pairs(&[("messageDelayLevel", "1s 5x")])).unwrap_err();
    assert_eq!(e.key, "messageDelayLevel");
    assert!(e.to_string().contains("5x"), "{e}");
    let e = Settings::from_pairs(pairs(&[("messageDelayLevel", "10s 1s")])).unwrap_err();
    assert_eq!(e.key, "messageDelayLevel");
    let s = Settings::from_pairs(pairs(&[(
        "messageDelayLevel",
        "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s 19s 20s",
    )]))
    .unwrap();
    assert_eq!(s.store.delay_levels().unwrap().max_level(), 20);
    let e = Settings::from_pairs(pairs(&[("maxReconsumeTimes", "-1")])).unwrap_err();
    assert_eq!(e.key, "maxReconsumeTimes");
}

#[test]
fn rocketmq_keys_without_behaviour_are_taken_unparsed_and_listed() {
    let s = Settings::from_pairs(pairs(&[
        ("sendMessageThreadPoolNums", "16"),
        ("transientStorePoolEnable", "not-a-bool"),
        ("USEREENTRANTLOCKWHENPUTMESSAGE", "true"),
        ("osPageCacheBusyTimeOutMills", "1000x"),
        ("brokerName", "broker-b"),
    ]))
    .unwrap();
    assert_eq!(s.broker.broker_name, "broker-b");
    let names: Vec<&str> = s.unused.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "osPageCacheBusyTimeOutMills",
            "sendMessageThreadPoolNums",
            "transientStorePoolEnable",
            "useReentrantLockWhenPutMessage",
        ],
        "listed by their 5.3.3 spelling"
    );
    assert_eq!(s.unused["transientStorePoolEnable"], "not-a-bool");
    let line = s.unused_line().unwrap();
    assert!(line.contains("not used here"), "{line}");
    assert!(line.contains("sendMessageThreadPoolNums, transientStorePoolEnable"));
    assert_eq!(Settings::default().unused_line(), None);
    assert_eq!(
        Settings::key_use("sendmessagethreadpoolnums"),
        KeyUse::NotUsed("sendMessageThreadPoolNums")
    );
    assert_eq!(
        Settings::key_use("listenPort"),
        KeyUse::Ours("listenPort".into())
    );
    assert_eq!(Settings::key_use("noSuchKey"), KeyUse::Unknown);
    // A key neither RocketMQ nor this broker has is still refused.
    let e = Settings::from_pairs(pairs(&[("sendMessageThreadPoolNum", "16")])).unwrap_err();
    assert_eq!(e.key, "sendMessageThreadPoolNum");
    // Fields without a setter are no keys in Java either.
    let e = Settings::from_pairs(pairs(&[("isBrokerContainer", "true")])).unwrap_err();
    assert_eq!(e.key, "isBrokerContainer");
}

#[test]
fn rocketmq_names_of_our_settings_apply_and_name_themselves_in_errors() {
    let s = Settings::from_pairs(pairs(&[
        ("warmMapedFileEnable", "true"),
        ("useTLS", "true"),
        ("metricsPromExporterPort", "0"),
        ("storeType", "defaultRocksDB"),
        ("haMaxGapNotInSync", "1024"),
    ]))
    .unwrap();
    assert!(s.store.warm_mapped_file_enable);
    assert!(s.broker.tls_enable);
    assert_eq!(s.broker.metrics_port, 0);
    assert_eq!(s.store.consume_queue_store, CqBackend::Rocksdb);
    assert_eq!(s.broker.ha_max_gap_not_in_sync, 1024);
    assert!(s.unused.is_empty(), "{:?}", s.unused);
    let e = Settings::from_pairs(pairs(&[("warmMapedFileEnable", "maybe")])).unwrap_err();
    assert_eq!(e.key, "warmMapedFileEnable");
    let e = Settings::from_pairs(pairs(&[("metricsPromExporterPort", "70000")])).unwrap_err();
    assert_eq!(e.key, "metricsPromExporterPort");
    assert!(e.to_string().contains("metricsPort"), "{e}");
    assert_eq!(
        Settings::canonical_key("WARMMAPEDFILEENABLE").as_deref(),
        Some("warmMappedFileEnable")
    );
}

#[test]
fn every_5_3_3_key_is_taken() {
    for k in java::all() {
        assert_ne!(Settings::key_use(k.key), KeyUse::Unknown, "{}", k.key);
    }
}

#[test]
fn store_path_commit_log_and_broker_ip2_apply() {
    let s = Settings::from_pairs(pairs(&[
        ("storePathRootDir", "/data/store"),
        ("storePathCommitLog", "/disk2/commitlog"),
        ("brokerIP2", "10.0.0.2"),
    ]))
    .unwrap();
    assert_eq!(
        s.store.commit_log_dir(),
        std::path::PathBuf::from("/disk2/commitlog")
    );
    assert_eq!(s.broker.ha_ip(), "10.0.0.2");
    assert_eq!(Settings::default().broker.ha_ip(), "127.0.0.1");
    assert!(s.unused.is_empty());
    let e = Settings::from_pairs(pairs(&[("brokerIP2", "host-b")])).unwrap_err();
    assert_eq!(e.key, "brokerIP2");
    let e = Settings::from_pairs(pairs(&[("storePathCommitLog", "/a;/b")])).unwrap_err();
    assert_eq!(e.key, "storePathCommitLog");
}

#[test]
fn file_env_and_set_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.conf");
    std::fs::write(
        &path,
        "# broker.conf\nbrokerName = from-file\nlistenPort=1\ndefaultTopicQueueNums=4\n",
    )
    .unwrap();
    let s = Settings::load(&Sources {
        file: Some(&path),
        env: vec![
            ("RMQ_LISTENPORT".into(), "2".into()),
            ("HOME".into(), "/".into()),
        ],
        overrides: vec!["listenPort=3".into()],
    })
    .unwrap();
    assert_eq!(s.broker.broker_name, "from-file");
    assert_eq!(s.broker.default_topic_queue_nums, 4);
    assert_eq!(s.broker.listen_port, 3);
    let toml = dir.path().join("broker.toml");
    std::fs::write(&toml, "brokerName = \"t\"\nlongPollingEnable = false\n").unwrap();
    let s = Settings::load(&Sources {
        file: Some(&toml),
        ..Sources::default()
    })
    .unwrap();
    assert!(!s.broker.long_polling_enable);
    let e = Settings::load(&Sources {
        overrides: vec!["oops".into()],
        ..Sources::default()
    })
    .unwrap_err();
    assert_eq!(e.key, "--set");
    // The three sources treat RocketMQ's keys alike.
    std::fs::write(
        &path,
        "sendMessageThreadPoolNums=16\nwarmMapedFileEnable=true\n",
    )
    .unwrap();
    let s = Settings::load(&Sources {
        file: Some(&path),
        env: vec![("RMQ_TRANSIENTSTOREPOOLENABLE".into(), "true".into())],
        overrides: vec!["osPageCacheBusyTimeOutMills=1000".into()],
    })
    .unwrap();
    assert!(s.store.warm_mapped_file_enable);
    assert_eq!(
        s.unused.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "osPageCacheBusyTimeOutMills",
            "sendMessageThreadPoolNums",
            "transientStorePoolEnable"
        ]
    );
    for bad in [
        Sources {
            env: vec![("RMQ_NOSUCHKEY".into(), "1".into())],
            ..Sources::default()
        },
        Sources {
            overrides: vec!["noSuchKey=1".into()],
            ..Sources::default()
        },
    ] {
        let e = Settings::load(&bad).unwrap_err();
        assert!(e.key.eq_ignore_ascii_case("noSuchKey"), "{e}");
    }
}

#[test]
fn server_side_assignment_keys_are_applied() {
    use rmq_common::remoting::body::MessageRequestMode;
    let s = Settings::from_pairs(pairs(&[
        ("defaultMessageRequestMode", "POP"),
        ("defaultPopShareQueueNum", "2"),
        ("serverLoadBalancerEnable", "false"),
    ]))
    .unwrap();
    assert!(s.unused.is_empty(), "{:?}", s.unused);
    assert_eq!(
        s.broker.pop.default_message_request_mode,
        MessageRequestMode::Pop
    );
    assert_eq!(s.broker.pop.default_pop_share_queue_num, 2);
    assert!(!s.broker.pop.server_load_balancer_enable);
    let d = Settings::from_pairs(Vec::new()).unwrap();
    assert_eq!(
        d.broker.pop.default_message_request_mode,
        MessageRequestMode::Pull
    );
    assert_eq!(d.broker.pop.default_pop_share_queue_num, -1);
    // A flattened field's error loses its key (serde's flatten); the value
    // and the choices are named.
    let e = Settings::from_pairs(pairs(&[("defaultMessageRequestMode", "PUSH")])).unwrap_err();
    assert!(
        e.to_string().contains("`PUSH`, expected `PULL` or `POP`"),
        "{e}"
    );
}

/// Apache RocketMQ 5.3.3's namesrv.conf for a NameServer with its
/// controller, as an operator writes it for `NamesrvStartup -c`.
const APACHE_NAMESRV_CONF: &str = "\
listenPort=19876
bindAddress=127.0.0.1
kvConfigPath=/var/rmq/ns/kvConfig.json
configStorePath=/var/rmq/ns/namesrv.properties
productEnvName=prod
clusterTest=false
scanNotActiveBrokerInterval=5000
deleteTopicWithBrokerRegistration=true
enableControllerInNamesrv=true
controllerDLegerGroup=group1
controllerDLegerPeers=n0-127.0.0.1:19878
controllerDLegerSelfId=n0
controllerStorePath=/var/rmq/ns/controller
serverWorkerThreads=8
";

fn namesrv_conf(text: &str) -> Result<Settings, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("namesrv.conf");
    std::fs::write(&file, text).unwrap();
    Settings::load_namesrv(&Sources {
        file: Some(&file),
        ..Sources::default()
    })
}

#[test]
fn apache_namesrv_conf_is_read_as_its_namesrv_startup_reads_it() {
    let s = namesrv_conf(APACHE_NAMESRV_CONF).unwrap();
    assert_eq!(
        s.broker.namesrv_listen_port, 19876,
        "listenPort is the NameServer's"
    );
    assert_eq!(s.broker.listen_port, BrokerConfig::default().listen_port);
    assert_eq!(s.namesrv.bind_address.as_deref(), Some("127.0.0.1"));
    assert_eq!(
        s.namesrv.kv_config_path.as_deref(),
        Some(Path::new("/var/rmq/ns/kvConfig.json"))
    );
    assert_eq!(
        s.namesrv.config_store_path.as_deref(),
        Some(Path::new("/var/rmq/ns/namesrv.properties"))
    );
    assert!(s.namesrv.delete_topic_with_broker_registration);
    let c = s
        .controller_config()
        .unwrap()
        .expect("the controller is on");
    assert_eq!(c.group, "group1");
    // Keys both classes have reach both, as Java applies the file to both.
    assert_eq!(
        c.config_store_path,
        Path::new("/var/rmq/ns/namesrv.properties")
    );
    assert!(!s.unused.contains_key("scanNotActiveBrokerInterval"));
    for taken in ["productEnvName", "clusterTest", "serverWorkerThreads"] {
        assert!(
            s.unused.contains_key(taken),
            "{taken} is named as not used: {:?}",
            s.unused
        );
    }
    // The same file is not a broker's: Settings::load refuses what only a
    // NameServer takes.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("namesrv.conf");
    std::fs::write(&file, APACHE_NAMESRV_CONF).unwrap();
    let e = Settings::load(&Sources {
        file: Some(&file),
        ..Sources::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("kvConfigPath"), "{e}");
}

#[test]
fn namesrv_conf_mistakes_are_named() {
    let e = namesrv_conf("listenPort=19876\nnamesrvListenPort=19877\n").unwrap_err();
    assert!(e.to_string().contains("two ports"), "{e}");
    // The same port under both names is one setting.
    let s = namesrv_conf("listenPort=19876\nnamesrvListenPort=19876\n").unwrap();
    assert_eq!(s.broker.namesrv_listen_port, 19876);
    let e = namesrv_conf("deleteTopicWithBrokerRegistration=yes\n").unwrap_err();
    assert!(
        e.to_string().contains("deleteTopicWithBrokerRegistration"),
        "{e}"
    );
    let e = namesrv_conf("bindAddress=localhost\n").unwrap_err();
    assert!(e.to_string().contains("bindAddress"), "{e}");
    let e = namesrv_conf("kvConfigPath=\n").unwrap_err();
    assert!(e.to_string().contains("kvConfigPath"), "{e}");
    let e = namesrv_conf("noSuchKey=1\n").unwrap_err();
    assert!(e.to_string().contains("noSuchKey"), "{e}");
}
