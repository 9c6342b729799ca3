//! A streaming JSON → MessagePack transcoder: one pass over the text, no value tree, no
//! allocation per record once its scratch buffers have grown.
//!
//! The output is byte for byte what `to_msgpack(&serde_json::from_slice::<Value>(json)?)`
//! writes in this workspace (serde_json without `preserve_order` or `arbitrary_precision`):
//! - object keys sorted by their UTF-8 bytes, a repeated key keeping its last value (a
//!   `Value` map is a `BTreeMap`);
//! - integers in the smallest MessagePack int that holds them; integers beyond `u64` / `i64`
//!   and `-0` as f64, as serde_json makes them;
//! - every number with a fraction or an exponent as a MessagePack f64 (0xcb), parsed exactly
//!   as serde_json parses it (its own algorithm, not always the correctly rounded one);
//! - strings as str8/16/32 by length, `\u` escapes decoded, surrogates required in pairs;
//! - the same accepted texts: nesting up to 127 containers, the four JSON whitespace bytes,
//!   nothing after the value but whitespace.
//!
//! The transcoder also picks two top-level fields on the way (a record's key and event
//! time), so the caller needs no second parse.

use std::ops::Range;

/// Containers may nest this deep; one more is an error (serde_json's limit, so the same
/// texts are accepted).
pub const MAX_DEPTH: u32 = 127;

/// Why a text is not one JSON value, and where (byte offset into the text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} at byte {offset}")]
pub struct JsonError {
    /// What is wrong.
    pub reason: &'static str,
    /// Byte offset into the text where it was found.
    pub offset: usize,
}

/// The top-level fields a caller wants from each object, and where the last transcode put
/// their values. Made once per source; [`Transcoder::transcode`] overwrites the ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPicks {
    key_field: Option<String>,
    time_field: Option<String>,
    /// Where in `out` the key field's MessagePack value is (`None`: the text is not an
    /// object or has no such field).
    pub key: Option<Range<usize>>,
    /// Where in `out` the time field's MessagePack value is.
    pub time: Option<Range<usize>>,
}

impl FieldPicks {
    /// Picks `key_field` and `time_field` (either may be absent) from each top-level object.
    pub fn new(key_field: Option<&str>, time_field: Option<&str>) -> Self {
        FieldPicks {
            key_field: key_field.map(str::to_owned),
            time_field: time_field.map(str::to_owned),
            key: None,
            time: None,
        }
    }
}

/// The integer a MessagePack value holds, if it is an int that fits an `i64` (what
/// `serde_json::Value::as_i64` accepts: floats are not integers).
pub fn msgpack_i64(bytes: &[u8]) -> Option<i64> {
    let (&marker, rest) = bytes.split_first()?;
    let be = |n: usize| -> Option<[u8; 8]> {
        let src = rest.get(..n)?;
        let mut b = [0u8; 8];
        b[8 - n..].copy_from_slice(src);
        Some(b)
    };
    let sign = |n: usize| -> Option<i64> {
        let b = be(n)?;
        let shift = 64 - 8 * n as u32;
        Some(i64::from_be_bytes(b) << shift >> shift)
    };
    match marker {
        0x00..=0x7f => Some(i64::from(marker)),
        0xe0..=0xff => Some(i64::from(marker as i8)),
        0xcc..=0xcf => {
            let n = 1 << (marker - 0xcc);
            i64::try_from(u64::from_be_bytes(be(n)?)).ok()
        }
        0xd0..=0xd3 => sign(1 << (marker - 0xd0)),
        _ => None,
    }
}

/// One member of an object being written: its key's bytes and the whole member's span in
/// `out` (key header, key, value).
#[derive(Debug, Clone, Copy)]
struct Member {
    start: usize,
    key_start: usize,
    key_end: usize,
    end: usize,
}

impl Member {
    fn key(&self) -> Range<usize> {
        self.key_start..self.key_end
    }
}

