//! One lifecycle for every background loop of the store and the broker
//! (reput, CommitLog flush, consume-queue flush, clean, schedule levels,
//! transaction check, RocksDB compaction): a named thread that runs bounded
//! passes, sleeps between them as each pass says, wakes early when told,
//! stops only between passes, runs its `finish` step on an orderly stop, and
//! logs why it stopped.
//!
//! Store work is blocking, so services are threads, not async tasks.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// When the next pass is due, as a pass reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// At once (the pass hit its budget, or made progress).
    Now,
    /// After this long, or sooner when woken.
    After(Duration),
    /// Only when woken.
    WhenWoken,
    /// After this long; a [`Signal::nudge`] does not shorten it (a
    /// [`Signal::wake`] and a stop do). For a busy service that would rather
    /// look for news on a short timer than be woken for each piece of it.
    Poll(Duration),
}

/// The wake-up and stop signal of one service. Shared with whoever has news
/// for the service (an append for reput, a flush request for the CommitLog
/// flush). A wake-up that arrives while a pass runs is kept, so the next
/// wait returns at once: none is lost.
#[derive(Debug, Default)]
pub struct Signal {
    state: Mutex<SignalState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct SignalState {
    woken: bool,
    /// A nudge came since the last wait ended.
    nudged: bool,
    /// The service is in a [`Next::Poll`] wait: a nudge need not wake it.
    polling: bool,
    stop: Option<String>,
}

impl Signal {
    /// A fresh signal, neither woken nor stopped.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Makes the next (or the current) wait return at once.
    pub fn wake(&self) {
        self.state.lock().woken = true;
        self.cv.notify_all();
    }

    /// News the service need not act on at once: ends any wait but a
    /// [`Next::Poll`] one (and makes the next such wait return at once if
    /// the service is between waits). A service that polls while busy is
    /// thus not woken, with a futex call and a context switch, per piece of
    /// news.
    pub fn nudge(&self) {
        let mut state = self.state.lock();
        state.nudged = true;
        if !state.polling {
            drop(state);
            self.cv.notify_all();
        }
    }

    /// Whether a stop has been asked for.
    pub fn stopping(&self) -> bool {
        self.state.lock().stop.is_some()
    }

    /// Asks the service to stop; the first reason given is the one kept.
    fn request_stop(&self, reason: &str) {
        let mut state = self.state.lock();
        if state.stop.is_none() {
            state.stop = Some(reason.to_owned());
        }
        drop(state);
        self.cv.notify_all();
    }

    /// Waits as `next` says. Returns the stop reason once a stop is asked
    /// for (at once if it already was), else `None` when the next pass is
    /// due.
    fn wait(&self, next: Next) -> Option<String> {
        let mut state = self.state.lock();
        let deadline = match next {
            Next::Now => None,
            Next::After(d) | Next::Poll(d) => Some(Instant::now().checked_add(d)),
            Next::WhenWoken => Some(None),
        };
        let polling = matches!(next, Next::Poll(_));
        state.polling = polling;
        if let Some(deadline) = deadline {
            // A poll ignores nudges; every other wait ends on one.
            while !state.woken && (polling || !state.nudged) && state.stop.is_none() {
                match deadline {
                    Some(at) => {
                        if self.cv.wait_until(&mut state, at).timed_out() {
                            break;
                        }
                    }
                    None => self.cv.wait(&mut state),
                }
            }
        }
        state.woken = false;
        state.nudged = false;
        state.polling = false;
        state.stop.clone()
    }
}

/// The work of a service.
pub trait Pass: Send + 'static {
    /// One bounded unit of work; says when the next one is due.
    fn run(&mut self) -> Next;

    /// Runs once on the service's thread after the last pass, on an orderly
    /// [`Service::stop`] (not on [`Service::halt`]): the flush on exit.
    fn finish(&mut self, _reason: &str) {}
}

impl<F: FnMut() -> Next + Send + 'static> Pass for F {
    fn run(&mut self) -> Next {
        self()
    }
}

/// A running service. Dropping it halts it (no `finish`); call
/// [`Service::stop`] for the orderly end.
#[derive(Debug)]
pub struct Service {
    name: String,
    signal: Arc<Signal>,
    /// Whether `finish` runs when the loop ends.
    orderly: Arc<Mutex<bool>>,
    thread: Option<JoinHandle<()>>,
}

impl Service {
    /// Starts `pass` on a thread named `name` with a signal of its own; the
    /// first pass runs as `first` says.
    pub fn start(name: &str, first: Next, pass: impl Pass) -> std::io::Result<Self> {
        Self::start_with(name, Signal::new(), first, pass)
    }

