//! Power cuts (issue 36): the broker as a child process on the
//! crash-consistency filesystem (`rmq-crashfs`) under load (sync sends
//! from several connections, and topics and subscription groups created
//! through the admin codes), and at a random moment the power cut: the
//! broker is frozen (SIGSTOP, so nothing it does after the cut counts),
//! everything it did not sync is gone, it is killed and started again on
//! what was synced. 20 cuts per consume-queue backend and case: SYNC_FLUSH,
//! ASYNC_FLUSH, SYNC_FLUSH while a client flips the serving backend with
//! its shadow the whole time, and a SYNC_MASTER with its slave, each on a
//! filesystem of its own, cut together (the slave must then catch up and
//! hold every kept send).
//!
//! What must hold after every restart:
//! * SYNC_FLUSH: a send answered SEND_OK is read at the queue offset it
//!   was answered with;
//! * ASYNC_FLUSH: the same for every send answered at least
//!   `flushCommitLogThoroughInterval` (plus a margin for the flush itself)
//!   before the cut: newer ones may be gone;
//! * both: no queue offset is answered for two messages that both
//!   survive, and every topic and group whose creation was answered
//!   SUCCESS exists (the metadata journal is synced before it answers).
//!
//! `power_loss_is_caught_*` run each kind of loop (SYNC_FLUSH, ASYNC_FLUSH,
//! a backend flip, master and slave) on a disk that acknowledges every
//! fsync without keeping anything, which is what a broker skipping its
//! syncs would leave, and require the check to find losses: each check can
//! fail.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rmq_client::{self as sdk, OutMessage, SendCode};
use rmq_common::remoting::{RemotingCommand, RequestCode};
use rmq_crashfs::CrashFs;
use rmq_tests::fixtures::TestNameServer;

use crate::broker_process::{hermetic, BrokerProcess};

const CUTS: usize = 20;
const QUEUES: i32 = 4;
const SENDERS: usize = 4;
const TOPIC: &str = "PowerLoss";
/// Messages per pull when a restart reads everything back.
const READ_BATCH: usize = 2048;
/// Longest a sender or creator may take to notice its broker is gone.
const LOAD_END: Duration = Duration::from_secs(15);
/// `flushCommitLogThoroughInterval` of the ASYNC_FLUSH runs: the longest
/// an acknowledged send may stay unsynced.
const ASYNC_THOROUGH: Duration = Duration::from_millis(2000);
/// Time the flush itself may take on top of [`ASYNC_THOROUGH`].
const ASYNC_MARGIN: Duration = Duration::from_millis(1000);

/// One run's flush mode.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Flush {
    Sync,
    Async,
}

impl Flush {
    /// How old an acknowledgement must be at the cut to be owed after it.
    fn owed_after(self) -> Duration {
        match self {
            Flush::Sync => Duration::ZERO,
            Flush::Async => ASYNC_THOROUGH + ASYNC_MARGIN,
        }
    }

    /// Longest the load runs before a cut.
    fn max_load(self) -> Duration {
        match self {
            // Cuts land in the first segments' roll and in steady sending.
            Flush::Sync => Duration::from_millis(800),
            // Long enough that some acknowledgements are owed at the cut.
            Flush::Async => Duration::from_millis(5000),
        }
    }

    fn settings(self) -> Vec<String> {
        match self {
            Flush::Sync => vec!["flushDiskType=SYNC_FLUSH".to_owned()],
            Flush::Async => vec![
                "flushDiskType=ASYNC_FLUSH".to_owned(),
                format!(
                    "flushCommitLogThoroughInterval={}",
                    ASYNC_THOROUGH.as_millis()
                ),
            ],
        }
    }
}

/// What the broker acknowledged: the sends (queue and offset to key) and
/// the topics and groups, each with when, until a restart has shown them;
/// then what every later restart must still show.
#[derive(Debug, Default)]
struct Ledger {
    sends: BTreeMap<(i32, i64), (String, Instant)>,
    topics: Vec<(String, Instant)>,
    groups: Vec<(String, Instant)>,
    kept_sends: BTreeMap<(i32, i64), String>,
    kept_topics: BTreeSet<String>,
    kept_groups: BTreeSet<String>,
    /// Offsets answered for a second message while the first was owed.
    reused: Vec<String>,
    acked_sends: usize,
    acked_meta: usize,
    /// Acknowledged sends a cut took that were not owed yet, and the
    /// oldest of them (age at the cut).
    allowed_losses: usize,
    oldest_allowed_loss: Duration,
}

