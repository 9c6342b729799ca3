//! `/api/v1/jobs/{id}/checkpoints`: history with counts and a min/avg/max summary (Flink's
//! shape), one checkpoint with per-operator and per-subtask statistics, triggering, and the
//! state of an operator in a retained checkpoint.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use weir_store::Stat;

use super::Caller;
use super::model::{
    CheckpointDetail, Counts, ErrorBody, History, HistoryQuery, Latest, MinAvgMax, OperatorView, StatePage,
    StateQuery, SubtaskView, Summary, Triggered,
};
use super::model::{took_unaligned, view};
use crate::server::ids::printable;
use crate::server::{Server, ServerError};

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
    let limit = query.limit.unwrap_or(100).min(100_000);
    let page = server.checkpoints.page(&job, limit).await?;
    let s = &page.summary;
    let counts = Counts {
        total: s.total,
        in_progress: s.in_progress,
        completed: s.completed,
        failed: s.failed,
        unaligned: s.unaligned,
        switched_to_unaligned: s.switched_to_unaligned,
    };
    let stat = |st: &Stat| {
        if st.count == 0 {
            MinAvgMax::default()
        } else {
            MinAvgMax { min: st.min, avg: st.sum / st.count as f64, max: st.max }
        }
    };
    let summary = Summary {
        duration_ms: stat(&s.duration_ms),
        state_size: stat(&s.state_size),
        full_size: stat(&s.full_size),
        max_alignment_ms: stat(&s.max_alignment_ms),
        alignment_bytes: stat(&s.alignment_bytes),
        persisted_in_flight_bytes: stat(&s.persisted_in_flight_bytes),
    };
    let latest = Latest {
        completed: page.latest_completed.as_ref().map(|m| view(m, job.subtasks)),
        failed: page.latest_failed.as_ref().map(|m| view(m, job.subtasks)),
    };
    let data = page.rows.iter().map(|m| view(m, job.subtasks)).collect();
    Ok(Json(History { counts, summary, latest, data }))
}

/// A checkpoint id from a path. Parsed here rather than by the extractor: its message would
/// echo the whole input.
fn parse_checkpoint_id(job_id: &str, checkpoint_id: &str) -> Result<u64, ServerError> {
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
    let meta = server.checkpoints.get(&job, checkpoint_id).await?;
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
                processed_in_flight_bytes: subs.iter().map(|s| s.alignment_bytes).sum(),
                persisted_in_flight_bytes: subs.iter().map(|s| s.persisted_in_flight_bytes).sum(),
                unaligned_subtasks: subs.iter().filter(|s| took_unaligned(s)).count() as u32,
                switched_to_unaligned_ms: subs.iter().filter_map(|s| s.switched_to_unaligned_ms).min(),
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
            processed_in_flight_bytes: s.alignment_bytes,
            unaligned: took_unaligned(s),
            persisted_in_flight_bytes: s.persisted_in_flight_bytes,
            switched_to_unaligned_ms: s.switched_to_unaligned_ms,
            start_delay_ms: s.start_delay_ms,
            state_bytes: s.state_bytes,
            full_state_bytes: s.full_state_bytes,
        })
        .collect();
    Ok(Json(CheckpointDetail { checkpoint: view(&meta, job.subtasks), operators, subtasks }))
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
    let id = server.checkpoints.trigger(&tenant.id, &job_id).await?;
    Ok((StatusCode::ACCEPTED, Json(Triggered { id })))
}

/// The state of an operator in a retained checkpoint of a job.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}/checkpoints/{checkpoint_id}/state/{operator}", tag = "checkpoints",
    params(("job_id" = String, Path, description = "Job id"), ("checkpoint_id" = u64, Path, description = "Checkpoint id"),
        ("operator" = String, Path, description = "Node id"), StateQuery),
    responses(
        (status = 200, description = "A page of state", body = StatePage),
        (status = 400, description = "A malformed cursor", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job, checkpoint or operator", body = ErrorBody),
        (status = 409, description = "The checkpoint is not completed or no longer retained", body = ErrorBody)))]
pub async fn checkpoint_state(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path((job_id, checkpoint_id, operator)): Path<(String, String, String)>,
    Query(query): Query<StateQuery>,
) -> Result<Json<StatePage>, ServerError> {
    let job = server.jobs.get(&tenant.id, &job_id)?;
    let checkpoint_id = parse_checkpoint_id(&job_id, &checkpoint_id)?;
    let query = crate::server::state_pages::StateQuery {
        max_bytes: Some(server.config.max_page_bytes),
        ..query.into()
    };
    let page = server.checkpoints.state(&job, checkpoint_id, &operator, query).await?;
    Ok(Json(page.into()))
}
