//! A record's MessagePack as JSON text, in one pass without a value tree: byte for byte what
//! `serde_json::to_vec(&record::msgpack_to_json(bytes))` writes for bytes that are one
//! MessagePack value (in this workspace, serde_json without `preserve_order`):
//! - map keys sorted by their UTF-8 bytes, a repeated key keeping its last value; a key that
//!   is not a string shown as `rmpv` shows it, an invalid UTF-8 string key as `""`;
//! - integers as they are, floats as f64 (`null` for NaN and infinities), invalid UTF-8
//!   strings as `null`, binary as `{"hex":…}`, extensions as `{"ext":…,"hex":…}`.
//!
//! Nesting is an explicit stack (the input was checked by [`super::skip`], so it is at most
//! `rmpv::decode::MAX_DEPTH / 2` deep). A map's entries are written where they go and then
//! put in key order in place, once the map ends.

use std::ops::Range;

use rmp::Marker;
use rmp::decode::RmpRead as _;

use super::FormatError;

/// An open container.
enum Open {
    /// An array with `left` values to come.
    Array { left: u32, first: bool },
    /// A map with `left` entries to come, written from `start` of the output: each entry's
    /// key and the range of its value's text.
    Map { left: u32, start: usize, entries: Vec<(String, Range<usize>)>, key: Option<(String, usize)> },
}

/// Appends `bytes` (one well-formed MessagePack value, checked by [`super::skip`]) to `out`
/// as JSON text.
pub(super) fn write(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), FormatError> {
    let bad = |_| FormatError::NotJsonWritable;
    let mut rd = bytes;
    let mut open: Vec<Open> = Vec::new();
    let mut sorted = Vec::new();
    let mut pending = true;
    loop {
        if !pending {
            // The last value ended: close what it ends, and find where the next one goes.
            match open.last_mut() {
                None => return Ok(()),
                Some(Open::Array { left: 0, .. }) => {
                    out.push(b']');
                    open.pop();
                    continue;
                }
                Some(Open::Array { left, first }) => {
                    *left -= 1;
                    if !std::mem::take(first) {
                        out.push(b',');
                    }
                }
                Some(Open::Map { left, start, entries, key }) => {
                    if let Some((k, from)) = key.take() {
                        entries.push((k, from..out.len()));
                    }
                    if *left == 0 {
                        let start = *start;
                        let mut entries = std::mem::take(entries);
                        open.pop();
                        close_map(out, start, &mut entries, &mut sorted);
                        continue;
                    }
                    *left -= 1;
                    let k = key_text(&mut rd)?;
                    *key = Some((k, out.len()));
                }
            }
        }
        pending = false;
        let marker = rmp::decode::read_marker(&mut rd).map_err(|_| FormatError::NotJsonWritable)?;
        match marker {
            Marker::Null | Marker::Reserved => out.extend_from_slice(b"null"),
            Marker::True => out.extend_from_slice(b"true"),
            Marker::False => out.extend_from_slice(b"false"),
            Marker::FixPos(n) => number(out, i128::from(n)),
            Marker::FixNeg(n) => number(out, i128::from(n)),
            Marker::U8 => number(out, i128::from(rd.read_data_u8().map_err(bad)?)),
            Marker::U16 => number(out, i128::from(rd.read_data_u16().map_err(bad)?)),
            Marker::U32 => number(out, i128::from(rd.read_data_u32().map_err(bad)?)),
            Marker::U64 => number(out, i128::from(rd.read_data_u64().map_err(bad)?)),
            Marker::I8 => number(out, i128::from(rd.read_data_i8().map_err(bad)?)),
            Marker::I16 => number(out, i128::from(rd.read_data_i16().map_err(bad)?)),
            Marker::I32 => number(out, i128::from(rd.read_data_i32().map_err(bad)?)),
            Marker::I64 => number(out, i128::from(rd.read_data_i64().map_err(bad)?)),
            Marker::F32 => float(out, f64::from(rd.read_data_f32().map_err(bad)?)),
            Marker::F64 => float(out, rd.read_data_f64().map_err(bad)?),
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                match std::str::from_utf8(take(&mut rd, marker)?) {
                    Ok(s) => string(out, s),
                    Err(_) => out.extend_from_slice(b"null"),
                }
            }
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                out.extend_from_slice(br#"{"hex":""#);
                hex(out, take(&mut rd, marker)?);
                out.extend_from_slice(b"\"}");
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                let (kind, data) = super::ext_data(&mut rd, marker).ok_or(FormatError::NotJsonWritable)?;
                out.extend_from_slice(br#"{"ext":"#);
                number(out, i128::from(kind));
                out.extend_from_slice(br#","hex":""#);
                hex(out, data);
                out.extend_from_slice(b"\"}");
            }
            Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                out.push(b'[');
                open.push(Open::Array { left: length(&mut rd, marker)?, first: true });
            }
            Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {
                let left = length(&mut rd, marker)?;
                open.push(Open::Map { left, start: out.len(), entries: Vec::new(), key: None });
            }
        }
    }
}

