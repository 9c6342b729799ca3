//! JSON document → MessagePack batch: a strict RFC 8259 parser writing compact MessagePack
//! as it reads (container headers are patched in when their item count is known).
//!
//! The document is an array of `[key, value, timestamp]`: the key a string of characters
//! U+0000 to U+00FF (one byte each), the timestamp an integer literal within ±(2^53 − 1).
//! Numbers written without fraction or exponent within ±(2^53 − 1) become integers, all
//! others float64; object members keep their order (duplicates too).

use super::super::bindings::{Batch, ChangeKind, Entry, StateEntry};
use super::msgpack::{Out, valid_utf8};
use super::to_json::MAX_SAFE;
use super::{DecodeError, MAX_DEPTH, kind};

pub(super) fn decode(doc: &[u8], max: usize) -> Result<Batch, DecodeError> {
    let mut p: Parser<'_> = Parser { doc, pos: 0, out: Out::new(max, doc.len()), text: Vec::new() };
    p.ws();
    p.expect(b'[', "the document is not an array of records")?;
    p.ws();
    if p.peek() == Some(b']') {
        p.pos += 1;
    } else {
        loop {
            p.record()?;
            p.ws();
            match p.bump() {
                Some(b',') => p.ws(),
                Some(b']') => break,
                _ => return Err(p.error("expected ',' or ']' after a record")),
            }
        }
    }
    p.ws();
    if p.pos != doc.len() {
        return Err(p.error("trailing characters after the document"));
    }
    Ok(p.out.finish())
}

/// A state document (`[[state, kind, items], ...]`, wit/encoded.wit) → the data and
/// entries of a state delta, in document order.
pub(super) fn decode_state(doc: &[u8], max: usize) -> Result<(Vec<u8>, Vec<StateEntry>), DecodeError> {
    let mut p = Parser { doc, pos: 0, out: Out::<StateEntry>::new(max, doc.len()), text: Vec::new() };
    p.ws();
    p.expect(b'[', "the document is not an array of sections")?;
    p.list(|p| p.section())?;
    p.ws();
    if p.pos != doc.len() {
        return Err(p.error("trailing characters after the document"));
    }
    Ok(p.out.into_parts())
}

impl Parser<'_, StateEntry> {
    /// The items of a list whose `[` was read, each parsed by `item`, up to its `]`.
    fn list(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.bump() {
                Some(b',') => {}
                Some(b']') => return Ok(()),
                _ => return Err(self.error("expected ',' or ']' in a list")),
            }
        }
    }

    fn small_int(&mut self, max: u32, what: &str) -> Result<u32, DecodeError> {
        match self.number()? {
            Number::Int(v) => u32::try_from(v).ok().filter(|&v| v <= max).ok_or_else(|| self.error(what)),
            Number::Float(_) => Err(self.error(what)),
        }
    }

    fn section(&mut self) -> Result<(), DecodeError> {
        const SHAPE: &str = "a section is not an array [state, kind (0, 1 or 2), items]";
        self.expect(b'[', SHAPE)?;
        self.ws();
        let state = self.small_int(u32::MAX, SHAPE)?;
        self.ws();
        self.expect(b',', SHAPE)?;
        self.ws();
        let section_kind = self.small_int(2, SHAPE)? as u8;
        self.ws();
        self.expect(b',', SHAPE)?;
        self.ws();
        self.expect(b'[', SHAPE)?;
        self.list(|p| p.state_item(state, section_kind))?;
        self.ws();
        self.expect(b']', SHAPE)
    }

    /// One item of a section: a key (deletes) or a `[key, value]` pair.
    fn state_item(&mut self, state: u32, section_kind: u8) -> Result<(), DecodeError> {
        const PAIR: &str = "a put is not an array [key, value]";
        let delete = section_kind == kind::DELETE;
        if !delete {
            self.expect(b'[', PAIR)?;
            self.ws();
        }
        if self.peek() != Some(b'"') {
            return Err(self.error("a key is not a string"));
        }
        let key_len = self.latin1_bytes(true)?;
        if !delete {
            self.ws();
            self.expect(b',', PAIR)?;
            self.ws();
            if section_kind == kind::RAW {
                if self.peek() != Some(b'"') {
                    return Err(self.error("a raw value is not a string"));
                }
                self.latin1_bytes(false)?;
            } else {
                self.value(0)?;
            }
            self.ws();
            self.expect(b']', PAIR)?;
        }
        let change = if delete { ChangeKind::Delete } else { ChangeKind::Put };
        self.out.end_entry(key_len, |key_len, value_len| StateEntry {
            state,
            kind: change,
            key_len,
            value_len,
        })
    }
}

/// A JSON number, as MessagePack will carry it.
enum Number {
    Int(i64),
    Float(f64),
}

