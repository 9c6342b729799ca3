//! Compact binary encodings: state chunks, manifests and log records (the stream log's
//! chunks of records are in `stream::chunk`).
//!
//! Chunks and manifests end with the XXH3-64 of everything before it, so a damaged value is
//! reported as [`StoreError::Corrupt`](crate::StoreError::Corrupt) instead of being restored wrongly.
//!
//! Chunk layout (version 1): `version: u8`, `state count: varint`, per state `len: varint,
//! utf-8 bytes`, `entry count: varint`, per entry `state index: varint, key len: varint, key,
//! tag: u8 (0 put, 1 delete)`, for a put `value len: varint, value`; then the checksum
//! (8 bytes, little endian).
//!
//! Manifest layout (version 2): `version: u8`, `operator count: varint`, per operator `len:
//! varint, utf-8 bytes`, `subtask count: varint`, per subtask `subtask: varint`, `scope count:
//! varint`, per scope `scope: varint, chunk count: varint, chunk ids: varint...`, then `blob
//! len: varint, blob`, `bytes_written: varint`, `compactions: varint`, `channel chunk count:
//! varint, chunk ids: varint...`; then the checksum. Version 1 is the same without the
//! channel chunks (it decodes with none).

use std::collections::{BTreeMap, HashMap};

use xxhash_rust::xxh3::xxh3_64;

#[cfg(test)]
use crate::manifest::StateEntry;
use crate::manifest::{Manifest, SubtaskState};

/// What is wrong with stored bytes that do not decode (a chunk, a manifest, a log chunk or
/// its reference); [`StoreError::Corrupt`](crate::StoreError::Corrupt) carries it with what
/// was being read. Byte positions count from the start of the decoded body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CodecError {
    /// Shorter than the smallest possible value.
    #[error("{0} bytes is too short")]
    TooShort(usize),
    /// The trailing checksum does not match the bytes before it.
    #[error("checksum mismatch")]
    ChecksumMismatch,
    /// A 10-byte varint whose last byte holds more than 1 bit.
    #[error("varint overflow at byte {0}")]
    VarintOverflow(usize),
    /// The bytes end inside a varint.
    #[error("truncated varint at byte {0}")]
    TruncatedVarint(usize),
    /// A varint of more than 10 bytes.
    #[error("varint too long at byte {0}")]
    VarintTooLong(usize),
    /// The bytes end where a byte was expected.
    #[error("truncated at byte {0}")]
    Truncated(usize),
    /// A number that must fit 32 bits does not.
    #[error("{0} does not fit 32 bits")]
    Over32Bits(u64),
    /// A length prefix longer than what is left.
    #[error("length {len} at byte {at} exceeds the {left} bytes left")]
    LengthPastEnd {
        /// The length read.
        len: u64,
        /// Where the bytes it announces start.
        at: usize,
        /// Bytes left there.
        left: usize,
    },
    /// A count of items that cannot fit in what is left.
    #[error("count {count} exceeds the {left} bytes left")]
    CountPastEnd {
        /// The count read.
        count: u64,
        /// Bytes left.
        left: usize,
    },
    /// A state or operator name that is not UTF-8.
    #[error("a name is not valid UTF-8")]
    NameNotUtf8,
    /// Bytes left over after the last item.
    #[error("{0} unexpected bytes at the end")]
    TrailingBytes(usize),
    /// A version byte this build does not read.
    #[error("unknown {what} version {version}")]
    UnknownVersion {
        /// "chunk" or "manifest".
        what: &'static str,
        /// The version byte.
        version: u8,
    },
    /// An entry names a state the chunk does not list.
    #[error("state index {index} out of range ({states} states)")]
    StateIndex {
        /// The index read.
        index: u64,
        /// The chunk's state count.
        states: usize,
    },
    /// An entry tag other than put or delete.
    #[error("unknown entry tag {0}")]
    UnknownTag(u8),
    /// A log chunk shorter than its header.
    #[error("{0} bytes is too short for a chunk")]
    ShortLogChunk(usize),
    /// A log chunk whose header counts no record.
    #[error("a chunk of 0 records")]
    EmptyLogChunk,
    /// A log value that looks like a chunk reference but is not one.
    #[error("{0} bytes is not a chunk reference")]
    NotAReference(usize),
    /// A chunk reference with an impossible record count.
    #[error("a chunk reference of {0} records")]
    ReferenceCount(u32),
    /// A chunk reference with a length impossible for its record count.
    #[error("a chunk reference of {len} bytes for {count} records")]
    ReferenceLength {
        /// The length it gives.
        len: usize,
        /// Its record count.
        count: u32,
    },
    /// A body whose length is not the one its reference gives.
    #[error("body {id} has {len} bytes, its reference says {expected}")]
    BodyLength {
        /// The body's id.
        id: u64,
        /// Its length.
        len: usize,
        /// The reference's length.
        expected: u32,
    },
    /// A body whose record count is not the one its reference gives.
    #[error("body {id} holds {count} records, its reference says {expected}")]
    BodyCount {
        /// The body's id.
        id: u64,
        /// Its header's count.
        count: u32,
        /// The reference's count.
        expected: u32,
    },
}

