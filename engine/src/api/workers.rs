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
    let loads = server.jobs.worker_loads();
    let workers = server.workers.list().into_iter().map(|w| {
        let mut worker = Worker::from(w);
        if worker.status == "live" {
            worker.subtasks = loads.get(&worker.id).map_or(0, |l| l.subtasks);
        }
        worker
    });
    Ok(Json(Data::of(workers)))
}
