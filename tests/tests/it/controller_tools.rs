//! The operator's view of controller mode: our controller (in-process,
//! one replica) and two of our brokers in controller mode, read and
//! steered by mqadmin 5.3.3's controller commands (`getSyncStateSet`,
//! `getBrokerEpoch`, `electMaster`) and by `rmq-admin sync-state-set`;
//! `electMaster` moves the master to the broker named, at a new epoch;
//! and the controller's metrics count the elections and time them.

use std::net::SocketAddr;
use std::path::Path;

use rmq_broker::ha::BrokerRole;
use rmq_client::Connector;
use rmq_common::config::CqBackend;
use rmq_controller::metrics::names;
use rmq_tests::java::{self, Client};
use rmq_tools::controller_admin;

use crate::controller_entry::mqadmin;
use rmq_tests::controller_fixture::{
    controller_group, start_master_and_slave, wait_in_sync, wait_role, SET,
};
use rmq_tests::fixtures::TestNameServer;

use crate::controller_mode::send_ok;
use crate::mqadmin::LOGBACK_TOOLS;

/// The cluster the brokers' settings name.
const CLUSTER: &str = "DefaultCluster";
/// Bound of every wait for a role or a SyncStateSet.
const WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The value of the series `name` holding every one of `labels`, if any.
fn value(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// The fields of a `rmq-admin sync-state-set` row that starts with `first`.
fn row<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&first))
        .unwrap_or_default()
}

/// Runs mqadmin 5.3.3 with `args`; its output must hold every one of
/// `wants`.
async fn mqadmin_shows(home: &Path, ns: SocketAddr, args: &[&str], wants: &[String]) {
    let run = mqadmin(home, ns, args).await;
    for want in wants {
        assert!(
            run.stdout.contains(want.as_str()),
            "{want:?}\n{}",
            run.report(args[0])
        );
    }
}

/// What `rmq-admin sync-state-set` prints for `names` (all with none).
async fn rmq_admin(ctl: &str, names: &[String], ns: SocketAddr) -> String {
    let shown = controller_admin::sync_state_set(&Connector::new(), ctl, names, ns)
        .await
        .unwrap();
    eprintln!("$ rmq-admin sync-state-set {names:?}\n{shown}");
    shown
}