const CHUNK_VERSION: u8 = 1;
const MANIFEST_VERSION: u8 = 2;
/// Manifests written before channel state existed: no channel chunks per subtask.
const MANIFEST_VERSION_1: u8 = 1;
const TAG_PUT: u8 = 0;
const TAG_DELETE: u8 = 1;
const CHECKSUM_LEN: usize = 8;

/// Appends `value` as an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

fn seal(mut out: Vec<u8>) -> Vec<u8> {
    let sum = xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Checks the trailing checksum and returns the bytes before it.
fn unseal(bytes: &[u8]) -> Result<&[u8], CodecError> {
    if bytes.len() < CHECKSUM_LEN + 1 {
        return Err(CodecError::TooShort(bytes.len()));
    }
    let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
    let mut expected = [0u8; CHECKSUM_LEN];
    expected.copy_from_slice(sum);
    if xxh3_64(body) != u64::from_le_bytes(expected) {
        return Err(CodecError::ChecksumMismatch);
    }
    Ok(body)
}

/// A cursor over encoded bytes; every read is bounds-checked.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    /// One LEB128 varint (at most 10 bytes, the last at most 1).
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, CodecError> {
        let rest = &self.bytes[self.pos..];
        // Lengths below 128: one byte.
        if let Some(&byte) = rest.first()
            && byte < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(byte));
        }
        let mut value = 0u64;
        for (i, &byte) in rest.iter().take(10).enumerate() {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                if i == 9 && byte > 1 {
                    return Err(CodecError::VarintOverflow(self.pos + i));
                }
                self.pos += i + 1;
                return Ok(value);
            }
        }
        if rest.len() < 10 {
            Err(CodecError::TruncatedVarint(self.pos + rest.len()))
        } else {
            Err(CodecError::VarintTooLong(self.pos + 10))
        }
    }

    fn u8(&mut self) -> Result<u8, CodecError> {
        let byte = *self.bytes.get(self.pos).ok_or(CodecError::Truncated(self.pos))?;
        self.pos += 1;
        Ok(byte)
    }

    fn u32(&mut self) -> Result<u32, CodecError> {
        let value = self.varint()?;
        u32::try_from(value).map_err(|_| CodecError::Over32Bits(value))
    }

    #[inline]
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], CodecError> {
        let len = self.varint()?;
        let remaining = self.bytes.len() - self.pos;
        let len = usize::try_from(len)
            .ok()
            .filter(|len| *len <= remaining)
            .ok_or(CodecError::LengthPastEnd { len, at: self.pos, left: remaining })?;
        let bytes = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        Ok(bytes)
    }

    fn string(&mut self) -> Result<&'a str, CodecError> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).map_err(|_| CodecError::NameNotUtf8)
    }

    /// A count of items that each take at least one byte (guards allocations).
    fn count(&mut self) -> Result<usize, CodecError> {
        let count = self.varint()?;
        let remaining = self.bytes.len() - self.pos;
        usize::try_from(count)
            .ok()
            .filter(|count| *count <= remaining)
            .ok_or(CodecError::CountPastEnd { count, left: remaining })
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    pub(crate) fn finish(&self) -> Result<(), CodecError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(CodecError::TrailingBytes(self.bytes.len() - self.pos))
        }
    }
}

/// Builds chunks of at most about `max_bytes` each from a stream of entries.
pub(crate) struct ChunkEncoder {
    max_bytes: usize,
    states: Vec<String>,
    state_index: HashMap<String, u64>,
    states_len: usize,
    body: Vec<u8>,
    entries: u64,
    done: Vec<Vec<u8>>,
}

