//! Runs the check walk every `transactionCheckInterval` as a service (store
//! work is blocking) and persists progress when it stops.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::service::{Next, Pass, Service};

use super::{CheckSender, Transactions};

/// The running check service.
#[derive(Debug)]
pub struct TransactionService {
    tx: Arc<Transactions>,
    service: Service,
}

/// One check pass per interval; progress persisted on an orderly stop.
struct CheckWalk {
    tx: Arc<Transactions>,
    sender: Arc<dyn CheckSender>,
    store_host: SocketAddr,
    interval: Duration,
}

impl Pass for CheckWalk {
    fn run(&mut self) -> Next {
        match self.tx.check_pass(self.sender.as_ref(), self.store_host) {
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
        Next::After(self.interval)
    }

    fn finish(&mut self, _reason: &str) {
        if let Err(e) = self.tx.persist() {
            tracing::error!(error = %e, "persisting transaction progress at stop failed");
        }
    }
}

impl TransactionService {
    /// Starts the walk: one pass every `interval`, the first after one
    /// interval.
    pub fn start(
        tx: Arc<Transactions>,
        sender: Arc<dyn CheckSender>,
        store_host: SocketAddr,
        interval: Duration,
    ) -> std::io::Result<Self> {
        let walk = CheckWalk {
            tx: Arc::clone(&tx),
            sender,
            store_host,
            interval,
        };
        let service = Service::start("transaction-check", Next::After(interval), walk)?;
        tracing::info!(
            interval_ms = interval.as_millis() as u64,
            "transaction check service started"
        );
        Ok(Self { tx, service })
    }

    /// The state it walks.
    pub fn transactions(&self) -> &Arc<Transactions> {
        &self.tx
    }

    /// Stops between passes and persists progress.
    pub fn stop(self) {
        self.service.stop("broker shutdown");
    }
}
