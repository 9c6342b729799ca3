//! `/api/v1/workers` (admin): the workers registered with this server.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;

use super::Admin;
use super::model::{Data, ErrorBody, Worker};
use crate::server::{Server, ServerError};

/// The live workers (by id), then the most recently lost ones (newest first, at most 64).
/// Empty without `cluster.listen`.
#[utoipa::path(get, path = "/api/v1/workers", tag = "workers",
    responses(
        (status = 200, description = "The workers", body = Data<Worker>),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody)))]
pub async fn list_workers(
    _: Admin,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<Worker>>, ServerError> {
    Ok(Json(Data::of(server.workers_with_loads())))
}
