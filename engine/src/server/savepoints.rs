//! Savepoints of a tenant: triggered on a job (a pinned checkpoint, or the final checkpoint
//! of a stop or drain, copied into the store's savepoint tables), listed, disposed of,
//! exported as one file and imported from one.
//!
//! A savepoint's life: `pending` while its checkpoint is taken and copied, then `completed`
//! (immutable from then on) or `failed` (with the reason). The record (this module's table)
//! says who owns it and how it came to be; the store holds the copied state under the same
//! id. Retention never removes a savepoint; only `delete` does.

mod transfer;

use std::path::PathBuf;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use tracing::Instrument as _;
use weir_store::{CheckpointStatus, CheckpointStorage as _, SavepointInfo, Store};

use super::codec::{decode_record, encode_record};
use super::error::{ServerError, ServerResult};
use super::ids::{check_hex_id, new_id, printable};
use super::jobs::{JobManager, JobStatus};
use super::ledger::charge_row;
use super::state_pages::{StatePage, StateQuery, page};
use super::tenants::Tenant;
use crate::clock::unix_ms;
use crate::runtime::{JobEvent, StopMode};
use crate::savepoint::Description;

/// (tenant, savepoint id) → savepoint record (JSON).
pub(crate) const SAVEPOINTS: TableDefinition<'_, (&str, &str), &[u8]> =
    TableDefinition::new("weir.savepoint_records");

/// What happens to the job when its savepoint is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SavepointMode {
    /// The job keeps running (the savepoint copies an extra checkpoint).
    #[default]
    KeepRunning,
    /// The job is cancelled once the savepoint is complete.
    Cancel,
    /// The job stops: sources stop at a batch boundary, the final checkpoint is the
    /// savepoint, and the job ends `stopped` (it can be restarted from it).
    Stop,
    /// Stop with drain: sources stop, the end-of-input watermark fires every timer, the
    /// pipeline empties, the final checkpoint is the savepoint, and the job ends `finished`.
    Drain,
}

impl SavepointMode {
    fn as_str(self) -> &'static str {
        match self {
            SavepointMode::KeepRunning => "keep_running",
            SavepointMode::Cancel => "cancel",
            SavepointMode::Stop => "stop",
            SavepointMode::Drain => "drain",
        }
    }
}

/// Where a savepoint is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SavepointStatus {
    /// Its checkpoint is being taken or copied.
    Pending,
    /// Complete: it can be restored, exported, inspected.
    Completed,
    /// It could not be taken (`error` says why); nothing of it is stored.
    Failed,
}

/// A savepoint of a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavepointRecord {
    /// Its id (32 hex digits).
    pub id: String,
    /// The owning tenant.
    #[serde(skip)]
    pub tenant: String,
    /// The job it was taken from (for an imported one: the job on the server it came from).
    pub job: String,
    /// The job's name.
    pub job_name: String,
    /// How it was triggered (none for an imported one).
    pub mode: Option<SavepointMode>,
    /// Pending, completed or failed.
    pub status: SavepointStatus,
    /// The job's checkpoint it copies (once known).
    pub checkpoint: Option<u64>,
    /// Why it failed.
    pub error: Option<String>,
    /// When it was triggered (or imported), unix ms.
    pub created_ms: u64,
    /// When it completed or failed, unix ms.
    pub completed_ms: Option<u64>,
    /// Bytes of state (keys, values and subtask blobs).
    pub bytes: u64,
    /// Keyed and operator state entries.
    pub entries: u64,
    /// Imported: the id it had on the server it was exported from.
    pub origin: Option<String>,
    /// The job it was taken from: nodes, parallelism, modules, state schema versions.
    pub description: Option<Description>,
}

#[derive(Serialize, Deserialize)]
struct StoredSavepoint {
    tenant: String,
    #[serde(flatten)]
    record: SavepointRecord,
}

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

fn decode(bytes: &[u8]) -> ServerResult<SavepointRecord> {
    let stored: StoredSavepoint = decode_record(bytes)?;
    let mut record = stored.record;
    record.tenant = stored.tenant;
    Ok(record)
}

