//! Apache RocketMQ's own 4.9.7 NameServer and broker, started from the
//! published jars `scripts/setup.sh` fetches into
//! `tests/java/target-apache/lib`: for tests that put this project's tools,
//! or this broker as master or slave, beside them. Also its 5.3.3 broker,
//! from the 5.3.3 proxy's jars.
//!
//! Apache's broker cannot listen on port 0 (it registers the port it was
//! configured with, and opens listenPort-2 and listenPort+1 beside it), so
//! free ports on 127.0.0.1 are found first.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a Java NameServer or broker may take to start.
pub const START_TIMEOUT: Duration = Duration::from_secs(90);

/// Where the jars are.
pub fn lib_dir() -> PathBuf {
    crate::java::java_dir().join("target-apache").join("lib")
}

/// Panics with the set-up hint when the jars are missing.
pub fn require_jars() {
    assert!(
        lib_dir().join(".complete").exists(),
        "Apache RocketMQ 4.9.7 jars missing in {}: run scripts/setup.sh",
        lib_dir().display()
    );
}

/// Apache RocketMQ 5.3.3's own jars with their dependencies (broker,
/// NameServer, controller, DLedger), which `scripts/bench-vs-apache.sh`
/// fetches with Maven (`tools/apache/pom.xml`) into
/// `${RMQ_APACHE_CACHE:-~/.cache/rmq-apache}/5.3.3/lib`.
pub fn lib_5_3_3() -> PathBuf {
    crate::grpc_proxy::cache_dir().join("5.3.3").join("lib")
}

/// Panics with the set-up hint when the 5.3.3 jars are missing.
pub fn require_jars_5_3_3() {
    assert!(
        lib_5_3_3().join(".complete").exists(),
        "Apache RocketMQ 5.3.3 jars missing in {}: run scripts/bench-vs-apache.sh \
         --quick --targets apache-5.3.3 (or mvn -f tools/apache/pom.xml \
         -Drocketmq.version=5.3.3 dependency:copy-dependencies -DoutputDirectory=<that folder> \
         and touch .complete there)",
        lib_5_3_3().display()
    );
}

/// A Java process killed when dropped.
#[derive(Debug)]
pub struct Jvm {
    child: Child,
    out: PathBuf,
}

impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const LOGBACK: &str = r#"<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${user.home}/logs/java.log</file>
    <encoder><pattern>%d %p %t - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"#;

impl Jvm {
    /// Starts `main` with `args` in `home` (its ROCKETMQ_HOME, given the
    /// logging set-up 4.9.7 needs); output in `home/<name>.out`.
    pub fn start(home: &Path, main: &str, args: &[&str], name: &str) -> Self {
        Self::start_from(&lib_dir(), home, main, args, name)
    }

    /// [`Jvm::start`] with the jars of `lib` on the class path.
    pub fn start_from(lib: &Path, home: &Path, main: &str, args: &[&str], name: &str) -> Self {
        std::fs::create_dir_all(home.join("conf")).unwrap();
        for n in ["broker", "namesrv"] {
            std::fs::write(home.join(format!("conf/logback_{n}.xml")), LOGBACK).unwrap();
        }
        let out = home.join(format!("{name}.out"));
        let file = std::fs::File::create(&out).unwrap();
        let child = Command::new("java")
            .args([
                "-Xms256m",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
                &format!("-Duser.home={}", home.display()),
                &format!("-Drocketmq.home.dir={}", home.display()),
                "-cp",
                &format!("{}/*", lib.display()),
                main,
            ])
            .args(args)
            .env("ROCKETMQ_HOME", home)
            .current_dir(home)
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .expect("java (scripts/setup.sh installs it)");
        Self { child, out }
    }

