//! Taking a savepoint: triggered on a job (a pinned checkpoint, or the final checkpoint of a
//! stop or drain), waited for, copied into the store's savepoint tables, and recorded as
//! `completed` or `failed` with the reason.

use tracing::Instrument as _;
use weir_store::{CheckpointStatus, CheckpointStorage as _, SavepointInfo, StoreError};

use super::Savepoints;
use super::record::{SavepointMode, SavepointRecord, SavepointStatus};
use crate::clock::unix_ms;
use crate::runtime::{JobEvent, StopMode};
use crate::savepoint::{Description, DescriptionError};
use crate::server::error::{ServerError, ServerResult};
use crate::server::ids::new_id;
use crate::server::jobs::{JobStatus, SavepointFuture, TakenSavepoint, UpgradeSavepoints, UpgradeStop};
use crate::server::tenants::Tenant;

/// Why a triggered savepoint failed; its message is the savepoint's `error`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SavepointTakeError {
    /// The savepoint's checkpoint failed.
    #[error("checkpoint {id} failed: {reason}")]
    CheckpointFailed {
        /// The checkpoint.
        id: u64,
        /// Why it failed.
        reason: String,
    },
    /// The savepoint's checkpoint failed because the job restarted or ended meanwhile.
    #[error("checkpoint {0} failed (the job restarted or ended)")]
    CheckpointGone(u64),
    /// The job's run ended while the checkpoint was in progress.
    #[error("the job ended before checkpoint {0} completed")]
    JobEnded(u64),
    /// The stop or drain ended the job without a final checkpoint.
    #[error("the job ended without its final checkpoint")]
    NoFinalCheckpoint,
    /// The checkpoint to copy is not recorded.
    #[error("checkpoint {0} is not recorded")]
    NotRecorded(u64),
    /// The checkpoint to copy was removed by retention.
    #[error("checkpoint {0} is no longer retained")]
    NotRetained(u64),
    /// The job or the savepoint's record could not be read or written.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The checkpoint cannot be described for the savepoint.
    #[error(transparent)]
    Description(#[from] DescriptionError),
    /// The description cannot be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A task of the blocking pool failed.
    #[error(transparent)]
    Join(#[from] tokio::task::JoinError),
}

impl Savepoints {
    /// Triggers a savepoint of job `job_id`; returns its pending record at once. A job that
    /// is not running can give a savepoint of its latest checkpoint (mode `keep_running`).
    pub async fn trigger(
        &self,
        tenant: &Tenant,
        job_id: &str,
        mode: SavepointMode,
    ) -> ServerResult<SavepointRecord> {
        let job = self.jobs.get(&tenant.id, job_id)?;
        if let Some(upgrade) = &job.upgrade {
            return Err(ServerError::Conflict(format!(
                "job `{job_id}` is being upgraded to version {}; take the savepoint once the upgrade ended",
                upgrade.to_version
            )));
        }
        Ok(self.begin(tenant, job_id, mode).await?.0)
    }

    /// Takes a savepoint of job `job_id` for an upgrade and waits until it completed or
    /// failed; returns its record.
    async fn take_for_upgrade(
        &self,
        tenant: &Tenant,
        job_id: &str,
        mode: SavepointMode,
        taken: impl FnOnce(&SavepointRecord),
    ) -> ServerResult<SavepointRecord> {
        let (record, task) = self.begin(tenant, job_id, mode).await?;
        taken(&record);
        if let Some(task) = task {
            task.await.map_err(ServerError::internal)?;
        }
        self.get(&tenant.id, &record.id)
    }

    /// Triggers a savepoint; returns its pending record and the task that takes it (none
    /// when it was taken at once, of a job that is not running).
    async fn begin(
        &self,
        tenant: &Tenant,
        job_id: &str,
        mode: SavepointMode,
    ) -> ServerResult<(SavepointRecord, Option<tokio::task::JoinHandle<()>>)> {
        let job = self.jobs.get(&tenant.id, job_id)?;
        let env = self.jobs.running_env(job_id);
        if env.is_some() && job.status != JobStatus::Running {
            // Restarting or stopping: its checkpoints are in flux; a savepoint waits for it.
            return Err(ServerError::Conflict(format!(
                "job `{job_id}` is {}; take the savepoint once it is running or has ended",
                job.status.as_str()
            )));
        }
        let record = SavepointRecord {
            id: new_id(16),
            tenant: tenant.id.clone(),
            job: job.id.clone(),
            job_name: job.name.clone(),
            mode: Some(mode),
            status: SavepointStatus::Pending,
            checkpoint: None,
            error: None,
            created_ms: unix_ms(),
            completed_ms: None,
            bytes: 0,
            entries: 0,
            origin: None,
            description: None,
        };
        let span =
            tracing::info_span!("savepoint", tenant = %tenant.id, job = %job.id, savepoint = %record.id);
        match env {
            Some(env) => {
                // Subscribed before anything is asked of the job, so no event is missed.
                let events = env.subscribe();
                let checkpoint = match mode {
                    SavepointMode::KeepRunning | SavepointMode::Cancel => {
                        let id = env.trigger_handle().trigger_pinned().await.map_err(|why| {
                            ServerError::Conflict(format!("cannot take a savepoint: {why}"))
                        })?;
                        Some(id)
                    }
                    SavepointMode::Stop | SavepointMode::Drain => {
                        let stop =
                            if mode == SavepointMode::Drain { StopMode::Drain } else { StopMode::Suspend };
                        self.jobs.stop_with(&tenant.id, job_id, stop, true)?;
                        None
                    }
                };
                // The job's events end with its run: this task must not keep them open.
                drop(env);
                let record = SavepointRecord { checkpoint, ..record };
                self.put(&record)?;
                tracing::info!(parent: &span, mode = mode.as_str(), "savepoint triggered");
                let this = self.clone();
                let (tenant_id, pending) = (tenant.id.clone(), record.clone());
                let task = tokio::spawn(
                    async move {
                        let outcome = this.take(&pending, events).await;
                        this.finish(&tenant_id, &pending, outcome).await;
                    }
                    .instrument(span),
                );
                Ok((record, Some(task)))
            }
            None if mode == SavepointMode::KeepRunning => {
                let latest = {
                    let (store, j) = (self.store.clone(), job.id.clone());
                    tokio::task::spawn_blocking(move || store.latest_completed(&j)).await??
                };
                let Some((meta, _)) = latest else {
                    return Err(ServerError::Conflict(format!(
                        "job `{job_id}` is {} and has no completed checkpoint to take a savepoint of",
                        job.status.as_str()
                    )));
                };
                let record = SavepointRecord { checkpoint: Some(meta.id), ..record };
                self.put(&record)?;
                let outcome = self.copy(&record, meta.id).await;
                self.finish(&tenant.id, &record, outcome.map(|_| meta.id)).await;
                Ok((self.get(&tenant.id, &record.id)?, None))
            }
            None => Err(ServerError::Conflict(format!(
                "job `{job_id}` is {}, not running: only a `keep_running` savepoint of its latest checkpoint can be taken",
                job.status.as_str()
            ))),
        }
    }

    /// Waits for the savepoint's checkpoint, copies it, and applies the mode. Returns the
    /// checkpoint copied.
    async fn take(
        &self,
        record: &SavepointRecord,
        mut events: tokio::sync::broadcast::Receiver<JobEvent>,
    ) -> Result<u64, SavepointTakeError> {
        let job = record.job.clone();
        let checkpoint = match record.checkpoint {
            Some(id) => {
                self.wait_for(&job, id, &mut events).await?;
                id
            }
            None => self.wait_for_final(&job, record.created_ms, &mut events).await?,
        };
        self.update(&record.tenant, &record.id, |r| r.checkpoint = Some(checkpoint))?;
        self.copy(record, checkpoint).await?;
        if record.mode == Some(SavepointMode::Cancel)
            && let Err(e) = self.jobs.cancel(&record.tenant, &job).await
        {
            tracing::warn!("the savepoint is complete but the job could not be cancelled: {e}");
        }
        Ok(checkpoint)
    }

    /// Waits until checkpoint `id` of `job` completed (or fails).
    async fn wait_for(
        &self,
        job: &str,
        id: u64,
        events: &mut tokio::sync::broadcast::Receiver<JobEvent>,
    ) -> Result<(), SavepointTakeError> {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let event = events.recv().await;
            match event {
                Ok(JobEvent::CheckpointCompleted { id: done, .. }) if done == id => return Ok(()),
                Ok(JobEvent::CheckpointFailed { id: failed, reason }) if failed == id => {
                    return Err(SavepointTakeError::CheckpointFailed { id, reason });
                }
                // A restart fails the checkpoints in flight; missed events: ask the store.
                Ok(JobEvent::Restarting { .. }) | Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => {
                    let closed = matches!(event, Err(RecvError::Closed));
                    match self.checkpoint_status(job, id).await? {
                        CheckpointStatus::Completed => return Ok(()),
                        CheckpointStatus::Failed => {
                            return Err(SavepointTakeError::CheckpointGone(id));
                        }
                        CheckpointStatus::InProgress if closed => {
                            return Err(SavepointTakeError::JobEnded(id));
                        }
                        CheckpointStatus::InProgress => {}
                    }
                }
                Ok(_) => {}
            }
        }
    }

    /// Waits for the final checkpoint of the stop that the savepoint asked for.
    async fn wait_for_final(
        &self,
        job: &str,
        since_ms: u64,
        events: &mut tokio::sync::broadcast::Receiver<JobEvent>,
    ) -> Result<u64, SavepointTakeError> {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match events.recv().await {
                Ok(JobEvent::CheckpointCompleted { id, is_final: true, .. }) => return Ok(id),
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => {
                    // The run ended: its final checkpoint (if it got one) is the latest.
                    let (store, j) = (self.store.clone(), job.to_string());
                    let latest = tokio::task::spawn_blocking(move || store.latest_completed(&j)).await??;
                    return match latest {
                        Some((meta, _))
                            if meta.is_final && meta.pinned && meta.trigger_time_ms >= since_ms =>
                        {
                            Ok(meta.id)
                        }
                        _ => Err(SavepointTakeError::NoFinalCheckpoint),
                    };
                }
            }
        }
    }

    async fn checkpoint_status(&self, job: &str, id: u64) -> Result<CheckpointStatus, SavepointTakeError> {
        let (store, j) = (self.store.clone(), job.to_string());
        let found = tokio::task::spawn_blocking(move || store.checkpoint(&j, id)).await??;
        Ok(found.map_or(CheckpointStatus::Failed, |(meta, _)| meta.status))
    }

    /// Copies checkpoint `checkpoint` of the savepoint's job into the savepoint, then
    /// unpins it.
    pub(super) async fn copy(
        &self,
        record: &SavepointRecord,
        checkpoint: u64,
    ) -> Result<(), SavepointTakeError> {
        let job = self.jobs.get(&record.tenant, &record.job)?;
        let store = self.store.clone();
        let (id, tenant, created_ms) = (record.id.clone(), record.tenant.clone(), record.created_ms);
        tokio::task::spawn_blocking(move || {
            let result = (|| {
                let (_, manifest) = store
                    .checkpoint(&job.id, checkpoint)?
                    .ok_or(SavepointTakeError::NotRecorded(checkpoint))?;
                let manifest = manifest.ok_or(SavepointTakeError::NotRetained(checkpoint))?;
                let description = Description::of(&job.spec, &manifest)?;
                let info = SavepointInfo {
                    id,
                    owner: tenant,
                    job: job.id.clone(),
                    checkpoint,
                    created_ms,
                    bytes: 0,
                    entries: 0,
                    origin: None,
                    description: serde_json::to_value(&description)?,
                };
                store.create_savepoint(info, &manifest)?;
                Ok::<_, SavepointTakeError>(())
            })();
            // Pinned or not, the checkpoint is the job's again.
            if let Err(e) = store.unpin(&job.id, checkpoint) {
                tracing::warn!("cannot unpin checkpoint {checkpoint}: {e}");
            }
            result
        })
        .await?
    }

    /// Records the outcome of a triggered savepoint.
    pub(super) async fn finish(
        &self,
        tenant: &str,
        record: &SavepointRecord,
        outcome: Result<u64, SavepointTakeError>,
    ) {
        let info = match &outcome {
            Ok(_) => self.store.savepoint(&record.id).ok().flatten(),
            Err(_) => None,
        };
        let result = self.update(tenant, &record.id, |r| {
            r.completed_ms = Some(unix_ms());
            match (&outcome, info) {
                (Ok(checkpoint), Some(info)) => {
                    r.status = SavepointStatus::Completed;
                    r.checkpoint = Some(*checkpoint);
                    r.bytes = info.bytes;
                    r.entries = info.entries;
                    r.description = serde_json::from_value(info.description).ok();
                }
                (Ok(_), None) => {
                    r.status = SavepointStatus::Failed;
                    r.error = Some("the savepoint's state was not stored".into());
                }
                (Err(e), _) => {
                    r.status = SavepointStatus::Failed;
                    r.error = Some(e.to_string());
                }
            }
        });
        match (result, outcome) {
            (Err(e), _) => tracing::error!("cannot record the savepoint's outcome: {e}"),
            (Ok(r), Ok(_)) => {
                tracing::info!(checkpoint = r.checkpoint, bytes = r.bytes, "savepoint completed")
            }
            (Ok(_), Err(e)) => tracing::warn!("savepoint failed: {e}"),
        }
    }
}

impl UpgradeSavepoints for Savepoints {
    fn take<'a>(
        &'a self,
        tenant: &'a Tenant,
        job: &'a str,
        how: UpgradeStop,
        taken: Box<dyn FnOnce(&str) + Send + 'a>,
    ) -> SavepointFuture<'a, TakenSavepoint> {
        let mode = match how {
            UpgradeStop::KeepRunning => SavepointMode::KeepRunning,
            UpgradeStop::Stop => SavepointMode::Stop,
            UpgradeStop::Drain => SavepointMode::Drain,
        };
        Box::pin(async move {
            let record = self.take_for_upgrade(tenant, job, mode, |r| taken(&r.id)).await?;
            let failure = match record.status {
                SavepointStatus::Completed => None,
                _ => Some(record.error.unwrap_or_else(|| "it did not complete".into())),
            };
            Ok(TakenSavepoint { id: record.id, failure })
        })
    }

    fn delete<'a>(&'a self, tenant: &'a str, id: &'a str) -> SavepointFuture<'a, ()> {
        Box::pin(Savepoints::delete(self, tenant, id))
    }
}
