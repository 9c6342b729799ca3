//! Weir's record encoding seen from the API: keys and values are MessagePack in the store
//! and JSON over HTTP. JSON becomes MessagePack on the way in; MessagePack is read back as
//! JSON where it can be, without ever recursing deeper than [`MAX_MSGPACK_DEPTH`].

use super::error::{ServerError, ServerResult};

/// MessagePack that nests arrays and maps deeper than allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("it nests arrays and maps more than {max} deep")]
pub struct TooDeep {
    /// The deepest nesting allowed.
    pub max: usize,
}

/// Deepest nesting of arrays and maps accepted in MessagePack (JSON's parser stops at 128
/// too): serde's decoders recurse once per level, and a deeper value would overflow a
/// worker's stack and abort the whole server.
pub const MAX_MSGPACK_DEPTH: usize = 128;

/// Checks that the MessagePack in `bytes` nests arrays and maps at most `max` deep, without
/// recursion. Truncated or malformed input passes: the decoder reports it.
pub fn check_msgpack_depth(bytes: &[u8], max: usize) -> Result<(), TooDeep> {
    use rmp::Marker;
    let be = |at: usize, n: usize| -> Option<u64> {
        let b = bytes.get(at..at.checked_add(n)?)?;
        Some(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    };
    let mut pos = 0usize;
    // Items still to read at each open level; the bottom one is the top-level value.
    let mut stack: Vec<u64> = vec![1];
    while let Some(top) = stack.last_mut() {
        if *top == 0 {
            stack.pop();
            continue;
        }
        *top -= 1;
        let Some(&byte) = bytes.get(pos) else { return Ok(()) };
        pos += 1;
        let (children, skip): (Option<u64>, Option<u64>) = match Marker::from_u8(byte) {
            Marker::FixArray(n) => (Some(u64::from(n)), Some(0)),
            Marker::FixMap(n) => (Some(2 * u64::from(n)), Some(0)),
            Marker::Array16 => (be(pos, 2), Some(2)),
            Marker::Array32 => (be(pos, 4), Some(4)),
            Marker::Map16 => (be(pos, 2).map(|n| 2 * n), Some(2)),
            Marker::Map32 => (be(pos, 4).map(|n| 2 * n), Some(4)),
            Marker::FixStr(n) => (None, Some(u64::from(n))),
            Marker::Str8 | Marker::Bin8 => (None, be(pos, 1).map(|n| 1 + n)),
            Marker::Str16 | Marker::Bin16 => (None, be(pos, 2).map(|n| 2 + n)),
            Marker::Str32 | Marker::Bin32 => (None, be(pos, 4).map(|n| 4 + n)),
            Marker::U8 | Marker::I8 => (None, Some(1)),
            Marker::U16 | Marker::I16 => (None, Some(2)),
            Marker::U32 | Marker::I32 | Marker::F32 => (None, Some(4)),
            Marker::U64 | Marker::I64 | Marker::F64 => (None, Some(8)),
            Marker::FixExt1 => (None, Some(2)),
            Marker::FixExt2 => (None, Some(3)),
            Marker::FixExt4 => (None, Some(5)),
            Marker::FixExt8 => (None, Some(9)),
            Marker::FixExt16 => (None, Some(17)),
            Marker::Ext8 => (None, be(pos, 1).map(|n| 2 + n)),
            Marker::Ext16 => (None, be(pos, 2).map(|n| 3 + n)),
            Marker::Ext32 => (None, be(pos, 4).map(|n| 5 + n)),
            _ => (None, Some(0)),
        };
        let Some(skip) = skip else { return Ok(()) };
        pos = pos.saturating_add(usize::try_from(skip).unwrap_or(usize::MAX));
        if let Some(n) = children {
            // The bottom entry is not a level of nesting; an empty container is one.
            if stack.len() > max {
                return Err(TooDeep { max });
            }
            // A length bigger than the rest of the input ends the walk at the input's end.
            stack.push(n);
        }
        if pos > bytes.len() {
            return Ok(());
        }
    }
    Ok(())
}

/// Encodes a JSON value as MessagePack.
pub fn json_to_msgpack(value: &serde_json::Value) -> ServerResult<Vec<u8>> {
    rmp_serde::to_vec(value).map_err(|e| ServerError::BadRequest(format!("cannot encode the record: {e}")))
}

/// Decodes MessagePack as JSON where it can (binary becomes an array of bytes); bytes that
/// are not MessagePack, or nest deeper than [`MAX_MSGPACK_DEPTH`] (a job's sink may write
/// anything), come back as `{"hex": "<their hex>"}`.
pub fn msgpack_to_json(bytes: &[u8]) -> serde_json::Value {
    if bytes.is_empty() {
        return serde_json::Value::Null;
    }
    if check_msgpack_depth(bytes, MAX_MSGPACK_DEPTH).is_err() {
        return serde_json::json!({ "hex": hex::encode(bytes) });
    }
    let mut slice = bytes;
    match rmpv::decode::read_value(&mut slice) {
        Ok(v) if slice.is_empty() => serde_json::to_value(&v).unwrap_or(serde_json::Value::Null),
        _ => serde_json::json!({ "hex": hex::encode(bytes) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> Vec<u8> {
        let mut v = vec![0x91; depth];
        v.push(0xc0);
        v
    }

    #[test]
    fn msgpack_depth_is_counted_without_recursion() {
        assert!(check_msgpack_depth(&nested(128), 128).is_ok());
        assert!(check_msgpack_depth(&nested(129), 128).is_err());
        assert!(check_msgpack_depth(&nested(1_000_000), 128).is_err());
        // Maps count too; scalars, strings and binaries of every width are skipped.
        let mut map = vec![0x81, 0xa1, b'k'];
        map.extend(nested(127));
        assert!(check_msgpack_depth(&map, 128).is_ok());
        let value = serde_json::json!({ "a": [1, -1, 300, -300, 70000, 1.5, "s", null, true, { "b": [[[]]] }], "c": "x".repeat(300) });
        let bytes = json_to_msgpack(&value).unwrap();
        assert!(check_msgpack_depth(&bytes, 6).is_ok());
        assert!(check_msgpack_depth(&bytes, 5).is_err());
        // Truncated and empty input is left to the decoder.
        assert!(check_msgpack_depth(&[0xdd, 0xff, 0xff, 0xff, 0xff], 128).is_ok());
        assert!(check_msgpack_depth(&[], 128).is_ok());
    }

    #[test]
    fn deep_stored_values_read_back_as_hex() {
        let deep = nested(100_000);
        assert_eq!(msgpack_to_json(&deep), serde_json::json!({ "hex": hex::encode(&deep) }));
        assert_eq!(msgpack_to_json(&nested(3)), serde_json::json!([[[null]]]));
    }
}
