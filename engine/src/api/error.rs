//! How the service's errors answer over HTTP: each [`ServerError`] variant has its status,
//! and every error body is [`ErrorBody`] (`{ "error": "..." }`). Internal errors are logged.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::model::ErrorBody;
use crate::server::ServerError;

/// The HTTP status of `error`.
pub fn status(error: &ServerError) -> StatusCode {
    match error {
        ServerError::BadRequest(_) => StatusCode::BAD_REQUEST,
        ServerError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        ServerError::Forbidden(_) => StatusCode::FORBIDDEN,
        ServerError::NotFound(_) => StatusCode::NOT_FOUND,
        ServerError::Conflict(_) => StatusCode::CONFLICT,
        ServerError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        ServerError::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
        // A module over the tenant's size limit is too large a body, not too many requests.
        ServerError::Quota { limit: "max_module_bytes", .. } => StatusCode::PAYLOAD_TOO_LARGE,
        ServerError::Quota { .. } => StatusCode::TOO_MANY_REQUESTS,
        ServerError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        if let ServerError::Internal(detail) = &self {
            tracing::error!("internal error: {detail}");
        }
        (status(&self), axum::Json(ErrorBody { error: self.to_string() })).into_response()
    }
}
