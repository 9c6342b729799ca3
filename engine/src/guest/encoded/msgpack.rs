//! The MessagePack side of the transcoders: a token reader over one record's value and a
//! compact writer into an output batch that keeps the batch within its output limit.

use super::super::bindings::{Batch, Entry};
use super::{DecodeError, ENTRY_COST};

/// Why a record's value does not read as MessagePack a document can carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ReadError {
    #[error("the value is truncated at byte {0}")]
    Truncated(usize),
    #[error("the value holds the reserved marker 0xc1 at byte {0}")]
    Reserved(usize),
    /// An ext type (including the timestamp ext), by its marker.
    #[error("the value holds an ext type (marker {0:#04x}), which has no equivalent")]
    Ext(u8),
}

/// One MessagePack token; containers give their item count (a map's pairs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Token<'a> {
    Nil,
    Bool(bool),
    /// A non-negative integer.
    Uint(u64),
    /// A negative integer.
    Int(i64),
    F32(f32),
    F64(f64),
    /// String bytes, not yet checked to be UTF-8.
    Str(&'a [u8]),
    Bin(&'a [u8]),
    Array(u32),
    Map(u32),
}

/// Reads tokens from one record's value bytes.
pub(super) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos == self.data.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        if n > self.data.len() - self.pos {
            return Err(ReadError::Truncated(self.pos));
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn len(&mut self, size: usize) -> Result<usize, ReadError> {
        Ok(match size {
            1 => self.array::<1>()?[0] as usize,
            2 => u16::from_be_bytes(self.array()?) as usize,
            _ => u32::from_be_bytes(self.array()?) as usize,
        })
    }

    /// The next token. Ext types (including the timestamp ext) and the reserved marker are
    /// errors: no document format carries them.
    pub(super) fn next(&mut self) -> Result<Token<'a>, ReadError> {
        let marker = self.array::<1>()?[0];
        Ok(match marker {
            0x00..=0x7f => Token::Uint(u64::from(marker)),
            0xe0..=0xff => Token::Int(i64::from(marker as i8)),
            0x80..=0x8f => Token::Map(u32::from(marker & 0x0f)),
            0x90..=0x9f => Token::Array(u32::from(marker & 0x0f)),
            0xa0..=0xbf => Token::Str(self.take(usize::from(marker & 0x1f))?),
            0xc0 => Token::Nil,
            0xc2 => Token::Bool(false),
            0xc3 => Token::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len(1 << (marker - 0xc4))?;
                Token::Bin(self.take(n)?)
            }
            0xca => Token::F32(f32::from_be_bytes(self.array()?)),
            0xcb => Token::F64(f64::from_be_bytes(self.array()?)),
            0xcc => Token::Uint(u64::from(self.array::<1>()?[0])),
            0xcd => Token::Uint(u64::from(u16::from_be_bytes(self.array()?))),
            0xce => Token::Uint(u64::from(u32::from_be_bytes(self.array()?))),
            0xcf => Token::Uint(u64::from_be_bytes(self.array()?)),
            0xd0 => Token::Int(i64::from(self.array::<1>()?[0] as i8)),
            0xd1 => Token::Int(i64::from(i16::from_be_bytes(self.array()?))),
            0xd2 => Token::Int(i64::from(i32::from_be_bytes(self.array()?))),
            0xd3 => Token::Int(i64::from_be_bytes(self.array()?)),
            0xd9..=0xdb => {
                let n = self.len(1 << (marker - 0xd9))?;
                Token::Str(self.take(n)?)
            }
            0xdc | 0xdd => Token::Array(self.len(2 << (marker - 0xdc))? as u32),
            0xde | 0xdf => Token::Map(self.len(2 << (marker - 0xde))? as u32),
            0xc1 => return Err(ReadError::Reserved(self.pos - 1)),
            // 0xc7..=0xc9 ext 8/16/32, 0xd4..=0xd8 fixext.
            _ => return Err(ReadError::Ext(marker)),
        })
    }
}

/// A MessagePack batch (or state delta, `E = StateEntry`) under construction, kept within
/// `max` bytes (data + 16 per entry, the record being written included) by checking every
/// write before it is made.
pub(super) struct Out<E = Entry> {
    pub(super) data: Vec<u8>,
    entries: Vec<E>,
    max: usize,
    /// How long `data` may grow: `max` less the cost of the entries, the current one
    /// included (0 when even they do not fit).
    data_limit: usize,
    /// Start of the record being written.
    record_start: usize,
}

impl<E> Out<E> {
    /// An empty batch of at most `max` bytes, with room reserved for `expected` data bytes
    /// (at most `max`).
    pub(super) fn new(max: usize, expected: usize) -> Self {
        let data = Vec::with_capacity(expected.min(max));
        let mut out = Self { data, entries: Vec::new(), max, data_limit: 0, record_start: 0 };
        out.data_limit = out.max.saturating_sub(ENTRY_COST);
        out
    }