fn mqadmin_home(dir: &Path) -> std::path::PathBuf {
    let home = dir.join("mqadmin");
    std::fs::create_dir_all(home.join("conf")).unwrap();
    std::fs::write(home.join("conf/logback_tools.xml"), LOGBACK_TOOLS).unwrap();
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqadmin_and_rmq_admin_read_and_move_the_master() {
    java::require_java_and_jars(Client::V5);
    // The recorder before the controller, so it counts from the start.
    let prom = rmq_broker::metrics::install().expect("the process's metrics recorder");
    let dir = tempfile::tempdir().unwrap();
    let ctl = controller_group(dir.path(), 1).await.remove(0);
    let ctl_addr = ctl.handle.addr.to_string();
    let ns = TestNameServer::start(rmq_common::time::now_ms()).await;
    let ns_addr = ns.ns.addr.to_string();
    let (a, b) =
        start_master_and_slave(dir.path(), CqBackend::File, &ns_addr, &ctl_addr, WAIT).await;
    send_ok(ns.ns.addr, a.addr(), "ToolsTopic", 5).await;
    wait_in_sync(&a, 2, WAIT).await;
    let (a_addr, b_addr) = (a.addr().to_string(), b.addr().to_string());

    // rmq-admin: the set named, and every set the NameServer knows.
    let names = [SET.to_owned()];
    let shown = rmq_admin(&ctl_addr, &names, ns.ns.addr).await;
    assert_eq!(
        row(&shown, SET),
        [SET, "1", a_addr.as_str(), "1", "2"],
        "{shown}"
    );
    assert_eq!(
        row(&shown, "1"),
        ["1", a_addr.as_str(), "yes", "yes", "master"],
        "{shown}"
    );
    assert_eq!(
        row(&shown, "2"),
        ["2", b_addr.as_str(), "yes", "yes", "slave"],
        "{shown}"
    );
    assert_eq!(rmq_admin(&ctl_addr, &[], ns.ns.addr).await, shown);
    // A controller that is not there: the error names it.
    let gone = rmq_tests::apache::local(rmq_tests::apache::free_port()).to_string();
    let e = controller_admin::sync_state_set(&Connector::new(), &gone, &names, ns.ns.addr)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains(&gone) && e.contains("unreachable"), "{e}");

    // mqadmin getSyncStateSet and getBrokerEpoch before the move.
    let home = mqadmin_home(dir.path());
    let ns_addr = ns.ns.addr;
    let sss = ["getSyncStateSet", "-a", ctl_addr.as_str(), "-b", SET];
    let epochs = ["getBrokerEpoch", "-b", SET];
    let wants = [
        format!("#brokerName\t{SET}"),
        "#MasterBrokerId\t1".to_owned(),
        format!("#MasterAddr\t{a_addr}"),
        "#MasterEpoch\t1".to_owned(),
        "#SyncStateSetNums\t2".to_owned(),
    ];
    mqadmin_shows(&home, ns_addr, &sss, &wants).await;
    let first = "#Epoch: EpochEntry{epoch=1, startOffset=0";
    let wants = [
        format!("#brokerAddr\t{a_addr}\n#brokerId\t0\n{first}"),
        format!("#brokerAddr\t{b_addr}\n#brokerId\t2\n{first}"),
    ];
    mqadmin_shows(&home, ns_addr, &epochs, &wants).await;

    // mqadmin electMaster moves the master to broker 2, at epoch 2.
    let elect = [
        "electMaster",
        "-a",
        ctl_addr.as_str(),
        "-c",
        CLUSTER,
        "-bn",
        SET,
        "-b",
        "2",
    ];
    let wants = [
        format!("#BrokerName\t{SET}"),
        format!("#BrokerMasterAddr\t{b_addr}"),
        // No member lines: mqadmin reads the answer's body (Java's
        // ElectMasterResponseBody) as a BrokerMemberGroup, whose fields it
        // does not have; Apache's controller answers the same body.
        "#MasterEpoch\t2".to_owned(),
    ];
    mqadmin_shows(&home, ns_addr, &elect, &wants).await;
    wait_role(&b, BrokerRole::SyncMaster, 2, WAIT).await;
    wait_role(&a, BrokerRole::Slave, 2, WAIT).await;
    let wants = [
        "#MasterBrokerId\t2".to_owned(),
        format!("#MasterAddr\t{b_addr}"),
        "#MasterEpoch\t2".to_owned(),
    ];
    mqadmin_shows(&home, ns_addr, &sss, &wants).await;
    let shown = rmq_admin(&ctl_addr, &names, ns_addr).await;
    assert_eq!(
        row(&shown, SET)[..4],
        [SET, "2", b_addr.as_str(), "2"],
        "{shown}"
    );
    assert_eq!(row(&shown, "2")[4], "master", "{shown}");
    let wants = [
        format!("#brokerAddr\t{b_addr}\n#brokerId\t0\n#Epoch: EpochEntry{{epoch=1"),
        "#Epoch: EpochEntry{epoch=2".to_owned(),
    ];
    mqadmin_shows(&home, ns_addr, &epochs, &wants).await;

    // The controller's metrics: both elections counted and timed, the
    // requests counted, the gauges set.
    ctl.handle.service().refresh_gauges();
    let needle = ctl.handle.metrics_needle();
    let text = rmq_broker::metrics::render_matching(prom, std::slice::from_ref(&needle));
    let set = format!("broker_set=\"{SET}\"");
    let elections = |trigger: &str| {
        let t = format!("trigger=\"{trigger}\"");
        value(
            &text,
            names::ELECTIONS_TOTAL,
            &[&set, &t, "result=\"new_master_elected\""],
        )
    };
    assert_eq!(elections("broker"), Some(1.0), "{text}");
    assert_eq!(elections("admin"), Some(1.0), "{text}");
    let timed = format!("{}_count", names::ELECTION_SECONDS);
    assert_eq!(
        value(&text, &timed, &["trigger=\"admin\""]),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(&text, &timed, &["trigger=\"broker\""]) >= Some(1.0),
        "{text}"
    );
    assert_eq!(value(&text, names::IS_LEADER, &[]), Some(1.0), "{text}");
    assert_eq!(
        value(&text, names::ACTIVE_BROKERS, &[&set]),
        Some(2.0),
        "{text}"
    );
    let sync_data = "request_type=\"CONTROLLER_GET_SYNC_STATE_DATA\"";
    assert!(
        value(
            &text,
            names::REQUESTS_TOTAL,
            &[sync_data, "status=\"success\""]
        ) >= Some(4.0),
        "{text}"
    );

    a.shutdown().await;
    b.shutdown().await;
    ns.stop().await;
    ctl.stop().await;
}