struct Parser<'a, E = Entry> {
    doc: &'a [u8],
    pos: usize,
    out: Out<E>,
    /// Scratch for unescaped string text.
    text: Vec<u8>,
}

impl<E> Parser<'_, E> {
    fn error(&self, what: &str) -> DecodeError {
        DecodeError::Malformed(format!("JSON at byte {}: {what}", self.pos))
    }

    fn peek(&self) -> Option<u8> {
        self.doc.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, b: u8, what: &str) -> Result<(), DecodeError> {
        if self.bump() == Some(b) { Ok(()) } else { Err(self.error(what)) }
    }

    /// Parses a string of characters U+0000 to U+00FF (the parser is at its quote) as one
    /// byte each: the key of a new record (`key`) or raw bytes of the current one. Returns
    /// the byte length.
    fn latin1_bytes(&mut self, key: bool) -> Result<usize, DecodeError> {
        let text = self.string(true)?;
        if let Some((start, end)) = text
            && self.doc[start..end].is_ascii()
        {
            let bytes = &self.doc[start..end];
            if key {
                self.out.start_record(bytes)?
            } else {
                self.out.put(bytes)?
            }
            return Ok(end - start);
        }
        if let Some((start, end)) = text {
            self.text.clear();
            self.text.extend_from_slice(&self.doc[start..end]);
        }
        let mut bytes = std::mem::take(&mut self.text);
        let result = match latin1(&mut bytes) {
            Some(n) => {
                bytes.truncate(n);
                if key { self.out.start_record(&bytes) } else { self.out.put(&bytes) }
            }
            None => {
                Err(self.error("a key or raw value has a character above U+00FF (one byte per character)"))
            }
        };
        let len = bytes.len();
        self.text = bytes;
        result.map(|()| len)
    }
}

impl Parser<'_, Entry> {
    fn record(&mut self) -> Result<(), DecodeError> {
        self.expect(b'[', "a record is not an array [key, value, timestamp]")?;
        self.ws();
        if self.peek() != Some(b'"') {
            return Err(self.error("a record's key is not a string"));
        }
        let key_len = self.latin1_bytes(true)?;
        self.ws();
        self.expect(b',', "a record is not an array [key, value, timestamp]")?;
        self.ws();
        self.value(0)?;
        self.ws();
        self.expect(b',', "a record is not an array [key, value, timestamp]")?;
        self.ws();
        let timestamp = match self.number()? {
            Number::Int(t) => t,
            Number::Float(_) => {
                return Err(self.error("a record's timestamp is not an integer literal within ±(2^53 − 1)"));
            }
        };
        self.ws();
        self.expect(b']', "a record has more than three items")?;
        self.out.end_record(key_len, timestamp)
    }
}

