//! `/api/v1/jobs/{id}/checkpoints`: history with counts and a min/avg/max summary (Flink's
//! shape), one checkpoint with per-operator and per-subtask statistics, and triggering.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage as _};

use super::{Caller, ErrorBody};
use crate::server::tenants::printable;
use crate::server::{Server, ServerError};

/// A checkpoint in the history.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckpointView {
    /// Its id.
    pub id: u64,
    /// `in_progress`, `completed` or `failed`.
    pub status: String,
    /// Taken at the end of the job (input ended, or stopped).
    pub is_final: bool,
    /// The final checkpoint of a stopped job (it resumes from it).
    pub stopped: bool,
    /// Trigger time, unix ms.
    pub trigger_time_ms: u64,
    /// Completion (or failure) time, unix ms.
    pub end_time_ms: Option<u64>,
    /// End-to-end duration.
    pub duration_ms: Option<f64>,
    /// Bytes written by this checkpoint (incremental size).
    pub state_size: u64,
    /// Bytes of the whole state it refers to.
    pub full_size: u64,
    /// Subtasks that acknowledged it.
    pub acknowledged_subtasks: u32,
    /// When the latest acknowledgement arrived, unix ms.
    pub latest_ack_time_ms: Option<u64>,
    /// Subtasks of the job.
    pub total_subtasks: u32,
    /// Longest alignment of a subtask.
    pub max_alignment_ms: f64,
    /// Bytes processed during alignment, all subtasks (Flink's "processed in-flight data").
    pub alignment_bytes: u64,
    /// In-flight data persisted with the checkpoint (unaligned checkpoints; Weir aligns
    /// always, so 0).
    pub persisted_in_flight_bytes: u64,
    /// Whether it was an unaligned checkpoint (Weir's are aligned).
    pub unaligned: bool,
    /// Taken for a savepoint (kept from retention until the savepoint copied it).
    pub pinned: bool,
    /// The savepoint whose state this checkpoint holds (a job's first, when it started from
    /// a savepoint).
    pub savepoint: Option<String>,
    /// Why it failed.
    pub failure: Option<String>,
    /// Its state is still kept (retention removes old ones).
    pub retained: bool,
}

/// The view of a checkpoint of a job with `total_subtasks` subtasks.
pub fn view(meta: &CheckpointMeta, total_subtasks: u32) -> CheckpointView {
    CheckpointView {
        id: meta.id,
        status: match meta.status {
            CheckpointStatus::InProgress => "in_progress",
            CheckpointStatus::Completed => "completed",
            CheckpointStatus::Failed => "failed",
        }
        .to_string(),
        is_final: meta.is_final,
        stopped: meta.stopped,
        trigger_time_ms: meta.trigger_time_ms,
        end_time_ms: meta.end_time_ms,
        duration_ms: meta.duration_ms,
        state_size: meta.state_size,
        full_size: meta.full_size,
        acknowledged_subtasks: meta.subtasks.len() as u32,
        latest_ack_time_ms: meta.subtasks.iter().map(|s| s.ack_time_ms).max(),
        total_subtasks,
        max_alignment_ms: meta.subtasks.iter().map(|s| s.alignment_ms).fold(0.0, f64::max),
        alignment_bytes: meta.subtasks.iter().map(|s| s.alignment_bytes).sum(),
        persisted_in_flight_bytes: 0,
        unaligned: false,
        pinned: meta.pinned,
        savepoint: meta.savepoint.clone(),
        failure: meta.failure.clone(),
        retained: meta.retained,
    }
}

/// Counts by status.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Counts {
    /// Every checkpoint.
    pub total: u64,
    /// In progress.
    pub in_progress: u64,
    /// Completed.
    pub completed: u64,
    /// Failed.
    pub failed: u64,
}

/// Minimum, average and maximum.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct MinAvgMax {
    /// Minimum.
    pub min: f64,
    /// Average.
    pub avg: f64,
    /// Maximum.
    pub max: f64,
}

impl MinAvgMax {
    fn of(values: impl Iterator<Item = f64>) -> Self {
        let (mut n, mut sum, mut min, mut max) = (0u64, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            n += 1;
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        if n == 0 { MinAvgMax::default() } else { MinAvgMax { min, avg: sum / n as f64, max } }
    }
}

/// Summary over the completed checkpoints.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Summary {
    /// End-to-end duration, ms.
    pub duration_ms: MinAvgMax,
    /// Incremental size, bytes.
    pub state_size: MinAvgMax,
    /// Full size, bytes.
    pub full_size: MinAvgMax,
    /// Longest alignment of a subtask, ms.
    pub max_alignment_ms: MinAvgMax,
    /// Bytes processed during alignment.
    pub alignment_bytes: MinAvgMax,
}

