//! Fuzz target `hostile_client` (issue 15): a hostile client against a real
//! broker. Each input becomes one valid frame (a request code, known or not;
//! header fields that requests read, with troublesome values; maybe a body)
//! sent over one long-lived connection to an `rmq-broker` process started on
//! 127.0.0.1 port 0 with a fresh store. The target fails when:
//! - the request is not answered within [`ANSWER_TIMEOUT`], or the broker
//!   closes the connection or dies (a panic there ends the process);
//! - every [`CHECK_EVERY`] inputs: the broker's resident memory, its store
//!   or its CommitLog segments passed their bound, or a normal request on a
//!   new connection is not answered within [`NORMAL_TIMEOUT`].
//!
//! The broker is a child process (killed when the fuzzer exits), so the
//! fuzz build does not compile RocksDB: `FUZZ_BROKER_BIN` names the binary
//! (`scripts/fuzz.sh` builds it and sets it). Its store and log are
//! `$TMPDIR/rmq-hostile-fuzz-<pid>` and `.log`: removed at a normal exit,
//! left for a look after a failure.

#![no_main]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use bytes::BytesMut;
use libfuzzer_sys::arbitrary::{Result as ArbResult, Unstructured};
use rmq_common::fuzz_harness::{HOSTILE_FIELDS as FIELDS, HOSTILE_VALUES as VALUES};
use rmq_common::remoting::{RemotingCommand, RequestCode, MAX_FRAME_BYTES};

const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
const NORMAL_TIMEOUT: Duration = Duration::from_secs(1);
const CHECK_EVERY: u64 = 500;
/// Resident memory the broker may reach (it starts near 60 MiB).
const MAX_RSS_BYTES: u64 = 1 << 30;
/// Allocated bytes its store may reach outside `commitlog/` (whose 1 GiB
/// segments are allocated whole, the next one ahead of need).
const MAX_STORE_BYTES: u64 = 512 << 20;
/// CommitLog segments it may have: the first, and the one allocated ahead.
/// Inputs of a few KiB cannot fill 1 GiB between two checks.
const MAX_COMMITLOG_SEGMENTS: usize = 2;

struct Target {
    child: Child,
    addr: SocketAddr,
    conn: TcpStream,
    store: PathBuf,
    opaque: i32,
    inputs: u64,
}

static TARGET: Mutex<Option<Target>> = Mutex::new(None);
/// The broker's store and log, removed when the fuzzer exits normally
/// (libFuzzer ends with `exit`, which runs no destructors); a failure
/// aborts and leaves both for a look.
static STORE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

fn log_path(store: &std::path::Path) -> PathBuf {
    store.with_extension("log")
}

extern "C" fn remove_store() {
    if let Some(dir) = STORE.get() {
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_file(log_path(dir));
    }
}

