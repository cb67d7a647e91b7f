//! Runs the check walk every `transactionCheckInterval` on its own thread
//! (store work is blocking) and persists progress when it stops.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::{CheckSender, Transactions};

/// The running check service.
#[derive(Debug)]
pub struct TransactionService {
    tx: Arc<Transactions>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl TransactionService {
    /// Starts the walk: one pass every `interval`.
    pub fn start(
        tx: Arc<Transactions>,
        sender: Arc<dyn CheckSender>,
        store_host: std::net::SocketAddr,
        interval: Duration,
    ) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let (t, s) = (Arc::clone(&tx), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("transaction-check".into())
            .spawn(move || loop {
                {
                    let mut stopped = s.0.lock();
                    if !*stopped {
                        s.1.wait_for(&mut stopped, interval);
                    }
                    if *stopped {
                        break;
                    }
                }
                match t.check_pass(sender.as_ref(), store_host) {
                    Ok(p) if p.checked + p.moved > 0 => tracing::info!(
                        checked = p.checked,
                        sent = p.sent,
                        moved = p.moved,
                        resolved = p.resolved,
                        "transaction check pass"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "transaction check pass failed"),
                }
            })?;
        tracing::info!(
            interval_ms = interval.as_millis() as u64,
            "transaction check service started"
        );
        Ok(Self {
            tx,
            stop,
            thread: Some(thread),
        })
    }

    /// The state it walks.
    pub fn transactions(&self) -> &Arc<Transactions> {
        &self.tx
    }

    /// Stops between passes and persists progress.
    pub fn stop(mut self) {
        self.stop_thread();
        if let Err(e) = self.tx.persist() {
            tracing::error!(error = %e, "persisting transaction progress at stop failed");
        }
    }

    fn stop_thread(&mut self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for TransactionService {
    fn drop(&mut self) {
        self.stop_thread();
    }
}