/// The latest checkpoints.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct Latest {
    /// The latest completed one.
    pub completed: Option<CheckpointView>,
    /// The latest failed one.
    pub failed: Option<CheckpointView>,
}

/// The checkpoint history of a job.
#[derive(Debug, Serialize, ToSchema)]
pub struct History {
    /// Counts by status.
    pub counts: Counts,
    /// Summary over the completed checkpoints.
    pub summary: Summary,
    /// The latest ones.
    pub latest: Latest,
    /// Checkpoints, newest first (at most `limit`).
    pub data: Vec<CheckpointView>,
}

/// Paging of the history.
#[derive(Debug, Deserialize, IntoParams)]
pub struct HistoryQuery {
    /// Most checkpoints listed, newest first (default 100, at most 100000).
    pub limit: Option<usize>,
}

/// The checkpoint history of a job.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}/checkpoints", tag = "checkpoints",
    params(("job_id" = String, Path, description = "Job id"), HistoryQuery),
    responses(
        (status = 200, description = "History", body = History),
        (status = 400, description = "Bad query", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody)))]
pub async fn list_checkpoints(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
    Query(query): Query<HistoryQuery>,
) -> Result<Json<History>, ServerError> {
    let job = server.jobs.get(&tenant.id, &job_id)?;
    let store = server.store.clone();
    let id = job.id.clone();
    let history = tokio::task::spawn_blocking(move || store.history(&id)).await??;
    let limit = query.limit.unwrap_or(100).min(100_000);
    let mut counts = Counts { total: history.len() as u64, ..Counts::default() };
    for m in &history {
        match m.status {
            CheckpointStatus::InProgress => counts.in_progress += 1,
            CheckpointStatus::Completed => counts.completed += 1,
            CheckpointStatus::Failed => counts.failed += 1,
        }
    }
    let completed: Vec<&CheckpointMeta> =
        history.iter().filter(|m| m.status == CheckpointStatus::Completed).collect();
    let summary = Summary {
        duration_ms: MinAvgMax::of(completed.iter().map(|m| m.duration_ms.unwrap_or_default())),
        state_size: MinAvgMax::of(completed.iter().map(|m| m.state_size as f64)),
        full_size: MinAvgMax::of(completed.iter().map(|m| m.full_size as f64)),
        max_alignment_ms: MinAvgMax::of(
            completed.iter().map(|m| m.subtasks.iter().map(|s| s.alignment_ms).fold(0.0, f64::max)),
        ),
        alignment_bytes: MinAvgMax::of(
            completed.iter().map(|m| m.subtasks.iter().map(|s| s.alignment_bytes).sum::<u64>() as f64),
        ),
    };
    let latest = Latest {
        completed: completed.last().map(|m| view(m, job.subtasks)),
        failed: history
            .iter()
            .rev()
            .find(|m| m.status == CheckpointStatus::Failed)
            .map(|m| view(m, job.subtasks)),
    };
    let data = history.iter().rev().take(limit).map(|m| view(m, job.subtasks)).collect();
    Ok(Json(History { counts, summary, latest, data }))
}

/// Statistics of one subtask's part of a checkpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubtaskView {
    /// Node id.
    pub operator: String,
    /// Subtask index.
    pub subtask: u32,
    /// Acknowledgement time, unix ms.
    pub ack_time_ms: u64,
    /// Synchronous part (the snapshot on the processing path), ms.
    pub sync_ms: f64,
    /// Asynchronous part (writing to the store), ms.
    pub async_ms: f64,
    /// Alignment duration, ms.
    pub alignment_ms: f64,
    /// Bytes processed during alignment.
    pub alignment_bytes: u64,
    /// From the trigger to the first barrier's arrival, ms.
    pub start_delay_ms: f64,
    /// Bytes written.
    pub state_bytes: u64,
    /// Bytes of the subtask's whole state.
    pub full_state_bytes: u64,
}

/// One operator's part of a checkpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct OperatorView {
    /// Node id.
    pub id: String,
    /// Subtasks that acknowledged.
    pub acknowledged_subtasks: u32,
    /// Bytes written.
    pub state_size: u64,
    /// Bytes of the whole state.
    pub full_size: u64,
    /// Slowest subtask's end-to-end time from trigger to acknowledgement, ms.
    pub max_end_to_end_ms: f64,
    /// Sync part over subtasks.
    pub sync_ms: MinAvgMax,
    /// Async part over subtasks.
    pub async_ms: MinAvgMax,
    /// Alignment duration over subtasks.
    pub alignment_ms: MinAvgMax,
    /// Alignment bytes over subtasks.
    pub alignment_bytes: MinAvgMax,
    /// Start delay over subtasks.
    pub start_delay_ms: MinAvgMax,
}