    /// Starts `pass` on a thread named `name`, woken and stopped through
    /// `signal`, which others may hold to wake it.
    pub fn start_with(
        name: &str,
        signal: Arc<Signal>,
        first: Next,
        mut pass: impl Pass,
    ) -> std::io::Result<Self> {
        let orderly = Arc::new(Mutex::new(true));
        let (s, o) = (Arc::clone(&signal), Arc::clone(&orderly));
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let mut next = first;
                let reason = loop {
                    if let Some(reason) = s.wait(next) {
                        break reason;
                    }
                    next = pass.run();
                };
                if *o.lock() {
                    pass.finish(&reason);
                }
            })?;
        Ok(Self {
            name: name.to_owned(),
            signal,
            orderly,
            thread: Some(thread),
        })
    }

    /// The service's name (its thread's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signal that wakes it.
    pub fn signal(&self) -> &Arc<Signal> {
        &self.signal
    }

    /// Runs the next pass now (or as soon as the current one ends).
    pub fn wake(&self) {
        self.signal.wake();
    }

    /// Stops after the pass in progress, runs `finish`, joins the thread
    /// and logs `reason`.
    pub fn stop(mut self, reason: &str) {
        self.end(reason, true);
    }

    /// Stops after the pass in progress without `finish` (as a crash
    /// leaves things), joins the thread and logs `reason`.
    pub fn halt(mut self, reason: &str) {
        self.end(reason, false);
    }

    fn end(&mut self, reason: &str, orderly: bool) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        *self.orderly.lock() = orderly;
        let started = Instant::now();
        self.signal.request_stop(reason);
        if thread.join().is_err() {
            tracing::error!(service = %self.name, reason, "service thread panicked");
            return;
        }
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if orderly {
            tracing::info!(service = %self.name, reason, elapsed_ms, "service stopped");
        } else {
            tracing::info!(service = %self.name, reason, elapsed_ms, "service halted");
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.end("dropped", false);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    const LONG: Duration = Duration::from_secs(30);

    /// Reports each pass and the finish over a channel.
    struct Probe {
        tx: mpsc::Sender<String>,
        next: Next,
    }

    impl Pass for Probe {
        fn run(&mut self) -> Next {
            let _ = self.tx.send("pass".into());
            self.next
        }

        fn finish(&mut self, reason: &str) {
            let _ = self.tx.send(format!("finish: {reason}"));
        }
    }

    fn probe(next: Next) -> (Probe, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel();
        (Probe { tx, next }, rx)
    }

    #[test]
    fn a_wake_runs_a_pass_and_stop_runs_finish_once_with_the_reason() {
        let (p, rx) = probe(Next::WhenWoken);
        let s = Service::start("t-wake", Next::WhenWoken, p).unwrap();
        assert_eq!(s.name(), "t-wake");
        s.wake();
        assert_eq!(rx.recv_timeout(LONG).unwrap(), "pass");
        s.stop("test over");
        assert_eq!(rx.recv_timeout(LONG).unwrap(), "finish: test over");
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    }

    #[test]
    fn halt_and_drop_skip_finish() {
        let (p, rx) = probe(Next::WhenWoken);
        let s = Service::start("t-halt", Next::Now, p).unwrap();
        assert_eq!(rx.recv_timeout(LONG).unwrap(), "pass");
        s.halt("crash");
        assert!(rx.recv().is_err(), "no finish after a halt");

        let (p, rx) = probe(Next::WhenWoken);
        drop(Service::start("t-drop", Next::WhenWoken, p).unwrap());
        assert!(rx.recv().is_err(), "no pass and no finish after a drop");
    }

    #[test]
    fn a_wake_during_a_pass_is_kept() {
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let (tx, rx) = mpsc::channel();
        let mut first = true;
        let s = Service::start("t-keep", Next::Now, move || {
            let _ = tx.send(());
            if std::mem::take(&mut first) {
                // Hold the first pass until the test has woken the service.
                let _ = gate_rx.recv_timeout(LONG);
            }
            Next::WhenWoken
        })
        .unwrap();
        rx.recv_timeout(LONG).unwrap();
        s.wake();
        gate_tx.send(()).unwrap();
        rx.recv_timeout(LONG)
            .expect("the wake during the pass ran a second one");
        s.stop("done");
    }

    #[test]
    fn a_busy_service_stops_between_passes() {
        let (p, rx) = probe(Next::Now);
        let s = Service::start("t-busy", Next::Now, p).unwrap();
        for _ in 0..3 {
            assert_eq!(rx.recv_timeout(LONG).unwrap(), "pass");
        }
        let signal = Arc::clone(s.signal());
        s.stop("enough");
        assert!(signal.stopping());
        let rest: Vec<String> = rx.try_iter().collect();
        assert_eq!(rest.last().map(String::as_str), Some("finish: enough"));
    }

    #[test]
    fn a_nudge_ends_a_long_wait_but_not_a_poll_and_a_wake_ends_both() {
        let signal = Signal::new();
        let (p, rx) = probe(Next::After(LONG));
        let s = Service::start_with("t-nudge", Arc::clone(&signal), Next::After(LONG), p).unwrap();
        signal.nudge();
        assert_eq!(rx.recv_timeout(LONG).unwrap(), "pass");
        s.stop("x");
        assert_eq!(rx.recv_timeout(LONG).unwrap(), "finish: x");

        let signal = Signal::new();
        let (p, rx) = probe(Next::Poll(LONG));
        let s = Service::start_with("t-poll", Arc::clone(&signal), Next::Poll(LONG), p).unwrap();
        // The thread may not be waiting yet: wait until the signal says it
        // polls (bounded), so the nudge below meets the poll.
        let give_up = Instant::now() + LONG;
        while !signal.state.lock().polling {
            assert!(
                Instant::now() < give_up,
                "the service never entered its poll wait"
            );
            std::thread::yield_now();
        }
        signal.nudge();
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "a nudge cut a poll short"
        );
        signal.wake();
        assert_eq!(rx.recv_timeout(LONG).unwrap(), "pass");
        s.stop("y");
    }

    #[test]
    fn a_shared_signal_wakes_the_service() {
        let signal = Signal::new();
        let (p, rx) = probe(Next::After(LONG));
        let s = Service::start_with("t-shared", Arc::clone(&signal), Next::After(LONG), p).unwrap();
        signal.wake();
        assert_eq!(rx.recv_timeout(LONG).unwrap(), "pass");
        s.stop("x");
    }
}