impl Ledger {
    fn sent(&mut self, queue: i32, offset: i64, key: String) {
        self.acked_sends += 1;
        let at = (queue, offset);
        if let Some(first) = self.kept_sends.get(&at) {
            let line = format!("{first} (kept) and {key} at queue {queue} offset {offset}");
            self.reused.push(line);
        }
        if let Some((first, _)) = self.sends.insert(at, (key.clone(), Instant::now())) {
            let line = format!("{first} and {key} at queue {queue} offset {offset}");
            self.reused.push(line);
        }
    }
}

/// Sends to `TOPIC` round-robin over its queues until the broker is gone.
async fn send_until_error(addr: SocketAddr, tag: String, ledger: Arc<Mutex<Ledger>>) {
    let Ok(c) = sdk::connect(addr).await else {
        return;
    };
    for n in 0u64.. {
        let key = format!("{tag}-{n}");
        let m = OutMessage {
            body: key.clone().into_bytes(),
            keys: vec![key.clone()],
            ..OutMessage::default()
        };
        let queue = (n % QUEUES as u64) as i32;
        let Ok(r) = sdk::send(&c, SendCode::V2, "PowerLossProducer", TOPIC, queue, &[m]).await
        else {
            return;
        };
        if r.code != 0 {
            // FLUSH_DISK_TIMEOUT and the like: stored maybe, not promised.
            continue;
        }
        ledger.lock().sent(r.queue_id, r.queue_offset, key);
    }
}

/// Creates topics and subscription groups, one after the other, until the
/// broker is gone.
async fn create_until_error(addr: SocketAddr, tag: String, ledger: Arc<Mutex<Ledger>>) {
    let Ok(c) = sdk::connect(addr).await else {
        return;
    };
    for n in 0u64.. {
        let topic = format!("PowerLossTopic-{tag}-{n}");
        let req = sdk::request(
            RequestCode::UpdateAndCreateTopic,
            &[
                ("topic", topic.clone()),
                ("readQueueNums", "1".to_owned()),
                ("writeQueueNums", "1".to_owned()),
                ("perm", "6".to_owned()),
            ],
        );
        if sdk::call(&c, req).await.is_err() {
            return;
        }
        ledger.lock().topics.push((topic, Instant::now()));
        let group = format!("PowerLossGroup-{tag}-{n}");
        let mut req = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup);
        req.body = Some(
            serde_json::to_vec(&serde_json::json!({ "groupName": group }))
                .unwrap()
                .into(),
        );
        if sdk::call(&c, req).await.is_err() {
            return;
        }
        ledger.lock().groups.push((group, Instant::now()));
    }
}

/// Every message of `TOPIC` by queue and offset, read from `addr`.
async fn read_all(addr: SocketAddr) -> BTreeMap<(i32, i64), String> {
    read_topic(addr, TOPIC, QUEUES, READ_BATCH as i32).await
}

/// Every message of `topic`'s queues `0..queues` by queue and offset (the
/// body as text), read from `addr` `batch` at a time. A topic the broker
/// does not know reads as what was read so far (nothing, or its config
/// lost): the acknowledged sends it held count as missing.
pub(crate) async fn read_topic(
    addr: SocketAddr,
    topic: &str,
    queues: i32,
    batch: i32,
) -> BTreeMap<(i32, i64), String> {
    let c = sdk::connect(addr).await.unwrap();
    let mut out = BTreeMap::new();
    for queue in 0..queues {
        let mut offset = 0;
        loop {
            let r = match sdk::pull(
                &c,
                &sdk::PullRequest::new("PowerLossReader", topic, queue, offset, batch),
            )
            .await
            {
                Ok(r) => r,
                Err(sdk::SdkError::Refused { code: 17, .. }) => return out,
                Err(e) => panic!("pull {topic} queue {queue} at {offset}: {e}"),
            };
            if r.messages.is_empty() {
                break;
            }
            for (m, at) in r.messages.iter().zip(&r.queue_offsets) {
                out.insert((queue, *at), String::from_utf8_lossy(&m.body).into_owned());
            }
            offset = r.next_begin_offset;
        }
    }
    out
}

