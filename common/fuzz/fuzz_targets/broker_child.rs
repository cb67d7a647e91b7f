//! A real `rmq-broker` as a child of the fuzzer, for the targets that drive
//! one (`hostile_client` over remoting, `grpc_request` over gRPC).
//!
//! The broker is started on 127.0.0.1 with port 0 for everything and a
//! fresh store (`$TMPDIR/rmq-<name>-fuzz-<pid>`, its log next to it as
//! `.log`); it is killed when the fuzzer exits, and its store and log are
//! removed at a normal exit (left for a look after a failure). The fuzz
//! build does not compile RocksDB: `FUZZ_BROKER_BIN` names the binary
//! (`scripts/fuzz.sh` builds it and sets it).

// Each target uses the address of its own protocol only.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::BytesMut;
use rmq_common::remoting::{RemotingCommand, RequestCode, MAX_FRAME_BYTES};

/// Resident memory the broker may reach (it starts near 60 MiB).
pub const MAX_RSS_BYTES: u64 = 1 << 30;
/// Allocated bytes its store may reach outside `commitlog/` (whose 1 GiB
/// segments are allocated whole, the next one ahead of need).
pub const MAX_STORE_BYTES: u64 = 512 << 20;
/// CommitLog segments it may have: the first, and the one allocated ahead.
/// Inputs of a few KiB cannot fill 1 GiB between two checks.
pub const MAX_COMMITLOG_SEGMENTS: usize = 2;

/// The running broker.
pub struct BrokerChild {
    pub child: Child,
    /// Its remoting address.
    pub remoting: SocketAddr,
    /// Its gRPC address (`grpcServerPort=0`, read from its log).
    pub grpc: SocketAddr,
    pub store: PathBuf,
}

/// The broker's store and log, removed when the fuzzer exits normally
/// (libFuzzer ends with `exit`, which runs no destructors); a failure
/// aborts and leaves both for a look.
static STORE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

fn log_path(store: &Path) -> PathBuf {
    store.with_extension("log")
}

extern "C" fn remove_store() {
    if let Some(dir) = STORE.get() {
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_file(log_path(dir));
    }
}

/// Starts the broker for the target `name`; panics (the fuzzer stops) if
/// it cannot.
pub fn start(name: &str) -> BrokerChild {
    let bin = std::env::var("FUZZ_BROKER_BIN")
        .unwrap_or_else(|_| "../../target/release/rmq-broker".to_owned());
    let store = std::env::temp_dir().join(format!("rmq-{name}-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    if STORE.set(store.clone()).is_ok() {
        // SAFETY: registers a plain function with no arguments.
        unsafe {
            libc::atexit(remove_store);
        }
    }
    let mut cmd = Command::new(&bin);
    for set in [
        "listenPort=0",
        "namesrvListenPort=0",
        "grpcServerPort=0",
        "metricsPort=-1",
        "brokerIP1=127.0.0.1",
    ] {
        cmd.args(["--set", set]);
    }
    cmd.arg("--set")
        .arg(format!("storePathRootDir={}", store.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::from(
            std::fs::File::create(log_path(&store)).expect("broker log file"),
        ));
    // The broker dies with the fuzzer.
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
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
    let remoting = loop {
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
    // The gRPC server logs its address before the listening line is
    // printed: "... gRPC (apache.rocketmq.v2) served endpoint=<ip:port>".
    let log = std::fs::read_to_string(log_path(&store)).unwrap_or_default();
    let grpc = log
        .lines()
        .filter(|l| l.contains("gRPC (apache.rocketmq.v2) served"))
        .find_map(|l| l.split("endpoint=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse::<SocketAddr>().ok())
        .unwrap_or_else(|| {
            panic!(
                "no gRPC address in the broker's log {}",
                log_path(&store).display()
            )
        });
    BrokerChild {
        child,
        remoting,
        grpc,
        store,
    }
}

impl BrokerChild {
    /// Panics if the broker has exited.
    pub fn alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "the broker exited: {status} (its log: {})",
                log_path(&self.store).display()
            );
        }
    }

    /// Panics if the broker exited, or its memory, store or CommitLog
    /// passed their bound after `inputs` inputs.
    pub fn check_bounds(&mut self, inputs: u64) {
        self.alive();
        let rss = rss_bytes(self.child.id());
        assert!(rss < MAX_RSS_BYTES, "broker resident memory {rss} bytes");
        let store = store_bytes(&self.store);
        assert!(
            store < MAX_STORE_BYTES,
            "broker store (CommitLog aside) {store} bytes"
        );
        let segments = std::fs::read_dir(self.store.join("commitlog")).map_or(0, |d| d.count());
        assert!(
            segments <= MAX_COMMITLOG_SEGMENTS,
            "{segments} CommitLog segments after {inputs} inputs"
        );
    }
}

/// A remoting connection whose reads time out after `timeout`.
pub fn connect(addr: SocketAddr, timeout: Duration) -> TcpStream {
    let conn = TcpStream::connect_timeout(&addr, timeout).expect("connect to the broker");
    conn.set_read_timeout(Some(timeout)).expect("timeout");
    conn.set_nodelay(true).expect("nodelay");
    conn
}

/// Sends `req` and reads frames until its answer; panics if none comes.
pub fn round_trip(conn: &mut TcpStream, req: &RemotingCommand, what: &str) -> RemotingCommand {
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

/// Creates `topic` (4 queues, read and write) with `attributes` (such as
/// `+message.type=FIFO`) over remoting; panics if the broker refuses.
pub fn create_topic(addr: SocketAddr, topic: &str, attributes: &str) {
    let mut conn = connect(addr, Duration::from_secs(5));
    let mut req = RemotingCommand::request(RequestCode::UpdateAndCreateTopic);
    req.opaque = 1;
    for (k, v) in [
        ("topic", topic),
        ("readQueueNums", "4"),
        ("writeQueueNums", "4"),
        ("perm", "6"),
    ] {
        req.put_ext(k, v);
    }
    if !attributes.is_empty() {
        req.put_ext("attributes", attributes);
    }
    let answer = round_trip(&mut conn, &req, "create a topic");
    assert_eq!(answer.code, 0, "cannot create {topic}: {:?}", answer.remark);
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
fn store_bytes(root: &Path) -> u64 {
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
