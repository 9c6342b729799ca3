//! `GET /api/v1/jobs/{id}/logs`: a job's operator logs, filtered; with `follow=true` the
//! lines so far and then new ones as server-sent events.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::Caller;
use super::model::Data;
use crate::guest::logs::LogLevel;
use crate::server::jobs::{LogFilter, StoredLine};
use crate::server::{Server, ServerError};

/// Most lines one answer holds.
const MAX_LIMIT: usize = 10_000;

/// Which lines.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// Only this node's lines.
    pub node: Option<String>,
    /// Only this subtask's.
    pub subtask: Option<u32>,
    /// Only lines at least this important (`trace` … `error`; `stdout` ranks as `info`,
    /// `stderr` as `warn`).
    pub level: Option<LogLevel>,
    /// Only lines after this number (`seq`): where the last answer ended.
    pub after: Option<u64>,
    /// Only lines at or after this time (unix ms).
    pub since_ms: Option<u64>,
    /// Most lines (default 1,000, at most 10,000); oldest first.
    pub limit: Option<usize>,
    /// Stream the lines so far and then new ones as server-sent events (`text/event-stream`,
    /// one `line` event per line, its data the line as JSON) until the client leaves.
    #[serde(default)]
    pub follow: bool,
}

/// The job's operator log: every line its operators logged (the SDKs' logging, and what they
/// wrote to stdout and stderr), with its node, subtask, attempt, level and time, oldest
/// first. Kept in a ring of the tenant's `max_log_bytes_per_job` bytes, across server
/// restarts; each instance is held to a rate of lines and bytes per second, and what passes
/// it is dropped and counted.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}/logs", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id"), LogQuery),
    responses(
        (status = 200, description = "The lines, oldest first (with `follow`: `text/event-stream`)", body = Data<StoredLine>),
        (status = 400, description = "Bad query", body = super::model::ErrorBody),
        (status = 401, description = "No or bad token", body = super::model::ErrorBody),
        (status = 404, description = "No such job", body = super::model::ErrorBody)))]
pub async fn get_job_logs(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
    Query(query): Query<LogQuery>,
) -> Result<Response, ServerError> {
    let filter = LogFilter {
        node: query.node,
        subtask: query.subtask,
        level: query.level,
        after: query.after,
        since_ms: query.since_ms,
    };
    let limit = query.limit.unwrap_or(1000).clamp(1, MAX_LIMIT);
    let (manager, tenant_id, id) = (server.jobs.clone(), tenant.id.clone(), job_id.clone());
    let read = filter.clone();
    // Subscribed before the read, so that no line falls between the two.
    let follow = if query.follow { server.jobs.follow_logs(&tenant.id, &job_id)? } else { None };
    let lines = tokio::task::spawn_blocking(move || manager.logs(&tenant_id, &id, &read, limit)).await??;
    if !query.follow {
        return Ok(Json(Data { data: lines }).into_response());
    }
    let last = lines.last().map_or(filter.after.unwrap_or(0), |l| l.seq);
    let backlog = futures::stream::iter(lines.into_iter().map(line_event));
    let new = futures::stream::unfold((follow, last, filter), |(mut rx, mut last, filter)| async move {
        loop {
            let r = rx.as_mut()?;
            match r.recv().await {
                Ok(line) if line.seq > last && filter.matches(&line) => {
                    last = line.seq;
                    return Some((line_event(line), (rx, last, filter)));
                }
                Ok(_) => {}
                // A follower that fell behind is told, and goes on with what comes next.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    let event = Ok(Event::default().event("lagged").data(n.to_string()));
                    return Some((event, (rx, last, filter)));
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let stream = futures::StreamExt::chain(backlog, new);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response())
}

fn line_event(line: StoredLine) -> Result<Event, Infallible> {
    let data = serde_json::to_string(&line).unwrap_or_default();
    Ok(Event::default().event("line").id(line.seq.to_string()).data(data))
}
