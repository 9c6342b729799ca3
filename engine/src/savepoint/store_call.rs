//! Store calls from the async restore: the store blocks, so every call runs on the blocking
//! pool.

use super::error::RestoreError;

/// Runs `f` on the blocking pool; a panic there is a [`RestoreError::Migration`].
pub(super) async fn blocking<T: Send + 'static, E: Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, RestoreError>
where
    RestoreError: From<E>,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(RestoreError::from),
        Err(e) => Err(RestoreError::Migration(format!("restoring the savepoint panicked: {e}"))),
    }
}