impl<E> Parser<'_, E> {
    /// Parses one value into the output; `depth` containers enclose it.
    fn value(&mut self, depth: usize) -> Result<(), DecodeError> {
        match self.peek() {
            Some(b'n') => self.literal(b"null").and_then(|()| self.out.nil()),
            Some(b't') => self.literal(b"true").and_then(|()| self.out.bool(true)),
            Some(b'f') => self.literal(b"false").and_then(|()| self.out.bool(false)),
            Some(b'"') => match self.string(false)? {
                Some((start, end)) => self.out.str(&self.doc[start..end]),
                None => {
                    let text = std::mem::take(&mut self.text);
                    let result = self.out.str(&text);
                    self.text = text;
                    result
                }
            },
            Some(b'-' | b'0'..=b'9') => match self.number()? {
                Number::Int(v) => self.out.int(i128::from(v)),
                Number::Float(v) => self.out.f64(v),
            },
            Some(b'[') => {
                self.nest(depth)?;
                self.pos += 1;
                let at = self.out.open()?;
                let mut n = 0usize;
                self.ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                } else {
                    loop {
                        self.ws();
                        self.value(depth + 1)?;
                        n += 1;
                        self.ws();
                        match self.bump() {
                            Some(b',') => {}
                            Some(b']') => break,
                            _ => return Err(self.error("expected ',' or ']' in an array")),
                        }
                    }
                }
                self.out.close_array(at, n)
            }
            Some(b'{') => {
                self.nest(depth)?;
                self.pos += 1;
                let at = self.out.open()?;
                let mut n = 0usize;
                self.ws();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                } else {
                    loop {
                        self.ws();
                        if self.peek() != Some(b'"') {
                            return Err(self.error("an object key is not a string"));
                        }
                        self.value(depth + 1)?;
                        self.ws();
                        self.expect(b':', "expected ':' after an object key")?;
                        self.ws();
                        self.value(depth + 1)?;
                        n += 1;
                        self.ws();
                        match self.bump() {
                            Some(b',') => {}
                            Some(b'}') => break,
                            _ => return Err(self.error("expected ',' or '}' in an object")),
                        }
                    }
                }
                self.out.close_map(at, n)
            }
            _ => Err(self.error("expected a value")),
        }
    }

    fn nest(&self, depth: usize) -> Result<(), DecodeError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(&format!("a value nests containers deeper than {MAX_DEPTH}")));
        }
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), DecodeError> {
        if self.doc[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.error("expected a value"))
        }
    }

    /// A number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Result<Number, DecodeError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.bump() {
            Some(b'0') => {}
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("expected a number")),
        }
        let int_end = self.pos;
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            integer = false;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            integer = false;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.some_digits()?;
        }
        // More than 16 digits is beyond 2^53 − 1 (16 digits) anyway, and 16 fit an i64.
        if integer && int_end - int_start <= 16 {
            let v = self.doc[int_start..int_end].iter().fold(0i64, |v, &d| v * 10 + i64::from(d - b'0'));
            if v <= MAX_SAFE {
                return Ok(Number::Int(if negative { -v } else { v }));
            }
        }
        // ASCII by construction.
        let text = std::str::from_utf8(&self.doc[start..self.pos]).unwrap_or_default();
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Number::Float(v)),
            _ => Err(self.error(&format!("the number {text} is out of the range of a float64"))),
        }
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn some_digits(&mut self) -> Result<(), DecodeError> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            return Err(self.error("expected a digit in a number"));
        }
        Ok(())
    }

    /// Parses a string: `Some(range)` of the document when it has no escapes (the common
    /// case, copied once), else `None` with its text in `self.text`. Either stays within what
    /// the output can still take: as many bytes for a value, half as many for a key (whose
    /// characters become one byte each from up to two). The text is valid UTF-8.
    fn string(&mut self, key: bool) -> Result<Option<(usize, usize)>, DecodeError> {
        self.pos += 1; // the opening quote
        let first = self.pos;
        let mut escaped = false;
        loop {
            let run = self.pos;
            let rest = &self.doc[run..];
            self.pos += rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).unwrap_or(rest.len());
            let chunk = &self.doc[run..self.pos];
            if !valid_utf8(chunk) {
                return Err(self.error("a string is not valid UTF-8"));
            }
            let len = if escaped { self.text.len() } else { 0 } + chunk.len();
            self.out.room(if key { len / 2 } else { len })?;
            let end = self.pos;
            match self.bump() {
                Some(b'"') if !escaped => return Ok(Some((first, end))),
                Some(b'"') => {
                    self.text.extend_from_slice(chunk);
                    return Ok(None);
                }
                Some(b'\\') => {
                    if !escaped {
                        self.text.clear();
                        escaped = true;
                    }
                    self.text.extend_from_slice(chunk);
                    self.escape()?;
                }
                Some(_) => return Err(self.error("a control character inside a string must be escaped")),
                None => return Err(self.error("a string is not terminated")),
            }
        }
    }

    fn escape(&mut self) -> Result<(), DecodeError> {
        let c = match self.bump() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let high = self.hex4()?;
                let code = match high {
                    0xd800..=0xdbff => {
                        if self.bump() != Some(b'\\') || self.bump() != Some(b'u') {
                            return Err(self.error("a lone surrogate escape in a string"));
                        }
                        let low = self.hex4()?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return Err(self.error("a lone surrogate escape in a string"));
                        }
                        0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00)
                    }
                    0xdc00..=0xdfff => return Err(self.error("a lone surrogate escape in a string")),
                    _ => high,
                };
                char::from_u32(code).ok_or_else(|| self.error("an invalid escape in a string"))?
            }
            _ => return Err(self.error("an invalid escape in a string")),
        };
        let mut buf = [0u8; 4];
        self.text.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, DecodeError> {
        let mut v = 0;
        for _ in 0..4 {
            let d = match self.bump() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.error("an invalid \\u escape in a string")),
            };
            v = v * 16 + u32::from(d);
        }
        Ok(v)
    }
}

/// Rewrites UTF-8 text of characters U+0000 to U+00FF in place as one byte per character;
/// returns the byte length, or `None` when a character is above U+00FF.
fn latin1(text: &mut [u8]) -> Option<usize> {
    let mut n = 0;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b < 0x80 {
            text[n] = b;
            i += 1;
        } else if b & 0xe0 == 0xc0 && b <= 0xc3 {
            // Two-byte sequences with a lead of 0xc2 or 0xc3 are U+0080 to U+00FF (0xc0 and
            // 0xc1 never occur in valid UTF-8).
            text[n] = (b << 6) | (text[i + 1] & 0x3f);
            i += 2;
        } else {
            return None;
        }
        n += 1;
    }
    Some(n)
}
