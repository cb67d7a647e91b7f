//! The controller as an operator starts it, configured by Apache RocketMQ
//! 5.3.3's own keys: three `rmq-broker --controller-only -c n<i>.conf`
//! processes elect one leader that every replica names, and a new one when
//! the leader is SIGKILLed; a fourth on a running replica's folder fails
//! at start naming it; `rmq-broker --namesrv-only` with Apache's
//! namesrv.conf (`listenPort`, `kvConfigPath`, `configStorePath`,
//! `enableControllerInNamesrv=true`) serves the NameServer on its port and
//! the controller on its peer port, which mqadmin 5.3.3's controller
//! commands read and update.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use rmq_client::RemotingClient;
use rmq_common::remoting::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tests::apache::free_port;
use rmq_tests::java::{self, Client, JavaRun};

use crate::broker_process::BrokerProcess;
use crate::mqadmin::{ADMIN_MAIN, LOGBACK_TOOLS};

/// Longest the replicas may take to agree on a leader, at start or after
/// the leader is killed (Raft elects within a few election timeouts, under
/// a second; the rest is slack for a loaded machine).
const LEADER_WAIT: Duration = Duration::from_secs(30);
/// Longest one controller request may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// How often the replicas are asked while waiting.
const POLL: Duration = Duration::from_millis(100);
/// Longest one mqadmin command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// The Raft group the files name.
const GROUP: &str = "itgroup";

/// `n` distinct ports free on 127.0.0.1 now.
fn free_ports(n: usize) -> Vec<u16> {
    let mut ports = BTreeSet::new();
    while ports.len() < n {
        ports.insert(free_port());
    }
    ports.into_iter().collect()
}

/// A controller.conf as Apache's `cluster-3n-independent` files write it,
/// with the folders inside `dir`.
fn controller_conf(peers: &str, self_id: &str, dir: &Path) -> String {
    format!(
        "controllerDLegerGroup = {GROUP}\n\
         controllerDLegerPeers = {peers}\n\
         controllerDLegerSelfId = {self_id}\n\
         controllerStorePath = {}\n\
         configStorePath = {}\n\
         # a NameServer key in the same file is ignored, as Apache does\n\
         listenPort = 9876\n",
        dir.join(format!("store-{self_id}")).display(),
        dir.join(format!("{self_id}.properties")).display(),
    )
}

async fn call(addr: SocketAddr, req: RemotingCommand) -> Option<RemotingCommand> {
    let client = tokio::time::timeout(CALL_TIMEOUT, RemotingClient::connect(addr))
        .await
        .ok()?
        .ok()?;
    let resp = client.invoke(req, CALL_TIMEOUT).await.ok();
    client.close().await;
    resp
}

/// GET_METADATA_INFO's header from `addr`, if it answers.
async fn metadata(addr: SocketAddr) -> Option<BTreeMap<String, String>> {
    let resp = call(addr, RemotingCommand::request(1005)).await?;
    (resp.code == ResponseCode::Success.code()).then(|| resp.ext_fields.into_iter().collect())
}

