//! `/api/v1/savepoints` and `/api/v1/jobs/{id}/savepoints`: trigger (with the job kept
//! running, cancelled, stopped or drained), list, get, dispose, export as one file and
//! import from one; and the state of an operator in a savepoint, paged, with MessagePack
//! decoded to JSON.

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::model::{Data, ErrorBody, SavepointRecord, StatePage, StateQuery, TriggerSavepoint};
use super::{Caller, parse_json};
use crate::server::{Server, ServerError};

/// Takes a savepoint of a job. It is `pending` until its checkpoint completed and was
/// copied: poll `GET /api/v1/savepoints/{id}`. A job that is not running gives a savepoint
/// of its latest checkpoint (mode `keep_running` only), completed at once.
#[utoipa::path(post, path = "/api/v1/jobs/{job_id}/savepoints", tag = "savepoints",
    params(("job_id" = String, Path, description = "Job id")),
    request_body(content = TriggerSavepoint, description = "Optional: the mode"),
    responses(
        (status = 202, description = "Triggered (pending), or completed for a job that is not running", body = SavepointRecord),
        (status = 400, description = "A bad body", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody),
        (status = 409, description = "The job cannot give a savepoint now", body = ErrorBody),
        (status = 429, description = "The storage quota is used up", body = ErrorBody),
        (status = 507, description = "The server's disk is nearly full", body = ErrorBody)))]
pub async fn trigger_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<SavepointRecord>), ServerError> {
    let request: TriggerSavepoint = if body.iter().all(u8::is_ascii_whitespace) {
        TriggerSavepoint::default()
    } else {
        parse_json(&body).map_err(|e| ServerError::BadRequest(format!("invalid savepoint request: {e}")))?
    };
    server.jobs.get(&tenant.id, &job_id)?;
    server.check_storage(&tenant, 0)?;
    server.check_disk(0)?;
    let record = server.savepoints.trigger(&tenant, &job_id, request.mode.into()).await?;
    Ok((StatusCode::ACCEPTED, Json(record.into())))
}

/// Lists the savepoints taken of a job, oldest first.
#[utoipa::path(get, path = "/api/v1/jobs/{job_id}/savepoints", tag = "savepoints",
    params(("job_id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "The job's savepoints", body = Data<SavepointRecord>),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody)))]
pub async fn list_job_savepoints(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
) -> Result<Json<Data<SavepointRecord>>, ServerError> {
    let job = server.jobs.get(&tenant.id, &job_id)?;
    Ok(Json(Data::of(server.savepoints.list(&tenant.id, Some(&job.id))?)))
}

/// Lists the caller's savepoints (triggered and imported), oldest first.
#[utoipa::path(get, path = "/api/v1/savepoints", tag = "savepoints",
    responses(
        (status = 200, description = "The savepoints", body = Data<SavepointRecord>),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
pub async fn list_savepoints(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<SavepointRecord>>, ServerError> {
    Ok(Json(Data::of(server.savepoints.list(&tenant.id, None)?)))
}

/// One savepoint: status, the checkpoint it copies, size, and the job it describes (nodes,
/// parallelism, modules and state schema versions).
#[utoipa::path(get, path = "/api/v1/savepoints/{savepoint_id}", tag = "savepoints",
    params(("savepoint_id" = String, Path, description = "Savepoint id")),
    responses(
        (status = 200, description = "The savepoint", body = SavepointRecord),
        (status = 400, description = "A malformed id", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such savepoint", body = ErrorBody)))]
pub async fn get_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(savepoint_id): Path<String>,
) -> Result<Json<SavepointRecord>, ServerError> {
    Ok(Json(server.savepoints.get(&tenant.id, &savepoint_id)?.into()))
}

/// Disposes of a savepoint: its state is deleted. Jobs started from it keep theirs.
#[utoipa::path(delete, path = "/api/v1/savepoints/{savepoint_id}", tag = "savepoints",
    params(("savepoint_id" = String, Path, description = "Savepoint id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "A malformed id", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such savepoint", body = ErrorBody),
        (status = 409, description = "The savepoint is pending", body = ErrorBody)))]
pub async fn delete_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(savepoint_id): Path<String>,
) -> Result<StatusCode, ServerError> {
    server.savepoints.delete(&tenant.id, &savepoint_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Downloads a completed savepoint as one portable file (`docs/savepoint-format.md`). The
/// file is spooled on the server first: its bytes count against the tenant's storage quota
/// (429 without room) and the request against `max_requests_per_tenant` until the body has
/// been read.
#[utoipa::path(get, path = "/api/v1/savepoints/{savepoint_id}/file", tag = "savepoints",
    params(("savepoint_id" = String, Path, description = "Savepoint id")),
    responses(
        (status = 200, description = "The savepoint file", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 400, description = "A malformed id", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such savepoint", body = ErrorBody),
        (status = 409, description = "The savepoint is not completed", body = ErrorBody),
        (status = 429, description = "No room in the storage quota for the spooled file", body = ErrorBody),
        (status = 507, description = "The server's disk is nearly full", body = ErrorBody)))]
pub async fn export_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(savepoint_id): Path<String>,
) -> Result<Response, ServerError> {
    // The whole file is spooled before the first byte: every error is answered as one.
    server.check_disk(0)?;
    let export = server.savepoints.export(&tenant.id, &savepoint_id).await?;
    Ok((
        [
            (header::CONTENT_LENGTH, export.bytes.to_string()),
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"savepoint-{savepoint_id}.weirsp\""),
            ),
        ],
        Body::from_stream(export.into_stream()),
    )
        .into_response())
}

/// Imports a savepoint file (as exported by any Weir server) as a new savepoint of the
/// caller. The upload is saved to a temporary file first (the import itself holds the
/// store's writer, which must not wait on a slow client); the whole file is then checked
/// (format, version, every frame, checksum) before anything is stored, and a bad file
/// stores nothing.
#[utoipa::path(post, path = "/api/v1/savepoints", tag = "savepoints",
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "A savepoint file"),
    responses(
        (status = 201, description = "Imported", body = SavepointRecord),
        (status = 400, description = "Not a valid savepoint file", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 429, description = "The storage quota would be exceeded", body = ErrorBody),
        (status = 507, description = "The server's disk is nearly full", body = ErrorBody)))]
pub async fn import_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    body: Body,
) -> Result<(StatusCode, Json<SavepointRecord>), ServerError> {
    server.check_disk(0)?;
    let record = server.import_savepoint(&tenant, body.into_data_stream()).await?;
    Ok((StatusCode::CREATED, Json(record.into())))
}

/// The state of an operator in a savepoint.
#[utoipa::path(get, path = "/api/v1/savepoints/{savepoint_id}/state/{operator}", tag = "savepoints",
    params(("savepoint_id" = String, Path, description = "Savepoint id"), ("operator" = String, Path, description = "Node id"), StateQuery),
    responses(
        (status = 200, description = "A page of state", body = StatePage),
        (status = 400, description = "A malformed id or cursor", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such savepoint or operator", body = ErrorBody),
        (status = 409, description = "The savepoint is not completed", body = ErrorBody)))]
pub async fn savepoint_state(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path((savepoint_id, operator)): Path<(String, String)>,
    Query(query): Query<StateQuery>,
) -> Result<Json<StatePage>, ServerError> {
    let query = crate::server::state_pages::StateQuery {
        max_bytes: Some(server.config.max_page_bytes),
        ..query.into()
    };
    let page = server.savepoints.state(&tenant.id, &savepoint_id, &operator, query).await?;
    Ok(Json(page.into()))
}
