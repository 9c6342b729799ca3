//! Chunks: the unit the stream log stores. One redb value holds a run of consecutive records
//! of one partition, so a batch costs one B-tree insert per chunk instead of one per record.
//!
//! Layout (version 1): `version: u8`, `count: u32` (little endian, at least 1), then `count`
//! records, each `key len: varint, key, value len: varint, value, timestamp: zigzag varint`
//! (the old one-record-per-value encoding, concatenated). The count is fixed-width so an open
//! chunk is patched in place as it grows. A chunk holds at most [`MAX_CHUNK_RECORDS`] records
//! and, unless its one record is larger, at most [`MAX_CHUNK_BYTES`] bytes: a reader of one
//! record never walks more than that, and a chunk fits a 32 KiB redb page.
//!
//! A stored value of the log or of staging is either such a chunk (*inline*) or a *reference*
//! (version 2) to a chunk stored once in the bodies table (`weir.log_bodies`), so a commit
//! moves 17 bytes instead of copying the chunk: `version: u8 = 2`, `count: u32`, `body id:
//! u64`, `body len: u32` (little endian, exactly [`REF_LEN`] bytes). The body is a version-1
//! chunk whose header count and length must equal the reference's.

use std::collections::BTreeMap;

use super::MAX_PARTITIONS;
use crate::codec::{CodecError, Reader, encode_record_parts, read_record, record_len_bound};

pub(crate) const VERSION: u8 = 1;
/// The version byte of a reference to a chunk body.
pub(crate) const REF_VERSION: u8 = 2;
/// Bytes of a reference: version, count, body id, body length.
pub(crate) const REF_LEN: usize = 17;
/// Version byte and count.
pub(crate) const HEADER: usize = 5;
/// The fewest bytes one encoded record takes (empty key and value, a one-byte timestamp).
const MIN_RECORD_BYTES: usize = 3;
/// The most records in one chunk.
pub const MAX_CHUNK_RECORDS: u32 = 1024;
/// The most bytes of a chunk of several records: a 32 KiB redb leaf with room for its header
/// and the key.
pub const MAX_CHUNK_BYTES: usize = 32 * 1024 - 512;

/// The chunks of one partition being built.
#[derive(Debug, Default)]
pub(crate) struct PartChunks {
    /// Every chunk but the last is full; each is valid (its count patched) at all times.
    chunks: Vec<Vec<u8>>,
    /// Records in the last chunk.
    open: u32,
}

