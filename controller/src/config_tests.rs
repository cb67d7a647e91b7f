//! Apache's controller keys: a good file, the defaults, and each bad key
//! refused by name.

use std::path::Path;

use super::*;

const HOME: &str = "/home/rmq";

fn parse(text: &str) -> Result<ControllerConfig, ControllerConfigError> {
    ControllerConfig::from_pairs(&rmq_common::properties::parse(text), Path::new(HOME))
}

/// Apache's `cluster-3n-independent/controller-n1.conf`, plus every key
/// this controller uses and a NameServer key it ignores.
const GOOD: &str = "\
controllerDLegerGroup = group1
controllerDLegerPeers = n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858
controllerDLegerSelfId = n1
controllerStorePath = /data/ctl
enableElectUncleanMaster = true
notifyBrokerRoleChanged = false
scanNotActiveBrokerInterval = 2000
scanInactiveMasterInterval = 3000
electMasterMaxRetryCount = 5
configStorePath = /data/ctl.properties
configBlackList = configBlackList;configStorePath;controllerStorePath
metricsExporterType = PROM
metricsPromExporterHost = 127.0.0.1
metricsPromExporterPort = 5558
listenPort = 9876
";

#[test]
fn a_good_file_gives_every_setting() {
    let c = parse(GOOD).unwrap();
    assert_eq!(c.group, "group1");
    assert_eq!(c.self_id, "n1");
    let peers: Vec<(&str, NodeId, &str)> = c
        .peers
        .iter()
        .map(|p| (p.id.as_str(), p.node, p.addr.as_str()))
        .collect();
    assert_eq!(
        peers,
        vec![
            ("n0", 0, "127.0.0.1:9878"),
            ("n1", 1, "127.0.0.1:9868"),
            ("n2", 2, "127.0.0.1:9858"),
        ]
    );
    assert_eq!(c.store_path, PathBuf::from("/data/ctl"));
    assert!(c.enable_elect_unclean_master);
    assert!(!c.notify_broker_role_changed);
    assert_eq!(c.scan_not_active_broker_interval_ms, 2000);
    assert_eq!(c.scan_inactive_master_interval_ms, 3000);
    assert_eq!(c.elect_master_max_retry_count, 5);
    assert_eq!(c.config_store_path, PathBuf::from("/data/ctl.properties"));
    assert_eq!(c.metrics_exporter_type, MetricsExporter::Prom);
    assert_eq!(c.prom_endpoint().as_deref(), Some("127.0.0.1:5558"));

    let s = c.settings().unwrap();
    assert_eq!(s.id, 1);
    assert_eq!(s.peers[&2], "127.0.0.1:9858");
    assert_eq!(s.names[&0], "n0");
    assert_eq!(s.scan_interval_ms, 2000);
    assert_eq!(s.scan_inactive_master_interval_ms, 3000);
    assert!(s.elect_unclean_master);
    assert!(!s.notify_broker_role_changed);
    assert_eq!(s.elect_master_max_retry_count, 5);
    assert_eq!(
        s.config_black_list,
        vec!["configBlackList", "configStorePath", "controllerStorePath"]
    );
}

#[test]
fn java_defaults_fill_what_is_left_out() {
    let c = parse("controllerDLegerPeers=n0-127.0.0.1:9878\ncontrollerDLegerSelfId=n0\n").unwrap();
    assert_eq!(c.group, "group1");
    assert_eq!(c.store_path, Path::new(HOME).join("DLedgerController"));
    assert!(!c.enable_elect_unclean_master);
    assert!(c.notify_broker_role_changed);
    assert_eq!(c.scan_not_active_broker_interval_ms, 5000);
    assert_eq!(c.scan_inactive_master_interval_ms, 5000);
    assert_eq!(c.elect_master_max_retry_count, 3);
    assert_eq!(
        c.config_store_path,
        Path::new(HOME).join("controller/controller.properties")
    );
    assert_eq!(c.config_black_list, DEFAULT_CONFIG_BLACK_LIST);
    // No metrics endpoint unless asked for; Java's port and any host then.
    assert_eq!(c.metrics_exporter_type, MetricsExporter::Disable);
    assert_eq!(c.prom_endpoint(), None);
    let prom = parse(
        "controllerDLegerPeers=n0-127.0.0.1:9878\ncontrollerDLegerSelfId=n0\nmetricsExporterType=2\n",
    )
    .unwrap();
    assert_eq!(prom.prom_endpoint().as_deref(), Some("0.0.0.0:5557"));
    // controllerType spelled out is the same.
    let typed = parse(
        "controllerType=DLedger\ncontrollerDLegerPeers=n0-127.0.0.1:9878\ncontrollerDLegerSelfId=n0\n",
    )
    .unwrap();
    assert_eq!(typed, c);
}