    /// Kills it at once (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts a NameServer on `port` (not waiting for it to boot).
    fn namesrv(home: &Path, port: u16) -> Self {
        std::fs::create_dir_all(home).unwrap();
        let conf = home.join("namesrv.conf");
        std::fs::write(
            &conf,
            format!(
                "listenPort={port}\nkvConfigPath={0}/namesrv/kvConfig.json\nconfigStorePath={0}/namesrv/namesrv.properties\n",
                home.display()
            ),
        )
        .unwrap();
        Self::start(
            home,
            "org.apache.rocketmq.namesrv.NamesrvStartup",
            &["-c", &conf.to_string_lossy()],
            "namesrv",
        )
    }

    /// Starts a NameServer on a port free on 127.0.0.1 and waits for it to
    /// boot; returns it and the port.
    pub fn namesrv_on_free_port(home: &Path) -> (Self, u16) {
        Self::boot_on_free_ports("Apache NameServer 4.9.7", free_port, |port| {
            Self::namesrv(home, port)
        })
    }

    /// Starts a broker registering with `namesrv` on free ports (see
    /// [`broker_base_port`]), with `extra` broker.conf lines, and waits for
    /// it to boot; returns it and its port.
    pub fn broker_on_free_ports(home: &Path, namesrv: &str, extra: &str) -> (Self, u16) {
        Self::boot_on_free_ports("Apache broker 4.9.7", broker_base_port, |port| {
            Self::broker(home, port, namesrv, extra)
        })
    }

    /// Starts a broker on `port` (not waiting for it to boot).
    fn broker(home: &Path, port: u16, namesrv: &str, extra: &str) -> Self {
        std::fs::create_dir_all(home).unwrap();
        let conf = home.join("broker.conf");
        std::fs::write(
            &conf,
            format!(
                "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerIP1=127.0.0.1\n\
                 brokerIP2=127.0.0.1\nlistenPort={port}\nstorePathRootDir={0}/store\n\
                 storePathCommitLog={0}/store/commitlog\nflushDiskType=ASYNC_FLUSH\n{extra}",
                home.display()
            ),
        )
        .unwrap();
        Self::start(
            home,
            "org.apache.rocketmq.broker.BrokerStartup",
            &["-c", &conf.to_string_lossy(), "-n", namesrv],
            "broker",
        )
    }

    /// Starts Apache RocketMQ 5.3.3's broker (the jars of the proxy's lib
    /// folder, which hold rocketmq-broker 5.3.3 and its dependencies, see
    /// `grpc_proxy::lib_dir`) on free ports with `extra` broker.conf lines,
    /// and waits for it to boot; no NameServer (it logs the failed
    /// registrations and serves clients that address it directly).
    /// Returns it and its port.
    pub fn broker_5_3_3_on_free_ports(home: &Path, extra: &str) -> (Self, u16) {
        Self::boot_on_free_ports("Apache broker 5.3.3", broker_base_port, |port| {
            std::fs::create_dir_all(home).unwrap();
            let conf = home.join("broker.conf");
            std::fs::write(
                &conf,
                format!(
                    "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\n\
                     brokerIP1=127.0.0.1\nbindAddress=127.0.0.1\nlistenPort={port}\n\
                     storePathRootDir={0}/store\nstorePathCommitLog={0}/store/commitlog\n\
                     flushDiskType=ASYNC_FLUSH\nmappedFileSizeCommitLog=67108864\n{extra}",
                    home.display()
                ),
            )
            .unwrap();
            Self::start_from(
                &crate::grpc_proxy::lib_dir(),
                home,
                "org.apache.rocketmq.broker.BrokerStartup",
                &["-c", &conf.to_string_lossy()],
                "broker",
            )
        })
    }

