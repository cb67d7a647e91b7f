//! What only a master runs: delay-level delivery, the transaction check,
//! POP revive and the timer threads. Started when the broker is (or
//! becomes) a master and stopped when it becomes a slave or stops, so a
//! role change at runtime (controller mode) needs no restart.

use std::sync::Arc;
use std::time::Duration;

use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::service::schedule::ScheduleService;
use crate::service::timer::TimerService;
use crate::service::transaction::{ProducerCheckSender, TransactionService};

/// The running master-only services.
#[derive(Debug)]
pub struct MasterDuties {
    schedule: ScheduleService,
    transaction: TransactionService,
    reviver: rmq_common::service::Service,
    timer: Option<TimerService>,
}

impl MasterDuties {
    /// Starts them on `ctx`'s tables.
    pub fn start(ctx: &Arc<BrokerContext>) -> Result<Self, BrokerError> {
        let settings = &ctx.settings;
        let schedule = ScheduleService::start(
            Arc::clone(&ctx.scheduler),
            &ctx.store,
            Duration::from_millis(settings.store.flush_delay_offset_interval_ms),
        )
        .map_err(|source| BrokerError::Spawn {
            service: "schedule",
            source,
        })?;
        let transaction = TransactionService::start(
            Arc::clone(&ctx.transactions),
            Arc::new(ProducerCheckSender::new(
                Arc::clone(&ctx.clients),
                &settings.broker.broker_name,
            )),
            ctx.store_host,
            Duration::from_millis(settings.broker.transaction_check_interval_ms),
        )
        .map_err(|source| BrokerError::Spawn {
            service: "transaction check",
            source,
        });
        let transaction = match transaction {
            Ok(t) => t,
            Err(e) => {
                schedule.stop();
                return Err(e);
            }
        };
        let reviver = crate::pop::start_reviver(crate::pop::revive::Reviver {
            state: Arc::clone(&ctx.pop.state),
            store: Arc::clone(&ctx.store),
            topics: Arc::clone(&ctx.topics),
            offsets: Arc::clone(&ctx.offsets),
            topics_changed: Arc::clone(&ctx.topics_changed),
            store_host: ctx.store_host,
            retry_v2: settings.broker.pop.enable_retry_topic_v2,
            interval: Duration::from_millis(settings.broker.pop.revive_interval_ms.max(10)),
            metrics: Arc::clone(&ctx.pop.metrics),
        })
        .map_err(|source| BrokerError::Spawn {
            service: "pop revive",
            source,
        });
        let reviver = match reviver {
            Ok(r) => r,
            Err(e) => {
                transaction.stop();
                schedule.stop();
                return Err(e);
            }
        };
        let timer = match &ctx.timers {
            None => None,
            Some(timers) => match TimerService::start(Arc::clone(timers), &ctx.store) {
                Ok(t) => Some(t),
                Err(source) => {
                    reviver.stop("start failed");
                    transaction.stop();
                    schedule.stop();
                    return Err(BrokerError::Spawn {
                        service: "timer",
                        source,
                    });
                }
            },
        };
        Ok(Self {
            schedule,
            transaction,
            reviver,
            timer,
        })
    }

    /// Stops them, each writing its progress (blocking).
    pub fn stop(self, why: &str) {
        self.reviver.stop(why);
        self.transaction.stop();
        self.schedule.stop();
        if let Some(t) = self.timer {
            t.stop();
        }
    }

    /// Stops them without writing progress, as a killed process would
    /// (blocking).
    pub fn halt(self, why: &str) {
        self.reviver.halt(why);
        self.transaction.stop();
        self.schedule.stop();
        if let Some(t) = self.timer {
            t.halt();
        }
    }
}

/// The master-only services of a broker whose role may change.
#[derive(Debug, Default)]
pub struct Duties(tokio::sync::Mutex<Option<MasterDuties>>);

impl Duties {
    /// Starts the master's services unless they run.
    pub async fn as_master(&self, ctx: &Arc<BrokerContext>) -> Result<(), BrokerError> {
        let mut held = self.0.lock().await;
        if held.is_none() {
            let ctx = Arc::clone(ctx);
            let started = tokio::task::spawn_blocking(move || MasterDuties::start(&ctx))
                .await
                .map_err(|source| BrokerError::Join {
                    task: "master services start",
                    source,
                })??;
            *held = Some(started);
        }
        Ok(())
    }

    /// Stops the master's services if they run (a slave's role).
    pub async fn as_slave(&self) {
        let taken = self.0.lock().await.take();
        if let Some(d) = taken {
            if let Err(e) = tokio::task::spawn_blocking(move || d.stop("now a slave")).await {
                tracing::error!(error = %e, "master services stop task failed");
            }
        }
    }

    /// Stops them for good; `halt`: as a killed process would.
    pub async fn finish(&self, halt: bool) {
        let taken = self.0.lock().await.take();
        if let Some(d) = taken {
            let r = tokio::task::spawn_blocking(move || {
                if halt {
                    d.halt("broker halted");
                } else {
                    d.stop("broker stopping");
                }
            })
            .await;
            if let Err(e) = r {
                tracing::error!(error = %e, "master services stop task failed");
            }
        }
    }
}