fn start() -> Target {
    let bin = std::env::var("FUZZ_BROKER_BIN")
        .unwrap_or_else(|_| "../../target/release/rmq-broker".to_owned());
    let store = std::env::temp_dir().join(format!("rmq-hostile-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    if STORE.set(store.clone()).is_ok() {
        // SAFETY: registers a plain function with no arguments.
        unsafe {
            libc::atexit(remove_store);
        }
    }
    let mut cmd = Command::new(&bin);
    cmd.args([
        "--set",
        "listenPort=0",
        "--set",
        "namesrvListenPort=0",
        "--set",
        "metricsPort=-1",
        "--set",
        "brokerIP1=127.0.0.1",
        "--set",
    ])
    .arg(format!("storePathRootDir={}", store.display()))
    .stdout(Stdio::piped())
    .stderr(Stdio::from(
        std::fs::File::create(log_path(&store)).expect("broker log file"),
    ));
    // The broker dies with the fuzzer.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin} (set FUZZ_BROKER_BIN): {e}"));
    let mut out = child.stdout.take().expect("piped stdout");
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    // "rmq broker <name> listening on <ip:port> (...)"; bounded read.
    let addr = loop {
        assert!(seen.len() < 64 * 1024, "no listening line from the broker");
        match out.read(&mut byte) {
            Ok(1) => seen.push(byte[0]),
            _ => panic!(
                "broker exited before listening: {} (its log: {})",
                String::from_utf8_lossy(&seen),
                log_path(&store).display()
            ),
        }
        if byte[0] == b'\n' {
            let text = String::from_utf8_lossy(&seen).into_owned();
            if let Some(rest) = text.split(" listening on ").nth(1) {
                let addr = rest.split_whitespace().next().unwrap_or_default();
                break addr.parse::<SocketAddr>().expect("broker address");
            }
        }
    };
    // Keep draining stdout so the broker never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let conn = connect(addr, ANSWER_TIMEOUT);
    Target {
        child,
        addr,
        conn,
        store,
        opaque: 0,
        inputs: 0,
    }
}

fn connect(addr: SocketAddr, timeout: Duration) -> TcpStream {
    let conn = TcpStream::connect_timeout(&addr, timeout).expect("connect to the broker");
    conn.set_read_timeout(Some(timeout)).expect("timeout");
    conn.set_nodelay(true).expect("nodelay");
    conn
}

/// Sends `req` and reads frames until its answer; panics if none comes.
fn round_trip(conn: &mut TcpStream, req: &RemotingCommand, what: &str) -> RemotingCommand {
    let mut buf = BytesMut::new();
    req.encode(&mut buf).expect("encodable request");
    conn.write_all(&buf)
        .unwrap_or_else(|e| panic!("{what}: write failed (broker closed?): {e}"));
    loop {
        let mut prefix = [0u8; 4];
        conn.read_exact(&mut prefix)
            .unwrap_or_else(|e| panic!("{what}: no answer: {e}"));
        let len = u32::from_be_bytes(prefix) as usize;
        assert!(len <= MAX_FRAME_BYTES, "{what}: answer of {len} bytes");
        let mut frame = BytesMut::with_capacity(4 + len);
        frame.extend_from_slice(&prefix);
        frame.resize(4 + len, 0);
        conn.read_exact(&mut frame[4..])
            .unwrap_or_else(|e| panic!("{what}: answer cut short: {e}"));
        let answer = RemotingCommand::decode(&mut frame, MAX_FRAME_BYTES)
            .unwrap_or_else(|e| panic!("{what}: undecodable answer: {e}"))
            .expect("a whole frame");
        if answer.is_response() && answer.opaque == req.opaque {
            return answer;
        }
    }
}

fn request_from(u: &mut Unstructured<'_>) -> ArbResult<RemotingCommand> {
    let code = if u.ratio(4, 5)? {
        u.choose(RequestCode::ALL)?.code()
    } else {
        u.arbitrary::<i32>()?
    };
    let mut req = RemotingCommand::request(code);
    for _ in 0..u.int_in_range(0..=8)? {
        let field = *u.choose(FIELDS)?;
        let value = match u.int_in_range(0..=3)? {
            0 | 1 => (*u.choose(VALUES)?).to_owned(),
            2 => u.arbitrary::<String>()?,
            _ => "T".repeat(u.int_in_range(0..=4000)?),
        };
        req.put_ext(field, value);
    }
    // A pull may be held for its suspend time (long polling): ask for an
    // answer now, the rest of its fields as generated.
    if code == RequestCode::PullMessage.code() || code == RequestCode::LitePullMessage.code() {
        req.put_ext("sysFlag", "0");
        req.put_ext("suspendTimeoutMillis", "0");
    }
    if u.ratio(1, 2)? {
        let body: Vec<u8> = match u.int_in_range(0..=2)? {
            0 => u.arbitrary()?,
            1 => format!(
                r#"{{"consumerDataSet":[{{"groupName":{:?},"subscriptionDataSet":[]}}],"producerDataSet":[],"clientID":"fz"}}"#,
                u.arbitrary::<String>()?
            )
            .into_bytes(),
            _ => format!(
                r#"{{"topicConfigList":[{{"topicName":{:?},"readQueueNums":{},"writeQueueNums":1,"perm":6}}]}}"#,
                u.arbitrary::<String>()?,
                u.arbitrary::<i32>()?
            )
            .into_bytes(),
        };
        req = req.with_body(body);
    }
    Ok(req)
}

fn rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Allocated bytes under `root`, `commitlog/` left out.
fn store_bytes(root: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() && e.file_name() == "commitlog" => {}
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total
}

fn check(t: &mut Target) {
    if let Ok(Some(status)) = t.child.try_wait() {
        panic!("the broker exited: {status}");
    }
    let rss = rss_bytes(t.child.id());
    assert!(rss < MAX_RSS_BYTES, "broker resident memory {rss} bytes");
    let store = store_bytes(&t.store);
    assert!(
        store < MAX_STORE_BYTES,
        "broker store (CommitLog aside) {store} bytes"
    );
    let segments = std::fs::read_dir(t.store.join("commitlog")).map_or(0, |d| d.count());
    assert!(
        segments <= MAX_COMMITLOG_SEGMENTS,
        "{segments} CommitLog segments after {} inputs",
        t.inputs
    );
    let mut normal = connect(t.addr, NORMAL_TIMEOUT);
    let mut req = RemotingCommand::request(RequestCode::GetAllTopicConfig);
    req.opaque = 1;
    let answer = round_trip(&mut normal, &req, "a normal request");
    assert_eq!(
        answer.code, 0,
        "a normal request was refused: {:?}",
        answer.remark
    );
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mut req) = request_from(&mut u) else {
        return;
    };
    let mut guard = TARGET.lock().unwrap_or_else(|p| p.into_inner());
    let t = guard.get_or_insert_with(start);
    t.opaque = t.opaque.wrapping_add(1);
    req.opaque = t.opaque;
    let what = format!("request code {}", req.code);
    if let Ok(Some(status)) = t.child.try_wait() {
        panic!("the broker exited: {status}");
    }
    round_trip(&mut t.conn, &req, &what);
    t.inputs += 1;
    if t.inputs % CHECK_EVERY == 0 {
        check(t);
    }
});
