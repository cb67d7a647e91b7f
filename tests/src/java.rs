//! Runs the stock Java client and tools (jars fetched by Maven into
//! `tests/java/target/dependency`, the suite's own classes in
//! `tests/java/target/classes`) as child processes, bounded in time, with
//! their output kept in files.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest `java -version` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// What `scripts/setup.sh` does to make the jars exist.
pub const SETUP_HINT: &str = "run scripts/setup.sh (it installs a JDK and Maven if missing and \
     builds tests/java with `mvn package dependency:copy-dependencies`)";

/// `tests/java`.
pub fn java_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("java")
}

/// Which stock client (and tools) a run uses: both are built from the same
/// sources, each into its own folder under `tests/java`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// rocketmq-client / rocketmq-tools 4.9.8 (`target/`).
    V4,
    /// rocketmq-client / rocketmq-tools 5.3.3, remoting protocol (`target-5/`).
    V5,
    /// The gRPC client rocketmq-client-java 5.0.7 with a 4.9.8 remoting
    /// consumer beside it (`grpc/target/`, main `rmqgrpc.GrpcSuite`): the
    /// scenarios run through Apache's proxy ([`crate::grpc_proxy`]).
    Grpc,
}

impl Client {
    /// The Maven build folder.
    pub fn target(self) -> PathBuf {
        match self {
            Client::V4 => java_dir().join("target"),
            Client::V5 => java_dir().join("target-5"),
            Client::Grpc => java_dir().join("grpc").join("target"),
        }
    }

    /// A jar whose name starts with this is among the fetched ones once
    /// the build ran.
    fn marker_jar(self) -> &'static str {
        match self {
            Client::V4 | Client::V5 => "rocketmq-tools",
            Client::Grpc => "rocketmq-client-java",
        }
    }

    /// The classpath: the suite's classes and every fetched jar.
    pub fn classpath(self) -> String {
        let target = self.target();
        format!(
            "{}:{}/*",
            target.join("classes").display(),
            target.join("dependency").display()
        )
    }
}

/// One finished (or killed) run.
pub type JavaRun = crate::child::ChildRun;

/// Fails (never skips) when Java or the client's jars are missing.
pub fn require_java_and_jars(client: Client) {
    let dir = tempfile::tempdir().expect("temp dir");
    let probe = run_blocking(&["-version".to_owned()], dir.path(), PROBE_TIMEOUT);
    assert!(
        probe.succeeded(),
        "`java -version` failed; {SETUP_HINT}\n{}",
        probe.report("java -version")
    );
    let deps = client.target().join("dependency");
    let has_client = std::fs::read_dir(&deps).is_ok_and(|d| {
        d.filter_map(Result::ok).any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(client.marker_jar())
        })
    });
    assert!(
        has_client,
        "{} has no rocketmq jars; {SETUP_HINT}",
        deps.display()
    );
}

/// JVM options every run gets: small and quick to start, the client's
/// logs under `home`, and the module openings the 4.9 client needs on
/// Java 17.
fn jvm_options(home: &Path) -> Vec<String> {
    vec![
        "-Xmx256m".into(),
        "-XX:TieredStopAtLevel=1".into(),
        "-XX:+UseSerialGC".into(),
        "--add-opens=java.base/java.nio=ALL-UNNAMED".into(),
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED".into(),
        "--add-opens=java.base/java.lang=ALL-UNNAMED".into(),
        format!("-Drocketmq.client.logRoot={}", home.join("logs").display()),
        "-Drocketmq.client.logLevel=WARN".into(),
        format!("-Duser.home={}", home.display()),
        format!("-Drocketmq.home.dir={}", home.display()),
    ]
}

/// Runs `java <jvm options> -cp <classpath> main args...` in `home`
/// (also its `ROCKETMQ_HOME`), killed after `timeout`.
pub async fn run_main(
    client: Client,
    main: &str,
    args: &[String],
    home: &Path,
    timeout: Duration,
) -> JavaRun {
    run_main_with(client, &[], main, args, home, timeout).await
}

/// [`run_main`] with `jvm` options added (system properties such as
/// `-Dtls.enable=true`).
pub async fn run_main_with(
    client: Client,
    jvm: &[&str],
    main: &str,
    args: &[String],
    home: &Path,
    timeout: Duration,
) -> JavaRun {
    let mut all = jvm_options(home);
    all.extend(jvm.iter().map(|s| (*s).to_owned()));
    all.push("-cp".into());
    all.push(client.classpath());
    all.push(main.to_owned());
    all.extend(args.iter().cloned());
    let home = home.to_path_buf();
    tokio::task::spawn_blocking(move || run_blocking(&all, &home, timeout))
        .await
        .expect("java runner task")
}

/// Runs `java args...` in `home`; blocking.
pub fn run_blocking(args: &[String], home: &Path, timeout: Duration) -> JavaRun {
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::child::Child {
        program: "java",
        args,
        cwd: home,
        env: &[("ROCKETMQ_HOME", home)],
        out_dir: home,
        tag: &format!("java-{n}"),
        timeout,
        setup_hint: SETUP_HINT,
    }
    .run()
}

static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Starts `rmqcheck.ClientSuite` of `client` with `args` in `home` (made
/// if missing), killed after `timeout`; for a test that acts on the brokers
/// while a staged scenario runs (it writes `ready-<stage>` into `home` and
/// waits for the test's `go-<stage>`).
pub fn spawn_suite(
    client: Client,
    args: &[&str],
    home: &Path,
    timeout: Duration,
) -> tokio::task::JoinHandle<JavaRun> {
    std::fs::create_dir_all(home).unwrap();
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let home = home.to_path_buf();
    tokio::spawn(
        async move { run_main(client, "rmqcheck.ClientSuite", &args, &home, timeout).await },
    )
}

/// Waits until `ok`, failing with `what` after `bound`, or as soon as the
/// scenario `run` has ended (it would never get there), with its report.
pub async fn wait_while_running(
    what: &str,
    run: &mut tokio::task::JoinHandle<JavaRun>,
    bound: Duration,
    mut ok: impl AsyncFnMut() -> bool,
) {
    let deadline = std::time::Instant::now() + bound;
    while !ok().await {
        if run.is_finished() {
            let r = run.await.unwrap();
            panic!("{}", r.report(&format!("the scenario ended before {what}")));
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} within {bound:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
