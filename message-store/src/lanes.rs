//! Two consume-queue backends in one store: the serving one, which every
//! read uses, and an optional shadow fed by the same dispatch, to compare
//! against and to migrate to without a restart (add, verify, flip, drop).
//!
//! The choice is persisted in `<storePathRootDir>/config/cqBackends.json`
//! (written atomically) once a runtime change has been made, and then wins
//! over `consumeQueueStore` / `shadowConsumeQueueStore` at start-up: a
//! crash at any point of a flip restarts on the choice last written, and
//! both backends recover from their own dispatched offsets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmq_common::config::CqBackend;
use rmq_common::cq::{ConsumeQueueStore, CqStats};
use rmq_common::StoreConfig;
use rmq_store_file::StoreError;
use serde::{Deserialize, Serialize};

use super::factory::{open_backend, remove_backend_files};
use super::reput::shadow::Shadow;
pub use super::reput::shadow::{FlipError, FlipStep};
use super::MessageStore;
use crate::metrics::{LaneMetrics, Role};
use rmq_common::meta_file::MetaError;

/// The persisted choice, relative to the store root.
const CHOICE_FILE: &str = "config/cqBackends.json";
/// How long a flip waits for both backends to reach the same position.
const FLIP_WAIT: Duration = Duration::from_secs(10);

/// Which backend serves and which shadows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CqChoice {
    /// Reads use it.
    pub serving: CqBackend,
    /// Fed the same dispatch, read by nobody but `cq verify`.
    #[serde(default)]
    pub shadow: Option<CqBackend>,
}

impl CqChoice {
    fn path(config: &StoreConfig) -> PathBuf {
        config.store_path_root_dir.join(CHOICE_FILE)
    }

    /// The persisted choice if one was written, else the config's.
    pub fn effective(config: &StoreConfig) -> Result<Self, StoreError> {
        let configured = Self {
            serving: config.consume_queue_store,
            shadow: config.shadow_consume_queue_store,
        };
        let path = Self::path(config);
        let Some(persisted) =
            rmq_common::meta_file::read_json::<Self>(&path).map_err(meta_error)?
        else {
            return Ok(configured);
        };
        if persisted.shadow == Some(persisted.serving) {
            return Err(StoreError::Corrupt {
                path,
                offset: 0,
                detail: format!("{} cannot shadow itself", persisted.serving),
            });
        }
        if persisted != configured {
            tracing::info!(
                file = %path.display(),
                serving = %persisted.serving,
                shadow = persisted.shadow.map_or("none", |b| b.as_str()),
                "the consume-queue backends chosen at runtime override consumeQueueStore / shadowConsumeQueueStore"
            );
        }
        Ok(persisted)
    }

    fn save(&self, config: &StoreConfig) -> Result<(), StoreError> {
        rmq_common::meta_file::write_json(&Self::path(config), self).map_err(meta_error)
    }
}

/// The choice file's read and write errors as the store's.
fn meta_error(e: MetaError) -> StoreError {
    match e {
        MetaError::Write { source, .. } => source.into(),
        MetaError::Invalid { path, source } => StoreError::Corrupt {
            path,
            offset: 0,
            detail: format!("not a consume-queue backend choice: {source}"),
        },
        MetaError::Io {
            action,
            path,
            source,
        } => StoreError::io(format!("{action} {}", path.display()), source),
        MetaError::Journal { path, line, why } => StoreError::Corrupt {
            path,
            offset: i64::try_from(line).unwrap_or(i64::MAX),
            detail: why,
        },
        MetaError::Encode { path, source } => StoreError::io(
            format!("encode {}", path.display()),
            std::io::Error::other(source),
        ),
    }
}

