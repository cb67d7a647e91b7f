//! The stock RocketMQ 5.x gRPC SDKs of Node, Python and Go as child
//! processes: each language has one check program (`tests/node5`,
//! `tests/python5`, `tests/go5`) with the same scenarios, arguments, output
//! lines and exit codes, run here bounded in time, its output kept under
//! the test's folder.
//!
//! What each needs is installed by `scripts/setup.sh`: node and
//! `npm ci --prefix tests/node5`; a venv with `tests/python5/requirements.txt`
//! at [`python_venv`]; the Go program built to `tests/go5/target/grpc_check`.
//! A test fails when its SDK is half installed; only the Python and Go tests
//! skip, and only when there is no `python3` or `go` at all.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::child::{Child, ChildRun};

/// Longest a `--version` probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// One language's 5.x SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// npm `rocketmq-client-nodejs` 1.0.8.
    Node,
    /// PyPI `rocketmq-python-client` 5.1.2.
    Python,
    /// Go module `github.com/apache/rocketmq-clients/golang/v5` v5.1.2.
    Go,
}

/// Whether a test can run its SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// Installed.
    Yes,
    /// The language itself is missing: the test is skipped, saying why.
    Skip(String),
}

/// The venv the Python SDK is installed into:
/// `${RMQ_PY5_VENV:-$HOME/.cache/rmq-py5/venv}` (outside the repository).
pub fn python_venv() -> PathBuf {
    match std::env::var_os("RMQ_PY5_VENV") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache")
            .join("rmq-py5")
            .join("venv"),
    }
}

fn tests_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

impl Sdk {
    /// Its name in messages and output files.
    pub fn name(self) -> &'static str {
        match self {
            Sdk::Node => "node",
            Sdk::Python => "python",
            Sdk::Go => "go",
        }
    }

    /// The folder of its check program.
    pub fn dir(self) -> PathBuf {
        tests_dir().join(match self {
            Sdk::Node => "node5",
            Sdk::Python => "python5",
            Sdk::Go => "go5",
        })
    }

    /// What to do when it is missing.
    pub fn setup_hint(self) -> &'static str {
        match self {
            Sdk::Node => {
                "run `npm ci --prefix tests/node5` (needs node and npm; scripts/setup.sh does it) before this test"
            }
            Sdk::Python => {
                "run scripts/setup.sh (it makes the venv $RMQ_PY5_VENV, default ~/.cache/rmq-py5/venv, \
                 and installs tests/python5/requirements.txt into it) before this test"
            }
            Sdk::Go => {
                "run scripts/setup.sh (it builds tests/go5 to tests/go5/target/grpc_check with go) before this test"
            }
        }
    }

    /// The program and the arguments before a scenario's.
    fn command(self) -> (String, Vec<String>) {
        match self {
            Sdk::Node => ("node".into(), vec!["grpc_check.js".into()]),
            Sdk::Python => (
                python_venv()
                    .join("bin")
                    .join("python")
                    .display()
                    .to_string(),
                vec!["grpc_check.py".into()],
            ),
            Sdk::Go => (self.go_binary().display().to_string(), Vec::new()),
        }
    }

    fn go_binary(self) -> PathBuf {
        self.dir().join("target").join("grpc_check")
    }

    /// Runs `program args...` in its folder, output and `HOME` in `out_dir`.
    fn run_program(
        self,
        program: &str,
        args: &[String],
        out_dir: &Path,
        tag: &str,
        timeout: Duration,
    ) -> ChildRun {
        Child {
            program,
            args,
            cwd: &self.dir(),
            env: &[("HOME", out_dir)],
            out_dir,
            tag,
            timeout,
            setup_hint: self.setup_hint(),
        }
        .run()
    }

    /// Whether the language is there at all (`program --version` runs).
    fn language_present(program: &str) -> bool {
        std::process::Command::new(program)
            .arg(if program == "go" {
                "version"
            } else {
                "--version"
            })
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Checks that the SDK can run: panics (with the setup hint) when it is
    /// half installed, [`Ready::Skip`] only for Python and Go when the
    /// interpreter or toolchain itself is missing. Blocking.
    pub fn require(self) -> Ready {
        match self {
            Sdk::Node => {
                let probe = tempfile::tempdir().expect("temp dir");
                let out = self.run_program(
                    "node",
                    &["--version".to_owned()],
                    probe.path(),
                    "version",
                    PROBE_TIMEOUT,
                );
                assert!(
                    out.succeeded(),
                    "`node --version` failed; {}\n{}",
                    self.setup_hint(),
                    out.report("node --version")
                );
                let client = self
                    .dir()
                    .join("node_modules")
                    .join("rocketmq-client-nodejs");
                assert!(
                    client.join("package.json").is_file(),
                    "{} is missing; {}",
                    client.display(),
                    self.setup_hint()
                );
            }
            Sdk::Python => {
                if !Self::language_present("python3") {
                    return Ready::Skip("no python3 on PATH".into());
                }
                let (python, _) = self.command();
                let probe = tempfile::tempdir().expect("temp dir");
                let args = ["-c".to_owned(), "import rocketmq.v5".to_owned()];
                let out = self.run_program(&python, &args, probe.path(), "import", PROBE_TIMEOUT);
                assert!(
                    out.succeeded(),
                    "the venv's python cannot import the client; {}\n{}",
                    self.setup_hint(),
                    out.report(&format!("{python} -c 'import rocketmq.v5'"))
                );
            }
            Sdk::Go => {
                if !Self::language_present("go") {
                    return Ready::Skip("no go on PATH".into());
                }
                assert!(
                    self.go_binary().is_file(),
                    "{} is missing; {}",
                    self.go_binary().display(),
                    self.setup_hint()
                );
            }
        }
        Ready::Yes
    }

    /// Runs its check program with `args` (a scenario and its options) to
    /// the end or `timeout`. Blocking: call it from `spawn_blocking`.
    pub fn run(self, args: &[String], out_dir: &Path, tag: &str, timeout: Duration) -> ChildRun {
        let (program, mut all) = self.command();
        all.extend_from_slice(args);
        self.run_program(&program, &all, out_dir, tag, timeout)
    }
}
