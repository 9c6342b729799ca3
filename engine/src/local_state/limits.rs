//! What one instance's host state may hold: the limits on states, keys, fields, values and
//! answers, and the checks of a field and a value against them.

use super::error::LocalStateError;

/// Most states one instance may open.
pub const MAX_STATES: usize = 16;
/// Longest state name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Longest record key, in bytes.
pub const MAX_KEY_BYTES: usize = 4096;
/// Longest field, in bytes.
pub const MAX_FIELD_BYTES: usize = 4096;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 16 << 20;
/// Most field and value bytes one `scan` answer holds.
pub const MAX_SCAN_BYTES: usize = 4 << 20;
/// The block cache of one instance's store: the bounded in-memory part of the state.
pub const CACHE_BYTES: u64 = 64 << 20;

/// Refuses a field longer than [`MAX_FIELD_BYTES`].
pub(super) fn check_field(field: &[u8]) -> Result<(), LocalStateError> {
    if field.len() > MAX_FIELD_BYTES {
        return Err(LocalStateError::Limit(format!(
            "a host state field is at most {MAX_FIELD_BYTES} bytes; got {}",
            field.len()
        )));
    }
    Ok(())
}

/// Refuses a value larger than [`MAX_VALUE_BYTES`].
pub(super) fn check_value(value: &[u8]) -> Result<(), LocalStateError> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(LocalStateError::Limit(format!(
            "a host state value is at most {MAX_VALUE_BYTES} bytes; got {}",
            value.len()
        )));
    }
    Ok(())
}