/// The names in the table `field` of what `code` answers with.
async fn names(addr: SocketAddr, code: RequestCode, field: &str) -> BTreeSet<String> {
    let c = sdk::connect(addr).await.unwrap();
    let r = sdk::call(&c, RemotingCommand::request(code))
        .await
        .unwrap_or_else(|e| panic!("{code:?}: {e}"));
    let body: serde_json::Value =
        serde_json::from_slice(r.body.as_deref().unwrap_or_default()).unwrap();
    body[field]
        .as_object()
        .unwrap_or_else(|| panic!("{code:?} answers without {field}: {body}"))
        .keys()
        .cloned()
        .collect()
}

/// What a run found: acknowledged things a restart did not give back while
/// owed, offsets answered twice, and the ledger's counts.
#[derive(Debug, Default)]
struct Findings {
    missing: Vec<String>,
    reused: Vec<String>,
    acked_sends: usize,
    acked_meta: usize,
    allowed_losses: usize,
    oldest_allowed_loss: Duration,
    /// Backend flips answered SUCCESS.
    flips: usize,
    /// Restarts after which the slave cut its log back to its master's.
    slave_cuts: usize,
    /// At the first restart that found something missing: the logs of
    /// the broker that ran before the cut and of the restarted one.
    diagnosis: Option<String>,
}

/// One cut loop's shape.
#[derive(Debug, Clone, Copy)]
struct Run {
    flush: Flush,
    cuts: usize,
    /// A disk whose fsync keeps nothing.
    lying: bool,
    /// The other backend shadows the serving one and a client flips them
    /// back and forth (`rmq-admin cq serve`) the whole time.
    flip: bool,
    /// A SYNC_MASTER with a slave, each on its own filesystem, both cut.
    pair: bool,
}

impl Run {
    fn new(flush: Flush) -> Self {
        Self {
            flush,
            cuts: CUTS,
            lying: false,
            flip: false,
            pair: false,
        }
    }
}