/// Reusable state of the transcoder (scratch buffers), so that transcoding allocates only
/// while its buffers grow to the largest record seen.
#[derive(Debug, Default)]
pub struct Transcoder {
    /// Members of the objects being written, innermost last.
    members: Vec<Member>,
    /// A string with escapes, decoded.
    string: Vec<u8>,
    /// An object's members in key order, while they are put back into `out`.
    sorted: Vec<u8>,
    /// The key order of the last top-level object that needed sorting: records of one
    /// source nearly always share it, and reusing it skips the sort.
    shape: Shape,
    /// Scratch for the order of an object's members.
    order: Vec<usize>,
}

struct Cursor<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    #[inline]
    fn err(&self, reason: &'static str) -> JsonError {
        JsonError { reason, offset: self.pos }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The next non-whitespace byte, consumed.
    #[inline]
    fn next_token(&mut self) -> Option<u8> {
        self.skip_ws();
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn literal(&mut self, rest: &[u8]) -> Result<(), JsonError> {
        for &want in rest {
            match self.peek() {
                Some(b) if b == want => self.pos += 1,
                Some(_) => return Err(self.err("expected a value (bad literal)")),
                None => return Err(self.err("the text ends inside a literal")),
            }
        }
        Ok(())
    }
}

impl Transcoder {
    /// A transcoder with empty scratch buffers.
    pub fn new() -> Self {
        Transcoder::default()
    }

    /// Appends the MessagePack encoding of the one JSON value in `json` to `out`, and sets
    /// `picks`' ranges (into `out`) to its top-level key and time fields. On error `out` is
    /// truncated back to its length before the call and the picks are `None`.
    pub fn transcode(
        &mut self,
        json: &[u8],
        out: &mut Vec<u8>,
        picks: &mut FieldPicks,
    ) -> Result<(), JsonError> {
        let before = out.len();
        picks.key = None;
        picks.time = None;
        self.members.clear();
        let mut c = Cursor { text: json, pos: 0 };
        let result = (|| {
            let first = c.next_token().ok_or_else(|| c.err("the text holds no JSON value"))?;
            self.value(&mut c, first, out, 0, Some(picks))?;
            c.skip_ws();
            if c.pos != json.len() {
                return Err(c.err("trailing characters after the JSON value"));
            }
            Ok(())
        })();
        if result.is_err() {
            out.truncate(before);
            picks.key = None;
            picks.time = None;
        }
        result
    }

    /// Writes the value whose first byte `first` was just consumed.
    fn value(
        &mut self,
        c: &mut Cursor<'_>,
        first: u8,
        out: &mut Vec<u8>,
        depth: u32,
        picks: Option<&mut FieldPicks>,
    ) -> Result<(), JsonError> {
        match first {
            b'"' => self.string(c, out),
            b'{' => self.object(c, out, depth + 1, picks),
            b'[' => self.array(c, out, depth + 1),
            b'-' | b'0'..=b'9' => number(c, out),
            b't' => c.literal(b"rue").map(|()| out.push(0xc3)),
            b'f' => c.literal(b"alse").map(|()| out.push(0xc2)),
            b'n' => c.literal(b"ull").map(|()| out.push(0xc0)),
            _ => {
                c.pos -= 1;
                Err(c.err("expected a value"))
            }
        }
    }

    fn array(&mut self, c: &mut Cursor<'_>, out: &mut Vec<u8>, depth: u32) -> Result<(), JsonError> {
        if depth > MAX_DEPTH {
            return Err(c.err("JSON nested deeper than 127 arrays and objects"));
        }
        let header = out.len();
        out.push(0x90);
        let mut count = 0usize;
        let mut next = c.next_token().ok_or_else(|| c.err("the text ends inside an array"))?;
        if next != b']' {
            loop {
                self.value(c, next, out, depth, None)?;
                count += 1;
                match c.next_token() {
                    Some(b',') => {}
                    Some(b']') => break,
                    Some(_) => {
                        c.pos -= 1;
                        return Err(c.err("expected `,` or `]` in an array"));
                    }
                    None => return Err(c.err("the text ends inside an array")),
                }
                next = c.next_token().ok_or_else(|| c.err("the text ends inside an array"))?;
                if next == b']' {
                    c.pos -= 1;
                    return Err(c.err("trailing comma in an array"));
                }
            }
        }
        fix_header(out, header, count, [0x90, 0xdc, 0xdd]);
        Ok(())
    }

    fn object(
        &mut self,
        c: &mut Cursor<'_>,
        out: &mut Vec<u8>,
        depth: u32,
        picks: Option<&mut FieldPicks>,
    ) -> Result<(), JsonError> {
        if depth > MAX_DEPTH {
            return Err(c.err("JSON nested deeper than 127 arrays and objects"));
        }
        let header = out.len();
        out.push(0x80);
        let base = self.members.len();
        let mut next = c.next_token().ok_or_else(|| c.err("the text ends inside an object"))?;
        if next != b'}' {
            loop {
                if next != b'"' {
                    c.pos -= 1;
                    return Err(c.err("expected a string key in an object"));
                }
                let start = out.len();
                self.string(c, out)?;
                let key = str_body(out, start);
                match c.next_token() {
                    Some(b':') => {}
                    Some(_) => {
                        c.pos -= 1;
                        return Err(c.err("expected `:` after an object key"));
                    }
                    None => return Err(c.err("the text ends inside an object")),
                }
                let first = c.next_token().ok_or_else(|| c.err("the text ends inside an object"))?;
                self.value(c, first, out, depth, None)?;
                self.members.push(Member { start, key_start: key.start, key_end: key.end, end: out.len() });
                match c.next_token() {
                    Some(b',') => {}
                    Some(b'}') => break,
                    Some(_) => {
                        c.pos -= 1;
                        return Err(c.err("expected `,` or `}` in an object"));
                    }
                    None => return Err(c.err("the text ends inside an object")),
                }
                next = c.next_token().ok_or_else(|| c.err("the text ends inside an object"))?;
                if next == b'}' {
                    c.pos -= 1;
                    return Err(c.err("trailing comma in an object"));
                }
            }
        }
        let sorted = self.members[base..].windows(2).all(|w| out[w[0].key()] < out[w[1].key()]);
        if !sorted {
            let top = picks.is_some();
            if top && self.shape.matches(out, &self.members[base..]) {
                self.reorder_members(out, base, header + 1);
            } else {
                self.sort_members(out, base, header + 1, top);
            }
        }
        let count = self.members.len() - base;
        let shift = fix_header(out, header, count, [0x80, 0xde, 0xdf]);
        if let Some(picks) = picks {
            let names = [picks.key_field.as_deref(), picks.time_field.as_deref()];
            for m in &self.members[base..] {
                let name = &out[m.key_start + shift..m.key_end + shift];
                let value = m.key_end + shift..m.end + shift;
                if names[0].is_some_and(|n| n.as_bytes() == name) {
                    picks.key = Some(value.clone());
                }
                if names[1].is_some_and(|n| n.as_bytes() == name) {
                    picks.time = Some(value);
                }
            }
        }
        self.members.truncate(base);
        Ok(())
    }

    /// Rewrites the members from `base` (written from `body` on) in key order, a repeated
    /// key keeping its last value, and updates their spans; remembers the order of a
    /// top-level object (`top`) for the next one.
    fn sort_members(&mut self, out: &mut Vec<u8>, base: usize, body: usize, top: bool) {
        let n = self.members.len() - base;
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..n);
        {
            let members = &self.members[base..];
            // Stable: among equal keys the last written stays last.
            order.sort_by(|&a, &b| out[members[a].key()].cmp(&out[members[b].key()]));
        }
        let mut kept = 0;
        for k in 0..n {
            let (m, next) = (order[k], order.get(k + 1));
            if next.is_some_and(|&j| out[self.members[base + m].key()] == out[self.members[base + j].key()]) {
                continue;
            }
            order[kept] = m;
            kept += 1;
        }
        order.truncate(kept);
        if top {
            self.shape.remember(out, &self.members[base..], order.iter().copied());
        }
        self.write_in_order(out, base, body, &order);
        self.order = order;
    }

    /// Rewrites the members from `base` in the remembered order of [`Shape`], which the
    /// caller checked they have.
    fn reorder_members(&mut self, out: &mut Vec<u8>, base: usize, body: usize) {
        let order = std::mem::take(&mut self.shape.order);
        self.write_in_order(out, base, body, &order);
        self.shape.order = order;
    }

    /// Rewrites the members from `base` (written from `body` on) as `order` lists them and
    /// updates their spans.
    fn write_in_order(&mut self, out: &mut Vec<u8>, base: usize, body: usize, order: &[usize]) {
        self.sorted.clear();
        let written = self.members.len() - base;
        for &i in order {
            let m = self.members[base + i];
            let pos = body + self.sorted.len();
            self.sorted.extend_from_slice(&out[m.start..m.end]);
            let key_start = pos + (m.key_start - m.start);
            let key_end = key_start + (m.key_end - m.key_start);
            // Appended after the written members, moved down below.
            self.members.push(Member { start: pos, key_start, key_end, end: pos + (m.end - m.start) });
        }
        self.members.drain(base..base + written);
        out.truncate(body);
        out.extend_from_slice(&self.sorted);
    }

    fn string(&mut self, c: &mut Cursor<'_>, out: &mut Vec<u8>) -> Result<(), JsonError> {
        let start = c.pos;
        let (end, ascii) = scan_plain(c.text, start);
        match c.text.get(end) {
            Some(b'"') => {
                let raw = &c.text[start..end];
                if !ascii && let Err(e) = std::str::from_utf8(raw) {
                    c.pos = start + e.valid_up_to();
                    return Err(c.err("invalid UTF-8 in a string"));
                }
                write_str_header(out, raw.len());
                out.extend_from_slice(raw);
                c.pos = end + 1;
                Ok(())
            }
            _ => self.escaped_string(c, out, start, end, ascii),
        }
    }

    /// A string that has an escape, a control byte or no end: decoded into `self.string`.
    #[cold]
    fn escaped_string(
        &mut self,
        c: &mut Cursor<'_>,
        out: &mut Vec<u8>,
        start: usize,
        mut end: usize,
        mut ascii: bool,
    ) -> Result<(), JsonError> {
        let text = c.text;
        let mut buf = std::mem::take(&mut self.string);
        buf.clear();
        let mut plain_from = start;
        let result = loop {
            match text.get(end) {
                None => {
                    c.pos = end;
                    break Err(c.err("the text ends inside a string"));
                }
                Some(b'"') => {
                    buf.extend_from_slice(&text[plain_from..end]);
                    c.pos = end + 1;
                    break Ok(());
                }
                Some(b'\\') => {
                    buf.extend_from_slice(&text[plain_from..end]);
                    c.pos = end + 1;
                    if let Err(e) = escape(c, &mut buf) {
                        break Err(e);
                    }
                    plain_from = c.pos;
                }
                Some(_) => {
                    c.pos = end;
                    break Err(c.err("control character (U+0000 to U+001F) in a string"));
                }
            }
            let (e, a) = scan_plain(text, c.pos);
            end = e;
            ascii &= a;
        };
        if result.is_ok() {
            if !ascii && std::str::from_utf8(&buf).is_err() {
                c.pos = start;
                self.string = buf;
                return Err(c.err("invalid UTF-8 in a string"));
            }
            write_str_header(out, buf.len());
            out.extend_from_slice(&buf);
        }
        self.string = buf;
        result
    }
}

