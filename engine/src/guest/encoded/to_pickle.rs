//! MessagePack batch → pickle document (protocol 5 opcodes, no FRAME).
//!
//! `pickle.loads` of the document gives `[(key: bytes, value, timestamp: int), ...]` where
//! each value equals what weirpy's `msgpack.unpackb` returns for the record's value bytes;
//! an array in map-key position (at any depth of the key) becomes a tuple, so the dict
//! stays hashable, and a map there is refused.
//!
//! The memo holds only map keys that are short strings: each is written once and then
//! referenced, so `pickle.loads` builds (and hashes) one `str` per distinct field name of
//! the batch instead of one per record (a third of q1's `loads` time went to field names).

use std::collections::HashMap;

use super::super::bindings::Batch;
use super::msgpack::{Reader, Token, valid_utf8};
use super::{MAX_DEPTH, Section, Unfit, Unrepresentable, at_entry, at_record, kind, records};

// The opcodes written (names as in CPython's pickle.py).
const PROTO: u8 = 0x80;
const STOP: u8 = b'.';
const MARK: u8 = b'(';
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const LONG1: u8 = 0x8a;
const BINFLOAT: u8 = b'G';
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const SHORT_BINBYTES: u8 = b'C';
const BINBYTES: u8 = b'B';
const EMPTY_LIST: u8 = b']';
const APPENDS: u8 = b'e';
const EMPTY_TUPLE: u8 = b')';
const TUPLE: u8 = b't';
const TUPLE2: u8 = 0x86;
const TUPLE3: u8 = 0x87;
const EMPTY_DICT: u8 = b'}';
const SETITEMS: u8 = b'u';
const MEMOIZE: u8 = 0x94;
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';

/// The longest map-key string the memo keeps, in bytes.
const MEMO_STR_BYTES: usize = 64;
/// Most entries of one document's memo.
const MEMO_ENTRIES: usize = 4096;

/// Map-key strings already written, by their memo index.
type Memo<'a> = HashMap<&'a [u8], u32>;

pub(super) fn encode(batch: &Batch, out: &mut Vec<u8>) -> Result<(), Unrepresentable> {
    // Values grow by about a quarter (opcodes, lengths); each record adds about 16 bytes.
    out.reserve(batch.data.len() + batch.data.len() / 4 + 16 * batch.entries.len());
    out.extend_from_slice(&[PROTO, 5, EMPTY_LIST]);
    if !batch.entries.is_empty() {
        out.push(MARK);
    }
    let mut memo = Memo::new();
    for (i, record) in records(batch).enumerate() {
        let (key, value, timestamp) = record?;
        bytes(out, key);
        if value.is_empty() {
            return Err(at_record(i)(Unfit::Empty));
        }
        let mut reader = Reader::new(value);
        write_value(&mut reader, out, &mut memo, 0, false).map_err(at_record(i))?;
        if !reader.at_end() {
            return Err(at_record(i)(Unfit::Trailing));
        }
        int(out, i128::from(timestamp));
        out.push(TUPLE3);
    }
    if !batch.entries.is_empty() {
        out.push(APPENDS);
    }
    out.push(STOP);
    Ok(())
}