/// Why a change of backends was refused.
#[derive(Debug, thiserror::Error)]
pub enum CqAdminError {
    /// The backend named is already the serving one.
    #[error("{0} is already the serving consume-queue backend")]
    AlreadyServing(CqBackend),
    /// A shadow is already attached.
    #[error("{0} is already the shadow; drop it first to add another")]
    ShadowExists(CqBackend),
    /// `cq serve` named a backend that is not the shadow.
    #[error("{wanted} is not the shadow (the shadow is {shadow}); add it as the shadow and let it catch up first")]
    NotTheShadow {
        /// The backend asked for.
        wanted: CqBackend,
        /// The current shadow, or "none".
        shadow: String,
    },
    /// The in-memory model is for tests.
    #[error("memory is a test model; use file or rocksdb")]
    Memory,
    /// The flip could not happen.
    #[error(transparent)]
    Flip(#[from] FlipError),
    /// Opening, closing or removing a backend failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One backend as `cq status` and the metrics see it.
#[derive(Debug, Clone)]
pub struct BackendStatus {
    /// Its engine.
    pub backend: CqBackend,
    /// Serving or shadow.
    pub role: Role,
    /// CommitLog offset below which it has written every unit.
    pub written_to: i64,
    /// CommitLog bytes it has not written yet.
    pub behind_bytes: i64,
    /// Batches the shadow's queue dropped (read again from the CommitLog).
    pub dropped_batches: u64,
    /// Why it stopped writing, if it did.
    pub failure: Option<String>,
    /// The backend's own numbers.
    pub stats: CqStats,
}

impl MessageStore {
    /// The backend reads use (changes with a flip).
    pub fn serving_backend(&self) -> CqBackend {
        self.dispatcher.cq().backend()
    }

    /// The shadow backend, if one is attached.
    pub fn shadow_consume_queue(&self) -> Option<Arc<dyn ConsumeQueueStore>> {
        self.dispatcher.with_shadow(Shadow::cq)
    }

    /// Both backends' positions and numbers, serving first.
    pub fn cq_status(&self) -> Vec<BackendStatus> {
        let max = self.commit_log.max_offset();
        let serving = self.dispatcher.cq();
        let written_to = self.dispatcher.reput_from();
        let mut out = vec![BackendStatus {
            backend: serving.backend(),
            role: Role::Serving,
            written_to,
            behind_bytes: (max - written_to).max(0),
            dropped_batches: 0,
            failure: self.dispatcher.failure(),
            stats: serving.stats(),
        }];
        if let Some(shadow) = self.dispatcher.with_shadow(|s| {
            let written_to = s.written_to();
            BackendStatus {
                backend: s.backend(),
                role: Role::Shadow,
                written_to,
                behind_bytes: (max - written_to).max(0),
                dropped_batches: s.dropped_batches(),
                failure: s.failure(),
                stats: s.cq().stats(),
            }
        }) {
            out.push(shadow);
        }
        out
    }

    /// Blocks until the shadow has written everything the CommitLog held
    /// when called, or `timeout`; whether it has.
    pub fn wait_shadow_caught_up(&self, timeout: Duration) -> bool {
        let target = self.commit_log.max_offset();
        let deadline = std::time::Instant::now() + timeout;
        // The shadow's gap filling stops where the serving dispatch is.
        if !self.dispatcher.wait_reput_to(target, timeout) {
            return false;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        // Waited on outside the shadow's lock, which the serving dispatch
        // takes for every batch.
        self.dispatcher
            .with_shadow(Shadow::lane)
            .is_some_and(|lane| lane.wait_reput_to(target, left))
    }

    /// Adds `backend` as the shadow of a running store: any files it left
    /// before are removed, and it is built from the CommitLog in the
    /// background while the serving backend goes on. Persisted.
    pub fn add_shadow(&self, backend: CqBackend) -> Result<(), CqAdminError> {
        let serving = self.serving_backend();
        if backend == CqBackend::Memory {
            return Err(CqAdminError::Memory);
        }
        if backend == serving {
            return Err(CqAdminError::AlreadyServing(backend));
        }
        let _changing = self.cq_change.lock();
        if let Some(shadow) = self.dispatcher.with_shadow(Shadow::backend) {
            return Err(CqAdminError::ShadowExists(shadow));
        }
        // A shadow always starts from the CommitLog: files from an earlier
        // shadow may miss topic deletions made since.
        remove_backend_files(&self.config, backend)?;
        let cq: Arc<dyn ConsumeQueueStore> = Arc::from(open_backend(&self.config, backend)?);
        CqChoice {
            serving,
            shadow: Some(backend),
        }
        .save(&self.config)?;
        let from = self.commit_log.min_offset();
        let lane = LaneMetrics::new(self.metrics.broker(), backend.as_str(), Role::Shadow);
        self.dispatcher.attach_shadow(cq, from, lane)?;
        tracing::info!(%backend, from, "shadow consume queue added; building it from the CommitLog");
        Ok(())
    }

    /// Makes `backend` (the shadow) serve, and the serving backend the
    /// shadow. Clients see the same offsets and messages. Persisted.
    pub fn serve(&self, backend: CqBackend) -> Result<(), CqAdminError> {
        self.serve_observed(backend, &|_| {})
    }

    /// [`MessageStore::serve`], calling `step` at each point of the flip
    /// (crash tests end the process there).
    pub fn serve_observed(
        &self,
        backend: CqBackend,
        step: &dyn Fn(FlipStep),
    ) -> Result<(), CqAdminError> {
        let _changing = self.cq_change.lock();
        if backend == self.serving_backend() {
            return Err(CqAdminError::AlreadyServing(backend));
        }
        let shadow = self.dispatcher.with_shadow(Shadow::backend);
        if shadow != Some(backend) {
            return Err(CqAdminError::NotTheShadow {
                wanted: backend,
                shadow: shadow.map_or("none".to_owned(), |b| b.to_string()),
            });
        }
        let config = &self.config;
        self.dispatcher.flip(FLIP_WAIT, step, |serving, shadow| {
            CqChoice {
                serving,
                shadow: Some(shadow),
            }
            .save(config)
        })?;
        Ok(())
    }

    /// Stops feeding the shadow, closes it and removes its files; returns
    /// which it was. Persisted first: a crash half-way leaves files that a
    /// later `add_shadow` removes.
    pub fn drop_shadow(&self) -> Result<Option<CqBackend>, CqAdminError> {
        let _changing = self.cq_change.lock();
        let Some(backend) = self.dispatcher.with_shadow(Shadow::backend) else {
            return Ok(None);
        };
        CqChoice {
            serving: self.serving_backend(),
            shadow: None,
        }
        .save(&self.config)?;
        if let Some(cq) = self.dispatcher.detach_shadow("shadow dropped") {
            if let Err(e) = cq.close() {
                tracing::warn!(%backend, error = %e, "closing the dropped shadow failed; removing its files anyway");
            }
        }
        remove_backend_files(&self.config, backend)?;
        tracing::info!(%backend, "shadow consume queue dropped and its files removed");
        Ok(Some(backend))
    }
}