impl ChunkEncoder {
    pub(crate) fn new(max_bytes: usize) -> Self {
        ChunkEncoder {
            max_bytes: max_bytes.max(1),
            states: Vec::new(),
            state_index: HashMap::new(),
            states_len: 0,
            body: Vec::new(),
            entries: 0,
            done: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, state: &str, key: &[u8], value: Option<&[u8]>) {
        let entry_len = 4 + key.len() + value.map_or(0, <[u8]>::len) + 16;
        if self.entries > 0 && self.states_len + self.body.len() + entry_len > self.max_bytes {
            self.flush();
        }
        // Operators have a few states: a scan beats hashing the name for every entry.
        let found = if self.states.len() <= 8 {
            self.states.iter().position(|name| name == state).map(|index| index as u64)
        } else {
            self.state_index.get(state).copied()
        };
        let index = match found {
            Some(index) => index,
            None => {
                let index = self.states.len() as u64;
                self.states.push(state.to_owned());
                self.state_index.insert(state.to_owned(), index);
                self.states_len += state.len() + varint_len(state.len() as u64);
                index
            }
        };
        put_varint(&mut self.body, index);
        put_bytes(&mut self.body, key);
        match value {
            Some(value) => {
                self.body.push(TAG_PUT);
                put_bytes(&mut self.body, value);
            }
            None => self.body.push(TAG_DELETE),
        }
        self.entries += 1;
    }

    fn flush(&mut self) {
        if self.entries == 0 {
            return;
        }
        let mut out = Vec::with_capacity(
            self.states_len + self.body.len() + 2 * varint_len(self.entries) + 1 + CHECKSUM_LEN,
        );
        out.push(CHUNK_VERSION);
        put_varint(&mut out, self.states.len() as u64);
        for state in &self.states {
            put_bytes(&mut out, state.as_bytes());
        }
        put_varint(&mut out, self.entries);
        out.extend_from_slice(&self.body);
        self.done.push(seal(out));
        self.states.clear();
        self.state_index.clear();
        self.states_len = 0;
        self.body.clear();
        self.entries = 0;
    }

    /// The chunks completed so far, in push order (removed from the encoder), so that a
    /// long stream of entries can be written out without holding every chunk.
    pub(crate) fn take_done(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.done)
    }

    /// The encoded chunks, in push order (none when nothing was pushed).
    pub(crate) fn finish(mut self) -> Vec<Vec<u8>> {
        self.flush();
        self.done
    }
}

/// An entry as stored: (state index, key, value or `None` for a tombstone).
type RawEntry<'a> = (u32, &'a [u8], Option<&'a [u8]>);

/// A chunk whose checksum, version and state names were checked, positioned at its first
/// entry.
struct OpenChunk<'a> {
    states: Vec<&'a str>,
    entries: u64,
    reader: Reader<'a>,
}

impl<'a> OpenChunk<'a> {
    fn open(bytes: &'a [u8]) -> Result<Self, CodecError> {
        let body = unseal(bytes)?;
        let mut reader = Reader::new(body);
        let version = reader.u8()?;
        if version != CHUNK_VERSION {
            return Err(CodecError::UnknownVersion { what: "chunk", version });
        }
        let state_count = reader.count()?;
        let mut states = Vec::with_capacity(state_count);
        for _ in 0..state_count {
            states.push(reader.string()?);
        }
        let entries = reader.varint()?;
        Ok(OpenChunk { states, entries, reader })
    }

    /// The next entry: (state index, key, value or `None` for a tombstone).
    #[inline]
    fn entry(&mut self) -> Result<RawEntry<'a>, CodecError> {
        let index = self.reader.varint()?;
        let state = u32::try_from(index)
            .ok()
            .filter(|index| (*index as usize) < self.states.len())
            .ok_or(CodecError::StateIndex { index, states: self.states.len() })?;
        let key = self.reader.bytes()?;
        let value = match self.reader.u8()? {
            TAG_PUT => Some(self.reader.bytes()?),
            TAG_DELETE => None,
            tag => return Err(CodecError::UnknownTag(tag)),
        };
        Ok((state, key, value))
    }
}

/// Decodes a chunk and hands each entry, in order, to `apply(state, key, value)`.
pub(crate) fn decode_chunk(
    bytes: &[u8],
    mut apply: impl FnMut(&str, &[u8], Option<&[u8]>),
) -> Result<(), CodecError> {
    let mut chunk = OpenChunk::open(bytes)?;
    for _ in 0..chunk.entries {
        let (state, key, value) = chunk.entry()?;
        apply(chunk.states[state as usize], key, value);
    }
    chunk.reader.finish()
}