/// Flips the serving backend between `backends` until the broker is gone.
async fn flip_until_error(addr: SocketAddr, backends: [&'static str; 2], flips: Arc<Mutex<usize>>) {
    let conn = rmq_client::Connector::new();
    let mut serving = 0;
    loop {
        let to = backends[1 - serving];
        match rmq_tools::cq_admin::serve(&conn, addr, to).await {
            Ok(_) => {
                serving = 1 - serving;
                *flips.lock() += 1;
            }
            // Refused: the shadow not caught up yet, or `to` serves
            // already (after a restart, the last flip kept is not known
            // here): try the other way shortly.
            Err(sdk::SdkError::Refused { .. }) => {
                serving = 1 - serving;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(_) => return,
        }
    }
}

/// A store on its own crash-consistency filesystem, and the command line
/// of the broker on it.
struct Node {
    fs: CrashFs,
    args: Vec<String>,
    name: &'static str,
}

impl Node {
    fn mount(dir: &std::path::Path, name: &'static str, lying: bool, args: Vec<String>) -> Self {
        let (backing, mnt) = (dir.join(format!("{name}-backing")), dir.join(name));
        std::fs::create_dir_all(&backing).unwrap();
        std::fs::create_dir_all(&mnt).unwrap();
        let fs = CrashFs::mount(&backing, &mnt)
            .unwrap_or_else(|e| panic!("{e}: the power-loss tests need root and /dev/fuse"));
        fs.faults().lie_about_sync(lying);
        let mut all = args;
        all.extend([
            "--set".to_owned(),
            format!("storePathRootDir={}", mnt.join("store").display()),
        ]);
        Self {
            fs,
            args: all,
            name,
        }
    }

    async fn start(&self, run: &std::path::Path, cut: usize) -> BrokerProcess {
        BrokerProcess::start(run, &format!("{}-c{cut}", self.name), &self.args)
            .await
            .unwrap_or_else(|e| panic!("{}: start after cut {cut}: {e}", self.name))
    }
}

/// Runs the cut loop: `run.cuts` power cuts under load on `backend`.
async fn cut_loop(backend: &'static str, run: Run) -> Findings {
    let Run {
        flush,
        cuts,
        lying,
        flip,
        pair,
    } = run;
    let dir = tempfile::tempdir().unwrap();
    let now = rmq_common::time::Clock::now_ms(&rmq_common::time::SystemClock);
    let ns = TestNameServer::start(now).await;
    let mut settings = vec![
        format!("consumeQueueStore={backend}"),
        // Small segments: a run rolls several, so their creation must be
        // durable too.
        "mappedFileSizeCommitLog=1048576".to_owned(),
        "maxMessageSize=65536".to_owned(),
        // Each restart reads everything back: large pulls keep that short.
        format!("maxTransferCountOnMessageInMemory={READ_BATCH}"),
        "maxTransferBytesOnMessageInMemory=4194304".to_owned(),
    ];
    settings.extend(flush.settings());
    let other = if backend == "file" { "rocksdb" } else { "file" };
    if flip {
        settings.push(format!("shadowConsumeQueueStore={other}"));
    }
    let args = |role: &[&str]| {
        let mut args = hermetic(ns.ns.addr);
        for s in settings
            .iter()
            .map(String::as_str)
            .chain(role.iter().copied())
        {
            args.extend(["--set".to_owned(), s.to_owned()]);
        }
        args
    };
    let mut nodes = vec![Node::mount(
        dir.path(),
        "master",
        lying,
        args(if pair {
            &["brokerRole=SYNC_MASTER"]
        } else {
            &[]
        }),
    )];
    if pair {
        let slave = args(&["brokerRole=SLAVE", "brokerId=1"]);
        nodes.push(Node::mount(dir.path(), "slave", lying, slave));
    }
    let flips = Arc::new(Mutex::new(0usize));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15 ^ u64::from(lying) ^ cuts as u64;
    let mut missing = Vec::new();
    let run = dir.path().join("run");
    let mut cut_at = None;
    let mut slave_cuts = 0;
    let mut diagnosis = None;
    for cut in 0..=cuts {
        // The master first: the slave learns its HA address from the
        // NameServer's answer to its registration.
        let mut brokers = Vec::new();
        for node in &nodes {
            brokers.push(node.start(&run, cut).await);
        }
        let b = &brokers[0];
        if let Some(at) = cut_at {
            let before = missing.len();
            check(b, &ledger, flush, at, cut, &mut missing).await;
            if missing.len() > before && diagnosis.is_none() {
                let ends = queue_ends(b.addr).await;
                diagnosis = Some(format!("{ends}{}", logs_around(&run, nodes[0].name, cut)));
            }
            if let Some(slave) = brokers.get(1) {
                check_slave(slave, &ledger, cut, &mut missing).await;
                if slave.log().contains(SLAVE_CUT_LINE) {
                    slave_cuts += 1;
                }
            }
        }
        if cut == cuts {
            for b in brokers {
                b.stop().await;
            }
            break;
        }
        let mut load: Vec<_> = (0..SENDERS)
            .map(|s| {
                let tag = format!("c{cut}s{s}");
                tokio::spawn(send_until_error(b.addr, tag, Arc::clone(&ledger)))
            })
            .collect();
        let tag = format!("c{cut}");
        load.push(tokio::spawn(create_until_error(
            b.addr,
            tag,
            Arc::clone(&ledger),
        )));
        if flip {
            let flipper = flip_until_error(b.addr, [backend, other], Arc::clone(&flips));
            load.push(tokio::spawn(flipper));
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let share = (rng % 1000) as f64 / 1000.0;
        tokio::time::sleep(flush.max_load().mul_f64(share)).await;
        // One power cut for every store.
        for b in &brokers {
            b.freeze();
        }
        cut_at = Some(Instant::now());
        for node in &nodes {
            node.fs.power_cut();
        }
        for b in brokers {
            b.kill9();
        }
        for task in load {
            let _ = tokio::time::timeout(LOAD_END, task).await;
        }
        for node in &mut nodes {
            node.fs.restart().unwrap();
        }
    }
    ns.stop().await;
    drop(nodes);
    let l = ledger.lock();
    let flips = *flips.lock();
    Findings {
        flips,
        slave_cuts,
        diagnosis,
        missing,
        reused: l.reused.clone(),
        acked_sends: l.acked_sends,
        acked_meta: l.acked_meta,
        allowed_losses: l.allowed_losses,
        oldest_allowed_loss: l.oldest_allowed_loss,
    }
}

/// What a pull of one message at offset 0 of each of `TOPIC`'s queues is
/// answered: code, min, max and next offset.
async fn queue_ends(addr: SocketAddr) -> String {
    let c = sdk::connect(addr).await.unwrap();
    let mut out = String::new();
    for queue in 0..QUEUES {
        let line = match sdk::pull(
            &c,
            &sdk::PullRequest::new("PowerLossReader", TOPIC, queue, 0, 1),
        )
        .await
        {
            Ok(r) => format!(
                "queue {queue}: code {} min {} max {} next {} messages {}\n",
                r.code,
                r.min_offset,
                r.max_offset,
                r.next_begin_offset,
                r.messages.len()
            ),
            Err(e) => format!("queue {queue}: {e}\n"),
        };
        out.push_str(&line);
    }
    out
}

/// The logs (warnings and errors) of `node`'s broker that ran up to the
/// cut and of the one restarted after it.
fn logs_around(run: &std::path::Path, node: &str, cut: usize) -> String {
    let mut out = String::new();
    for c in [cut.checked_sub(1), Some(cut)].into_iter().flatten() {
        let path = run.join(format!("{node}-c{c}.stderr"));
        let log = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = &lines[lines.len().saturating_sub(60)..];
        out.push_str(&format!(
            "--- {} ---\n{}\n",
            path.display(),
            tail.join("\n")
        ));
    }
    out
}

/// What a slave's log says when it cuts its log back to its master's.
const SLAVE_CUT_LINE: &str = "holds records its master does not";

/// Longest a restarted slave may take to hold what its master holds.
const SLAVE_CATCH_UP: Duration = Duration::from_secs(30);

/// After a restart of both: the slave, its own store cut too, catches up
/// with its master and then holds every send kept so far at its offset.
async fn check_slave(
    slave: &BrokerProcess,
    ledger: &Mutex<Ledger>,
    cut: usize,
    missing: &mut Vec<String>,
) {
    let kept = ledger.lock().kept_sends.clone();
    let deadline = Instant::now() + SLAVE_CATCH_UP;
    loop {
        let stored = read_all(slave.addr).await;
        let lacking: Vec<_> = kept
            .iter()
            .filter(|(at, key)| stored.get(at) != Some(*key))
            .collect();
        if lacking.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            let ((q, o), key) = lacking[0];
            missing.push(format!(
                "the slave, {SLAVE_CATCH_UP:?} after cut {cut}, lacks {} kept sends, {key}@{q}:{o} first (found {:?}); its log:\n{}",
                lacking.len(),
                stored.get(&(*q, *o)),
                slave.log()
            ));
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// After the cut at `cut_at`: everything kept so far is still there, and
/// what was acknowledged since is there if it was owed (then it is kept
/// from now on) or may be gone if not. Adds what is not to `missing`.
async fn check(
    b: &BrokerProcess,
    ledger: &Mutex<Ledger>,
    flush: Flush,
    cut_at: Instant,
    cut: usize,
    missing: &mut Vec<String>,
) {
    let stored = read_all(b.addr).await;
    let topics = names(b.addr, RequestCode::GetAllTopicConfig, "topicConfigTable").await;
    let groups = names(
        b.addr,
        RequestCode::GetAllSubscriptiongroupConfig,
        "subscriptionGroupTable",
    )
    .await;
    let mut l = ledger.lock();
    let l = &mut *l;
    for ((q, o), key) in &l.kept_sends {
        if stored.get(&(*q, *o)) != Some(key) {
            let found = stored.get(&(*q, *o));
            missing.push(format!(
                "{key}@{q}:{o}, kept until cut {cut} (found {found:?})"
            ));
        }
    }
    for ((q, o), (key, at)) in std::mem::take(&mut l.sends) {
        let age = cut_at.saturating_duration_since(at);
        if stored.get(&(q, o)) == Some(&key) {
            l.kept_sends.insert((q, o), key);
        } else if age >= flush.owed_after() {
            let found = stored.get(&(q, o));
            missing.push(format!(
                "{key}@{q}:{o}, answered {age:?} before cut {cut} (found {found:?})"
            ));
        } else {
            l.allowed_losses += 1;
            l.oldest_allowed_loss = l.oldest_allowed_loss.max(age);
        }
    }
    for (kind, answered, kept, table) in [
        ("topic", &mut l.topics, &mut l.kept_topics, &topics),
        ("group", &mut l.groups, &mut l.kept_groups, &groups),
    ] {
        for name in kept.iter().filter(|n| !table.contains(*n)) {
            missing.push(format!("{kind} {name}, kept until cut {cut}"));
        }
        for (name, at) in std::mem::take(answered) {
            l.acked_meta += 1;
            if table.contains(&name) {
                kept.insert(name);
            } else {
                let age = cut_at.saturating_duration_since(at);
                missing.push(format!("{kind} {name}, answered {age:?} before cut {cut}"));
            }
        }
    }
}

async fn nothing_owed_is_lost(backend: &'static str, run: Run) {
    let flush = run.flush;
    let f = cut_loop(backend, run).await;
    let what = format!(
        "{backend} {flush:?}{}{}",
        if run.flip { " flipping" } else { "" },
        if run.pair {
            " SYNC_MASTER and slave"
        } else {
            ""
        }
    );
    if run.flip {
        assert!(f.flips > 0, "{what}: no flip was answered: {f:?}");
    }
    assert!(
        f.acked_sends > 0 && f.acked_meta > 0,
        "{what}: nothing was acknowledged: {f:?}"
    );
    assert!(
        f.missing.is_empty(),
        "{what}: {} acknowledged and owed things lost over {CUTS} power cuts (of {} sends and {} topics and groups): {:?}\n{}",
        f.missing.len(),
        f.acked_sends,
        f.acked_meta,
        &f.missing[..f.missing.len().min(20)],
        f.diagnosis.as_deref().unwrap_or_default()
    );
    assert!(
        f.reused.is_empty(),
        "{what}: queue offsets answered twice: {:?}",
        f.reused
    );
    if flush == Flush::Sync {
        assert_eq!(f.allowed_losses, 0, "{what}: nothing is allowed to go");
    }
    eprintln!(
        "power_loss {what}: {CUTS} cuts, {} sends and {} topics and groups acknowledged, {} flips, none owed lost; {} sends not yet owed lost, the oldest {:?} before its cut; the slave cut its log back after {} restarts",
        f.acked_sends, f.acked_meta, f.flips, f.allowed_losses, f.oldest_allowed_loss, f.slave_cuts
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_sync_flush_file() {
    nothing_owed_is_lost("file", Run::new(Flush::Sync)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_sync_flush_rocksdb() {
    nothing_owed_is_lost("rocksdb", Run::new(Flush::Sync)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_async_flush_file() {
    nothing_owed_is_lost("file", Run::new(Flush::Async)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_async_flush_rocksdb() {
    nothing_owed_is_lost("rocksdb", Run::new(Flush::Async)).await;
}

// After a cut of both the slave can hold more than its master (it synced
// bytes the master had not); the master then takes new writes at its
// shorter end. The slave compares records with its master and cuts back
// before it follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_sync_master_and_slave_file() {
    let run = Run {
        pair: true,
        ..Run::new(Flush::Sync)
    };
    nothing_owed_is_lost("file", run).await;
}

// After a cut of both the slave can hold more than its master (it synced
// bytes the master had not); the master then takes new writes at its
// shorter end. The slave compares records with its master and cuts back
// before it follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_sync_master_and_slave_rocksdb() {
    let run = Run {
        pair: true,
        ..Run::new(Flush::Sync)
    };
    nothing_owed_is_lost("rocksdb", run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_backend_flip_from_file() {
    let run = Run {
        flip: true,
        ..Run::new(Flush::Sync)
    };
    nothing_owed_is_lost("file", run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_backend_flip_from_rocksdb() {
    let run = Run {
        flip: true,
        ..Run::new(Flush::Sync)
    };
    nothing_owed_is_lost("rocksdb", run).await;
}

/// Runs `run` on a disk whose fsync keeps nothing, for 3 cuts: the check
/// must find losses, or it could not fail.
async fn caught_when_fsync_lies(backend: &'static str, run: Run) {
    let run = Run {
        cuts: 3,
        lying: true,
        ..run
    };
    let f = cut_loop(backend, run).await;
    assert!(f.acked_sends > 0, "nothing was acknowledged: {f:?}");
    assert!(
        !f.missing.is_empty(),
        "{backend} {run:?}: a disk that keeps nothing lost nothing over 3 cuts: the check cannot fail ({f:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_is_caught_on_a_disk_whose_fsync_lies() {
    caught_when_fsync_lies("file", Run::new(Flush::Sync)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_is_caught_when_fsync_lies_async_flush() {
    caught_when_fsync_lies("rocksdb", Run::new(Flush::Async)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_is_caught_when_fsync_lies_backend_flip() {
    let run = Run {
        flip: true,
        ..Run::new(Flush::Sync)
    };
    caught_when_fsync_lies("file", run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_is_caught_when_fsync_lies_master_and_slave() {
    let run = Run {
        pair: true,
        ..Run::new(Flush::Sync)
    };
    caught_when_fsync_lies("rocksdb", run).await;
}
