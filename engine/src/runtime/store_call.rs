//! Store calls from async code: redb blocks, so every call runs on the blocking pool.

use super::error::JobError;

/// Runs a store call on the blocking pool.
pub(crate) async fn store_call<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, weir_store::StoreError> + Send + 'static,
) -> Result<T, JobError> {
    Ok(tokio::task::spawn_blocking(f).await??)
}