/// Waits until every replica of `replicas` (id to address) names the same
/// leader, other than `not`, and that leader says it leads; its id and
/// every replica's answer.
async fn agreed_leader(
    replicas: &BTreeMap<String, SocketAddr>,
    not: Option<&str>,
) -> (String, Vec<BTreeMap<String, String>>) {
    let deadline = Instant::now() + LEADER_WAIT;
    loop {
        let mut answers = Vec::new();
        for addr in replicas.values() {
            if let Some(m) = metadata(*addr).await {
                answers.push(m);
            }
        }
        let leaders: BTreeSet<Option<String>> = answers
            .iter()
            .map(|m| m.get("controllerLeaderId").cloned())
            .collect();
        if answers.len() == replicas.len() && leaders.len() == 1 {
            if let Some(Some(leader)) = leaders.into_iter().next() {
                let leads = answers
                    .iter()
                    .any(|m| m.get("isLeader").map(String::as_str) == Some("true"));
                if Some(leader.as_str()) != not && leads && replicas.contains_key(&leader) {
                    return (leader, answers);
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no agreed leader (other than {not:?}) within {LEADER_WAIT:?}: {answers:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_standalone_replicas_elect_a_leader_and_replace_it_when_killed() {
    let dir = tempfile::tempdir().unwrap();
    // Controller ports, then each replica's metrics port (Apache's
    // exporter keys): six distinct ones.
    let all_ports = free_ports(6);
    let (ports, metrics_ports) = (all_ports[..3].to_vec(), all_ports[3..].to_vec());
    let ids = ["n0", "n1", "n2"];
    let peers_on = |ports: &[u16]| {
        ids.iter()
            .zip(ports)
            .map(|(id, p)| format!("{id}-127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(";")
    };
    let peers = peers_on(&ports);
    let mut procs = BTreeMap::new();
    let mut addrs = BTreeMap::new();
    for ((id, port), metrics_port) in ids.iter().zip(&ports).zip(&metrics_ports) {
        let conf = dir.path().join(format!("{id}.conf"));
        std::fs::write(&conf, controller_conf(&peers, id, dir.path())).unwrap();
        let args = vec![
            "--controller-only".to_owned(),
            "-c".to_owned(),
            conf.display().to_string(),
            "--set".to_owned(),
            "metricsExporterType=PROM".to_owned(),
            "--set".to_owned(),
            "metricsPromExporterHost=127.0.0.1".to_owned(),
            "--set".to_owned(),
            format!("metricsPromExporterPort={metrics_port}"),
        ];
        let p = BrokerProcess::start(&dir.path().join(id), id, &args)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.addr, SocketAddr::from(([127, 0, 0, 1], *port)));
        addrs.insert((*id).to_owned(), p.addr);
        procs.insert((*id).to_owned(), p);
    }

    let started = Instant::now();
    let (leader, answers) = agreed_leader(&addrs, None).await;
    eprintln!("leader {leader} agreed after {:?}", started.elapsed());
    let want_peers: String = ids
        .iter()
        .map(|id| format!("{id}:{};", addrs[*id]))
        .collect();
    for m in &answers {
        assert_eq!(m["group"], GROUP, "{m:?}");
        assert_eq!(m["controllerLeaderAddress"], addrs[&leader].to_string());
        assert_eq!(m["peers"], want_peers, "{m:?}");
    }
    assert_eq!(
        answers.iter().filter(|m| m["isLeader"] == "true").count(),
        1,
        "{answers:?}"
    );
    // Every replica counted the GET_METADATA_INFO it answered, under its
    // own address, on its own endpoint.
    for (id, metrics_port) in ids.iter().zip(&metrics_ports) {
        let text = crate::metrics::scrape(SocketAddr::from(([127, 0, 0, 1], *metrics_port))).await;
        let counted = text.lines().any(|l| {
            l.starts_with("rmq_controller_requests_total{")
                && l.contains(&format!("address=\"{}\"", addrs[*id]))
                && l.contains("request_type=\"CONTROLLER_GET_METADATA_INFO\"")
                && l.contains("status=\"success\"")
        });
        assert!(counted, "{id}: {text}");
        assert!(
            text.contains("# HELP rmq_controller_requests_total"),
            "{text}"
        );
    }

    // A fourth process on a running replica's folder fails at start and
    // names the folder.
    let at = ids.iter().position(|id| *id != leader).unwrap();
    let follower = ids[at];
    let conf = dir.path().join(format!("{follower}.conf"));
    let mut moved = ports.clone();
    moved[at] = free_port();
    let second = BrokerProcess::start(
        &dir.path().join("intruder"),
        "intruder",
        &[
            "--controller-only".to_owned(),
            "-c".to_owned(),
            conf.display().to_string(),
            "--set".to_owned(),
            // Its own port: only the folder is shared.
            format!("controllerDLegerPeers={}", peers_on(&moved)),
        ],
    )
    .await;
    let store = dir.path().join(format!("store-{follower}"));
    match second {
        Ok(_) => panic!("a second replica on {} started", store.display()),
        Err(out) => assert!(
            out.contains(&store.display().to_string()) && out.contains("in use"),
            "{out}"
        ),
    }

    // The leader is killed: the other two agree on a new one.
    let killed = Instant::now();
    procs.remove(&leader).unwrap().kill9();
    addrs.remove(&leader);
    let (next, answers) = agreed_leader(&addrs, Some(&leader)).await;
    eprintln!(
        "new leader {next} agreed {:?} after {leader} was killed",
        killed.elapsed()
    );
    for m in &answers {
        assert_eq!(m["controllerLeaderAddress"], addrs[&next].to_string());
    }

    // SIGTERM stops each replica (within the stop bound, or this fails).
    for (_, p) in procs {
        p.stop().await;
    }
}

/// Runs mqadmin 5.3.3 with `args`; it must end normally (it exits 0 even
/// when a command fails: the output is the verdict).
/// `ns` is passed as `-n`, so the client never looks for a NameServer
/// address on the network.
pub(crate) async fn mqadmin(home: &Path, ns: SocketAddr, args: &[&str]) -> JavaRun {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_string()]);
    let run = java::run_main(Client::V5, ADMIN_MAIN, &all, home, COMMAND_TIMEOUT).await;
    let what = format!("mqadmin {}", args.join(" "));
    eprintln!("$ {what} ({:?})\n{}{}", run.elapsed, run.stdout, run.stderr);
    assert!(run.succeeded(), "{}", run.report(&what));
    run
}

/// The value mqadmin's getControllerConfig prints for `key`
/// (`%-50s=  %s`).
fn printed(run: &JavaRun, key: &str) -> Option<String> {
    run.stdout.lines().find_map(|l| {
        let (k, v) = l.split_once("=  ")?;
        (k.trim() == key).then(|| v.trim().to_owned())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namesrv_only_serves_the_embedded_controller_on_its_peer_port() {
    java::require_java_and_jars(Client::V5);
    let dir = tempfile::tempdir().unwrap();
    let ports = free_ports(2);
    let (ns_port, ctl_port) = (ports[0], ports[1]);
    let ctl = SocketAddr::from(([127, 0, 0, 1], ctl_port));
    let conf = dir.path().join("namesrv.conf");
    let kv_path = dir.path().join("kv").join("kvConfig.json");
    // Apache's NamesrvStartup reads this file as it is: listenPort is the
    // NameServer's, configStorePath both the NameServer's and the
    // controller's.
    std::fs::write(
        &conf,
        format!(
            "kvConfigPath={}\n\
             productEnvName=center\n\
             enableControllerInNamesrv=true\n\
             {}",
            kv_path.display(),
            controller_conf(&format!("n0-{ctl}"), "n0", dir.path()),
        )
        .replace("listenPort = 9876\n", &format!("listenPort = {ns_port}\n")),
    )
    .unwrap();
    let ns = BrokerProcess::start(
        dir.path(),
        "namesrv",
        &[
            "--namesrv-only".to_owned(),
            "-c".to_owned(),
            conf.display().to_string(),
        ],
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ns.addr.port(), ns_port);

    // The NameServer answers on its port, and not the controller's codes
    // (as Apache's embedded controller); the controller on its peer port,
    // leading its one-replica group.
    let resp = call(
        ns.addr,
        RemotingCommand::request(RequestCode::GetNamesrvConfig.code()),
    )
    .await
    .expect("the NameServer answers");
    assert_eq!(resp.code, ResponseCode::Success.code(), "{resp:?}");
    let shown = String::from_utf8_lossy(resp.body.as_deref().unwrap_or_default()).into_owned();
    assert!(
        shown.contains(&format!("kvConfigPath={}\n", kv_path.display())),
        "{shown}"
    );
    let mut put = RemotingCommand::request(RequestCode::PutKvConfig.code());
    for (k, v) in [
        ("namespace", "ORDER_TOPIC_CONFIG"),
        ("key", "t"),
        ("value", "b:4"),
    ] {
        put.ext_fields.insert(k.into(), v.into());
    }
    let resp = call(ns.addr, put).await.unwrap();
    assert_eq!(resp.code, ResponseCode::Success.code(), "{resp:?}");
    let kv = std::fs::read_to_string(&kv_path).expect("the KV table is at kvConfigPath");
    assert!(kv.contains("ORDER_TOPIC_CONFIG"), "{kv}");
    let resp = call(ns.addr, RemotingCommand::request(1005)).await.unwrap();
    assert_eq!(resp.code, ResponseCode::RequestCodeNotSupported.code());
    let replicas = BTreeMap::from([("n0".to_owned(), ctl)]);
    let (leader, answers) = agreed_leader(&replicas, None).await;
    assert_eq!(leader, "n0");
    assert_eq!(answers[0]["peers"], format!("n0:{ctl};"));

    // mqadmin 5.3.3 against the controller.
    let home = dir.path().join("mqadmin");
    std::fs::create_dir_all(home.join("conf")).unwrap();
    std::fs::write(home.join("conf/logback_tools.xml"), LOGBACK_TOOLS).unwrap();
    let addr = ctl.to_string();
    let meta = mqadmin(&home, ns.addr, &["getControllerMetaData", "-a", &addr]).await;
    for want in [
        format!("#ControllerGroup\t{GROUP}"),
        "#ControllerLeaderId\tn0".to_owned(),
        format!("#ControllerLeaderAddress\t{addr}"),
        format!("#Peer:\tn0:{addr}"),
    ] {
        assert!(
            meta.stdout.contains(&want),
            "{want:?}\n{}",
            meta.report("getControllerMetaData")
        );
    }
    let shown = mqadmin(&home, ns.addr, &["getControllerConfig", "-a", &addr]).await;
    assert!(
        shown
            .stdout
            .contains(&format!("============{addr}============")),
        "{}",
        shown.report("getControllerConfig")
    );
    assert_eq!(
        printed(&shown, "controllerDLegerSelfId").as_deref(),
        Some("n0")
    );
    assert_eq!(
        printed(&shown, "controllerDLegerGroup").as_deref(),
        Some(GROUP)
    );
    assert_eq!(
        printed(&shown, "scanInactiveMasterInterval").as_deref(),
        Some("5000")
    );

    let updated = mqadmin(
        &home,
        ns.addr,
        &[
            "updateControllerConfig",
            "-a",
            &addr,
            "-k",
            "scanInactiveMasterInterval",
            "-v",
            "7000",
        ],
    )
    .await;
    assert!(
        updated.stdout.contains("update controller config success!"),
        "{}",
        updated.report("updateControllerConfig")
    );
    let shown = mqadmin(&home, ns.addr, &["getControllerConfig", "-a", &addr]).await;
    assert_eq!(
        printed(&shown, "scanInactiveMasterInterval").as_deref(),
        Some("7000")
    );
    let written = std::fs::read_to_string(dir.path().join("n0.properties")).unwrap();
    assert!(
        written.contains("scanInactiveMasterInterval=7000\n"),
        "{written}"
    );
    // The NameServer writes its settings to the same configStorePath and
    // keeps the controller's.
    let update = RemotingCommand::request(RequestCode::UpdateNamesrvConfig.code())
        .with_body(b"namesrvBrokerExpiry=60000\n".to_vec());
    let resp = call(ns.addr, update).await.unwrap();
    assert_eq!(resp.code, ResponseCode::Success.code(), "{resp:?}");
    let written = std::fs::read_to_string(dir.path().join("n0.properties")).unwrap();
    assert!(
        written.contains("scanInactiveMasterInterval=7000\n")
            && written.contains("namesrvBrokerExpiry=60000\n"),
        "{written}"
    );

    // A black-listed key is refused (NO_PERMISSION).
    let refused = mqadmin(
        &home,
        ns.addr,
        &[
            "updateControllerConfig",
            "-a",
            &addr,
            "-k",
            "configStorePath",
            "-v",
            "/tmp/x",
        ],
    )
    .await;
    assert!(
        !refused.stdout.contains("success") && refused.stderr.contains("CODE: 16"),
        "{}",
        refused.report("updateControllerConfig configStorePath")
    );

    ns.stop().await;
}
