//! `/api/v1/streams`: the built-in partitioned log. Create, append (JSON or MessagePack),
//! read by partition and offset.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};

use super::model::{AppendBody, Appended, Data, ErrorBody, NewStream, ReadBody, ReadQuery, StreamInfo};
use super::{Caller, parse_json};
use crate::server::{Server, ServerError};

/// Most records in one append.
const MAX_APPEND: usize = 100_000;

/// Creates a stream (again with the same partition count: no change).
#[utoipa::path(post, path = "/api/v1/streams", tag = "streams", request_body = NewStream,
    responses(
        (status = 201, description = "Created", body = StreamInfo),
        (status = 400, description = "Bad name or partition count", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 409, description = "It exists with another partition count", body = ErrorBody)))]
pub async fn create_stream(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    body: Bytes,
) -> Result<(StatusCode, Json<StreamInfo>), ServerError> {
    let new: NewStream = parse_json(&body)?;
    let info = server.streams.create(&tenant.id, &new.name, new.partitions).await?;
    Ok((StatusCode::CREATED, Json(info.into())))
}

/// Lists the caller's streams.
#[utoipa::path(get, path = "/api/v1/streams", tag = "streams",
    responses(
        (status = 200, description = "The streams", body = Data<StreamInfo>),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
pub async fn list_streams(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<StreamInfo>>, ServerError> {
    Ok(Json(Data::of(server.streams.list(&tenant.id)?)))
}

/// One stream with its end offsets.
#[utoipa::path(get, path = "/api/v1/streams/{name}", tag = "streams",
    params(("name" = String, Path, description = "Stream name")),
    responses(
        (status = 200, description = "The stream", body = StreamInfo),
        (status = 400, description = "Bad name", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such stream", body = ErrorBody)))]
pub async fn get_stream(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(name): Path<String>,
) -> Result<Json<StreamInfo>, ServerError> {
    Ok(Json(server.streams.get(&tenant.id, &name)?.into()))
}

/// Appends records: `{"records": [{"key": ..., "value": ..., "timestamp": ..., "partition": ...}]}`
/// as JSON, or the same structure as MessagePack (`Content-Type: application/msgpack`).
/// All records are appended or none.
#[utoipa::path(post, path = "/api/v1/streams/{name}/records", tag = "streams",
    params(("name" = String, Path, description = "Stream name")),
    request_body(content(
        (AppendBody = "application/json"),
        (AppendBody = "application/msgpack")
    )),
    responses(
        (status = 201, description = "Where each record went", body = Data<Appended>),
        (status = 400, description = "Bad body or partition", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such stream", body = ErrorBody),
        (status = 429, description = "Storage quota", body = ErrorBody),
        (status = 507, description = "The server's disk is nearly full", body = ErrorBody)))]
pub async fn append_records(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Data<Appended>>), ServerError> {
    let msgpack = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/msgpack") || v.starts_with("application/x-msgpack"));
    let records = AppendBody::encoded(&body, msgpack)?;
    if records.len() > MAX_APPEND {
        return Err(ServerError::BadRequest(format!(
            "{} records in one request; at most {MAX_APPEND}",
            records.len()
        )));
    }
    server.check_storage(&tenant, body.len() as u64)?;
    server.check_disk(body.len() as u64)?;
    let appended = server.streams.append(&tenant.id, &name, records).await?;
    Ok((StatusCode::CREATED, Json(Data::of(appended))))
}

/// Reads records of one partition from an offset: at most `limit` records and at most the
/// server's `max_page_bytes` of them (at least one record); continue from `next_offset`.
#[utoipa::path(get, path = "/api/v1/streams/{name}/records", tag = "streams",
    params(("name" = String, Path, description = "Stream name"), ReadQuery),
    responses(
        (status = 200, description = "Records", body = ReadBody),
        (status = 400, description = "Bad partition or query", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 404, description = "No such stream", body = ErrorBody)))]
pub async fn read_records(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(name): Path<String>,
    Query(query): Query<ReadQuery>,
) -> Result<Json<ReadBody>, ServerError> {
    let partition = query.partition.unwrap_or(0);
    let offset = query.offset.unwrap_or(0);
    let limit = query.limit.unwrap_or(1000);
    let records = server
        .streams
        .read(&tenant.id, &name, partition, offset, limit, server.config.max_page_bytes)
        .await?;
    Ok(Json(records.into()))
}