impl PartChunks {
    /// Appends a record; returns the bytes the encoding grew by.
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8], timestamp: i64) -> usize {
        let bound = record_len_bound(key.len(), value.len());
        let full = match self.chunks.last() {
            None => true,
            Some(last) => self.open >= MAX_CHUNK_RECORDS || last.len() + bound > MAX_CHUNK_BYTES,
        };
        if full {
            let mut chunk = Vec::with_capacity((HEADER + bound).max(MAX_CHUNK_BYTES.min(16 * bound)));
            chunk.push(VERSION);
            chunk.extend_from_slice(&[0; 4]);
            self.chunks.push(chunk);
            self.open = 0;
        }
        let chunk = self.chunks.last_mut().expect("a chunk is open");
        let before = chunk.len();
        encode_record_parts(chunk, key, value, timestamp);
        self.open += 1;
        chunk[1..HEADER].copy_from_slice(&self.open.to_le_bytes());
        chunk.len() - before + if full { HEADER } else { 0 }
    }

    /// The encoded chunks with their record counts, in order.
    pub(crate) fn chunks(&self) -> impl Iterator<Item = (&[u8], u32)> {
        let last = self.chunks.len().saturating_sub(1);
        self.chunks
            .iter()
            .enumerate()
            .map(move |(i, c)| (c.as_slice(), if i == last { self.open } else { count_unchecked(c) }))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

fn count_unchecked(chunk: &[u8]) -> u32 {
    u32::from_le_bytes([chunk[1], chunk[2], chunk[3], chunk[4]])
}

/// Records encoded into chunks per partition, for [`Store::stage_buffer`] and
/// [`Store::append_buffer`]: a sink encodes each record once, straight from its batch,
/// instead of building a [`LogRecord`] per record.
///
/// [`Store::stage_buffer`]: crate::Store::stage_buffer
/// [`Store::append_buffer`]: crate::Store::append_buffer
/// [`LogRecord`]: crate::LogRecord
#[derive(Debug, Default)]
pub struct ChunkBuffer {
    /// By partition, below [`MAX_PARTITIONS`].
    parts: Vec<PartChunks>,
    /// Partitions no stream has (refused when stored), kept without a slot for every
    /// partition below them.
    beyond: BTreeMap<u32, PartChunks>,
    bytes: usize,
    records: u64,
}

impl ChunkBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        ChunkBuffer::default()
    }

    /// Appends a record to `partition` (checked against the stream when stored).
    pub fn push(&mut self, partition: u32, key: &[u8], value: &[u8], timestamp: i64) {
        let part = if partition < MAX_PARTITIONS {
            let index = partition as usize;
            if index >= self.parts.len() {
                self.parts.resize_with(index + 1, PartChunks::default);
            }
            &mut self.parts[index]
        } else {
            self.beyond.entry(partition).or_default()
        };
        self.bytes += part.push(key, value, timestamp);
        self.records += 1;
    }

    /// Encoded bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Records held.
    pub fn len(&self) -> u64 {
        self.records
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Drops every record.
    pub fn clear(&mut self) {
        self.parts.clear();
        self.beyond.clear();
        self.bytes = 0;
        self.records = 0;
    }

    /// The partitions that hold records, with their chunks.
    pub(crate) fn partitions(&self) -> impl Iterator<Item = (u32, &PartChunks)> + Clone {
        let below = self.parts.iter().enumerate().map(|(i, p)| (i as u32, p));
        below.chain(self.beyond.iter().map(|(i, p)| (*i, p))).filter(|(_, p)| !p.is_empty())
    }
}

/// A walk over the records of a stored chunk; every read is bounds-checked.
pub(crate) struct ChunkRecords<'a> {
    reader: Reader<'a>,
    left: u32,
}

/// The record count of a stored chunk, from its header alone.
pub(crate) fn chunk_count(bytes: &[u8]) -> Result<u32, CodecError> {
    if bytes.len() < HEADER {
        return Err(CodecError::ShortLogChunk(bytes.len()));
    }
    if bytes[0] != VERSION {
        return Err(CodecError::UnknownVersion { what: "chunk", version: bytes[0] });
    }
    match count_unchecked(bytes) {
        0 => Err(CodecError::EmptyLogChunk),
        count => Ok(count),
    }
}

impl<'a> ChunkRecords<'a> {
    /// Opens a stored chunk (checks its header).
    pub(crate) fn new(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let left = chunk_count(bytes)?;
        Ok(ChunkRecords { reader: Reader::new(&bytes[HEADER..]), left })
    }

    /// Its record count.
    pub(crate) fn count(&self) -> u32 {
        self.left
    }

    /// The next record, `None` after the last (then the chunk must have been used up).
    #[allow(clippy::type_complexity)]
    #[inline]
    pub(crate) fn next_record(&mut self) -> Result<Option<(&'a [u8], &'a [u8], i64)>, CodecError> {
        if self.left == 0 {
            self.reader.finish()?;
            return Ok(None);
        }
        self.left -= 1;
        read_record(&mut self.reader).map(Some)
    }
}

/// A reference to a chunk body: what a log or staged value of version 2 holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyRef {
    /// Records in the body; places the offsets of everything after it.
    pub(crate) count: u32,
    /// Its key in the bodies table (with the stream's name).
    pub(crate) id: u64,
    /// The body's length in bytes.
    pub(crate) len: u32,
}