/// Puts a map's entries (written from `start` of `out`) in key order, the last of equal keys
/// kept, as `{"key":value,…}`.
fn close_map(
    out: &mut Vec<u8>,
    start: usize,
    entries: &mut Vec<(String, Range<usize>)>,
    sorted: &mut Vec<u8>,
) {
    // A map of serde_json sorts its keys and keeps the last value of equal keys.
    entries.reverse();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.dedup_by(|later, kept| later.0 == kept.0);
    sorted.clear();
    sorted.push(b'{');
    for (i, (key, range)) in entries.iter().enumerate() {
        if i > 0 {
            sorted.push(b',');
        }
        string(sorted, key);
        sorted.push(b':');
        sorted.extend_from_slice(&out[range.clone()]);
    }
    sorted.push(b'}');
    out.truncate(start);
    out.extend_from_slice(sorted);
}

/// A map key as `record::msgpack_to_json` names it.
fn key_text(rd: &mut &[u8]) -> Result<String, FormatError> {
    let before = *rd;
    super::skip(rd).map_err(|_| FormatError::NotJsonWritable)?;
    let key = &before[..before.len() - rd.len()];
    if let Some(bytes) = super::str_bytes(key) {
        return Ok(std::str::from_utf8(bytes).map(str::to_string).unwrap_or_default());
    }
    // Not a string (rare): shown as `rmpv` shows it.
    super::shown::shown(key, usize::MAX).ok_or(FormatError::NotJsonWritable)
}

/// The length after a string, binary, array or map marker.
fn length(rd: &mut &[u8], marker: Marker) -> Result<u32, FormatError> {
    let bad = |_| FormatError::NotJsonWritable;
    Ok(match marker {
        Marker::FixStr(n) | Marker::FixArray(n) | Marker::FixMap(n) => u32::from(n),
        Marker::Str8 | Marker::Bin8 => u32::from(rd.read_data_u8().map_err(bad)?),
        Marker::Str16 | Marker::Bin16 | Marker::Array16 | Marker::Map16 => {
            u32::from(rd.read_data_u16().map_err(bad)?)
        }
        _ => rd.read_data_u32().map_err(bad)?,
    })
}

/// The payload of a string or binary.
fn take<'a>(rd: &mut &'a [u8], marker: Marker) -> Result<&'a [u8], FormatError> {
    let len = length(rd, marker)? as usize;
    let bytes = rd.get(..len).ok_or(FormatError::NotJsonWritable)?;
    *rd = &rd[len..];
    Ok(bytes)
}

fn number(out: &mut Vec<u8>, n: i128) {
    use std::io::Write as _;
    write!(out, "{n}").expect("writing to a vector");
}

fn float(out: &mut Vec<u8>, f: f64) {
    serde_json::to_writer(&mut *out, &f).expect("writing to a vector");
}

fn string(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing to a vector");
}

fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 15)]);
    }
}
