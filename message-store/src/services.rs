//! The store's background threads and the order in which they stop.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::service::{Next, Service};
use rmq_common::StoreConfig;
use rmq_store_file::commitlog::{CommitLog, FlushService, FlushSettings};
use rmq_store_file::index::IndexService;
use rmq_store_file::root::Checkpoint;
use rmq_store_file::StoreError;

use super::clean::Cleaner;
use super::reput::shadow::Shadow;
use super::reput::{spawn_reput, Dispatcher};
use super::MessageStore;

/// Running threads of a store.
#[derive(Debug)]
pub(crate) struct Services {
    flush: FlushService,
    reput: Service,
    cq_flush: Service,
    clean: Service,
}

impl Services {
    pub(crate) fn start(
        config: &StoreConfig,
        commit_log: &Arc<CommitLog>,
        index: Option<&Arc<IndexService>>,
        checkpoint: &Arc<Checkpoint>,
        dispatcher: &Arc<Dispatcher>,
        cleaner: &Arc<Cleaner>,
    ) -> Result<Self, StoreError> {
        let flush =
            FlushService::spawn(Arc::clone(commit_log), FlushSettings::from_config(config))?;
        let reput = spawn_reput(Arc::clone(dispatcher))?;
        let cq_flush = spawn_cq_flush(
            Duration::from_millis(config.flush_interval_consume_queue_ms),
            FlushTargets {
                commit_log: Arc::clone(commit_log),
                dispatcher: Arc::clone(dispatcher),
                index: index.cloned(),
                checkpoint: Arc::clone(checkpoint),
            },
        )?;
        let clean = spawn_clean(
            Duration::from_millis(config.clean_resource_interval_ms),
            Arc::clone(cleaner),
        )?;
        Ok(Self {
            flush,
            reput,
            cq_flush,
            clean,
        })
    }
}

/// What the consume-queue flush thread makes durable.
#[derive(Debug, Clone)]
pub(crate) struct FlushTargets {
    commit_log: Arc<CommitLog>,
    /// Its serving backend and shadow.
    dispatcher: Arc<Dispatcher>,
    index: Option<Arc<IndexService>>,
    checkpoint: Arc<Checkpoint>,
}

impl FlushTargets {
    /// Flushes consume queues, index and checkpoint. A failed flush of the
    /// serving consume queue poisons the CommitLog: the store stops taking
    /// writes. A shadow's failure is logged; the shadow recovers from its
    /// own checkpoint at the next start.
    pub(crate) fn flush_all(&self) -> Result<(), StoreError> {
        let logics_ts = self.commit_log.flushed_store_timestamp();
        if let Err(e) = self.dispatcher.cq().flush() {
            self.commit_log
                .poison(format!("consume queue flush failed: {e}"));
            return Err(e.into());
        }
        // Flushed outside the shadow's lock: the serving dispatch takes it
        // for every batch.
        if let Some(Err(e)) = self.dispatcher.with_shadow(Shadow::cq).map(|cq| cq.flush()) {
            tracing::warn!(error = %e, "shadow consume queue flush failed");
        }
        self.checkpoint.set_logics_ms(logics_ts);
        if let Some(index) = &self.index {
            index.flush()?;
            self.checkpoint.set_index_ms(rmq_common::time::now_ms());
        }
        self.checkpoint
            .set_physic_ms(self.commit_log.flushed_store_timestamp());
        self.checkpoint.flush()
    }
}

/// Starts a service that runs `step` every `interval`, first after one
/// interval.
fn periodic(
    name: &str,
    interval: Duration,
    mut step: impl FnMut() + Send + 'static,
) -> Result<Service, StoreError> {
    Service::start(name, Next::After(interval), move || {
        step();
        Next::After(interval)
    })
    .map_err(|e| StoreError::io(format!("spawn the {name} thread"), e))
}

/// Flushes the consume queue, index and checkpoint every interval.
fn spawn_cq_flush(interval: Duration, targets: FlushTargets) -> Result<Service, StoreError> {
    let mut last_error_log: Option<Instant> = None;
    periodic("cq-flush", interval, move || {
        if let Err(e) = targets.flush_all() {
            if last_error_log.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                tracing::error!(error = %e, "consume queue / index flush failed");
                last_error_log = Some(Instant::now());
            }
        }
    })
}