/// The savepoints of every tenant. Cheap to clone.
#[derive(Clone)]
pub struct Savepoints {
    store: Store,
    jobs: JobManager,
    /// Where uploads are spooled before they are imported.
    tmp: PathBuf,
}

impl std::fmt::Debug for Savepoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Savepoints").finish_non_exhaustive()
    }
}

impl Savepoints {
    /// The savepoints over `store` (creates the table). Savepoints left pending by a server
    /// that went down fail now ("interrupted"), and every pinned checkpoint is unpinned: no
    /// savepoint is in progress when the server starts, so every pin is left over (also one
    /// set just before a crash, when its savepoint had no record of it yet).
    /// Uploads are spooled to `tmp`.
    pub fn open(store: &Store, jobs: JobManager, tmp: PathBuf) -> ServerResult<Self> {
        let txn = store.database()?.begin_write().map_err(db_err)?;
        txn.open_table(SAVEPOINTS).map_err(db_err)?;
        txn.commit().map_err(db_err)?;
        let savepoints = Savepoints { store: store.clone(), jobs, tmp };
        for (job, checkpoint) in store.pinned()? {
            store.unpin(&job, checkpoint)?;
        }
        for record in savepoints.all()? {
            if record.status == SavepointStatus::Pending {
                // Data of a copy that never finished.
                savepoints.store.delete_savepoint(&record.id)?;
                savepoints.update(&record.tenant, &record.id, |r| {
                    r.status = SavepointStatus::Failed;
                    r.error = Some("interrupted: the server stopped before the savepoint completed".into());
                    r.completed_ms = Some(unix_ms());
                })?;
            }
        }
        Ok(savepoints)
    }

    /// Savepoint `id` of `tenant`.
    pub fn get(&self, tenant: &str, id: &str) -> ServerResult<SavepointRecord> {
        check_hex_id("savepoint", id, 32)?;
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
        match t.get((tenant, id)).map_err(db_err)? {
            Some(v) => decode(v.value()),
            None => Err(ServerError::NotFound(format!("no savepoint `{id}`"))),
        }
    }

    /// The completed savepoint `id` of `tenant`, as the store holds it.
    pub fn completed(&self, tenant: &str, id: &str) -> ServerResult<SavepointInfo> {
        let record = self.get(tenant, id)?;
        if record.status != SavepointStatus::Completed {
            return Err(ServerError::Conflict(format!(
                "savepoint `{id}` is {}, not completed",
                match record.status {
                    SavepointStatus::Pending => "pending",
                    _ => "failed",
                }
            )));
        }
        self.store
            .savepoint(id)?
            .ok_or_else(|| ServerError::internal(format!("the state of savepoint `{id}` is missing")))
    }

    /// The savepoints of `tenant` (of job `job` only, if given), oldest first.
    pub fn list(&self, tenant: &str, job: Option<&str>) -> ServerResult<Vec<SavepointRecord>> {
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
        let mut out = Vec::new();
        for row in t.range((tenant, "")..).map_err(db_err)? {
            let (k, v) = row.map_err(db_err)?;
            if k.value().0 != tenant {
                break;
            }
            let record = decode(v.value())?;
            if job.is_none_or(|j| j == record.job) {
                out.push(record);
            }
        }
        out.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        Ok(out)
    }

    fn all(&self) -> ServerResult<Vec<SavepointRecord>> {
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(db_err)? {
            out.push(decode(row.map_err(db_err)?.1.value())?);
        }
        Ok(out)
    }

