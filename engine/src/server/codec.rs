//! How the server's own tables store their rows (tenants, modules, jobs, savepoint
//! records): JSON, so a row stays readable and a field added later defaults when absent.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::{ServerError, ServerResult};

/// A row's stored bytes.
pub(crate) fn encode_record<T: Serialize>(value: &T) -> ServerResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(ServerError::internal)
}

/// A row from its stored bytes; bytes that do not decode are an internal error.
pub(crate) fn decode_record<T: DeserializeOwned>(bytes: &[u8]) -> ServerResult<T> {
    serde_json::from_slice(bytes).map_err(|e| ServerError::Internal(format!("corrupt server record: {e}")))
}