/// Runs a clean pass every `cleanResourceInterval`.
fn spawn_clean(interval: Duration, cleaner: Arc<Cleaner>) -> Result<Service, StoreError> {
    let mut last_error_log: Option<Instant> = None;
    periodic("store-clean", interval, move || {
        if let Err(e) = cleaner.pass(super::clean::CleanTrigger::Service) {
            if last_error_log.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                tracing::error!(error = %e, "CommitLog clean pass failed");
                last_error_log = Some(Instant::now());
            }
        }
    })
}

/// The reason services log at a clean shutdown.
const SHUTDOWN: &str = "message store shutdown";
/// The reason services log when halted as a crash would leave them.
const HALT: &str = "halted as if crashed";

impl MessageStore {
    fn flush_targets(&self) -> FlushTargets {
        FlushTargets {
            commit_log: Arc::clone(&self.commit_log),
            dispatcher: Arc::clone(&self.dispatcher),
            index: self.index.clone(),
            checkpoint: Arc::clone(&self.checkpoint),
        }
    }

    /// Flushes consume queue, index and checkpoint now.
    pub fn flush_consume_queue(&self) -> Result<(), StoreError> {
        self.flush_targets().flush_all()
    }

    /// Clean shutdown: refuse new writes, stop reput and the flush threads,
    /// dispatch whatever is left, flush everything, and remove the abort file
    /// only when dispatch fully caught up. Idempotent.
    pub fn shutdown(&self) -> Result<(), StoreError> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let started = Instant::now();
        let Some(services) = self.services.lock().take() else {
            return Ok(());
        };
        services.clean.stop(SHUTDOWN);
        services.reput.stop(SHUTDOWN);
        services.flush.stop();
        services.cq_flush.stop(SHUTDOWN);
        let caught_up = match self.dispatcher.catch_up() {
            // Under a confirm-offset bound, dispatch stops there by design.
            Ok(_) => self.dispatcher.reput_from() >= self.dispatcher.pass_end(),
            Err(e) => {
                tracing::error!(error = %e, "final dispatch failed; the next start recovers as after a crash");
                false
            }
        };
        let flushed = self.flush_consume_queue();
        if let Some(shadow) = self.dispatcher.detach_shadow(SHUTDOWN) {
            // Not needed for a clean start: the shadow resumes from its own
            // checkpoint whatever it is.
            if let Err(e) = shadow.flush().and_then(|()| shadow.close()) {
                tracing::warn!(backend = %shadow.backend(), error = %e, "shadow consume queue close failed");
            }
        }
        let closed = self.dispatcher.cq().close();
        if let Some(Err(e)) = self.index.as_ref().map(|i| i.close()) {
            tracing::error!(error = %e, "index close failed");
        }
        self.commit_log.shutdown();
        let clean = caught_up && flushed.is_ok() && closed.is_ok();
        if let Some(abort) = self.abort.lock().take() {
            if clean {
                abort.remove()?;
            }
        }
        self.lock.lock().take();
        tracing::info!(
            clean,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "message store shut down"
        );
        flushed?;
        closed?;
        Ok(())
    }

    /// Stops every thread the way `kill -9` would leave the files: nothing
    /// more is flushed or dispatched and the abort file stays. The lock is
    /// released so the same process can reopen the store (crash tests).
    pub fn halt_as_if_crashed(&self) {
        self.shut_down.store(true, Ordering::Release);
        if let Some(services) = self.services.lock().take() {
            // Threads stop between units of work; none of them flush on the
            // way out except the CommitLog flush thread, whose final flush
            // only makes durable what a crash would have kept in the page
            // cache anyway.
            services.clean.halt(HALT);
            services.reput.halt(HALT);
            // Dropping a shadow halts its thread as a crash would.
            drop(self.dispatcher.take_shadow());
            services.cq_flush.halt(HALT);
            services.flush.stop();
        }
        self.commit_log.shutdown();
        // Drop the abort marker's handle; the file itself stays.
        self.abort.lock().take();
        self.lock.lock().take();
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            tracing::error!(error = %e, "message store shutdown failed");
        }
    }
}