    fn put(&self, record: &SavepointRecord) -> ServerResult<()> {
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        {
            let mut t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
            let stored = StoredSavepoint { tenant: record.tenant.clone(), record: record.clone() };
            let value = encode_record(&stored)?;
            let key = (record.tenant.as_str(), record.id.as_str());
            let old = t.insert(key, value.as_slice()).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, key.0, key.0.len() + key.1.len(), (old, Some(value.len())), 0, false)?;
        }
        txn.commit().map_err(db_err)
    }

    fn update(
        &self,
        tenant: &str,
        id: &str,
        change: impl FnOnce(&mut SavepointRecord),
    ) -> ServerResult<SavepointRecord> {
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        let record;
        {
            let mut t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
            let mut r = match t.get((tenant, id)).map_err(db_err)? {
                Some(v) => decode(v.value())?,
                None => return Err(ServerError::NotFound(format!("no savepoint `{id}`"))),
            };
            change(&mut r);
            let value = encode_record(&StoredSavepoint { tenant: tenant.to_string(), record: r.clone() })?;
            let old = t.insert((tenant, id), value.as_slice()).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, tenant, tenant.len() + id.len(), (old, Some(value.len())), 0, false)?;
            record = r;
        }
        txn.commit().map_err(db_err)?;
        Ok(record)
    }

    /// Triggers a savepoint of job `job_id`; returns its pending record at once. A job that
    /// is not running can give a savepoint of its latest checkpoint (mode `keep_running`).
    pub async fn trigger(
        &self,
        tenant: &Tenant,
        job_id: &str,
        mode: SavepointMode,
    ) -> ServerResult<SavepointRecord> {
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
                tokio::spawn(
                    async move {
                        let outcome = this.take(&pending, events).await;
                        this.finish(&tenant_id, &pending, outcome).await;
                    }
                    .instrument(span),
                );
                Ok(record)
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
                self.get(&tenant.id, &record.id)
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
    ) -> Result<u64, String> {
        let job = record.job.clone();
        let checkpoint = match record.checkpoint {
            Some(id) => {
                self.wait_for(&job, id, &mut events).await?;
                id
            }
            None => self.wait_for_final(&job, record.created_ms, &mut events).await?,
        };
        self.update(&record.tenant, &record.id, |r| r.checkpoint = Some(checkpoint))
            .map_err(|e| e.to_string())?;
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
    ) -> Result<(), String> {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let event = events.recv().await;
            match event {
                Ok(JobEvent::CheckpointCompleted { id: done, .. }) if done == id => return Ok(()),
                Ok(JobEvent::CheckpointFailed { id: failed, reason }) if failed == id => {
                    return Err(format!("checkpoint {id} failed: {reason}"));
                }
                // A restart fails the checkpoints in flight; missed events: ask the store.
                Ok(JobEvent::Restarting { .. }) | Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => {
                    let closed = matches!(event, Err(RecvError::Closed));
                    match self.checkpoint_status(job, id).await? {
                        CheckpointStatus::Completed => return Ok(()),
                        CheckpointStatus::Failed => {
                            return Err(format!("checkpoint {id} failed (the job restarted or ended)"));
                        }
                        CheckpointStatus::InProgress if closed => {
                            return Err(format!("the job ended before checkpoint {id} completed"));
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
    ) -> Result<u64, String> {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match events.recv().await {
                Ok(JobEvent::CheckpointCompleted { id, is_final: true, .. }) => return Ok(id),
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => {
                    // The run ended: its final checkpoint (if it got one) is the latest.
                    let (store, j) = (self.store.clone(), job.to_string());
                    let latest = tokio::task::spawn_blocking(move || store.latest_completed(&j))
                        .await
                        .map_err(|e| e.to_string())?
                        .map_err(|e| e.to_string())?;
                    return match latest {
                        Some((meta, _))
                            if meta.is_final && meta.pinned && meta.trigger_time_ms >= since_ms =>
                        {
                            Ok(meta.id)
                        }
                        _ => Err("the job ended without its final checkpoint".into()),
                    };
                }
            }
        }
    }

    async fn checkpoint_status(&self, job: &str, id: u64) -> Result<CheckpointStatus, String> {
        let (store, j) = (self.store.clone(), job.to_string());
        let found = tokio::task::spawn_blocking(move || store.checkpoint(&j, id))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        Ok(found.map_or(CheckpointStatus::Failed, |(meta, _)| meta.status))
    }

    /// Copies checkpoint `checkpoint` of the savepoint's job into the savepoint, then
    /// unpins it.
    async fn copy(&self, record: &SavepointRecord, checkpoint: u64) -> Result<(), String> {
        let job = self.jobs.get(&record.tenant, &record.job).map_err(|e| e.to_string())?;
        let store = self.store.clone();
        let (id, tenant, created_ms) = (record.id.clone(), record.tenant.clone(), record.created_ms);
        tokio::task::spawn_blocking(move || {
            let result = (|| {
                let (_, manifest) = store
                    .checkpoint(&job.id, checkpoint)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("checkpoint {checkpoint} is not recorded"))?;
                let manifest =
                    manifest.ok_or_else(|| format!("checkpoint {checkpoint} is no longer retained"))?;
                let description = Description::of(&job.spec, &manifest).map_err(|e| e.to_string())?;
                let info = SavepointInfo {
                    id,
                    owner: tenant,
                    job: job.id.clone(),
                    checkpoint,
                    created_ms,
                    bytes: 0,
                    entries: 0,
                    origin: None,
                    description: serde_json::to_value(&description).map_err(|e| e.to_string())?,
                };
                store.create_savepoint(info, &manifest).map_err(|e| e.to_string())?;
                Ok::<_, String>(())
            })();
            // Pinned or not, the checkpoint is the job's again.
            if let Err(e) = store.unpin(&job.id, checkpoint) {
                tracing::warn!("cannot unpin checkpoint {checkpoint}: {e}");
            }
            result
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// Records the outcome of a triggered savepoint.
    async fn finish(&self, tenant: &str, record: &SavepointRecord, outcome: Result<u64, String>) {
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
                    r.error = Some(e.clone());
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

    /// Disposes of savepoint `id` of `tenant`: its state and its record. A pending one
    /// cannot be.
    pub async fn delete(&self, tenant: &str, id: &str) -> ServerResult<()> {
        let (this, tenant, id) = (self.clone(), tenant.to_string(), id.to_string());
        tokio::task::spawn_blocking(move || this.delete_blocking(&tenant, &id)).await?
    }

    fn delete_blocking(&self, tenant: &str, id: &str) -> ServerResult<()> {
        let record = self.get(tenant, id)?;
        if record.status == SavepointStatus::Pending {
            return Err(ServerError::Conflict(format!(
                "savepoint `{id}` is pending; delete it once it ended"
            )));
        }
        self.store.delete_savepoint(id)?;
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        {
            let mut t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
            let old = t.remove((tenant, id)).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, tenant, tenant.len() + id.len(), (old, None), 0, false)?;
        }
        txn.commit().map_err(db_err)?;
        tracing::info!(tenant = %tenant, savepoint = %id, "savepoint deleted");
        Ok(())
    }

    /// A page of the state of `operator` in completed savepoint `id` of `tenant`.
    pub async fn state(
        &self,
        tenant: &str,
        id: &str,
        operator: &str,
        query: StateQuery,
    ) -> ServerResult<StatePage> {
        let info = self.completed(tenant, id)?;
        let (store, operator) = (self.store.clone(), operator.to_string());
        tokio::task::spawn_blocking(move || {
            if !store.savepoint_operators(&info.id)?.contains(&operator)
                && !described_node(&info.description, &operator)
            {
                return Err(ServerError::NotFound(format!(
                    "savepoint `{}` has no operator `{}`",
                    info.id,
                    printable(&operator)
                )));
            }
            let scopes = store.savepoint_scopes(&info.id, &operator)?;
            page(operator.clone(), &scopes, &query, |scope| {
                store.read_savepoint_scope(&info.id, &operator, scope)
            })
        })
        .await?
    }
}

/// Whether a savepoint's description names node `operator` (a node without state has no
/// rows, yet is part of the savepoint).
fn described_node(description: &serde_json::Value, operator: &str) -> bool {
    description
        .get("nodes")
        .and_then(|n| n.as_array())
        .is_some_and(|nodes| nodes.iter().any(|n| n.get("id").and_then(|i| i.as_str()) == Some(operator)))
}
