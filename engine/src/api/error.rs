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
        ServerError::InsufficientStorage(_) => StatusCode::INSUFFICIENT_STORAGE,
        ServerError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_its_status() {
        let cases = [
            (ServerError::BadRequest("x".into()), 400),
            (ServerError::Unauthorized("x".into()), 401),
            (ServerError::Forbidden("x".into()), 403),
            (ServerError::NotFound("x".into()), 404),
            (ServerError::Conflict("x".into()), 409),
            (ServerError::TooLarge("x".into()), 413),
            (ServerError::Quota { limit: "max_module_bytes", message: "x".into() }, 413),
            (ServerError::Unprocessable("x".into()), 422),
            (ServerError::Quota { limit: "max_jobs", message: "x".into() }, 429),
            (ServerError::Internal("x".into()), 500),
            (ServerError::InsufficientStorage("x".into()), 507),
            (ServerError::Unavailable("x".into()), 503),
        ];
        for (error, expected) in cases {
            assert_eq!(status(&error).as_u16(), expected, "{error:?}");
        }
    }

    #[test]
    fn a_full_disk_is_507_and_a_failed_store_503_never_500() {
        use weir_store::StoreError;
        let enospc = || std::io::Error::from_raw_os_error(28);
        let cases = [
            (ServerError::internal(enospc()), 507),
            (ServerError::from(StoreError::Storage(redb::Error::Io(enospc()))), 507),
            (ServerError::from(StoreError::Io { what: "spool".into(), source: enospc() }), 507),
            (ServerError::from(StoreError::DiskFull { free: 1, reserved: 2, needed: 3 }), 507),
            (ServerError::internal(redb::StorageError::PreviousIo), 503),
            (ServerError::internal(redb::TransactionError::Storage(redb::StorageError::DatabaseClosed)), 503),
            (ServerError::from(StoreError::Storage(redb::Error::PreviousIo)), 503),
            (ServerError::from(StoreError::Reopening), 503),
            (ServerError::internal("something else"), 500),
        ];
        for (error, expected) in cases {
            assert_eq!(status(&error).as_u16(), expected, "{error:?}");
        }
        let message = ServerError::from(StoreError::DiskFull { free: 1, reserved: 2, needed: 3 }).to_string();
        assert!(
            message.contains("1 bytes free, 2 reserved") && message.contains("ask the operator"),
            "{message}"
        );
    }
}
