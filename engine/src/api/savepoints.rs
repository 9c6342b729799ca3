//! `/api/v1/savepoints` and `/api/v1/jobs/{id}/savepoints`: trigger (with the job kept
//! running, cancelled, stopped or drained), list, get, dispose, export as one file and
//! import from one; and the keyed state of an operator in a savepoint or a checkpoint,
//! paged, with MessagePack decoded to JSON.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use weir_store::{CheckpointStorage as _, OPERATOR_SCOPE_BASE, StateEntry, StoreError};

use super::{Caller, Data, ErrorBody};
use crate::server::savepoints::{SavepointMode, SavepointRecord};
use crate::server::streams::msgpack_to_json;
use crate::server::tenants::printable;
use crate::server::{Server, ServerError};

/// How to take a savepoint.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerSavepoint {
    /// What happens to the job: `keep_running` (default), `cancel`, `stop`, or `drain`
    /// (stop with drain: the pipeline empties and the job finishes).
    #[serde(default)]
    pub mode: SavepointMode,
}

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
        (status = 429, description = "The storage quota is used up", body = ErrorBody)))]
pub async fn trigger_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(job_id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<SavepointRecord>), ServerError> {
    let request: TriggerSavepoint = if body.iter().all(u8::is_ascii_whitespace) {
        TriggerSavepoint::default()
    } else {
        super::parse_json(&body)
            .map_err(|e| ServerError::BadRequest(format!("invalid savepoint request: {e}")))?
    };
    server.jobs.get(&tenant.id, &job_id)?;
    server.check_storage(&tenant, 0)?;
    let record = server.savepoints.trigger(&tenant, &job_id, request.mode).await?;
    Ok((StatusCode::ACCEPTED, Json(record)))
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
    Ok(Json(Data { data: server.savepoints.list(&tenant.id, Some(&job.id))? }))
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
    Ok(Json(Data { data: server.savepoints.list(&tenant.id, None)? }))
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
    Ok(Json(server.savepoints.get(&tenant.id, &savepoint_id)?))
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
    let savepoints = server.savepoints.clone();
    tokio::task::spawn_blocking(move || savepoints.delete(&tenant.id, &savepoint_id)).await??;
    Ok(StatusCode::NO_CONTENT)
}

/// Downloads a completed savepoint as one portable file (`docs/savepoint-format.md`),
/// streamed.
#[utoipa::path(get, path = "/api/v1/savepoints/{savepoint_id}/file", tag = "savepoints",
    params(("savepoint_id" = String, Path, description = "Savepoint id")),
    responses(
        (status = 200, description = "The savepoint file", content_type = "application/octet-stream", body = Vec<u8>),
        (status = 400, description = "A malformed id", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such savepoint", body = ErrorBody),
        (status = 409, description = "The savepoint is not completed", body = ErrorBody)))]
pub async fn export_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(savepoint_id): Path<String>,
) -> Result<Response, ServerError> {
    // Errors that can be told before the first byte are answered as errors.
    server.savepoints.completed(&tenant.id, &savepoint_id)?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let savepoints = server.savepoints.clone();
    let (tenant_id, id) = (tenant.id.clone(), savepoint_id.clone());
    tokio::task::spawn_blocking(move || {
        let mut out = ChannelWriter { tx: tx.clone(), buffer: Vec::with_capacity(CHUNK) };
        let result = savepoints.export(&tenant_id, &id, &mut out).and_then(|_| {
            use std::io::Write as _;
            out.flush().map_err(ServerError::internal)
        });
        if let Err(e) = result {
            // The client sees the body cut short (and an import would refuse it).
            tracing::warn!(savepoint = %id, "export failed: {e}");
            let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"savepoint-{savepoint_id}.weirsp\""),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

const CHUNK: usize = 256 << 10;

/// A `Write` that sends what is written, in chunks, to an async response body.
struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    buffer: Vec<u8>,
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(data);
        if self.buffer.len() >= CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
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
        (status = 429, description = "The storage quota would be exceeded", body = ErrorBody)))]
pub async fn import_savepoint(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    body: Body,
) -> Result<(StatusCode, Json<SavepointRecord>), ServerError> {
    use tokio::io::AsyncWriteExt as _;
    let used = server.storage_usage(&tenant.id)?;
    let room = tenant.quotas.max_storage_bytes.saturating_sub(used);
    let upload = TempFile::new(&server.config.data_dir.join("tmp"))?;
    let mut file = tokio::fs::File::create(&upload.path).await.map_err(ServerError::internal)?;
    let mut stream = body.into_data_stream();
    let mut size = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ServerError::BadRequest(format!("reading the upload failed: {e}")))?;
        size += chunk.len() as u64;
        if size > room {
            return Err(ServerError::Quota {
                limit: "max_storage_bytes",
                message: format!(
                    "the savepoint file is larger than the {room} bytes left of the tenant's {} byte storage quota",
                    tenant.quotas.max_storage_bytes
                ),
            });
        }
        file.write_all(&chunk).await.map_err(ServerError::internal)?;
    }
    file.flush().await.map_err(ServerError::internal)?;
    drop(file);
    let savepoints = server.savepoints.clone();
    let tenant_id = tenant.id.clone();
    let path = upload.path.clone();
    let record = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path).map_err(ServerError::internal)?;
        savepoints.import(&tenant_id, &mut std::io::BufReader::with_capacity(1 << 20, file))
    })
    .await??;
    drop(upload);
    if let Err(e) = server.check_storage(&tenant, 0) {
        server.savepoints.delete(&tenant.id, &record.id)?;
        return Err(e);
    }
    Ok((StatusCode::CREATED, Json(record)))
}