    /// Starts Apache RocketMQ 5.3.3's NameServer ([`lib_5_3_3`]) on a free
    /// port and waits for it to boot. With `controller`, the controller runs
    /// inside it (`enableControllerInNamesrv`, one DLedger replica `n0` on a
    /// second free port, which is where brokers find it) and is waited
    /// for too; `extra` adds lines to its config. Returns it, the NameServer's
    /// port and the controller's.
    pub fn namesrv_5_3_3_on_free_ports(
        home: &Path,
        controller: bool,
        extra: &str,
    ) -> (Self, u16, Option<u16>) {
        let what = "Apache NameServer 5.3.3";
        let mut last = String::new();
        for _ in 0..BIND_ATTEMPTS {
            let (port, ctl) = (free_port(), controller.then(free_port));
            std::fs::create_dir_all(home).unwrap();
            let mut conf = format!(
                "listenPort={port}\nbindAddress=127.0.0.1\n\
                 kvConfigPath={0}/namesrv/kvConfig.json\n\
                 configStorePath={0}/namesrv/namesrv.properties\n{extra}",
                home.display()
            );
            if let Some(c) = ctl {
                conf.push_str(&format!(
                    "enableControllerInNamesrv=true\ncontrollerDLegerGroup=group1\n\
                     controllerDLegerPeers=n0-127.0.0.1:{c}\ncontrollerDLegerSelfId=n0\n\
                     controllerStorePath={0}/controller\nmappedFileSize=67108864\n",
                    home.display()
                ));
            }
            let path = home.join("namesrv.conf");
            std::fs::write(&path, conf).unwrap();
            let mut jvm = Self::start_from(
                &lib_5_3_3(),
                home,
                "org.apache.rocketmq.namesrv.NamesrvStartup",
                &["-c", &path.to_string_lossy()],
                "namesrv",
            );
            let ready = if controller {
                "ControllerManager boot success"
            } else {
                "Name Server boot success"
            };
            match jvm.wait_output(what, ready) {
                Ok(()) => return (jvm, port, ctl),
                Err(text) if text.contains("Address already in use") => last = text,
                Err(text) => panic!("{text}"),
            }
        }
        panic!("{what}: ports taken {BIND_ATTEMPTS} times over:\n{last}");
    }

    /// Starts with `spawn(port)` on a port `pick` finds free and waits for
    /// the boot; a port taken between the probe and the JVM's bind (by
    /// another test) is retried on new ports, [`BIND_ATTEMPTS`] times.
    fn boot_on_free_ports(
        what: &str,
        pick: fn() -> u16,
        spawn: impl Fn(u16) -> Self,
    ) -> (Self, u16) {
        let mut last = String::new();
        for _ in 0..BIND_ATTEMPTS {
            let port = pick();
            let mut jvm = spawn(port);
            match jvm.wait_booted(what) {
                Ok(()) => return (jvm, port),
                Err(text) if text.contains("Address already in use") => last = text,
                Err(text) => panic!("{text}"),
            }
        }
        panic!("{what}: ports taken {BIND_ATTEMPTS} times over:\n{last}");
    }

    /// Waits (bounded) for "boot success" in its output; `Err` with the
    /// output if it exited first.
    pub fn wait_booted(&mut self, what: &str) -> Result<(), String> {
        self.wait_output(what, "boot success")
    }

    /// Waits (bounded) for `line` in its output; `Err` with the output if
    /// it exited first.
    pub fn wait_output(&mut self, what: &str, line: &str) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let text = std::fs::read_to_string(&self.out).unwrap_or_default();
            if text.contains(line) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("{what} exited ({status}) before booting:\n{text}"));
            }
            assert!(
                Instant::now() < deadline,
                "{what} did not boot within {START_TIMEOUT:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Times a JVM is started again on new ports when one was taken.
const BIND_ATTEMPTS: usize = 3;

/// A port `p` such that `p - 2`, `p` and `p + 1` are free on 127.0.0.1
/// (Apache's broker, its "fast" port and its HA port).
pub fn broker_base_port() -> u16 {
    for _ in 0..50 {
        let p = free_port();
        if p < 1026 || p == u16::MAX {
            continue;
        }
        let all: Vec<_> = [p - 2, p, p + 1]
            .iter()
            .map(|q| TcpListener::bind(("127.0.0.1", *q)))
            .collect();
        if all.iter().all(Result::is_ok) {
            return p;
        }
    }
    panic!("no three free ports found on 127.0.0.1");
}

/// A port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `127.0.0.1:<port>`.
pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}