    /// Fails with `TooLarge` unless `extra` more bytes fit.
    /// (Also when `extra` is 0: an entry of no bytes, a state delete of an empty key, still
    /// costs its 16 bytes, which earlier data may have taken.)
    pub(super) fn room(&self, extra: usize) -> Result<(), DecodeError> {
        let end = self.data.len().checked_add(extra);
        if end.is_some_and(|end| end <= self.data_limit) && self.entries_fit() {
            Ok(())
        } else {
            Err(DecodeError::TooLarge)
        }
    }

    /// Whether the entries so far and the one being written fit at all.
    fn entries_fit(&self) -> bool {
        (self.entries.len() + 1).saturating_mul(ENTRY_COST) <= self.max
    }

    pub(super) fn put(&mut self, bytes: &[u8]) -> Result<(), DecodeError> {
        self.room(bytes.len())?;
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    /// Starts a record whose key is `key`; its value is written next.
    pub(super) fn start_record(&mut self, key: &[u8]) -> Result<(), DecodeError> {
        self.record_start = self.data.len();
        self.put(key)
    }

    /// Ends the record started last: its value is everything written after the key;
    /// `entry` makes its entry from the key and value lengths.
    pub(super) fn end_entry(
        &mut self,
        key_len: usize,
        entry: impl FnOnce(u32, u32) -> E,
    ) -> Result<(), DecodeError> {
        let value_len = self.data.len() - self.record_start - key_len;
        let key_len = u32::try_from(key_len).map_err(|_| DecodeError::TooLarge)?;
        let value_len = u32::try_from(value_len).map_err(|_| DecodeError::TooLarge)?;
        self.room(0)?;
        self.entries.push(entry(key_len, value_len));
        self.data_limit = self.data_limit.saturating_sub(ENTRY_COST);
        Ok(())
    }

    /// The data and entries written.
    pub(super) fn into_parts(self) -> (Vec<u8>, Vec<E>) {
        (self.data, self.entries)
    }

    pub(super) fn nil(&mut self) -> Result<(), DecodeError> {
        self.put(&[0xc0])
    }

    pub(super) fn bool(&mut self, b: bool) -> Result<(), DecodeError> {
        self.put(&[if b { 0xc3 } else { 0xc2 }])
    }

    /// The smallest encoding of `v`, which must lie within i64 ∪ u64 (callers check).
    pub(super) fn int(&mut self, v: i128) -> Result<(), DecodeError> {
        let mut buf = [0u8; 9];
        let n = int_bytes(v, &mut buf);
        self.put(&buf[..n])
    }

    pub(super) fn f64(&mut self, v: f64) -> Result<(), DecodeError> {
        let mut buf = [0xcb; 9];
        buf[1..].copy_from_slice(&v.to_be_bytes());
        self.put(&buf)
    }

    pub(super) fn str(&mut self, s: &[u8]) -> Result<(), DecodeError> {
        self.sized(s, [Some((0xa0, 31)), Some((0xd9, 0xff)), Some((0xda, 0xffff)), Some((0xdb, 0))])
    }

    pub(super) fn bin(&mut self, b: &[u8]) -> Result<(), DecodeError> {
        self.sized(b, [None, Some((0xc4, 0xff)), Some((0xc5, 0xffff)), Some((0xc6, 0))])
    }

    /// A header and `bytes`, checked against the limit once.
    fn sized(&mut self, bytes: &[u8], forms: [Option<(u8, usize)>; 4]) -> Result<(), DecodeError> {
        let mut buf = [0u8; 5];
        let len = header_bytes(bytes.len(), forms, &mut buf).ok_or(DecodeError::TooLarge)?;
        self.room(len + bytes.len())?;
        if len == 1 {
            self.data.push(buf[0]);
        } else {
            self.data.extend_from_slice(&buf[..len]);
        }
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    pub(super) fn array(&mut self, n: usize) -> Result<(), DecodeError> {
        self.header(n, ARRAY)
    }

    pub(super) fn map(&mut self, n: usize) -> Result<(), DecodeError> {
        self.header(n, MAP)
    }

    /// Reserves one byte for a container header whose item count is not known yet; returns
    /// where it is, for [`Out::close_array`] / [`Out::close_map`].
    pub(super) fn open(&mut self) -> Result<usize, DecodeError> {
        self.put(&[0])?;
        Ok(self.data.len() - 1)
    }

    pub(super) fn close_array(&mut self, at: usize, n: usize) -> Result<(), DecodeError> {
        self.patch(at, n, ARRAY)
    }

    pub(super) fn close_map(&mut self, at: usize, n: usize) -> Result<(), DecodeError> {
        self.patch(at, n, MAP)
    }

    /// Replaces the byte reserved at `at` with the header of `n` items, moving what follows
    /// when the header is longer (only for containers of more than 15 items).
    fn patch(&mut self, at: usize, n: usize, forms: [Option<(u8, usize)>; 4]) -> Result<(), DecodeError> {
        let mut buf = [0u8; 5];
        let len = header_bytes(n, forms, &mut buf).ok_or(DecodeError::TooLarge)?;
        if len > 1 {
            self.room(len - 1)?;
            let old = self.data.len();
            self.data.resize(old + len - 1, 0);
            self.data.copy_within(at + 1..old, at + len);
        }
        self.data[at..at + len].copy_from_slice(&buf[..len]);
        Ok(())
    }

    /// Writes the smallest of the header forms that fits `n`: fix (marker | n), 8-, 16-
    /// and 32-bit lengths, each `(marker, largest n)` when the type has it.
    fn header(&mut self, n: usize, forms: [Option<(u8, usize)>; 4]) -> Result<(), DecodeError> {
        let mut buf = [0u8; 5];
        let len = header_bytes(n, forms, &mut buf).ok_or(DecodeError::TooLarge)?;
        self.put(&buf[..len])
    }
}

impl Out<Entry> {
    /// Ends the record started last (see [`Out::end_entry`]).
    pub(super) fn end_record(&mut self, key_len: usize, timestamp: i64) -> Result<(), DecodeError> {
        self.end_entry(key_len, |key_len, value_len| Entry { key_len, value_len, timestamp })
    }

    pub(super) fn finish(self) -> Batch {
        Batch { data: self.data, entries: self.entries }
    }
}

const ARRAY: [Option<(u8, usize)>; 4] = [Some((0x90, 15)), None, Some((0xdc, 0xffff)), Some((0xdd, 0))];
const MAP: [Option<(u8, usize)>; 4] = [Some((0x80, 15)), None, Some((0xde, 0xffff)), Some((0xdf, 0))];

/// The header of `n` items in `buf`, returning its length; `None` beyond 32 bits.
#[inline]
fn header_bytes(n: usize, forms: [Option<(u8, usize)>; 4], buf: &mut [u8; 5]) -> Option<usize> {
    let [fix, b8, b16, b32] = forms;
    if let Some((marker, _)) = fix.filter(|&(_, max)| n <= max) {
        buf[0] = marker | n as u8;
        return Some(1);
    }
    if let Some((marker, _)) = b8.filter(|&(_, max)| n <= max) {
        buf[..2].copy_from_slice(&[marker, n as u8]);
        return Some(2);
    }
    if let Some((marker, _)) = b16.filter(|&(_, max)| n <= max) {
        buf[0] = marker;
        buf[1..3].copy_from_slice(&(n as u16).to_be_bytes());
        return Some(3);
    }
    let (marker, _) = b32?;
    buf[0] = marker;
    buf[1..].copy_from_slice(&u32::try_from(n).ok()?.to_be_bytes());
    Some(5)
}

/// The compact encoding of an integer within i64 ∪ u64 into `buf`, returning its length.
pub(super) fn int_bytes(v: i128, buf: &mut [u8; 9]) -> usize {
    if v >= 0 {
        let v = v as u64;
        if v < 0x80 {
            buf[0] = v as u8;
            1
        } else if v <= 0xff {
            buf[..2].copy_from_slice(&[0xcc, v as u8]);
            2
        } else if v <= 0xffff {
            buf[0] = 0xcd;
            buf[1..3].copy_from_slice(&(v as u16).to_be_bytes());
            3
        } else if v <= 0xffff_ffff {
            buf[0] = 0xce;
            buf[1..5].copy_from_slice(&(v as u32).to_be_bytes());
            5
        } else {
            buf[0] = 0xcf;
            buf[1..].copy_from_slice(&v.to_be_bytes());
            9
        }
    } else {
        let v = v as i64;
        if v >= -32 {
            buf[0] = v as u8;
            1
        } else if v >= i64::from(i8::MIN) {
            buf[..2].copy_from_slice(&[0xd0, v as u8]);
            2
        } else if v >= i64::from(i16::MIN) {
            buf[0] = 0xd1;
            buf[1..3].copy_from_slice(&(v as i16).to_be_bytes());
            3
        } else if v >= i64::from(i32::MIN) {
            buf[0] = 0xd2;
            buf[1..5].copy_from_slice(&(v as i32).to_be_bytes());
            5
        } else {
            buf[0] = 0xd3;
            buf[1..].copy_from_slice(&v.to_be_bytes());
            9
        }
    }
}

/// Whether `s` is valid UTF-8 (ASCII checked first: it is the common case and much faster).
pub(super) fn valid_utf8(s: &[u8]) -> bool {
    s.is_ascii() || std::str::from_utf8(s).is_ok()
}

/// Whether `v` fits a MessagePack integer (i64 or u64).
pub(super) fn int_fits(v: i128) -> bool {
    (i128::from(i64::MIN)..=i128::from(u64::MAX)).contains(&v)
}
