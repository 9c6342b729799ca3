//! `/api/v1/jobs`: create from a JSON spec, list, get (graph, status, live figures), stop,
//! cancel, restart.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;

use super::model::{
    CreateQuery, Data, Edge, ErrorBody, JobDetail, JobRecord, JobSummary, SubtaskLive, Vertex, view,
};
use super::{Caller, parse_json};
use crate::plan::{JobSpec, NodeKind, Partitioning};
use crate::savepoint::RestoreOptions;
use crate::server::jobs;
use crate::server::{Server, ServerError};

/// The job with its graph, live figures and latest checkpoint.
pub(super) async fn detail(server: &Server, job: jobs::JobRecord) -> Result<JobDetail, ServerError> {
    let live = server.jobs.live(&job.id).unwrap_or_default();
    let vertices = job
        .spec
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let subtasks: Vec<SubtaskLive> = match live.get(i) {
                Some(subtasks) => subtasks.iter().cloned().map(Into::into).collect(),
                None => {
                    (0..n.parallelism).map(|s| SubtaskLive { subtask: s, ..SubtaskLive::default() }).collect()
                }
            };
            Vertex {
                id: n.id.clone(),
                kind: n.kind,
                parallelism: n.parallelism,
                module: n.module.clone(),
                connector: n.connector.clone(),
                records_in: subtasks.iter().map(|s| s.records_in).sum(),
                records_out: subtasks.iter().map(|s| s.records_out).sum(),
                records_in_per_second: subtasks.iter().map(|s| s.records_in_per_second).sum(),
                records_out_per_second: subtasks.iter().map(|s| s.records_out_per_second).sum(),
                backpressure: subtasks.iter().map(|s| s.backpressure).fold(0.0, f64::max),
                subtasks,
            }
        })
        .collect();
    // Edges as planned: the default partitioning is forward where parallelism is equal.
    let parallelism = |id: &str| job.spec.nodes.iter().find(|n| n.id == id).map(|n| n.parallelism);
    let edges = job
        .spec
        .edges
        .iter()
        .map(|e| Edge {
            from: e.from.clone(),
            to: e.to.clone(),
            partitioning: e.partitioning.unwrap_or(if parallelism(&e.from) == parallelism(&e.to) {
                Partitioning::Forward
            } else {
                Partitioning::Rebalance
            }),
        })
        .collect();
    let latest_checkpoint =
        server.checkpoints.latest_completed(&job).await?.map(|meta| view(&meta, job.subtasks));
    Ok(JobDetail { job: job.into(), vertices, edges, latest_checkpoint })
}

/// Creates a job from its JSON spec and starts it. Operators name their module by id, by
/// the name it was uploaded under, or `builtin:<name>`; stream connectors name the
/// caller's streams; `file` connectors are not available over the API. With
/// `from_savepoint`, the savepoint is checked against the job before anything starts.
#[utoipa::path(post, path = "/api/v1/jobs", tag = "jobs", request_body(content = JobSpec, description = "A job spec"),
    params(CreateQuery),
    responses(
        (status = 201, description = "Created and started", body = JobDetail),
        (status = 400, description = "Invalid spec, or a savepoint that does not fit the job", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such savepoint", body = ErrorBody),
        (status = 409, description = "The savepoint is not completed", body = ErrorBody),
        (status = 422, description = "The job's module failed to migrate the savepoint's state", body = ErrorBody),
        (status = 429, description = "A quota would be exceeded", body = ErrorBody),
        (status = 507, description = "The server's disk is nearly full", body = ErrorBody)))]
pub async fn create_job(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Query(query): Query<CreateQuery>,
    body: Bytes,
) -> Result<(StatusCode, Json<JobDetail>), ServerError> {
    let spec: JobSpec =
        parse_json(&body).map_err(|e| ServerError::BadRequest(format!("invalid job spec: {e}")))?;
    let restore = match &query.from_savepoint {
        Some(id) => Some((
            server.savepoints.completed(&tenant.id, id)?,
            RestoreOptions { allow_non_restored_state: query.allow_non_restored_state.unwrap_or(false) },
        )),
        None if query.allow_non_restored_state.is_some() => {
            return Err(ServerError::BadRequest(
                "allow_non_restored_state goes with from_savepoint".to_string(),
            ));
        }
        None => None,
    };
    server.check_storage(&tenant, 0)?;
    server.check_disk(0)?;
    let job = server.jobs.create(&tenant, spec, restore).await?;
    Ok((StatusCode::CREATED, Json(detail(&server, job).await?)))
}