/// The restore document `[(state, kind, [(key, value), ...]), ...]` of `sections`.
pub(super) fn encode_state(sections: &[Section<'_>], out: &mut Vec<u8>) -> Result<(), Unrepresentable> {
    let items = sections.iter().flat_map(|s| &s.items);
    let bytes_len: usize = items.clone().map(|i| i.key.len() + i.value.len()).sum();
    out.reserve(bytes_len + bytes_len / 4 + 16 * items.count() + 16 * sections.len());
    out.extend_from_slice(&[PROTO, 5, EMPTY_LIST]);
    if !sections.is_empty() {
        out.push(MARK);
    }
    let mut memo = Memo::new();
    for section in sections {
        int(out, i128::from(section.state));
        int(out, i128::from(section.kind));
        out.push(EMPTY_LIST);
        out.push(MARK);
        for item in &section.items {
            bytes(out, item.key);
            if section.kind == kind::RAW {
                bytes(out, item.value);
            } else {
                let at = at_entry(item.entry);
                if item.value.is_empty() {
                    return Err(at(Unfit::Empty));
                }
                let mut reader = Reader::new(item.value);
                write_value(&mut reader, out, &mut memo, 0, false).map_err(&at)?;
                if !reader.at_end() {
                    return Err(at(Unfit::Trailing));
                }
            }
            out.push(TUPLE2);
        }
        out.extend_from_slice(&[APPENDS, TUPLE3]);
    }
    if !sections.is_empty() {
        out.push(APPENDS);
    }
    out.push(STOP);
    Ok(())
}

/// Writes the value the reader is at; `depth` containers enclose it; `in_key` when it is
/// (inside) a map key.
fn write_value<'a>(
    reader: &mut Reader<'a>,
    out: &mut Vec<u8>,
    memo: &mut Memo<'a>,
    depth: usize,
    in_key: bool,
) -> Result<(), Unfit> {
    match reader.next()? {
        Token::Nil => out.push(NONE),
        Token::Bool(b) => out.push(if b { NEWTRUE } else { NEWFALSE }),
        Token::Uint(v) => int(out, i128::from(v)),
        Token::Int(v) => int(out, i128::from(v)),
        Token::F32(v) => float(out, f64::from(v)),
        Token::F64(v) => float(out, v),
        Token::Str(s) => {
            if in_key
                && s.len() <= MEMO_STR_BYTES
                && let Some(&index) = memo.get(s)
            {
                get(out, index);
                return Ok(());
            }
            if !valid_utf8(s) {
                return Err(Unfit::NotUtf8);
            }
            sized(out, s, SHORT_BINUNICODE, BINUNICODE);
            if in_key && s.len() <= MEMO_STR_BYTES && memo.len() < MEMO_ENTRIES {
                out.push(MEMOIZE);
                memo.insert(s, memo.len() as u32);
            }
        }
        Token::Bin(b) => bytes(out, b),
        Token::Array(n) => {
            nest(depth)?;
            if in_key {
                // A tuple: `(` items `t`, or `)` when empty.
                if n == 0 {
                    out.push(EMPTY_TUPLE);
                } else {
                    out.push(MARK);
                    for _ in 0..n {
                        write_value(reader, out, memo, depth + 1, true)?;
                    }
                    out.push(TUPLE);
                }
            } else {
                out.push(EMPTY_LIST);
                if n > 0 {
                    out.push(MARK);
                    for _ in 0..n {
                        write_value(reader, out, memo, depth + 1, false)?;
                    }
                    out.push(APPENDS);
                }
            }
        }
        Token::Map(n) => {
            if in_key {
                return Err(Unfit::MapInKey);
            }
            nest(depth)?;
            out.push(EMPTY_DICT);
            if n > 0 {
                out.push(MARK);
                for _ in 0..n {
                    write_value(reader, out, memo, depth + 1, true)?;
                    write_value(reader, out, memo, depth + 1, false)?;
                }
                out.push(SETITEMS);
            }
        }
    }
    Ok(())
}

/// A reference to memo entry `index`.
fn get(out: &mut Vec<u8>, index: u32) {
    match u8::try_from(index) {
        Ok(i) => out.extend_from_slice(&[BINGET, i]),
        Err(_) => {
            out.push(LONG_BINGET);
            out.extend_from_slice(&index.to_le_bytes());
        }
    }
}

fn nest(depth: usize) -> Result<(), Unfit> {
    if depth >= MAX_DEPTH {
        return Err(Unfit::TooDeep);
    }
    Ok(())
}

/// An int as CPython's pickler writes it at protocol 2 and above.
fn int(out: &mut Vec<u8>, v: i128) {
    if (0..=0xff).contains(&v) {
        out.extend_from_slice(&[BININT1, v as u8]);
    } else if (0..=0xffff).contains(&v) {
        out.push(BININT2);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if let Ok(v) = i32::try_from(v) {
        out.push(BININT);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        let (bytes, n) = long_bytes(v);
        out.extend_from_slice(&[LONG1, n as u8]);
        out.extend_from_slice(&bytes[..n]);
    }
}

/// The minimal little-endian two's-complement bytes of `v` (pickle's `encode_long`): its
/// significant bits plus a sign bit, rounded up to whole bytes.
pub(super) fn long_bytes(v: i128) -> ([u8; 16], usize) {
    let magnitude = if v < 0 { !v } else { v };
    let bits = 128 - magnitude.leading_zeros() as usize;
    (v.to_le_bytes(), bits / 8 + 1)
}

fn float(out: &mut Vec<u8>, v: f64) {
    out.push(BINFLOAT);
    out.extend_from_slice(&v.to_be_bytes());
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    sized(out, b, SHORT_BINBYTES, BINBYTES);
}

/// `short` with a one-byte length below 256 bytes, else `long` with a 4-byte one
/// (MessagePack lengths are at most 32 bits).
fn sized(out: &mut Vec<u8>, b: &[u8], short: u8, long: u8) {
    if let Ok(n) = u8::try_from(b.len()) {
        out.extend_from_slice(&[short, n]);
    } else {
        out.push(long);
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(b);
}
