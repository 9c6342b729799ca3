//! The two key layouts of host state and the conversions between them.
//!
//! - Checkpoint key (an entry of the state `@host/<name>` in the chains): `len (u16 BE) ‖
//!   record key ‖ field`, in the scope of the record key's key group.
//! - Local key (in the instance's store): `key group (u32 BE) ‖ state id (u8) ‖ key length
//!   (u16 BE) ‖ key ‖ field`, so one key's fields are contiguous and ordered (a scan is a
//!   range read).

use weir_store::StateEntry;

use super::error::LocalStateError;

/// State names of host state in checkpoints start with this (`@host/counts`).
pub const HOST_STATE_PREFIX: &str = "@host/";

/// Whether `state` names host state in a checkpoint.
pub fn is_host_state(state: &str) -> bool {
    state.starts_with(HOST_STATE_PREFIX)
}

/// The checkpoint key of `field` of `key`: `len (u16 BE) ‖ key ‖ field`.
pub fn chain_key(key: &[u8], field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + key.len() + field.len());
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(field);
    out
}

/// Splits a checkpoint key of host state into (record key, field).
pub fn split_chain_key(k: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u16::from_be_bytes(k.get(..2)?.try_into().ok()?) as usize;
    let key = k.get(2..2 + len)?;
    Some((key, &k[2 + len..]))
}

/// The record key whose key group the checkpoint entry (`state`, `key`) belongs to: the
/// key itself for guest state, the record key inside it for host state (the whole key when
/// it does not parse, so a damaged entry is caught by the key-group checks).
pub fn record_key<'a>(state: &str, key: &'a [u8]) -> &'a [u8] {
    if is_host_state(state) { split_chain_key(key).map_or(key, |(k, _)| k) } else { key }
}

/// Appends the local key of (`sid`, `key`, `field`) in key group `group` to `out`.
pub(super) fn write_local_key(out: &mut Vec<u8>, group: u32, sid: u8, key: &[u8], field: &[u8]) {
    out.extend_from_slice(&group.to_be_bytes());
    out.push(sid);
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(field);
}

/// A checkpoint entry of the local key `k` (and its key group); `names` are the store's
/// state names by id.
pub(super) fn entry_of(
    names: &[String],
    k: &[u8],
    value: Option<Vec<u8>>,
) -> Result<(u32, StateEntry), LocalStateError> {
    let bad = || LocalStateError::Store(format!("a malformed local key of {} bytes", k.len()));
    let group = u32::from_be_bytes(k.get(..4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
    let sid = *k.get(4).ok_or_else(bad)? as usize;
    let len = u16::from_be_bytes(k.get(5..7).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
    let key = k.get(7..7 + len).ok_or_else(bad)?;
    let field = &k[7 + len..];
    let name = names.get(sid).ok_or_else(bad)?;
    Ok((group, StateEntry { state: format!("{HOST_STATE_PREFIX}{name}"), key: chain_key(key, field), value }))
}
