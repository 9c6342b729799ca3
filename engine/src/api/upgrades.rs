//! `/api/v1/jobs/{id}/upgrade` and `/versions`: one-step upgrade and rescale of a running
//! job, with rollback (see `server/jobs/upgrade.rs`), and its version history.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::model::{Data, ErrorBody, UpgradeAnswer};
use super::{Caller, parse_json};
use crate::server::jobs::{JobVersion, UpgradeRequest};
use crate::server::{Server, ServerError};

/// Upgrades a running job to a new version (new modules, parallelism or settings) in one
/// step. Before anything stops, a savepoint of the job is checked against the new version
/// (422 with the reason when its state does not fit; `dry_run` answers the check and
/// changes nothing). Then the job stops at a savepoint, the new version starts from it on
/// probation (`grace_period_ms`, no checkpoint meanwhile), and if it fails to restore or
/// fails on probation the old version is restored from the same savepoint; the job's
/// `upgrade`, `error`, exceptions and version history say what happened. Answers once the
/// new version started (or was rolled back already); the job's `upgrade` is cleared when
/// the probation ends.
#[utoipa::path(post, path = "/api/v1/jobs/{job_id}/upgrade", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id")),
    request_body(content = UpgradeRequest, description = "The new version"),
    responses(
        (status = 200, description = "The check's answer (dry run): nothing changed", body = UpgradeAnswer),
        (status = 202, description = "The new version runs on probation (or was rolled back: see the job)", body = UpgradeAnswer),
        (status = 400, description = "Invalid spec or changes", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "The job is not running, is being upgraded, or its savepoint failed", body = ErrorBody),
        (status = 422, description = "The new version cannot take the job's state; nothing was stopped", body = ErrorBody),
        (status = 429, description = "A quota would be exceeded", body = ErrorBody),
        (status = 507, description = "The server's disk is nearly full", body = ErrorBody)))]
pub async fn upgrade_job(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<UpgradeAnswer>), ServerError> {
    let request: UpgradeRequest =
        parse_json(&body).map_err(|e| ServerError::BadRequest(format!("invalid upgrade: {e}")))?;
    server.check_storage(&tenant, 0)?;
    server.check_disk(0)?;
    let dry_run = request.dry_run;
    // A task of its own: a client that goes away must not cancel an upgrade half way (its
    // job stopped and the new version not started). HTTP/1 connections closed or reset
    // under a request did not cancel the handler when probed (the test passes without the
    // task too), but nothing promises that (a stream reset in HTTP/2 ends its handler).
    let upgrading = {
        let (server, job_id) = (server.clone(), job_id.clone());
        tokio::spawn(async move { server.jobs.upgrade(&server.savepoints, &tenant, &job_id, request).await })
    };
    let (check, job) = upgrading.await.map_err(ServerError::internal)??;
    let status = if dry_run { StatusCode::OK } else { StatusCode::ACCEPTED };
    let job = super::jobs::detail(&server, job).await?;
    Ok((status, Json(UpgradeAnswer { dry_run, check, job })))
}

/// A job's versions, oldest first: each one's spec, its operators' module digests, the
/// savepoint it started from, and what became of it (current, replaced, rolled back with
/// the reason, abandoned). The latest 20 are kept.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}/versions", tag = "jobs",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "The versions", body = Data<JobVersion>),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody)))]
pub async fn list_job_versions(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<Json<Data<JobVersion>>, ServerError> {
    Ok(Json(Data { data: server.jobs.versions(&tenant.id, &job_id)? }))
}