/// The bytes of the MessagePack str written at `start` of `out` (after its header).
fn str_body(out: &[u8], start: usize) -> Range<usize> {
    let header = match out[start] {
        0xa0..=0xbf => 1,
        0xd9 => 2,
        0xda => 3,
        _ => 5,
    };
    start + header..out.len()
}

/// Scans a string's plain bytes from `from`: returns the index of the first `"`, `\` or
/// control byte (or the end), and whether all bytes before it are ASCII.
#[inline]
fn scan_plain(text: &[u8], from: usize) -> (usize, bool) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut i = from;
    let mut high = 0u64;
    while i + 8 <= text.len() {
        let w = u64::from_le_bytes(text[i..i + 8].try_into().expect("8 bytes"));
        let quote = w ^ (LO * u64::from(b'"'));
        let slash = w ^ (LO * u64::from(b'\\'));
        // A byte is zero (or below 0x20) where these have their high bit set; exact as to
        // whether any byte is, which is all this needs.
        let special = (quote.wrapping_sub(LO) & !quote)
            | (slash.wrapping_sub(LO) & !slash)
            | (w.wrapping_sub(LO * 0x20) & !w);
        if special & HI != 0 {
            break;
        }
        high |= w;
        i += 8;
    }
    while let Some(&b) = text.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        high |= u64::from(b);
        i += 1;
    }
    (i, high & HI == 0)
}