/// One entry of a chunk decoded in place: `state` indexes the chunk's state names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryRef<'a> {
    pub(crate) state: u32,
    pub(crate) key: &'a [u8],
    /// `None` for a tombstone.
    pub(crate) value: Option<&'a [u8]>,
}

/// Decodes a whole chunk without copying: returns its state names and appends its entries,
/// in order, to `out`. Nothing is appended when the chunk is damaged.
pub(crate) fn decode_chunk_refs<'a>(
    bytes: &'a [u8],
    out: &mut Vec<EntryRef<'a>>,
) -> Result<Vec<&'a str>, CodecError> {
    let mut chunk = OpenChunk::open(bytes)?;
    let start = out.len();
    // Each entry takes at least three bytes: a bound on the count that needs no trust.
    out.reserve((chunk.entries as usize).min(chunk.reader.rest().len() / 3));
    let result = (|| {
        for _ in 0..chunk.entries {
            let (state, key, value) = chunk.entry()?;
            out.push(EntryRef { state, key, value });
        }
        chunk.reader.finish()
    })();
    if let Err(detail) = result {
        out.truncate(start);
        return Err(detail);
    }
    Ok(chunk.states)
}

/// Decodes a chunk into owned entries.
#[cfg(test)]
pub(crate) fn decode_chunk_entries(bytes: &[u8]) -> Result<Vec<StateEntry>, CodecError> {
    let mut entries = Vec::new();
    decode_chunk(bytes, |state, key, value| {
        entries.push(StateEntry {
            state: state.to_owned(),
            key: key.to_vec(),
            value: value.map(<[u8]>::to_vec),
        });
    })?;
    Ok(entries)
}

/// Encodes a manifest (blobs stored as raw bytes).
pub(crate) fn encode_manifest(manifest: &Manifest) -> Vec<u8> {
    let mut out = vec![MANIFEST_VERSION];
    put_varint(&mut out, manifest.len() as u64);
    for (operator, subtasks) in manifest {
        put_bytes(&mut out, operator.as_bytes());
        put_varint(&mut out, subtasks.len() as u64);
        for (subtask, state) in subtasks {
            put_varint(&mut out, u64::from(*subtask));
            put_varint(&mut out, state.chains.len() as u64);
            for (scope, chain) in &state.chains {
                put_varint(&mut out, u64::from(*scope));
                put_varint(&mut out, chain.len() as u64);
                for chunk in chain {
                    put_varint(&mut out, *chunk);
                }
            }
            put_bytes(&mut out, &state.blob);
            put_varint(&mut out, state.bytes_written);
            put_varint(&mut out, u64::from(state.compactions));
            put_varint(&mut out, state.channel.len() as u64);
            for chunk in &state.channel {
                put_varint(&mut out, *chunk);
            }
        }
    }
    seal(out)
}

/// Decodes a manifest written by [`encode_manifest`] (or by the version before it).
pub(crate) fn decode_manifest(bytes: &[u8]) -> Result<Manifest, CodecError> {
    let body = unseal(bytes)?;
    let mut reader = Reader::new(body);
    let version = reader.u8()?;
    if version != MANIFEST_VERSION && version != MANIFEST_VERSION_1 {
        return Err(CodecError::UnknownVersion { what: "manifest", version });
    }
    let mut manifest = Manifest::new();
    for _ in 0..reader.count()? {
        let operator = reader.string()?.to_owned();
        let mut subtasks = BTreeMap::new();
        for _ in 0..reader.count()? {
            let subtask = reader.u32()?;
            let mut chains = BTreeMap::new();
            for _ in 0..reader.count()? {
                let scope = reader.u32()?;
                let len = reader.count()?;
                let mut chain = Vec::with_capacity(len);
                for _ in 0..len {
                    chain.push(reader.varint()?);
                }
                chains.insert(scope, chain);
            }
            let blob = reader.bytes()?.to_vec();
            let bytes_written = reader.varint()?;
            let compactions = reader.u32()?;
            let mut channel = Vec::new();
            if version >= MANIFEST_VERSION {
                let len = reader.count()?;
                channel.reserve(len);
                for _ in 0..len {
                    channel.push(reader.varint()?);
                }
            }
            subtasks.insert(subtask, SubtaskState { chains, blob, bytes_written, compactions, channel });
        }
        manifest.insert(operator, subtasks);
    }
    reader.finish()?;
    Ok(manifest)
}

