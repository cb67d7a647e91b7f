//! The shape of a load: who sends what, how fast, for how long.

use std::time::Duration;

/// How producers wait for answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SendMode {
    /// One request at a time per producer (RocketMQ's sync send).
    Sync,
    /// Up to `--inflight` requests outstanding per producer (async send
    /// with callbacks).
    Async,
}

/// A load, as given on the command line and echoed in the report.
#[derive(Debug, Clone, clap::Args, serde::Serialize)]
pub struct LoadSpec {
    /// Producers, one connection each.
    #[arg(long, default_value_t = 4)]
    pub producers: usize,
    /// Consumers, one connection each, pulling every queue from offset 0
    /// (0: produce only).
    #[arg(long, default_value_t = 1)]
    pub consumers: usize,
    /// Topics (`<topic-prefix>-<n>`).
    #[arg(long, default_value_t = 1)]
    pub topics: usize,
    /// Queues per topic (1..=1024).
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Body size, bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Messages per send request (more than 1: a batch send).
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// Send mode.
    #[arg(long, value_enum, default_value_t = SendMode::Sync)]
    pub mode: SendMode,
    /// Requests outstanding per producer in async mode.
    #[arg(long, default_value_t = 32)]
    pub inflight: usize,
    /// Target rate over all producers, messages/s: open loop, sends start
    /// on schedule whatever the answers and latency counts from the
    /// scheduled time. Without it producers send as fast as answers come.
    #[arg(long)]
    pub rate: Option<u64>,
    /// Stop after this many messages (default 100,000 without --duration).
    #[arg(long)]
    pub messages: Option<u64>,
    /// Stop after this long (e.g. 30s, 2m).
    #[arg(long, value_parser = humantime::parse_duration)]
    #[serde(serialize_with = "as_secs")]
    pub duration: Option<Duration>,
    /// Longest wait for consumers to catch up once sending ends.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    #[serde(serialize_with = "secs")]
    pub catch_up_timeout: Duration,
    /// Topic name prefix.
    #[arg(long, default_value = "BenchTopic")]
    pub topic_prefix: String,
    /// First send one message to every queue and wait for its answer, and
    /// only then start measuring: steady state, with every queue (and the
    /// file backend's queue files) already there.
    #[arg(long)]
    pub warmup: bool,
    /// Messages per pull request.
    #[arg(long, default_value_t = 32)]
    pub pull_batch: i32,
}

fn as_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Messages sent when neither a count nor a duration is given.
pub const DEFAULT_MESSAGES: u64 = 100_000;

/// Parser wrapper so a spec can be built from flags outside the binary.
#[derive(Debug, clap::Parser)]
struct FromArgs {
    #[command(flatten)]
    spec: LoadSpec,
}

impl LoadSpec {
    /// Parses the spec from command-line flags (without the program name),
    /// defaults as in `rmq-bench`.
    pub fn from_args<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Self, clap::Error> {
        use clap::Parser;
        let argv = std::iter::once("rmq-bench").chain(args);
        FromArgs::try_parse_from(argv).map(|f| f.spec)
    }

    /// The message budget (`None`: only the duration stops it).
    pub fn budget(&self) -> Option<u64> {
        match (self.messages, self.duration) {
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_MESSAGES),
        }
    }

    /// Every topic name.
    pub fn topic_names(&self) -> Vec<String> {
        (0..self.topics)
            .map(|t| format!("{}-{t}", self.topic_prefix))
            .collect()
    }

    /// Every (topic, queue) the load touches, queue-major so that
    /// round-robin over the list spreads over topics too.
    pub fn targets(&self) -> Vec<(String, i32)> {
        let names = self.topic_names();
        let mut out = Vec::with_capacity(names.len() * self.queues.max(0) as usize);
        for q in 0..self.queues {
            for t in &names {
                out.push((t.clone(), q));
            }
        }
        out
    }

    /// Total queues.
    pub fn total_queues(&self) -> usize {
        self.topics * self.queues.max(0) as usize
    }

    /// Checks the numbers make sense.
    pub fn validate(&self) -> Result<(), String> {
        if self.producers == 0 {
            return Err("--producers must be at least 1".into());
        }
        if self.topics == 0 || !(1..=1024).contains(&self.queues) {
            return Err("--topics must be at least 1 and --queues 1..=1024".into());
        }
        if self.batch == 0 || self.inflight == 0 || self.pull_batch <= 0 {
            return Err("--batch, --inflight and --pull-batch must be at least 1".into());
        }
        if self.rate == Some(0) {
            return Err("--rate must be above 0".into());
        }
        Ok(())
    }

    /// Splits `total` queues into (topics, queues per topic) with at most
    /// 1,000 queues a topic.
    pub fn with_total_queues(&self, total: usize) -> Self {
        let total = total.max(1);
        let topics = total.div_ceil(1000);
        Self {
            topics,
            queues: total.div_ceil(topics) as i32,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_targets() {
        let s = LoadSpec::from_args(["--topics", "2", "--queues", "3"]).unwrap();
        assert_eq!(s.budget(), Some(DEFAULT_MESSAGES));
        let t = s.targets();
        assert_eq!(t.len(), 6);
        assert_eq!(t[0], ("BenchTopic-0".to_owned(), 0));
        assert_eq!(t[1], ("BenchTopic-1".to_owned(), 0));
        assert!(s.validate().is_ok());
        let d = LoadSpec::from_args(["--duration", "2s"]).unwrap();
        assert_eq!(d.budget(), None);
        assert_eq!(d.duration, Some(Duration::from_secs(2)));
        let m = s.with_total_queues(100_000);
        assert_eq!((m.topics, m.queues), (100, 1000));
        let m = s.with_total_queues(8);
        assert_eq!((m.topics, m.queues), (1, 8));
        let big = LoadSpec::from_args(["--queues", "2000"]).unwrap();
        assert!(big.validate().is_err());
        assert!(LoadSpec::from_args(["--mode", "nope"]).is_err());
    }
}