fn hex4(c: &mut Cursor<'_>) -> Result<u16, JsonError> {
    let mut n = 0u16;
    for _ in 0..4 {
        let d = match c.peek() {
            Some(b @ b'0'..=b'9') => b - b'0',
            Some(b @ b'a'..=b'f') => b - b'a' + 10,
            Some(b @ b'A'..=b'F') => b - b'A' + 10,
            Some(_) => return Err(c.err("invalid `\\u` escape (4 hex digits expected)")),
            None => return Err(c.err("the text ends inside a string")),
        };
        n = n * 16 + u16::from(d);
        c.pos += 1;
    }
    Ok(n)
}

/// Decodes the escape after a `\` into `buf`.
fn escape(c: &mut Cursor<'_>, buf: &mut Vec<u8>) -> Result<(), JsonError> {
    let b = c.peek().ok_or_else(|| c.err("the text ends inside a string"))?;
    c.pos += 1;
    let byte = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => {
            let n = hex4(c)?;
            let code = match n {
                0xdc00..=0xdfff => return Err(c.err("lone trailing surrogate in a `\\u` escape")),
                0xd800..=0xdbff => {
                    if c.text.get(c.pos..c.pos + 2) != Some(b"\\u") {
                        c.pos = (c.pos + 1).min(c.text.len());
                        return Err(c.err("lone leading surrogate in a `\\u` escape"));
                    }
                    c.pos += 2;
                    let n2 = hex4(c)?;
                    if !(0xdc00..=0xdfff).contains(&n2) {
                        return Err(c.err("lone leading surrogate in a `\\u` escape"));
                    }
                    0x1_0000 + ((u32::from(n) - 0xd800) << 10 | (u32::from(n2) - 0xdc00))
                }
                n => u32::from(n),
            };
            let ch = char::from_u32(code).expect("not a surrogate");
            buf.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
            return Ok(());
        }
        _ => {
            c.pos -= 1;
            return Err(c.err("invalid escape in a string"));
        }
    };
    buf.push(byte);
    Ok(())
}

