//! Apache's rocketmq-proxy 5.3.3 in cluster mode, started from the
//! published jars (`scripts/setup.sh` fetches them into
//! `${RMQ_APACHE_CACHE:-$HOME/.cache/rmq-apache}/proxy-5.3.3/lib`) in front
//! of a NameServer, so the stock gRPC client reaches this broker through
//! it: for the tests of what the proxy asks of a broker (sends now, POP
//! next).
//!
//! The proxy cannot listen on port 0 (it binds the ports of its
//! `proxy.json`), so free ports on 127.0.0.1 are found first, and a start
//! that lost a port to another test is retried on new ones. It is ready
//! when it prints its start-up line; it is killed when dropped.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The proxy release the jars are.
pub const PROXY_VERSION: &str = "5.3.3";

/// Longest the proxy may take to start (JVM start, route look-ups, the
/// heartbeat-sync topic created on the broker).
pub const PROXY_START_TIMEOUT: Duration = Duration::from_secs(90);

/// How often the output is read while waiting for the start.
const START_POLL: Duration = Duration::from_millis(100);

/// Times the proxy is started again on new ports when one was taken.
const BIND_ATTEMPTS: usize = 3;

/// What the proxy prints once it serves (`ProxyStartup.main`).
const READY_LINE: &str = "rocketmq-proxy startup successfully";

/// The cache folder of Apache jars, outside the repository.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("RMQ_APACHE_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache")
            .join("rmq-apache"),
    }
}

/// Where the proxy's jars are.
pub fn lib_dir() -> PathBuf {
    cache_dir()
        .join(format!("proxy-{PROXY_VERSION}"))
        .join("lib")
}

/// Fails (never skips) with the set-up hint when the jars are missing.
pub fn require_jars() {
    assert!(
        lib_dir().join(".complete").exists(),
        "Apache rocketmq-proxy {PROXY_VERSION} jars missing in {}: run scripts/setup.sh",
        lib_dir().display()
    );
}

/// A running proxy; killed when dropped.
#[derive(Debug)]
pub struct ApacheProxy {
    child: Child,
    home: PathBuf,
    out: PathBuf,
    /// Where gRPC clients connect (`grpcServerPort`).
    pub grpc: SocketAddr,
    /// Where remoting clients connect (`remotingListenPort`).
    pub remoting: SocketAddr,
}

impl Drop for ApacheProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ApacheProxy {
    /// Starts a proxy for `cluster` in front of the NameServer `namesrv`,
    /// its files under `home`, and waits (on the blocking pool) until it
    /// serves. Panics with its output if it stops or does not start in
    /// [`PROXY_START_TIMEOUT`].
    pub async fn start(home: &Path, namesrv: SocketAddr, cluster: &str) -> Self {
        Self::start_with(home, namesrv, cluster, serde_json::Map::new()).await
    }

    /// [`ApacheProxy::start`] with more `proxy.json` keys (`ProxyConfig`
    /// fields, e.g. `transactionHeartbeatPeriodSecond`).
    pub async fn start_with(
        home: &Path,
        namesrv: SocketAddr,
        cluster: &str,
        extra: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        let (home, cluster) = (home.to_path_buf(), cluster.to_owned());
        tokio::task::spawn_blocking(move || Self::start_blocking(&home, namesrv, &cluster, &extra))
            .await
            .expect("proxy start task")
    }

    /// [`ApacheProxy::start_with`], blocking.
    pub fn start_blocking(
        home: &Path,
        namesrv: SocketAddr,
        cluster: &str,
        extra: &serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        require_jars();
        let mut last = String::new();
        for attempt in 0..BIND_ATTEMPTS {
            let grpc = crate::apache::free_port();
            let remoting = crate::apache::free_port();
            let dir = home.join(format!("proxy-{attempt}"));
            let mut proxy = Self::spawn(&dir, namesrv, cluster, grpc, remoting, extra);
            match proxy.wait_ready() {
                Ok(()) => return proxy,
                Err(text) if text.contains("Address already in use") => last = text,
                Err(text) => panic!("{text}"),
            }
        }
        panic!("rocketmq-proxy: ports taken {BIND_ATTEMPTS} times over:\n{last}");
    }

    /// `host:port` of the gRPC endpoint, as the gRPC client takes it.
    pub fn grpc_endpoint(&self) -> String {
        self.grpc.to_string()
    }

    /// The proxy's output and the tail of its log, for an assertion
    /// message.
    pub fn report(&self) -> String {
        let out = std::fs::read_to_string(&self.out).unwrap_or_default();
        let log = std::fs::read_to_string(self.home.join("logs/rocketmqlogs/proxy.log"))
            .unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(60).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "--- proxy output ({}) ---\n{out}\n--- proxy.log, last lines ---\n{}",
            self.out.display(),
            tail.join("\n")
        )
    }

    fn spawn(
        home: &Path,
        namesrv: SocketAddr,
        cluster: &str,
        grpc: u16,
        remoting: u16,
        extra: &serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        std::fs::create_dir_all(home).unwrap();
        let conf = home.join("proxy.json");
        let mut json = serde_json::json!({
            "rocketMQClusterName": cluster,
            "grpcServerPort": grpc,
            "remotingListenPort": remoting,
        });
        if let Some(map) = json.as_object_mut() {
            map.extend(extra.clone());
        }
        std::fs::write(&conf, json.to_string()).unwrap();
        let out = home.join("proxy.out");
        let file = std::fs::File::create(&out).unwrap();
        let child = Command::new("java")
            .args([
                "-Xms128m",
                "-Xmx384m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                &format!("-Duser.home={}", home.display()),
                &format!("-Drocketmq.home.dir={}", home.display()),
                "-cp",
                &format!("{}/*", lib_dir().display()),
                "org.apache.rocketmq.proxy.ProxyStartup",
                "-pm",
                "cluster",
                "-pc",
                &conf.to_string_lossy(),
                "-n",
                &namesrv.to_string(),
            ])
            .env("ROCKETMQ_HOME", home)
            .current_dir(home)
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .expect("java (scripts/setup.sh installs it)");
        Self {
            child,
            home: home.to_path_buf(),
            out,
            grpc: crate::apache::local(grpc),
            remoting: crate::apache::local(remoting),
        }
    }

    /// Waits (bounded) for [`READY_LINE`]; `Err` with the report if the
    /// proxy exited first.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + PROXY_START_TIMEOUT;
        loop {
            let text = std::fs::read_to_string(&self.out).unwrap_or_default();
            if text.contains(READY_LINE) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "rocketmq-proxy exited ({status}) before it served:\n{}",
                    self.report()
                ));
            }
            assert!(
                Instant::now() < deadline,
                "rocketmq-proxy did not start within {PROXY_START_TIMEOUT:?}:\n{}",
                self.report()
            );
            std::thread::sleep(START_POLL);
        }
    }
}