/// A file under the data directory's `tmp/`, removed when dropped.
struct TempFile {
    path: std::path::PathBuf,
}

impl TempFile {
    fn new(dir: &std::path::Path) -> Result<TempFile, ServerError> {
        std::fs::create_dir_all(dir).map_err(ServerError::internal)?;
        Ok(TempFile { path: dir.join(format!("upload-{}", crate::server::tenants::new_id(16))) })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Paging of state.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StateQuery {
    /// Only entries of this named state.
    pub state: Option<String>,
    /// Where to continue: the `next` of the previous page.
    pub cursor: Option<String>,
    /// Entries per page (default 100, at most 1000).
    pub limit: Option<usize>,
}

/// One state entry.
#[derive(Debug, Serialize, ToSchema)]
pub struct StateItem {
    /// Keyed state: its key group.
    pub key_group: Option<u32>,
    /// Operator (non-keyed) state: the subtask it belongs to.
    pub subtask: Option<u32>,
    /// The state's name.
    pub state: String,
    /// The key, decoded from MessagePack (`{"hex": ...}` when it is not MessagePack).
    pub key: serde_json::Value,
    /// The value, decoded likewise.
    pub value: serde_json::Value,
}

/// A page of an operator's state.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatePage {
    /// The operator.
    pub operator: String,
    /// The entries, by key group (then operator state by subtask), then state name and key.
    pub data: Vec<StateItem>,
    /// The cursor of the next page; absent on the last.
    pub next: Option<String>,
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
    let info = server.savepoints.completed(&tenant.id, &savepoint_id)?;
    let store = server.store.clone();
    let page = tokio::task::spawn_blocking(move || {
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
    .await??;
    Ok(Json(page))
}

fn described_node(description: &serde_json::Value, operator: &str) -> bool {
    description
        .get("nodes")
        .and_then(|n| n.as_array())
        .is_some_and(|nodes| nodes.iter().any(|n| n.get("id").and_then(|i| i.as_str()) == Some(operator)))
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
    let checkpoint_id = super::checkpoints::parse_checkpoint_id(&job_id, &checkpoint_id)?;
    let store = server.store.clone();
    let page = tokio::task::spawn_blocking(move || {
        let Some((meta, manifest)) = store.checkpoint(&job.id, checkpoint_id)? else {
            return Err(ServerError::NotFound(format!("job `{}` has no checkpoint {checkpoint_id}", job.id)));
        };
        let Some(manifest) = manifest else {
            return Err(ServerError::Conflict(format!(
                "checkpoint {checkpoint_id} is {}{}: its state is not kept",
                meta.status,
                if meta.status == weir_store::CheckpointStatus::Completed {
                    " but no longer retained"
                } else {
                    ""
                }
            )));
        };
        let Some(subtasks) = manifest.get(&operator) else {
            return Err(ServerError::NotFound(format!(
                "checkpoint {checkpoint_id} has no operator `{}`",
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
    .await??;
    Ok(Json(page))
}

/// One page over `scopes` (ascending), reading a scope's sorted entries with `read`.
fn page(
    operator: String,
    scopes: &[u32],
    query: &StateQuery,
    mut read: impl FnMut(u32) -> Result<Vec<StateEntry>, StoreError>,
) -> Result<StatePage, ServerError> {
    let limit = query.limit.unwrap_or(100).clamp(1, 1000);
    let (from_scope, mut skip) = match &query.cursor {
        None => (0, 0),
        Some(c) => parse_cursor(c)?,
    };
    let mut data = Vec::new();
    let mut next = None;
    for &scope in scopes.iter().filter(|s| **s >= from_scope) {
        let entries: Vec<StateEntry> = read(scope)?
            .into_iter()
            .filter(|e| e.value.is_some() && query.state.as_ref().is_none_or(|s| *s == e.state))
            .collect();
        let start = if scope == from_scope { skip } else { 0 };
        skip = 0;
        for (i, e) in entries.iter().enumerate().skip(start) {
            if data.len() == limit {
                next = Some(format!("{scope}.{i}"));
                break;
            }
            let (key_group, subtask) = if scope >= OPERATOR_SCOPE_BASE {
                (None, Some(scope - OPERATOR_SCOPE_BASE))
            } else {
                (Some(scope), None)
            };
            data.push(StateItem {
                key_group,
                subtask,
                state: e.state.clone(),
                key: msgpack_to_json(&e.key),
                value: msgpack_to_json(e.value.as_deref().unwrap_or_default()),
            });
        }
        if next.is_some() {
            break;
        }
    }
    Ok(StatePage { operator, data, next })
}

fn parse_cursor(cursor: &str) -> Result<(u32, usize), ServerError> {
    let bad = || {
        ServerError::BadRequest(format!("invalid cursor `{}`: pass the `next` of a page", printable(cursor)))
    };
    let (scope, index) = cursor.split_once('.').ok_or_else(bad)?;
    Ok((scope.parse().map_err(|_| bad())?, index.parse().map_err(|_| bad())?))
}