/// Node ids follow the ids' byte order, not the order of the list: two
/// replicas listing the peers differently agree.
#[test]
fn node_ids_do_not_depend_on_the_order_of_the_list() {
    let a = parse_peers("b-h:2;a-h:1;c-h:3").unwrap();
    let b = parse_peers("c-h:3;a-h:1;b-h:2").unwrap();
    let node = |peers: &[Peer], id: &str| peers.iter().find(|p| p.id == id).unwrap().node;
    for id in ["a", "b", "c"] {
        assert_eq!(node(&a, id), node(&b, id), "{id}");
    }
    assert_eq!([node(&a, "a"), node(&a, "b"), node(&a, "c")], [0, 1, 2]);
}

fn refused(text: &str) -> ControllerConfigError {
    parse(text).expect_err(text)
}

const PEERS: &str = "controllerDLegerPeers=n0-127.0.0.1:9878;n1-127.0.0.1:9868\n";

#[test]
fn each_bad_key_is_named_with_its_value() {
    // No self id, and one not among the peers.
    assert_eq!(
        refused(PEERS),
        ControllerConfigError::Missing {
            key: "controllerDLegerSelfId"
        }
    );
    let e = refused(&format!("{PEERS}controllerDLegerSelfId=n7\n"));
    assert_eq!(e.key(), "controllerDLegerSelfId");
    assert!(e.to_string().contains("\"n7\""), "{e}");
    // No peers, and peers that do not parse.
    assert_eq!(
        refused("controllerDLegerSelfId=n0\n"),
        ControllerConfigError::Missing {
            key: "controllerDLegerPeers"
        }
    );
    for bad in [
        "127.0.0.1:9878",
        "n0-127.0.0.1",
        "n0-127.0.0.1:port",
        "n0-127.0.0.1:0",
        "-127.0.0.1:9878",
        "n0-:9878",
        ";;",
        "n0-127.0.0.1:9878;n0-127.0.0.1:9868",
    ] {
        let e = refused(&format!(
            "controllerDLegerPeers={bad}\ncontrollerDLegerSelfId=n0\n"
        ));
        assert_eq!(e.key(), "controllerDLegerPeers", "{bad}: {e}");
        assert!(e.to_string().contains(bad), "{bad}: {e}");
    }
    // Values that do not parse.
    let base = format!("{PEERS}controllerDLegerSelfId=n0\n");
    for (key, value) in [
        ("enableElectUncleanMaster", "yes"),
        ("notifyBrokerRoleChanged", "1"),
        ("scanNotActiveBrokerInterval", "5s"),
        ("scanInactiveMasterInterval", "0"),
        ("electMasterMaxRetryCount", "-1"),
        ("electMasterMaxRetryCount", "0"),
        ("metricsExporterType", "prometheus"),
        ("metricsPromExporterPort", "70000"),
    ] {
        let e = refused(&format!("{base}{key}={value}\n"));
        assert_eq!(e.key(), key, "{e}");
        assert!(e.to_string().contains(&format!("{value:?}")), "{e}");
    }
    // jRaft: names the key and says what to use.
    let e = refused(&format!("{base}controllerType=jRaft\n"));
    assert_eq!(e.key(), "controllerType");
    let text = e.to_string();
    assert!(
        text.contains("jRaft") && text.contains("controllerDLegerPeers"),
        "{text}"
    );
    assert_eq!(
        refused(&format!("{base}controllerType=Zab\n")).key(),
        "controllerType"
    );
}
