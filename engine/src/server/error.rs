//! The one error type of the server: every failure a request can meet. Each variant says
//! what went wrong; the API (`crate::api::error`) maps it to an HTTP status.

/// Why a request failed. The message is a sentence for the user.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The request is malformed (bad JSON, a bad name or id, a bad job spec).
    #[error("{0}")]
    BadRequest(String),
    /// No token, or one that no tenant holds.
    #[error("{0}")]
    Unauthorized(String),
    /// The caller may not do this (a tenant calling an admin route).
    #[error("{0}")]
    Forbidden(String),
    /// No such resource for this tenant (another tenant's resources answer this too).
    #[error("{0}")]
    NotFound(String),
    /// The resource is not in a state that allows this (a module in use, a job not running).
    #[error("{0}")]
    Conflict(String),
    /// The request body is larger than allowed.
    #[error("{0}")]
    TooLarge(String),
    /// The upload is not an operator component (not Wasm, a core module, another world).
    #[error("{0}")]
    Unprocessable(String),
    /// A tenant quota would be exceeded; `limit` names it.
    #[error("quota exceeded: {limit}: {message}")]
    Quota {
        /// The quota's name (`max_jobs`, `max_subtasks`, ...).
        limit: &'static str,
        /// What was asked and what is allowed.
        message: String,
    },
    /// The server's disk is (nearly) full: the write was refused before it could fill it.
    #[error("{0}")]
    InsufficientStorage(String),
    /// The server cannot serve this now (its store is being reopened after an I/O error);
    /// retrying later works.
    #[error("{0}")]
    Unavailable(String),
    /// A failure of the server itself (storage, a bug). Logged; the user sees a short
    /// message.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ServerError {
    /// An internal error from anything displayable; a storage error that a full disk or
    /// the store's reopening explains is [`ServerError::InsufficientStorage`] or
    /// [`ServerError::Unavailable`] instead (most callers pass redb's errors as text).
    pub fn internal(e: impl std::fmt::Display) -> Self {
        let message = e.to_string();
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull).to_string();
        if message.contains("No space left on device") || message.contains(&full) {
            return ServerError::InsufficientStorage(format!(
                "the server's disk is full ({message}); try later or ask the operator to free space"
            ));
        }
        let failed =
            [redb::StorageError::PreviousIo.to_string(), redb::StorageError::DatabaseClosed.to_string()];
        if failed.iter().any(|f| message.contains(f.as_str())) {
            return ServerError::Unavailable(weir_store::StoreError::Reopening.to_string());
        }
        ServerError::Internal(message)
    }
}

impl From<weir_store::StoreError> for ServerError {
    fn from(e: weir_store::StoreError) -> Self {
        use weir_store::StoreError;
        match e {
            StoreError::InvalidStreamName { .. }
            | StoreError::InvalidPartitionCount { .. }
            | StoreError::UnknownPartition { .. } => ServerError::BadRequest(e.to_string()),
            StoreError::UnknownStream { .. } | StoreError::UnknownSavepoint { .. } => {
                ServerError::NotFound(e.to_string())
            }
            StoreError::StreamExists { .. } | StoreError::SavepointExists { .. } => {
                ServerError::Conflict(e.to_string())
            }
            StoreError::QuotaExceeded { .. } => {
                ServerError::Quota { limit: "max_storage_bytes", message: e.to_string() }
            }
            StoreError::BadSavepointFile(m) => {
                ServerError::BadRequest(format!("not a valid savepoint file: {m}"))
            }
            StoreError::DiskFull { .. } => ServerError::InsufficientStorage(e.to_string()),
            StoreError::External(m) => ServerError::Unavailable(format!("object storage failed: {m}")),
            e if e.is_disk_full() => ServerError::InsufficientStorage(format!(
                "the server's disk is full ({e}); try later or ask the operator to free space"
            )),
            e if e.is_io_failure() => ServerError::Unavailable(StoreError::Reopening.to_string()),
            other => ServerError::Internal(other.to_string()),
        }
    }
}

impl From<tokio::task::JoinError> for ServerError {
    fn from(e: tokio::task::JoinError) -> Self {
        ServerError::Internal(format!("a background task failed: {e}"))
    }
}

/// Result of server operations.
pub type ServerResult<T> = Result<T, ServerError>;
