//! MessagePack batch → JSON document: `[[key, value, timestamp], ...]`.
//!
//! The key is a string of one character per key byte (U+0000 to U+00FF). A batch qualifies
//! only when `JSON.parse` reads every value exactly: no bin or ext, string map keys only,
//! finite floats, integers and timestamps within ±(2^53 − 1).

use std::fmt::Write as _;

use super::super::bindings::Batch;
use super::msgpack::{Reader, Token, valid_utf8};
use super::{MAX_DEPTH, Section, Unfit, Unrepresentable, at_entry, at_record, kind, records};

/// The largest integer a double holds exactly along with all smaller ones: 2^53 − 1.
pub(super) const MAX_SAFE: i64 = (1 << 53) - 1;

pub(super) fn encode(batch: &Batch, out: &mut Vec<u8>) -> Result<(), Unrepresentable> {
    // Values grow by about a half (quotes, separators, decimal digits); escapes may add more.
    out.reserve(batch.data.len() + batch.data.len() / 2 + 32 * batch.entries.len());
    out.push(b'[');
    for (i, record) in records(batch).enumerate() {
        let (key, value, timestamp) = record?;
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"[");
        latin1_string(out, key);
        out.push(b',');
        if value.is_empty() {
            return Err(at_record(i)(Unfit::Empty));
        }
        let mut reader = Reader::new(value);
        write_value(&mut reader, out, 0).map_err(at_record(i))?;
        if !reader.at_end() {
            return Err(at_record(i)(Unfit::Trailing));
        }
        if !(-MAX_SAFE..=MAX_SAFE).contains(&timestamp) {
            return Err(at_record(i)(Unfit::UnsafeTimestamp(timestamp)));
        }
        out.push(b',');
        decimal(out, timestamp);
        out.push(b']');
    }
    out.push(b']');
    Ok(())
}

/// The restore document `[[state, kind, [[key, value], ...]], ...]` of `sections`; raw
/// values are strings of one character per byte, like keys.
pub(super) fn encode_state(sections: &[Section<'_>], out: &mut Vec<u8>) -> Result<(), Unrepresentable> {
    out.push(b'[');
    for (n, section) in sections.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.push(b'[');
        decimal(out, i64::from(section.state));
        out.push(b',');
        decimal(out, i64::from(section.kind));
        out.extend_from_slice(b",[");
        for (i, item) in section.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            latin1_string(out, item.key);
            out.push(b',');
            if section.kind == kind::RAW {
                latin1_string(out, item.value);
            } else {
                let at = at_entry(item.entry);
                if item.value.is_empty() {
                    return Err(at(Unfit::Empty));
                }
                let mut reader = Reader::new(item.value);
                write_value(&mut reader, out, 0).map_err(&at)?;
                if !reader.at_end() {
                    return Err(at(Unfit::Trailing));
                }
            }
            out.push(b']');
        }
        out.extend_from_slice(b"]]");
    }
    out.push(b']');
    Ok(())
}

fn write_value(reader: &mut Reader<'_>, out: &mut Vec<u8>, depth: usize) -> Result<(), Unfit> {
    match reader.next()? {
        Token::Nil => out.extend_from_slice(b"null"),
        Token::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Token::Uint(v) => int(out, i128::from(v))?,
        Token::Int(v) => int(out, i128::from(v))?,
        Token::F32(v) => float(out, f64::from(v))?,
        Token::F64(v) => float(out, v)?,
        Token::Str(s) => utf8_string(out, s)?,
        Token::Bin(_) => return Err(Unfit::BinInJson),
        Token::Array(n) => {
            nest(depth)?;
            out.push(b'[');
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                write_value(reader, out, depth + 1)?;
            }
            out.push(b']');
        }
        Token::Map(n) => {
            nest(depth)?;
            out.push(b'{');
            for i in 0..n {
                if i > 0 {
                    out.push(b',');
                }
                match reader.next()? {
                    Token::Str(s) => utf8_string(out, s)?,
                    other => return Err(Unfit::KeyNotString(kind(&other))),
                }
                out.push(b':');
                write_value(reader, out, depth + 1)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn kind(token: &Token<'_>) -> &'static str {
    match token {
        Token::Nil => "nil",
        Token::Bool(_) => "bool",
        Token::Uint(_) | Token::Int(_) => "int",
        Token::F32(_) | Token::F64(_) => "float",
        Token::Str(_) => "str",
        Token::Bin(_) => "bin",
        Token::Array(_) => "array",
        Token::Map(_) => "map",
    }
}

fn nest(depth: usize) -> Result<(), Unfit> {
    if depth >= MAX_DEPTH {
        return Err(Unfit::TooDeep);
    }
    Ok(())
}

fn int(out: &mut Vec<u8>, v: i128) -> Result<(), Unfit> {
    match i64::try_from(v) {
        Ok(v) if (-MAX_SAFE..=MAX_SAFE).contains(&v) => {
            decimal(out, v);
            Ok(())
        }
        _ => Err(Unfit::UnsafeInteger(v)),
    }
}

fn decimal(out: &mut Vec<u8>, v: i64) {
    let mut buf = [0u8; 24];
    let mut i = buf.len();
    let negative = v < 0;
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if negative {
        i -= 1;
        buf[i] = b'-';
    }
    out.extend_from_slice(&buf[i..]);
}

/// A finite double as its shortest round-trip literal (`{:?}`: `2.0`, `0.1`, `1e300`,
/// `1e-7`, `-0.0`), each a valid JSON number that `JSON.parse` reads as the same double.
fn float(out: &mut Vec<u8>, v: f64) -> Result<(), Unfit> {
    if !v.is_finite() {
        return Err(Unfit::NotFinite(v));
    }
    struct Bytes<'a>(&'a mut Vec<u8>);
    impl std::fmt::Write for Bytes<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        }
    }
    let _ = write!(Bytes(out), "{v:?}");
    Ok(())
}

/// The bytes that must be escaped inside a JSON string: controls, `"` and `\`.
const ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

fn escaped(b: u8) -> bool {
    ESCAPED[usize::from(b)]
}

fn escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 15)],
        ]),
    }
}

fn utf8_string(out: &mut Vec<u8>, s: &[u8]) -> Result<(), Unfit> {
    if !valid_utf8(s) {
        return Err(Unfit::NotUtf8);
    }
    out.push(b'"');
    let mut run = 0;
    for (i, &b) in s.iter().enumerate() {
        if escaped(b) {
            out.extend_from_slice(&s[run..i]);
            escape(out, b);
            run = i + 1;
        }
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
    Ok(())
}

/// Bytes as a string of the characters U+0000 to U+00FF, written as UTF-8.
fn latin1_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        if b >= 0x80 {
            out.extend_from_slice(&[0xc0 | (b >> 6), 0x80 | (b & 0x3f)]);
        } else if escaped(b) {
            escape(out, b);
        } else {
            out.push(b);
        }
    }
    out.push(b'"');
}
