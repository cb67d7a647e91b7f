//! Runs a stock client (node, java) as a child process: bounded in time,
//! its output kept in files, and everything about the run at hand for an
//! assertion message.

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How often a run is checked for having exited.
const CHILD_POLL: Duration = Duration::from_millis(50);

/// One finished (or killed) run.
#[derive(Debug)]
pub struct ChildRun {
    /// Exit status; `None` when it was killed at its timeout.
    pub status: Option<ExitStatus>,
    /// How long it ran.
    pub elapsed: Duration,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl ChildRun {
    /// Exited by itself with status 0.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// Everything about the run, for an assertion message.
    pub fn report(&self, what: &str) -> String {
        let status = match self.status {
            Some(s) => format!("exited with {s}"),
            None => "was killed at its timeout".to_owned(),
        };
        format!(
            "{what} {status} after {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.elapsed, self.stdout, self.stderr
        )
    }
}

/// What to run and where.
#[derive(Debug)]
pub struct Child<'a> {
    /// The program (`node`, `java`).
    pub program: &'a str,
    /// Its arguments.
    pub args: &'a [String],
    /// Its working directory.
    pub cwd: &'a Path,
    /// Extra environment variables.
    pub env: &'a [(&'a str, &'a Path)],
    /// Where `<tag>.stdout` and `<tag>.stderr` go.
    pub out_dir: &'a Path,
    /// Names the output files.
    pub tag: &'a str,
    /// Killed after this long.
    pub timeout: Duration,
    /// Said when the program cannot be started.
    pub setup_hint: &'a str,
}

impl Child<'_> {
    /// Runs it to the end or its timeout. Blocking: call it from
    /// `spawn_blocking` on an async test.
    pub fn run(&self) -> ChildRun {
        let out_path = self.out_dir.join(format!("{}.stdout", self.tag));
        let err_path = self.out_dir.join(format!("{}.stderr", self.tag));
        let started = Instant::now();
        let mut cmd = Command::new(self.program);
        cmd.args(self.args)
            .current_dir(self.cwd)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"));
        for (k, v) in self.env {
            cmd.env(k, v);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot start `{}`: {e}; {}", self.program, self.setup_hint),
        };
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait for the child") {
                break Some(s);
            }
            if started.elapsed() >= self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(CHILD_POLL);
        };
        ChildRun {
            status,
            elapsed: started.elapsed(),
            stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        }
    }
}