/// Sets the container header at `header` (one byte reserved) for `count` entries, widening
/// it if needed; returns how many bytes the body moved. `markers`: fix form, 16-bit, 32-bit.
#[inline]
fn fix_header(out: &mut Vec<u8>, header: usize, count: usize, markers: [u8; 3]) -> usize {
    if count < 16 {
        out[header] = markers[0] | count as u8;
        return 0;
    }
    let (marker, len): (u8, &[u8]) = match u16::try_from(count) {
        Ok(n) => (markers[1], &n.to_be_bytes()),
        Err(_) => (markers[2], &(count as u32).to_be_bytes()),
    };
    let shift = len.len();
    let body = header + 1;
    out.splice(body..body, len.iter().copied());
    out[header] = marker;
    shift
}

fn write_str_header(out: &mut Vec<u8>, len: usize) {
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len < 256 {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if let Ok(n) = u16::try_from(len) {
        out.push(0xda);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn write_uint(out: &mut Vec<u8>, n: u64) {
    if n < 128 {
        out.push(n as u8);
    } else if n < 256 {
        out.extend_from_slice(&[0xcc, n as u8]);
    } else if n < 65536 {
        out.push(0xcd);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n <= u64::from(u32::MAX) {
        out.push(0xce);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0xcf);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A negative integer, as rmp's `write_sint` writes it.
fn write_neg(out: &mut Vec<u8>, n: i64) {
    if n >= -32 {
        out.push(n as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= i64::from(i32::MIN) {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn write_f64(out: &mut Vec<u8>, f: f64) {
    out.push(0xcb);
    out.extend_from_slice(&f.to_bits().to_be_bytes());
}

/// Powers of ten that are exact in an f64 (serde_json's `POW10` up to 1e22).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
    1e19, 1e20, 1e21, 1e22,
];

/// A number whose first byte (`-` or a digit) was just consumed. Integers and floats with a
/// small exponent are converted here exactly as serde_json does; the rare rest (overflowing
/// significands or exponents) is handed to serde_json itself, so the result is its own.
fn number(c: &mut Cursor<'_>, out: &mut Vec<u8>) -> Result<(), JsonError> {
    let start = c.pos - 1;
    let negative = c.text[start] == b'-';
    if !negative {
        c.pos -= 1;
    }
    let digit = |c: &Cursor<'_>| c.peek().filter(u8::is_ascii_digit);
    let mut significand = 0u64;
    let mut overflow = false;
    match c.peek() {
        Some(b'0') => {
            c.pos += 1;
            if digit(c).is_some() {
                return Err(c.err("invalid number (a leading zero)"));
            }
        }
        Some(b'1'..=b'9') => {
            while let Some(d) = digit(c) {
                c.pos += 1;
                match significand.checked_mul(10).and_then(|s| s.checked_add(u64::from(d - b'0'))) {
                    Some(s) => significand = s,
                    None => overflow = true,
                }
            }
        }
        Some(_) => return Err(c.err("invalid number")),
        None => return Err(c.err("the text ends inside a number")),
    }
    let mut exponent: i64 = 0;
    let mut is_float = false;
    if c.peek() == Some(b'.') {
        is_float = true;
        c.pos += 1;
        let frac = c.pos;
        while let Some(d) = digit(c) {
            c.pos += 1;
            if !overflow {
                match significand.checked_mul(10).and_then(|s| s.checked_add(u64::from(d - b'0'))) {
                    Some(s) => {
                        significand = s;
                        exponent -= 1;
                    }
                    None => overflow = true,
                }
            }
        }
        if c.pos == frac {
            return Err(match c.peek() {
                Some(_) => c.err("invalid number (no digit after `.`)"),
                None => c.err("the text ends inside a number"),
            });
        }
    }
    if let Some(b'e' | b'E') = c.peek() {
        is_float = true;
        c.pos += 1;
        let negative_exp = match c.peek() {
            Some(b'+') => {
                c.pos += 1;
                false
            }
            Some(b'-') => {
                c.pos += 1;
                true
            }
            _ => false,
        };
        let digits = c.pos;
        let mut exp: i64 = 0;
        while let Some(d) = digit(c) {
            c.pos += 1;
            exp = (exp * 10 + i64::from(d - b'0')).min(1 << 40);
        }
        if c.pos == digits {
            return Err(match c.peek() {
                Some(_) => c.err("invalid number (no digit in the exponent)"),
                None => c.err("the text ends inside a number"),
            });
        }
        exponent += if negative_exp { -exp } else { exp };
    }
    if !overflow && !is_float {
        if !negative {
            write_uint(out, significand);
        } else {
            let neg = (significand as i64).wrapping_neg();
            if neg >= 0 {
                write_f64(out, -(significand as f64));
            } else {
                write_neg(out, neg);
            }
        }
        return Ok(());
    }
    if !overflow && exponent.unsigned_abs() < POW10.len() as u64 {
        let pow = POW10[exponent.unsigned_abs() as usize];
        let f = significand as f64;
        let f = if exponent >= 0 { f * pow } else { f / pow };
        write_f64(out, if negative { -f } else { f });
        return Ok(());
    }
    match serde_json::from_slice::<f64>(&c.text[start..c.pos]) {
        Ok(f) => {
            write_f64(out, f);
            Ok(())
        }
        Err(_) => {
            c.pos = start;
            Err(c.err("number out of range"))
        }
    }
}

mod shape;

use shape::Shape;

#[cfg(test)]
mod tests;
