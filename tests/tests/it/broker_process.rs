//! The broker binary as a child process (`rmq-broker-under-test`, the
//! broker's own main built in this package), in a directory of its own:
//! started and waited for until it listens, stopped with SIGTERM, or killed
//! with SIGKILL as a crash.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The broker binary under test.
const BROKER_BIN: &str = env!("CARGO_BIN_EXE_rmq-broker-under-test");
/// Longest a broker may take to say it listens.
pub const START_BOUND: Duration = Duration::from_secs(60);
/// Longest a broker may take to stop after SIGTERM.
const STOP_BOUND: Duration = Duration::from_secs(20);
/// How often a starting or stopping child is looked at.
const POLL: Duration = Duration::from_millis(50);
/// What the binary prints once it serves.
const READY: &str = "listening on ";

/// Settings every broker here gets on its command line, as an operator
/// passes `-n`: ports of ours that would be fixed otherwise, and the
/// NameServer.
pub fn hermetic(ns: SocketAddr) -> Vec<String> {
    [
        "listenPort=0".to_owned(),
        "namesrvListenPort=-1".to_owned(),
        "metricsPort=-1".to_owned(),
        "grpcServerPort=-1".to_owned(),
        format!("namesrvAddr={ns}"),
        // The shipped files keep Java's 1 GiB CommitLog segment, which the
        // store allocates on disk at once; 16 MiB keeps a run's disk small.
        "mappedFileSizeCommitLog=16777216".to_owned(),
    ]
    .iter()
    .flat_map(|s| ["--set".to_owned(), s.clone()])
    .collect()
}

/// A broker child process, stopped (SIGTERM, then SIGKILL past
/// [`STOP_BOUND`]) when dropped.
pub struct BrokerProcess {
    child: Child,
    /// Where it serves.
    pub addr: SocketAddr,
    out: PathBuf,
    err: PathBuf,
}

impl BrokerProcess {
    /// Runs the binary with `args` in `dir` (its `./store` lands there).
    pub fn spawn(dir: &Path, tag: &str, args: &[String]) -> (Child, PathBuf, PathBuf) {
        std::fs::create_dir_all(dir).unwrap();
        let out = dir.join(format!("{tag}.stdout"));
        let err = dir.join(format!("{tag}.stderr"));
        let mut cmd = Command::new(BROKER_BIN);
        cmd.args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .env("RUST_LOG", "warn")
            .env("RUST_BACKTRACE", "0");
        // Only the settings this test gives.
        for (k, _) in std::env::vars() {
            if k.starts_with(rmq_broker::config::ENV_PREFIX) {
                cmd.env_remove(k);
            }
        }
        (cmd.spawn().expect("the broker binary runs"), out, err)
    }

    /// Starts a broker and waits until it listens; `Err` holds its output
    /// when it exits (or stays silent) instead.
    pub async fn start(dir: &Path, tag: &str, args: &[String]) -> Result<Self, String> {
        let (mut child, out, err) = Self::spawn(dir, tag, args);
        let deadline = Instant::now() + START_BOUND;
        loop {
            let stdout = std::fs::read_to_string(&out).unwrap_or_default();
            if let Some(addr) = listening(&stdout) {
                return Ok(Self {
                    child,
                    addr,
                    out,
                    err,
                });
            }
            let exited = child.try_wait().unwrap();
            if exited.is_some() || Instant::now() > deadline {
                if exited.is_none() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                return Err(format!(
                    "{tag} exited with {exited:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
                    std::fs::read_to_string(&err).unwrap_or_default()
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Its process id (for /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident set now, bytes (VmRSS in /proc).
    pub fn rss_bytes(&self) -> usize {
        let pid = self.pid();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib * 1024
    }

    /// A broker with its own NameServer and its store in `dir/store`:
    /// default settings but `settings` (`key=value`).
    pub async fn with_namesrv(
        dir: &Path,
        settings: &[&str],
    ) -> (rmq_tests::fixtures::TestNameServer, Self) {
        let now = rmq_common::time::Clock::now_ms(&rmq_common::time::SystemClock);
        let ns = rmq_tests::fixtures::TestNameServer::start(now).await;
        let mut args = hermetic(ns.ns.addr);
        let store = format!("storePathRootDir={}", dir.join("store").display());
        for s in settings.iter().copied().chain([store.as_str()]) {
            args.extend(["--set".to_owned(), s.to_owned()]);
        }
        let b = Self::start(&dir.join("run"), "broker", &args)
            .await
            .unwrap();
        (ns, b)
    }

    /// Its standard error so far (the log).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Stops it with SIGTERM (an orderly stop: the store is flushed).
    pub async fn stop(mut self) {
        self.terminate().await;
    }

    async fn terminate(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        // The binary's orderly stop; `kill(1)` keeps this crate free of
        // unsafe code.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + STOP_BOUND;
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!(
            "the broker did not stop within {STOP_BOUND:?}\n{}",
            std::fs::read_to_string(&self.out).unwrap_or_default()
        );
    }
}

impl BrokerProcess {
    /// Stops it where it is (SIGSTOP): the moment of a power cut, after
    /// which nothing it does may count.
    pub fn freeze(&self) {
        let status = Command::new("kill")
            .args(["-STOP", &self.child.id().to_string()])
            .status();
        assert!(
            matches!(status, Ok(s) if s.success()),
            "kill -STOP: {status:?}"
        );
    }

    /// Kills it with SIGKILL, as a crash.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The address in `rmq broker NAME listening on ADDR (NameServer ...)`.
fn listening(stdout: &str) -> Option<SocketAddr> {
    let line = stdout.lines().find(|l| l.contains(READY))?;
    let rest = &line[line.find(READY)? + READY.len()..];
    rest.split_whitespace().next()?.parse().ok()
}