/// One checkpoint with per-operator and per-subtask statistics.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckpointDetail {
    /// The checkpoint.
    #[serde(flatten)]
    pub checkpoint: CheckpointView,
    /// Per operator, in graph order.
    pub operators: Vec<OperatorView>,
    /// Per subtask.
    pub subtasks: Vec<SubtaskView>,
}

/// A checkpoint id from a path. Parsed here rather than by the extractor: its message would
/// echo the whole input.
pub(super) fn parse_checkpoint_id(job_id: &str, checkpoint_id: &str) -> Result<u64, ServerError> {
    checkpoint_id.parse().map_err(|_| {
        ServerError::NotFound(format!(
            "job `{job_id}` has no checkpoint `{}` (a checkpoint id is a number)",
            printable(checkpoint_id)
        ))
    })
}

/// One checkpoint of a job.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}/checkpoints/{checkpoint_id}", tag = "checkpoints",
    params(("job_id" = String, Path, description = "Job id"), ("checkpoint_id" = u64, Path, description = "Checkpoint id")),
    responses(
        (status = 200, description = "The checkpoint", body = CheckpointDetail),
        (status = 400, description = "An id that is not UTF-8", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job or checkpoint", body = ErrorBody)))]
pub async fn get_checkpoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path((job_id, checkpoint_id)): Path<(String, String)>,
) -> Result<Json<CheckpointDetail>, ServerError> {
    let job = server.jobs.get(&tenant.id, &job_id)?;
    let checkpoint_id = parse_checkpoint_id(&job_id, &checkpoint_id)?;
    let store = server.store.clone();
    let id = job.id.clone();
    let meta = tokio::task::spawn_blocking(move || store.checkpoint(&id, checkpoint_id))
        .await??
        .map(|(meta, _)| meta)
        .ok_or_else(|| ServerError::NotFound(format!("job `{job_id}` has no checkpoint {checkpoint_id}")))?;
    let mut by_operator: BTreeMap<&str, Vec<&weir_store::SubtaskStats>> = BTreeMap::new();
    for s in &meta.subtasks {
        by_operator.entry(s.operator.as_str()).or_default().push(s);
    }
    let operators = job
        .spec
        .nodes
        .iter()
        .map(|n| {
            let subs = by_operator.get(n.id.as_str()).cloned().unwrap_or_default();
            OperatorView {
                id: n.id.clone(),
                acknowledged_subtasks: subs.len() as u32,
                state_size: subs.iter().map(|s| s.state_bytes).sum(),
                full_size: subs.iter().map(|s| s.full_state_bytes).sum(),
                max_end_to_end_ms: subs
                    .iter()
                    .map(|s| s.ack_time_ms.saturating_sub(meta.trigger_time_ms) as f64)
                    .fold(0.0, f64::max),
                sync_ms: MinAvgMax::of(subs.iter().map(|s| s.sync_ms)),
                async_ms: MinAvgMax::of(subs.iter().map(|s| s.async_ms)),
                alignment_ms: MinAvgMax::of(subs.iter().map(|s| s.alignment_ms)),
                alignment_bytes: MinAvgMax::of(subs.iter().map(|s| s.alignment_bytes as f64)),
                start_delay_ms: MinAvgMax::of(subs.iter().map(|s| s.start_delay_ms)),
            }
        })
        .collect();
    let subtasks = meta
        .subtasks
        .iter()
        .map(|s| SubtaskView {
            operator: s.operator.clone(),
            subtask: s.subtask,
            ack_time_ms: s.ack_time_ms,
            sync_ms: s.sync_ms,
            async_ms: s.async_ms,
            alignment_ms: s.alignment_ms,
            alignment_bytes: s.alignment_bytes,
            start_delay_ms: s.start_delay_ms,
            state_bytes: s.state_bytes,
            full_state_bytes: s.full_state_bytes,
        })
        .collect();
    Ok(Json(CheckpointDetail { checkpoint: view(&meta, job.subtasks), operators, subtasks }))
}

/// A triggered checkpoint.
#[derive(Debug, Serialize, ToSchema)]
pub struct Triggered {
    /// Its id: poll `GET .../checkpoints/{id}` for its status.
    pub id: u64,
}

/// Triggers a checkpoint of a running job now.
#[utoipa::path(post, path = "/api/v1/jobs/{job_id}/checkpoints", tag = "checkpoints",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 202, description = "Triggered", body = Triggered),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "Not running, or too many checkpoints in progress", body = ErrorBody)))]
pub async fn trigger_checkpoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<(StatusCode, Json<Triggered>), ServerError> {
    let id = server.jobs.trigger_checkpoint(&tenant.id, &job_id).await?;
    Ok((StatusCode::ACCEPTED, Json(Triggered { id })))
}