impl BodyRef {
    /// A reference to `body`, a chunk of `count` records stored under `id`; `None` for a body
    /// of 4 GiB or more.
    pub(crate) fn to(body: &[u8], count: u32, id: u64) -> Option<Self> {
        Some(BodyRef { count, id, len: u32::try_from(body.len()).ok()? })
    }

    pub(crate) fn encode(&self) -> [u8; REF_LEN] {
        let mut out = [0; REF_LEN];
        out[0] = REF_VERSION;
        out[1..5].copy_from_slice(&self.count.to_le_bytes());
        out[5..13].copy_from_slice(&self.id.to_le_bytes());
        out[13..17].copy_from_slice(&self.len.to_le_bytes());
        out
    }

    /// Reads a reference, checking its layout and that its count and length are possible: 1 to
    /// [`MAX_CHUNK_RECORDS`] records of at least [`MIN_RECORD_BYTES`] each, and, for more than
    /// one record, at most [`MAX_CHUNK_BYTES`].
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
        if bytes.len() != REF_LEN || bytes[0] != REF_VERSION {
            return Err(CodecError::NotAReference(bytes.len()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let id = u64::from_le_bytes(bytes[5..13].try_into().expect("8 bytes"));
        let r = BodyRef { count: u32_at(1), id, len: u32_at(13) };
        if !(1..=MAX_CHUNK_RECORDS).contains(&r.count) {
            return Err(CodecError::ReferenceCount(r.count));
        }
        let len = r.len as usize;
        if len < HEADER + MIN_RECORD_BYTES * r.count as usize || (r.count > 1 && len > MAX_CHUNK_BYTES) {
            return Err(CodecError::ReferenceLength { len, count: r.count });
        }
        Ok(r)
    }

    /// Checks that `body` is the chunk this refers to: its length and header count (the
    /// records themselves are walked, bounds-checked, by whoever reads them).
    pub(crate) fn check_body(&self, body: &[u8]) -> Result<(), CodecError> {
        if body.len() != self.len as usize {
            return Err(CodecError::BodyLength { id: self.id, len: body.len(), expected: self.len });
        }
        let count = chunk_count(body)?;
        if count != self.count {
            return Err(CodecError::BodyCount { id: self.id, count, expected: self.count });
        }
        Ok(())
    }
}

/// What a stored log or staged value is.
pub(crate) enum Stored<'a> {
    /// A chunk (checked when opened with [`ChunkRecords::new`]).
    Inline(&'a [u8]),
    /// A checked reference to a body.
    Ref(BodyRef),
}

/// Tells an inline chunk from a reference (which is decoded and checked).
pub(crate) fn stored(bytes: &[u8]) -> Result<Stored<'_>, CodecError> {
    match bytes.first() {
        Some(&REF_VERSION) => BodyRef::decode(bytes).map(Stored::Ref),
        _ => Ok(Stored::Inline(bytes)),
    }
}

/// Walks every record of a stored chunk (no copies); returns its record count.
pub(crate) fn validate(bytes: &[u8]) -> Result<u32, CodecError> {
    let mut records = ChunkRecords::new(bytes)?;
    let count = records.count();
    while records.next_record()?.is_some() {}
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_at_their_bounds_and_walk_back() {
        let mut buffer = ChunkBuffer::new();
        for i in 0..3000u32 {
            buffer.push(1, b"", &i.to_le_bytes(), i64::from(i) - 5);
        }
        let big = vec![7u8; 100_000];
        buffer.push(0, b"k", &big, 1);
        buffer.push(0, b"k", b"small", 2);
        let parts: Vec<_> = buffer.partitions().collect();
        assert_eq!(parts.len(), 2);
        let counts: Vec<u32> = parts[1].1.chunks().map(|(_, n)| n).collect();
        assert_eq!(counts, vec![1024, 1024, 952], "split at the record bound");
        let sizes: Vec<(usize, u32)> = parts[0].1.chunks().map(|(c, n)| (c.len(), n)).collect();
        assert!(sizes[0].0 > 100_000 && sizes[0].1 == 1, "a large record is a chunk of its own");
        assert_eq!(sizes[1].1, 1);
        let total: usize = buffer.partitions().flat_map(|(_, p)| p.chunks()).map(|(c, _)| c.len()).sum();
        assert_eq!(buffer.bytes(), total);
        assert_eq!(buffer.len(), 3002);
        let mut next = 0u32;
        for (chunk, count) in parts[1].1.chunks() {
            assert_eq!(validate(chunk).unwrap(), count);
            let mut records = ChunkRecords::new(chunk).unwrap();
            while let Some((key, value, ts)) = records.next_record().unwrap() {
                assert_eq!((key, value, ts), (&b""[..], &next.to_le_bytes()[..], i64::from(next) - 5));
                next += 1;
            }
        }
        assert_eq!(next, 3000);
        // Byte-bounded: records of 1 KiB fill a chunk up to the byte bound.
        let mut part = PartChunks::default();
        for _ in 0..100 {
            part.push(b"", &[1; 1024], 0);
        }
        assert!(part.chunks().all(|(c, _)| c.len() <= MAX_CHUNK_BYTES));
        assert_eq!(part.chunks().next().unwrap().1, 31);
    }

    #[test]
    fn damaged_chunks_are_errors() {
        let mut part = PartChunks::default();
        part.push(b"key", b"value", 3);
        part.push(b"", b"v2", 4);
        let good = part.chunks().next().unwrap().0.to_vec();
        assert_eq!(validate(&good).unwrap(), 2);
        for cut in 0..good.len() {
            assert!(validate(&good[..cut]).is_err(), "truncated at {cut}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(validate(&longer).is_err(), "trailing bytes");
        let mut version = good.clone();
        version[0] = 2;
        assert!(validate(&version).unwrap_err().to_string().contains("version"));
        let mut zero = good.clone();
        zero[1..5].copy_from_slice(&0u32.to_le_bytes());
        assert!(validate(&zero).is_err());
        let mut more = good;
        more[1..5].copy_from_slice(&3u32.to_le_bytes());
        assert!(validate(&more).is_err(), "a count above the records");
    }

    #[test]
    fn references_round_trip_and_damaged_ones_are_errors() {
        let mut part = PartChunks::default();
        part.push(b"key", b"value", 3);
        part.push(b"", b"v2", 4);
        let (body, count) = part.chunks().next().unwrap();
        let r = BodyRef::to(body, count, 0x0102_0304_0506_0708).unwrap();
        let bytes = r.encode();
        assert_eq!(BodyRef::decode(&bytes).unwrap(), r);
        assert!(matches!(stored(&bytes).unwrap(), Stored::Ref(got) if got == r));
        assert!(matches!(stored(body).unwrap(), Stored::Inline(b) if b == body));
        r.check_body(body).unwrap();
        for cut in 0..REF_LEN {
            assert!(stored(&bytes[..cut]).is_err() || cut == 0, "truncated at {cut}");
        }
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(stored(&longer).is_err(), "trailing bytes");
        let with = |count: u32, len: u32| BodyRef { count, id: 1, len }.encode();
        for (count, len) in
            [(0, 10), (MAX_CHUNK_RECORDS + 1, 40_000), (1, 7), (2, 10), (2, MAX_CHUNK_BYTES as u32 + 1)]
        {
            assert!(BodyRef::decode(&with(count, len)).is_err(), "count {count}, len {len}");
        }
        assert!(BodyRef::decode(&with(1, 100_000)).is_ok(), "one large record");
        assert!(BodyRef::decode(&with(MAX_CHUNK_RECORDS, MAX_CHUNK_BYTES as u32)).is_ok());
        // The body must match the reference.
        assert!(BodyRef { count: 3, ..r }.check_body(body).unwrap_err().to_string().contains("holds 2"));
        assert!(BodyRef { len: r.len + 1, ..r }.check_body(body).unwrap_err().to_string().contains("bytes"));
        let mut other = body.to_vec();
        other[0] = REF_VERSION;
        assert!(r.check_body(&other).unwrap_err().to_string().contains("version"));
    }
}