/// Encodes a log record: key, value (length-prefixed), zigzag timestamp.
pub(crate) fn encode_record_parts(out: &mut Vec<u8>, key: &[u8], value: &[u8], timestamp: i64) {
    put_bytes(out, key);
    put_bytes(out, value);
    put_varint(out, zigzag(timestamp));
}

/// The most bytes [`encode_record_parts`] writes for a record of `key` and `value` bytes.
pub(crate) fn record_len_bound(key: usize, value: usize) -> usize {
    key + value + varint_len(key as u64) + varint_len(value as u64) + 10
}

/// Reads one record written by [`encode_record_parts`] from `reader`, borrowing its bytes.
#[inline]
pub(crate) fn read_record<'a>(reader: &mut Reader<'a>) -> Result<(&'a [u8], &'a [u8], i64), CodecError> {
    let key = reader.bytes()?;
    let value = reader.bytes()?;
    let timestamp = unzigzag(reader.varint()?);
    Ok((key, value, timestamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(state: &str, key: &[u8], value: Option<&[u8]>) -> StateEntry {
        StateEntry { state: state.to_owned(), key: key.to_vec(), value: value.map(<[u8]>::to_vec) }
    }

    #[test]
    fn varints_round_trip() {
        for value in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "{value}");
            assert_eq!(Reader::new(&out).varint().unwrap(), value);
        }
        for value in [0, 1, -1, i64::MIN, i64::MAX, 12345, -98765] {
            assert_eq!(unzigzag(zigzag(value)), value);
        }
    }

    #[test]
    fn chunk_round_trip_and_split() {
        let entries = vec![
            entry("count", b"a", Some(b"1")),
            entry("sum", b"a", Some(&[7; 300])),
            entry("count", b"b", None),
            entry("count", b"", Some(b"")),
        ];
        let mut encoder = ChunkEncoder::new(1 << 20);
        for e in &entries {
            encoder.push(&e.state, &e.key, e.value.as_deref());
        }
        let chunks = encoder.finish();
        assert_eq!(chunks.len(), 1);
        assert_eq!(decode_chunk_entries(&chunks[0]).unwrap(), entries);

        let mut encoder = ChunkEncoder::new(200);
        for e in &entries {
            encoder.push(&e.state, &e.key, e.value.as_deref());
        }
        let chunks = encoder.finish();
        assert!(chunks.len() >= 2, "{} chunks", chunks.len());
        let decoded: Vec<_> = chunks.iter().flat_map(|chunk| decode_chunk_entries(chunk).unwrap()).collect();
        assert_eq!(decoded, entries);
        assert!(ChunkEncoder::new(10).finish().is_empty());

        // Taking the completed chunks along the way yields the same chunks as `finish`.
        let mut encoder = ChunkEncoder::new(200);
        let mut taken = Vec::new();
        for e in &entries {
            encoder.push(&e.state, &e.key, e.value.as_deref());
            taken.extend(encoder.take_done());
        }
        assert!(!taken.is_empty(), "a chunk completes before the last push");
        taken.extend(encoder.finish());
        assert_eq!(taken, chunks);
    }

    #[test]
    fn damaged_chunks_are_rejected_without_panicking() {
        let mut encoder = ChunkEncoder::new(1 << 20);
        encoder.push("s", b"key", Some(b"value"));
        encoder.push("s", b"gone", None);
        let chunk = encoder.finish().remove(0);
        for i in 0..chunk.len() {
            let mut damaged = chunk.clone();
            damaged[i] ^= 0x55;
            assert!(decode_chunk_entries(&damaged).is_err(), "flip at {i}");
        }
        for len in 0..chunk.len() {
            assert!(decode_chunk_entries(&chunk[..len]).is_err(), "cut at {len}");
        }
        // A well-sealed body with bad structure is rejected too.
        let bad = seal(vec![CHUNK_VERSION, 1, 1, b's', 1, 5, 0, 0]);
        assert!(decode_chunk_entries(&bad).unwrap_err().to_string().contains("state index"));
        let bad = seal(vec![CHUNK_VERSION, 0, 200, 1]);
        assert!(decode_chunk_entries(&bad).is_err());
    }

    #[test]
    fn manifest_round_trip() {
        let mut manifest = Manifest::new();
        let mut subtasks = BTreeMap::new();
        subtasks.insert(
            3,
            SubtaskState {
                chains: BTreeMap::from([(0, vec![1, 2, 3]), (u32::MAX, vec![u64::MAX])]),
                blob: vec![0, 255, 128],
                bytes_written: 1234,
                compactions: 2,
                channel: Vec::new(),
            },
        );
        subtasks.insert(0, SubtaskState::default());
        manifest.insert("window".to_owned(), subtasks);
        manifest.insert("empty".to_owned(), BTreeMap::new());
        let bytes = encode_manifest(&manifest);
        assert_eq!(decode_manifest(&bytes).unwrap(), manifest);
        let mut damaged = bytes.clone();
        damaged[3] ^= 1;
        assert!(decode_manifest(&damaged).is_err());
    }

    /// One operator `op` with subtask 0: chains {0: [1, 2]}, blob "b", 5 bytes written, no
    /// compactions; `channel` is what version 2 adds.
    fn small_manifest(channel: Vec<u64>) -> Manifest {
        let state = SubtaskState {
            chains: BTreeMap::from([(0, vec![1, 2])]),
            blob: b"b".to_vec(),
            bytes_written: 5,
            compactions: 0,
            channel,
        };
        BTreeMap::from([("op".to_owned(), BTreeMap::from([(0, state)]))])
    }

    #[test]
    fn manifest_round_trip_with_channel_state() {
        let mut manifest = small_manifest(vec![7, 300, u64::MAX]);
        manifest
            .get_mut("op")
            .unwrap()
            .insert(1, SubtaskState { channel: vec![9], ..SubtaskState::default() });
        let bytes = encode_manifest(&manifest);
        assert_eq!(bytes[0], 2, "version 2");
        assert_eq!(decode_manifest(&bytes).unwrap(), manifest);

        // The layout, byte for byte (so a change of it is deliberate).
        let body = [
            2, // version
            1, 2, b'o', b'p', // one operator
            1, 0, // one subtask: 0
            1, 0, 2, 1, 2, // chains {0: [1, 2]}
            1, b'b', 5, 0, // blob, bytes_written, compactions
            3, 7, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, // channel
        ];
        assert_eq!(encode_manifest(&small_manifest(vec![7, 300, u64::MAX])), seal(body.to_vec()));

        // A channel count larger than the bytes left is rejected, not allocated.
        let mut bad = body.to_vec();
        bad[16] = 100;
        assert!(decode_manifest(&seal(bad)).unwrap_err().to_string().contains("exceeds"));
    }

    #[test]
    fn manifests_of_version_1_still_decode_without_channel_state() {
        // As version 1 wrote it: no channel chunk list after `compactions`.
        let v1 = seal(vec![1, 1, 2, b'o', b'p', 1, 0, 1, 0, 2, 1, 2, 1, b'b', 5, 0]);
        assert_eq!(decode_manifest(&v1).unwrap(), small_manifest(Vec::new()));
        // Re-encoding writes version 2, which reads back the same.
        let v2 = encode_manifest(&small_manifest(Vec::new()));
        assert_eq!(v2[0], 2);
        assert_eq!(decode_manifest(&v2).unwrap(), small_manifest(Vec::new()));
        // A version-1 body read as version 2 is short of the channel count.
        let mut as_v2 = vec![1, 1, 2, b'o', b'p', 1, 0, 1, 0, 2, 1, 2, 1, b'b', 5, 0];
        as_v2[0] = 2;
        assert!(decode_manifest(&seal(as_v2)).is_err());
        assert!(
            decode_manifest(&seal(vec![3, 0]))
                .unwrap_err()
                .to_string()
                .contains("unknown manifest version 3")
        );
    }

    #[test]
    fn record_round_trip() {
        let (key, value, timestamp) = (&b"k"[..], &[1; 200][..], -5);
        let mut out = Vec::new();
        encode_record_parts(&mut out, key, value, timestamp);
        assert_eq!(out.len(), 1 + 1 + 2 + 200 + 1);
        fn decode(bytes: &[u8]) -> Result<(&[u8], &[u8], i64), CodecError> {
            let mut reader = Reader::new(bytes);
            let record = read_record(&mut reader)?;
            reader.finish().map(|()| record)
        }
        assert_eq!(decode(&out).unwrap(), (key, value, timestamp));
        assert!(decode(&out[..out.len() - 1]).is_err());
    }
}
