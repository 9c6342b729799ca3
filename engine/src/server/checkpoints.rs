//! The checkpoints of a tenant's jobs, as the API shows them: the history, one checkpoint,
//! the latest completed one, triggering one, and the state a retained one holds. The store
//! is read on the blocking pool.

use std::collections::BTreeMap;

use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage as _, HistorySummary, Store};

use super::error::{ServerError, ServerResult};
use super::ids::printable;
use super::jobs::{JobManager, JobRecord};
use super::state_pages::{StatePage, StateQuery, page};

/// A page of a job's checkpoint history ([`Checkpoints::page`]).
#[derive(Debug, Clone)]
pub struct HistoryPage {
    /// Counts and statistics over the whole history.
    pub summary: HistorySummary,
    /// The newest rows, newest first.
    pub rows: Vec<CheckpointMeta>,
    /// The newest completed row.
    pub latest_completed: Option<CheckpointMeta>,
    /// The newest failed row.
    pub latest_failed: Option<CheckpointMeta>,
}

/// Checkpoints of every tenant's jobs. Cheap to clone.
#[derive(Clone)]
pub struct Checkpoints {
    store: Store,
    jobs: JobManager,
}

impl std::fmt::Debug for Checkpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoints").finish_non_exhaustive()
    }
}

impl Checkpoints {
    /// The checkpoints in `store` of the jobs `jobs` manages.
    pub fn new(store: &Store, jobs: JobManager) -> Self {
        Checkpoints { store: store.clone(), jobs }
    }

    /// Every checkpoint `job` recorded, oldest first. The methods taking a [`JobRecord`] take
    /// one the caller got for its tenant ([`JobManager::get`]).
    pub async fn history(&self, job: &JobRecord) -> ServerResult<Vec<CheckpointMeta>> {
        let (store, id) = (self.store.clone(), job.id.clone());
        Ok(tokio::task::spawn_blocking(move || store.history(&id)).await??)
    }

    /// The default history page of `job`: its summary (kept up to date by the store at every
    /// change), its newest `limit` rows (newest first, read by key range) and its latest
    /// completed and failed rows. Reads what it shows, never the whole history.
    pub async fn page(&self, job: &JobRecord, limit: usize) -> ServerResult<HistoryPage> {
        let (store, id) = (self.store.clone(), job.id.clone());
        tokio::task::spawn_blocking(move || {
            let summary = store.history_summary(&id)?;
            let rows = store.history_page(&id, limit)?;
            let row = |wanted: Option<u64>| -> ServerResult<Option<CheckpointMeta>> {
                let Some(wanted) = wanted else { return Ok(None) };
                match rows.iter().find(|m| m.id == wanted) {
                    Some(m) => Ok(Some(m.clone())),
                    None => Ok(store.history_row(&id, wanted)?),
                }
            };
            let latest_completed = row(summary.latest_completed)?;
            let latest_failed = row(summary.latest_failed)?;
            Ok(HistoryPage { summary, rows, latest_completed, latest_failed })
        })
        .await?
    }

    /// Checkpoint `checkpoint` of `job`.
    pub async fn get(&self, job: &JobRecord, checkpoint: u64) -> ServerResult<CheckpointMeta> {
        let (store, id) = (self.store.clone(), job.id.clone());
        tokio::task::spawn_blocking(move || store.checkpoint(&id, checkpoint))
            .await??
            .map(|(meta, _)| meta)
            .ok_or_else(|| ServerError::NotFound(format!("job `{}` has no checkpoint {checkpoint}", job.id)))
    }

    /// The latest completed checkpoint of `job`.
    pub async fn latest_completed(&self, job: &JobRecord) -> ServerResult<Option<CheckpointMeta>> {
        let (store, id) = (self.store.clone(), job.id.clone());
        let latest = tokio::task::spawn_blocking(move || store.latest_completed(&id)).await??;
        Ok(latest.map(|(meta, _)| meta))
    }

    /// Triggers a checkpoint of running job `job_id` of `tenant`; returns its id.
    pub async fn trigger(&self, tenant: &str, job_id: &str) -> ServerResult<u64> {
        self.jobs.trigger_checkpoint(tenant, job_id).await
    }

    /// A page of the state of `operator` in retained checkpoint `checkpoint` of `job`.
    pub async fn state(
        &self,
        job: &JobRecord,
        checkpoint: u64,
        operator: &str,
        query: StateQuery,
    ) -> ServerResult<StatePage> {
        let (store, job, operator) = (self.store.clone(), job.clone(), operator.to_string());
        tokio::task::spawn_blocking(move || {
            let Some((meta, manifest)) = store.checkpoint(&job.id, checkpoint)? else {
                return Err(ServerError::NotFound(format!(
                    "job `{}` has no checkpoint {checkpoint}",
                    job.id
                )));
            };
            let Some(manifest) = manifest else {
                return Err(ServerError::Conflict(format!(
                    "checkpoint {checkpoint} is {}{}: its state is not kept",
                    meta.status,
                    if meta.status == CheckpointStatus::Completed { " but no longer retained" } else { "" }
                )));
            };
            let Some(subtasks) = manifest.get(&operator) else {
                return Err(ServerError::NotFound(format!(
                    "checkpoint {checkpoint} has no operator `{}`",
                    printable(&operator)
                )));
            };
            let chains: BTreeMap<u32, Vec<u64>> = subtasks
                .values()
                .flat_map(|s| s.chains.iter().map(|(scope, chain)| (*scope, chain.clone())))
                .collect();
            let scopes: Vec<u32> = chains.keys().copied().collect();
            page(operator.clone(), &scopes, &query, |scope| store.read_chain(&job.id, &chains[&scope]))
        })
        .await?
    }
}
