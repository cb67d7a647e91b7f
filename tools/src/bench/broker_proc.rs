//! A broker in a child process (the `rmq-broker` binary), for benches that
//! charge CPU to the broker alone: a broker in the bench's own process
//! shares its CPU time with the load. Its CPU is read from
//! `/proc/<pid>/stat`, as `rmq-bench meta` reads a broker's.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// Longest a broker may take to say it listens.
const START_BOUND: Duration = Duration::from_secs(60);
/// Longest a broker may take to stop after SIGTERM before it is killed.
const STOP_BOUND: Duration = Duration::from_secs(30);
/// How often a starting or stopping child is looked at.
const POLL: Duration = Duration::from_millis(20);
/// What the binary prints once it serves, before its address.
const READY: &str = "listening on ";

/// The broker binary next to this executable (`target/release/rmq-broker`
/// for `cargo run --release -p rmq-tools --bin rmq-bench`).
pub fn default_binary() -> anyhow::Result<PathBuf> {
    Ok(std::env::current_exe()?.with_file_name("rmq-broker"))
}

/// How [`BrokerProcess::stop`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stopped {
    /// It exited after SIGTERM.
    Exited,
    /// It was still running past the stop bound (or SIGTERM could not be
    /// sent) and was killed.
    Killed,
}

/// A running broker child, stopped when dropped.
#[derive(Debug)]
pub struct BrokerProcess {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
}

impl BrokerProcess {
    /// Runs `bin` with `--set KEY=VALUE` for each of `sets` in `dir` (its
    /// stdout and stderr land there) and waits until it listens.
    pub async fn start(bin: &Path, dir: &Path, sets: &[String]) -> anyhow::Result<Self> {
        Self::start_within(bin, dir, sets, START_BOUND).await
    }

    /// [`BrokerProcess::start`] with a bound of the caller's (recovering a
    /// store of many queues may take longer than [`START_BOUND`]).
    pub async fn start_within(
        bin: &Path,
        dir: &Path,
        sets: &[String],
        bound: Duration,
    ) -> anyhow::Result<Self> {
        if !bin.is_file() {
            bail!(
                "broker binary {} not found (build it with `cargo build --release -p rmq-broker`, or pass --broker-bin)",
                bin.display()
            );
        }
        std::fs::create_dir_all(dir)?;
        let out = dir.join("broker.stdout");
        let log = dir.join("broker.stderr");
        let mut cmd = Command::new(bin);
        cmd.args(sets.iter().flat_map(|s| ["--set", s.as_str()]))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out)?)
            .stderr(std::fs::File::create(&log)?)
            .env("RUST_LOG", "warn");
        // Only the settings given here.
        for (k, _) in std::env::vars() {
            if k.starts_with(rmq_broker::config::ENV_PREFIX) {
                cmd.env_remove(k);
            }
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("running {}", bin.display()))?;
        let deadline = Instant::now() + bound;
        loop {
            let stdout = std::fs::read_to_string(&out).unwrap_or_default();
            if let Some(addr) = listening(&stdout) {
                return Ok(Self { child, addr, log });
            }
            let exited = child.try_wait()?;
            if exited.is_some() || Instant::now() > deadline {
                if exited.is_none() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                bail!(
                    "broker {} did not start ({exited:?}); its log:\n{}",
                    bin.display(),
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Its remoting address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its user + system CPU time so far, seconds.
    pub fn cpu_seconds(&self) -> Option<f64> {
        rmq_broker::metrics::process::cpu_seconds_of(self.pid())
    }

    /// Stops it with SIGTERM (an orderly stop), or kills it past
    /// [`STOP_BOUND`]; says which.
    pub async fn stop(self) -> anyhow::Result<Stopped> {
        self.stop_within(STOP_BOUND).await
    }

    /// [`BrokerProcess::stop`] with a bound of the caller's (a broker
    /// flushing many queues on the way out may need more).
    pub async fn stop_within(mut self, bound: Duration) -> anyhow::Result<Stopped> {
        let term = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
        if term.map(|s| s.success()).unwrap_or(false) {
            let deadline = Instant::now() + bound;
            while Instant::now() < deadline {
                if self.child.try_wait()?.is_some() {
                    return Ok(Stopped::Exited);
                }
                tokio::time::sleep(POLL).await;
            }
            tracing::warn!(log = %self.log.display(), "broker did not stop after SIGTERM; killed");
        }
        self.child.kill()?;
        self.child.wait()?;
        Ok(Stopped::Killed)
    }
}

impl BrokerProcess {
    /// Kills it with SIGKILL (a crash: nothing flushed or checkpointed on
    /// the way out) and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The address in the binary's "... listening on ADDR (NameServer ...)"
/// line.
fn listening(stdout: &str) -> Option<SocketAddr> {
    let rest = &stdout[stdout.find(READY)? + READY.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_ready_line() {
        let line = "rmq broker b listening on 127.0.0.1:40111 (NameServer external), consume queue backend: file, store: s\n";
        assert_eq!(listening(line), Some("127.0.0.1:40111".parse().unwrap()));
        assert_eq!(listening("starting\n"), None);
        assert_eq!(listening("rmq broker b listening on "), None);
    }
}
