//! Why a job cannot start from a savepoint ([`RestoreError`]).

use weir_store::StoreError;

/// Why a job cannot start from a savepoint.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The savepoint does not fit the job (the message says how).
    #[error("{0}")]
    Incompatible(String),
    /// The new module failed to migrate (or restore) the state.
    #[error("{0}")]
    Migration(String),
    /// The store failed.
    #[error("storage: {0}")]
    Store(#[from] StoreError),
}