/// Lists the caller's jobs with their live throughput.
#[utoipa::path(get, path = "/api/v1/jobs", tag = "jobs",
    responses(
        (status = 200, description = "The jobs", body = Data<JobSummary>),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
pub async fn list_jobs(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<JobSummary>>, ServerError> {
    let data = server
        .jobs
        .list(&tenant.id)?
        .into_iter()
        .map(|job| {
            let live = server.jobs.live(&job.id).unwrap_or_default();
            let (mut source, mut sink, mut backpressure) = (0.0, 0.0, 0.0f64);
            for (node, subtasks) in job.spec.nodes.iter().zip(&live) {
                for s in subtasks {
                    match node.kind {
                        NodeKind::Source => source += s.records_out_per_second,
                        NodeKind::Sink => sink += s.records_in_per_second,
                        NodeKind::Operator => {}
                    }
                    backpressure = backpressure.max(s.backpressure);
                }
            }
            JobSummary {
                job: job.into(),
                source_records_per_second: source,
                sink_records_per_second: sink,
                backpressure,
            }
        })
        .collect();
    Ok(Json(Data { data }))
}

/// One job: status, graph, live records in/out and backpressure per operator and subtask.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "The job", body = JobDetail),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody)))]
pub async fn get_job(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<Json<JobDetail>, ServerError> {
    let job = server.jobs.get(&tenant.id, &job_id)?;
    Ok(Json(detail(&server, job).await?))
}

/// Stops a job: its sources stop, a final checkpoint commits every output, and the job
/// ends `stopped`. `restart` resumes it from there.
#[utoipa::path(post, path = "/api/v1/jobs/{job_id}/stop", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 202, description = "Stopping", body = JobRecord),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "The job is not running", body = ErrorBody)))]
pub async fn stop_job(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<(StatusCode, Json<JobRecord>), ServerError> {
    Ok((StatusCode::ACCEPTED, Json(server.jobs.stop(&tenant.id, &job_id).await?.into())))
}

/// Cancels a job at once (no final checkpoint). `restart` resumes it from its latest
/// checkpoint.
#[utoipa::path(post, path = "/api/v1/jobs/{job_id}/cancel", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "Canceled", body = JobRecord),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "The job has ended", body = ErrorBody)))]
pub async fn cancel_job(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<Json<JobRecord>, ServerError> {
    Ok(Json(server.jobs.cancel(&tenant.id, &job_id).await?.into()))
}

/// Restarts a job from its latest checkpoint (a running job is cancelled first).
#[utoipa::path(post, path = "/api/v1/jobs/{job_id}/restart", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "Restarted", body = JobRecord),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "The job finished", body = ErrorBody),
        (status = 429, description = "A quota would be exceeded", body = ErrorBody)))]
pub async fn restart_job(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<Json<JobRecord>, ServerError> {
    Ok(Json(server.jobs.restart(&tenant, &job_id).await?.into()))
}

/// The job's exception history: its last 100 failures, newest first, each with its time, the
/// restart it led to, whose failure it was (`user_code`, `bad_data`, `external`,
/// `platform`: the platform's use up no restart attempt), where it happened, the error and
/// what Weir did. Kept across server restarts.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}/exceptions", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "The failures, newest first", body = Data<jobs::JobException>),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody)))]
pub async fn list_job_exceptions(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<Json<Data<jobs::JobException>>, ServerError> {
    let (manager, tenant) = (server.jobs.clone(), tenant.id.clone());
    let data = tokio::task::spawn_blocking(move || manager.exceptions(&tenant, &job_id)).await??;
    Ok(Json(Data { data }))
}
