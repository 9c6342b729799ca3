//! MessagePack, the encoding of record keys, values and state entries.
//!
//! Everything the SDK writes uses named fields (`rmp_serde::encode::write_named`), so a
//! struct encodes as a map and a reader in another language sees field names. Reading accepts
//! both maps and arrays, and gives rmp_serde's result through a faster path (`weir_msgpack`).

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

pub(crate) use weir_msgpack::from_slice as decode;

/// Appends the MessagePack encoding of `value` (named fields) to `out`.
///
/// On error `out` may hold a partial encoding; callers that share the buffer truncate it.
pub fn write_msgpack<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<()> {
    rmp_serde::encode::write_named(out, value)
        .map_err(|e| Error::other(format!("cannot encode MessagePack: {e}")))
}

/// Encodes `value` as MessagePack (named fields), the way the SDK encodes keys and values.
pub fn to_msgpack<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_msgpack(&mut out, value)?;
    Ok(out)
}

/// Decodes MessagePack `bytes` into `T`; strings and byte slices may borrow from `bytes`.
///
/// Fails with [`Error::InvalidInput`] naming the MessagePack error.
pub fn from_msgpack<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T> {
    decode(bytes).map_err(|e| Error::invalid_input(format!("cannot decode MessagePack: {e}")))
}
