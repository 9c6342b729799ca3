//! The portable savepoint file, version 1 (specified in `docs/savepoint-format.md`):
//! [`Store::export_savepoint`] and [`Store::import_savepoint`].
//!
//! Layout (integers little endian): the magic `WEIRSAVE`, the format version (u32), then
//! frames `kind: u8, payload length: u32, payload`: one header (kind 1), state frames (kind 2)
//! in (operator, scope) order, blob frames (kind 3) in (operator, subtask) order, and one end
//! frame (kind 255) holding the frame and entry counts and the SHA-256 of everything before it.
//! Payloads are MessagePack maps.
//!
//! The encoder and the decoder of each frame stay side by side here, so a change to a frame
//! is made to both at once; `msgpack` reads payloads, and `frame_error` says what is wrong.

mod frame_error;
mod msgpack;

use std::convert::Infallible;
use std::io::{Read, Write};

use rmp::Marker;
use rmp::encode::{ByteBuf, ValueWriteError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use self::frame_error::FrameError;
use self::msgpack::{MsgReader, marker_name};
use crate::error::StoreError;
use crate::savepoint::{SavepointInfo, SavepointWriter, ScopeChunks, after, require_info};
use crate::store::Store;
use crate::tables::{SAVEPOINT_BLOBS, SAVEPOINT_SCOPES};

/// The first 8 bytes of every savepoint file.
const MAGIC: &[u8; 8] = b"WEIRSAVE";
/// The format version this build writes and reads.
const VERSION: u32 = 1;
/// Magic plus version.
const PREAMBLE_LEN: usize = 12;
/// Frame kind byte plus payload length.
const FRAME_HEAD_LEN: usize = 5;
const KIND_HEADER: u8 = 1;
const KIND_STATE: u8 = 2;
const KIND_BLOB: u8 = 3;
const KIND_END: u8 = 255;
/// The largest payload of a frame; a reader rejects larger ones.
const MAX_PAYLOAD: usize = 64 << 20;
/// A state frame is cut once its encoded entries reach this many bytes.
const STATE_FRAME_BYTES: usize = 1 << 20;

/// The header frame's payload (a MessagePack map with these field names).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    id: String,
    job: String,
    checkpoint: u64,
    created_ms: u64,
    bytes: u64,
    entries: u64,
    description: serde_json::Value,
}

/// The end frame's payload.
#[derive(Debug, PartialEq)]
struct End {
    frames: u64,
    entries: u64,
    sha256: [u8; 32],
}

fn bad(message: impl Into<String>) -> StoreError {
    StoreError::BadSavepointFile(message.into())
}

fn truncated(detail: impl std::fmt::Display) -> StoreError {
    bad(format!("the file is truncated ({detail})"))
}

fn frame_error(number: u64, detail: impl std::fmt::Display) -> StoreError {
    bad(format!("frame {number}: {detail}"))
}

// ---------------------------------------------------------------------------------------------
// Encoding

/// Unwraps the result of an rmp write into a [`ByteBuf`], which cannot fail.
fn infallible<T>(result: Result<T, ValueWriteError<Infallible>>) -> T {
    match result {
        Ok(value) => value,
        Err(ValueWriteError::InvalidMarkerWrite(never) | ValueWriteError::InvalidDataWrite(never)) => {
            match never {}
        }
    }
}

fn put_str(buf: &mut ByteBuf, value: &str) {
    infallible(rmp::encode::write_str(buf, value));
}

fn put_bin(buf: &mut ByteBuf, value: &[u8]) {
    infallible(rmp::encode::write_bin(buf, value));
}

fn put_uint(buf: &mut ByteBuf, value: u64) {
    infallible(rmp::encode::write_uint(buf, value));
}

fn encode_header(info: &SavepointInfo) -> Result<Vec<u8>, StoreError> {
    let header = Header {
        id: info.id.clone(),
        job: info.job.clone(),
        checkpoint: info.checkpoint,
        created_ms: info.created_ms,
        bytes: info.bytes,
        entries: info.entries,
        description: info.description.clone(),
    };
    rmp_serde::to_vec_named(&header).map_err(|error| StoreError::Encode {
        what: format!("the header of savepoint `{}`", info.id),
        detail: error.to_string(),
    })
}

/// The entries of one state frame being built.
struct StateFrame {
    count: u32,
    body: ByteBuf,
}

impl StateFrame {
    fn new() -> Self {
        StateFrame { count: 0, body: ByteBuf::new() }
    }

    fn push(&mut self, state: &str, key: &[u8], value: &[u8]) {
        infallible(rmp::encode::write_array_len(&mut self.body, 3));
        put_str(&mut self.body, state);
        put_bin(&mut self.body, key);
        put_bin(&mut self.body, value);
        self.count += 1;
    }

    fn is_full(&self) -> bool {
        self.body.as_slice().len() >= STATE_FRAME_BYTES
    }

    /// The payload of the entries pushed so far (then empty again).
    fn take_payload(&mut self, operator: &str, scope: u32) -> Vec<u8> {
        let mut out = ByteBuf::with_capacity(self.body.as_slice().len() + operator.len() + 32);
        infallible(rmp::encode::write_map_len(&mut out, 3));
        put_str(&mut out, "operator");
        put_str(&mut out, operator);
        put_str(&mut out, "scope");
        put_uint(&mut out, u64::from(scope));
        put_str(&mut out, "entries");
        infallible(rmp::encode::write_array_len(&mut out, self.count));
        out.as_mut_vec().extend_from_slice(self.body.as_slice());
        self.count = 0;
        self.body.as_mut_vec().clear();
        out.into_vec()
    }
}

fn encode_blob(operator: &str, subtask: u32, blob: &[u8]) -> Vec<u8> {
    let mut out = ByteBuf::with_capacity(blob.len() + operator.len() + 32);
    infallible(rmp::encode::write_map_len(&mut out, 3));
    put_str(&mut out, "operator");
    put_str(&mut out, operator);
    put_str(&mut out, "subtask");
    put_uint(&mut out, u64::from(subtask));
    put_str(&mut out, "blob");
    put_bin(&mut out, blob);
    out.into_vec()
}

fn encode_end(end: &End) -> Vec<u8> {
    let mut out = ByteBuf::new();
    infallible(rmp::encode::write_map_len(&mut out, 3));
    put_str(&mut out, "frames");
    put_uint(&mut out, end.frames);
    put_str(&mut out, "entries");
    put_uint(&mut out, end.entries);
    put_str(&mut out, "sha256");
    put_bin(&mut out, &end.sha256);
    out.into_vec()
}

/// Writes a savepoint file: counts its bytes and frames and hashes everything before the end
/// frame.
struct FileWriter<'a> {
    out: &'a mut dyn Write,
    id: &'a str,
    hasher: Sha256,
    written: u64,
    frames: u64,
}

impl<'a> FileWriter<'a> {
    fn new(out: &'a mut dyn Write, id: &'a str) -> Self {
        FileWriter { out, id, hasher: Sha256::new(), written: 0, frames: 0 }
    }

    fn write(&mut self, bytes: &[u8], hashed: bool) -> Result<(), StoreError> {
        self.out.write_all(bytes).map_err(|source| StoreError::Io {
            what: format!("write the export of savepoint `{}`", self.id),
            source,
        })?;
        if hashed {
            self.hasher.update(bytes);
        }
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn preamble(&mut self) -> Result<(), StoreError> {
        self.write(MAGIC, true)?;
        self.write(&VERSION.to_le_bytes(), true)
    }

    fn frame_head(&self, kind: u8, payload: &[u8]) -> Result<[u8; FRAME_HEAD_LEN], StoreError> {
        if payload.len() > MAX_PAYLOAD {
            return Err(StoreError::Encode {
                what: format!("frame {} of the export of savepoint `{}`", self.frames + 1, self.id),
                detail: format!(
                    "its payload of {} bytes is over the {} MiB limit of a frame (an entry or a \
                     blob that large cannot be exported)",
                    payload.len(),
                    MAX_PAYLOAD >> 20
                ),
            });
        }
        let mut head = [kind, 0, 0, 0, 0];
        head[1..].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        Ok(head)
    }

    fn frame(&mut self, kind: u8, payload: &[u8]) -> Result<(), StoreError> {
        let head = self.frame_head(kind, payload)?;
        self.write(&head, true)?;
        self.write(payload, true)?;
        self.frames += 1;
        Ok(())
    }

    /// Writes the end frame and flushes; returns the bytes written in all.
    fn end(mut self, entries: u64) -> Result<u64, StoreError> {
        let sha256 = std::mem::take(&mut self.hasher).finalize().into();
        let payload = encode_end(&End { frames: self.frames, entries, sha256 });
        let head = self.frame_head(KIND_END, &payload)?;
        self.write(&head, false)?;
        self.write(&payload, false)?;
        self.out.flush().map_err(|source| StoreError::Io {
            what: format!("write the export of savepoint `{}`", self.id),
            source,
        })?;
        Ok(self.written)
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

fn decode_header(payload: &[u8]) -> Result<Header, FrameError> {
    match payload.first().map(|byte| Marker::from_u8(*byte)) {
        Some(Marker::FixMap(_) | Marker::Map16 | Marker::Map32) => {}
        Some(other) => {
            let found = marker_name(other);
            return Err(FrameError::WrongType { what: "the header".to_owned(), expected: "a map", found });
        }
        None => return Err(FrameError::EmptyHeader),
    }
    let mut deserializer = rmp_serde::Deserializer::new(std::io::Cursor::new(payload));
    let header = Header::deserialize(&mut deserializer).map_err(FrameError::Header)?;
    let extra = payload.len() as u64 - deserializer.position();
    if extra > 0 {
        return Err(FrameError::TrailingBytes { extra, what: "the header".to_owned() });
    }
    Ok(header)
}

/// A decoded state frame; strings and bytes borrow from the payload.
#[derive(Debug, PartialEq)]
struct StateFrameIn<'a> {
    operator: &'a str,
    scope: u32,
    /// (state, key, value)
    entries: Vec<(&'a str, &'a [u8], &'a [u8])>,
}

fn decode_state(payload: &[u8]) -> Result<StateFrameIn<'_>, FrameError> {
    let mut reader = MsgReader::new(payload);
    let (mut operator, mut scope, mut entries) = ("", 0, Vec::new());
    reader.fields("the state frame", &["operator", "scope", "entries"], |name, reader| {
        match name {
            "operator" => operator = reader.str("`operator`")?,
            "scope" => scope = reader.u32("`scope`")?,
            _ => {
                let len = reader.array_len("`entries`")?;
                // Every entry takes at least 4 bytes: bound the allocation by the payload.
                entries.reserve(len.min(reader.rest.len() as u64 / 4) as usize);
                for number in 1..=len {
                    let what = format!("entry {number}");
                    let items = reader.array_len(&what)?;
                    if items != 3 {
                        return Err(FrameError::EntryItems { what, items });
                    }
                    let state = reader.str(&format!("the state of {what}"))?;
                    let key = reader.bin(&format!("the key of {what}"))?;
                    let value = reader.bin(&format!("the value of {what}"))?;
                    entries.push((state, key, value));
                }
            }
        }
        Ok(())
    })?;
    reader.finish("the state frame")?;
    Ok(StateFrameIn { operator, scope, entries })
}

/// A decoded blob frame.
#[derive(Debug, PartialEq)]
struct BlobFrameIn<'a> {
    operator: &'a str,
    subtask: u32,
    blob: &'a [u8],
}

fn decode_blob(payload: &[u8]) -> Result<BlobFrameIn<'_>, FrameError> {
    let mut reader = MsgReader::new(payload);
    let mut frame = BlobFrameIn { operator: "", subtask: 0, blob: &[] };
    reader.fields("the blob frame", &["operator", "subtask", "blob"], |name, reader| {
        match name {
            "operator" => frame.operator = reader.str("`operator`")?,
            "subtask" => frame.subtask = reader.u32("`subtask`")?,
            _ => frame.blob = reader.bin("`blob`")?,
        }
        Ok(())
    })?;
    reader.finish("the blob frame")?;
    Ok(frame)
}

fn decode_end(payload: &[u8]) -> Result<End, FrameError> {
    let mut reader = MsgReader::new(payload);
    let mut end = End { frames: 0, entries: 0, sha256: [0; 32] };
    reader.fields("the end frame", &["frames", "entries", "sha256"], |name, reader| {
        match name {
            "frames" => end.frames = reader.uint("`frames`")?,
            "entries" => end.entries = reader.uint("`entries`")?,
            _ => {
                let sha256 = reader.bin("`sha256`")?;
                end.sha256 = sha256.try_into().map_err(|_| FrameError::Sha256Length(sha256.len()))?;
            }
        }
        Ok(())
    })?;
    reader.finish("the end frame")?;
    Ok(end)
}

/// Reads a savepoint file frame by frame, hashing everything before the end frame.
struct FileReader<'a> {
    input: &'a mut dyn Read,
    hasher: Sha256,
    /// Frames read so far, not counting an end frame.
    frames: u64,
}

impl<'a> FileReader<'a> {
    fn new(input: &'a mut dyn Read) -> Self {
        FileReader { input, hasher: Sha256::new(), frames: 0 }
    }

    fn io_error(source: std::io::Error) -> StoreError {
        StoreError::Io { what: "read the savepoint file".to_owned(), source }
    }

    /// Reads until `buf` is full or the input ends; returns the bytes read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, StoreError> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.input.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(read) => filled += read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(Self::io_error(error)),
            }
        }
        Ok(filled)
    }

    /// Checks the magic and the version.
    fn preamble(&mut self) -> Result<(), StoreError> {
        let mut preamble = [0u8; PREAMBLE_LEN];
        let read = self.fill(&mut preamble)?;
        let magic = read.min(MAGIC.len());
        if preamble[..magic] != MAGIC[..magic] {
            return Err(bad("not a Weir savepoint file"));
        }
        if read == 0 {
            return Err(truncated("it is empty"));
        }
        if read < PREAMBLE_LEN {
            return Err(truncated(format!(
                "it ends after {read} of the {PREAMBLE_LEN} bytes of the magic and the version"
            )));
        }
        let version = u32::from_le_bytes([preamble[8], preamble[9], preamble[10], preamble[11]]);
        if version != VERSION {
            return Err(bad(format!(
                "savepoint format version {version} is not supported (this build reads version {VERSION})"
            )));
        }
        self.hasher.update(preamble);
        Ok(())
    }

    /// Reads the next frame: its kind and payload. Frames other than the end frame are
    /// hashed and counted.
    fn frame(&mut self) -> Result<(u8, Vec<u8>), StoreError> {
        let number = self.frames + 1;
        let mut head = [0u8; FRAME_HEAD_LEN];
        match self.fill(&mut head)? {
            0 if self.frames == 0 => return Err(truncated("it ends before the header frame")),
            0 => return Err(truncated(format!("it ends after frame {} without an end frame", self.frames))),
            FRAME_HEAD_LEN => {}
            read => {
                return Err(truncated(format!(
                    "it ends after {read} of the {FRAME_HEAD_LEN} bytes of the kind and length of frame {number}"
                )));
            }
        }
        let kind = head[0];
        let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
        if len as usize > MAX_PAYLOAD {
            return Err(frame_error(
                number,
                format!("a payload of {len} bytes is over the {} MiB limit", MAX_PAYLOAD >> 20),
            ));
        }
        let mut payload = Vec::new();
        (&mut *self.input).take(u64::from(len)).read_to_end(&mut payload).map_err(Self::io_error)?;
        if payload.len() < len as usize {
            return Err(truncated(format!(
                "it ends inside frame {number}, after {} of its {len} payload bytes",
                payload.len()
            )));
        }
        if kind != KIND_END {
            self.hasher.update(head);
            self.hasher.update(&payload);
            self.frames += 1;
        }
        Ok((kind, payload))
    }

    /// Whether the input has no byte left.
    fn at_end(&mut self) -> Result<bool, StoreError> {
        Ok(self.fill(&mut [0u8; 1])? == 0)
    }
}

/// The order rules of state and blob frames, checked frame by frame.
#[derive(Default)]
struct FrameOrder {
    /// The (operator, scope) of the last state frame and its last (state, key).
    last_state: Option<(String, u32, String, Vec<u8>)>,
    /// The (operator, subtask) of the last blob frame.
    last_blob: Option<(String, u32)>,
}

impl FrameOrder {
    fn state(&mut self, frame: &StateFrameIn<'_>) -> Result<(), FrameError> {
        if let Some((operator, subtask)) = &self.last_blob {
            return Err(FrameError::StateAfterBlob { operator: operator.clone(), subtask: *subtask });
        }
        let (Some(first), Some(last)) = (frame.entries.first(), frame.entries.last()) else {
            return Err(FrameError::NoEntries);
        };
        if let Some((operator, scope, state, key)) = &self.last_state {
            match (operator.as_str(), *scope).cmp(&(frame.operator, frame.scope)) {
                std::cmp::Ordering::Greater => {
                    return Err(FrameError::ScopeOrder {
                        scope: frame.scope,
                        operator: frame.operator.to_owned(),
                        previous_scope: *scope,
                        previous_operator: operator.clone(),
                    });
                }
                std::cmp::Ordering::Equal if (state.as_str(), key.as_slice()) >= (first.0, first.1) => {
                    return Err(FrameError::EntryOrder {
                        number: 1,
                        state: first.0.to_owned(),
                        previous: "the last entry of the previous frame of the scope",
                    });
                }
                _ => {}
            }
        }
        for (number, pair) in frame.entries.windows(2).enumerate() {
            if (pair[0].0, pair[0].1) >= (pair[1].0, pair[1].1) {
                return Err(FrameError::EntryOrder {
                    number: number + 2,
                    state: pair[1].0.to_owned(),
                    previous: "the entry before it",
                });
            }
        }
        self.last_state = Some((frame.operator.to_owned(), frame.scope, last.0.to_owned(), last.1.to_vec()));
        Ok(())
    }

    fn blob(&mut self, frame: &BlobFrameIn<'_>) -> Result<(), FrameError> {
        if let Some((operator, subtask)) = &self.last_blob
            && (operator.as_str(), *subtask) >= (frame.operator, frame.subtask)
        {
            return Err(FrameError::BlobOrder {
                operator: frame.operator.to_owned(),
                subtask: frame.subtask,
                previous_operator: operator.clone(),
                previous_subtask: *subtask,
            });
        }
        self.last_blob = Some((frame.operator.to_owned(), frame.subtask));
        Ok(())
    }
}

/// Reads a whole savepoint file into `writer`; returns its header once the end frame, the
/// checksum, the counts and the end of the input are verified.
fn read_file(reader: &mut FileReader<'_>, writer: &mut SavepointWriter<'_>) -> Result<Header, StoreError> {
    reader.preamble()?;
    let (kind, payload) = reader.frame()?;
    if kind != KIND_HEADER {
        return Err(frame_error(1, format!("the first frame must be the header (kind 1), not kind {kind}")));
    }
    let header = decode_header(&payload).map_err(|detail| frame_error(1, detail))?;
    let mut order = FrameOrder::default();
    let end = loop {
        let number = reader.frames + 1;
        let (kind, payload) = reader.frame()?;
        let error = |detail: FrameError| frame_error(number, detail);
        match kind {
            KIND_STATE => {
                let frame = decode_state(&payload).map_err(error)?;
                order.state(&frame).map_err(error)?;
                for (state, key, value) in &frame.entries {
                    writer.push(frame.operator, frame.scope, state, key, value)?;
                }
            }
            KIND_BLOB => {
                let frame = decode_blob(&payload).map_err(error)?;
                order.blob(&frame).map_err(error)?;
                writer.blob(frame.operator, frame.subtask, frame.blob)?;
            }
            KIND_END => break decode_end(&payload).map_err(error)?,
            KIND_HEADER => return Err(error(FrameError::SecondHeader)),
            other => return Err(error(FrameError::UnknownKind(other))),
        }
    };
    let digest: [u8; 32] = std::mem::take(&mut reader.hasher).finalize().into();
    if end.sha256 != digest {
        return Err(bad("checksum mismatch: the file was altered or damaged"));
    }
    if end.frames != reader.frames {
        return Err(bad(format!(
            "frame count mismatch: the end frame says {} frames, the file has {}",
            end.frames, reader.frames
        )));
    }
    let entries = writer.entries();
    for (what, said) in [("end frame", end.entries), ("header", header.entries)] {
        if said != entries {
            return Err(bad(format!(
                "entry count mismatch: the {what} says {said} entries, the state frames hold {entries}"
            )));
        }
    }
    if header.bytes != writer.bytes() {
        return Err(bad(format!(
            "byte count mismatch: the header says {} bytes, the entries and blobs hold {}",
            header.bytes,
            writer.bytes()
        )));
    }
    if !reader.at_end()? {
        return Err(bad("unexpected data after the end frame"));
    }
    Ok(header)
}

impl Store {
    /// Writes savepoint `id` to `out` as one portable file (format version 1, see
    /// `docs/savepoint-format.md`), from one read transaction; returns the bytes written.
    ///
    /// Fails with [`StoreError::UnknownSavepoint`], [`StoreError::Io`] when `out` fails, and
    /// [`StoreError::Encode`] for an entry or blob larger than a frame allows (64 MiB); what
    /// was written before an error is not a valid file.
    pub fn export_savepoint(&self, id: &str, out: &mut dyn Write) -> Result<u64, StoreError> {
        let txn = self.read_txn()?;
        let info = require_info(&txn, id)?;
        let mut file = FileWriter::new(out, id);
        file.preamble()?;
        file.frame(KIND_HEADER, &encode_header(&info)?)?;

        let scopes = txn.open_table(SAVEPOINT_SCOPES)?;
        let chunks = ScopeChunks::open(&txn, self)?;
        let end = after(id);
        let mut entries = 0u64;
        for item in scopes.range((id, "", 0)..(end.as_str(), "", 0))? {
            let (key, index) = item?;
            let (_, operator, scope) = key.value();
            let mut frame = StateFrame::new();
            chunks.read((id, operator, scope), index.value(), |chunk| {
                for entry in chunk {
                    frame.push(&entry.state, &entry.key, entry.value.as_deref().unwrap_or_default());
                    entries += 1;
                    if frame.is_full() {
                        file.frame(KIND_STATE, &frame.take_payload(operator, scope))?;
                    }
                }
                Ok(())
            })?;
            if frame.count > 0 {
                file.frame(KIND_STATE, &frame.take_payload(operator, scope))?;
            }
        }

        for item in txn.open_table(SAVEPOINT_BLOBS)?.range((id, "", 0)..(end.as_str(), "", 0))? {
            let (key, blob) = item?;
            let (_, operator, subtask) = key.value();
            file.frame(KIND_BLOB, &encode_blob(operator, subtask, blob.value()))?;
        }
        file.end(entries)
    }

    /// Reads a file written by [`export_savepoint`](Self::export_savepoint) from `input` and
    /// stores it as savepoint `id` owned by `owner` (`origin` is the file's id; job,
    /// checkpoint, creation time and description come from the file). Written as
    /// [`Store::write_savepoint`] says, committed only after the end frame, the checksum and
    /// the counts are verified: a bad file stores nothing.
    ///
    /// With chunks in the file, the write transaction is open while the input is read, which
    /// blocks every other writer of the store: read from a local file, not from a slow
    /// network stream. With chunks in object storage, none is open while they are put.
    ///
    /// Fails with [`StoreError::SavepointExists`] if the id is taken,
    /// [`StoreError::BadSavepointFile`] for a file that is not valid, and [`StoreError::Io`]
    /// when reading `input` fails.
    pub fn import_savepoint(
        &self,
        input: &mut dyn Read,
        id: &str,
        owner: &str,
    ) -> Result<SavepointInfo, StoreError> {
        self.import_savepoint_reserved(input, id, owner, 0)
    }

    /// [`Store::import_savepoint`], giving back `reserved` bytes of `owner`'s reservation
    /// ([`Store::reserve`], e.g. held for the spooled file) in the same transaction that
    /// charges the stored savepoint; on failure the reservation is untouched.
    pub fn import_savepoint_reserved(
        &self,
        input: &mut dyn Read,
        id: &str,
        owner: &str,
        reserved: u64,
    ) -> Result<SavepointInfo, StoreError> {
        let fill = |writer: &mut SavepointWriter<'_>| {
            let header = read_file(&mut FileReader::new(input), writer)?;
            Ok(SavepointInfo {
                id: id.to_owned(),
                owner: owner.to_owned(),
                job: header.job,
                checkpoint: header.checkpoint,
                created_ms: header.created_ms,
                bytes: header.bytes,
                entries: header.entries,
                origin: Some(header.id),
                description: header.description,
            })
        };
        self.write_savepoint(id, fill, |txn| crate::usage::release_in(txn, owner, reserved))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut frame = StateFrame::new();
        frame.push("count", b"a", b"1");
        frame.push("count", b"", &[0, 255]);
        frame.push("sum", &[7; 300], &[9; 70_000]);
        let payload = frame.take_payload("window", 3);
        assert_eq!(frame.count, 0);
        assert_eq!(
            decode_state(&payload).unwrap(),
            StateFrameIn {
                operator: "window",
                scope: 3,
                entries: vec![
                    ("count", b"a", b"1"),
                    ("count", b"", &[0, 255]),
                    ("sum", &[7; 300], &[9; 70_000]),
                ],
            }
        );
        let blob = encode_blob("src", u32::MAX, b"position");
        assert_eq!(
            decode_blob(&blob).unwrap(),
            BlobFrameIn { operator: "src", subtask: u32::MAX, blob: b"position" }
        );
        let end = End { frames: 12, entries: u64::MAX, sha256: [3; 32] };
        assert_eq!(decode_end(&encode_end(&end)).unwrap(), end);
    }

    #[test]
    fn bad_payloads_are_described() {
        let mut map = ByteBuf::new();
        infallible(rmp::encode::write_map_len(&mut map, 3));
        put_str(&mut map, "operator");
        put_str(&mut map, "op");
        put_str(&mut map, "subtask");
        put_uint(&mut map, 1 << 40);
        put_str(&mut map, "blob");
        put_bin(&mut map, b"x");
        assert_eq!(
            decode_blob(map.as_slice()).unwrap_err().to_string(),
            "`subtask` is 1099511627776, more than 32 bits"
        );

        let mut map = ByteBuf::new();
        infallible(rmp::encode::write_map_len(&mut map, 2));
        put_str(&mut map, "operator");
        put_str(&mut map, "op");
        put_str(&mut map, "operator");
        assert_eq!(
            decode_blob(map.as_slice()).unwrap_err().to_string(),
            "the blob frame has the field `operator` twice"
        );

        let mut map = ByteBuf::new();
        infallible(rmp::encode::write_map_len(&mut map, 1));
        put_str(&mut map, "color");
        assert_eq!(
            decode_end(map.as_slice()).unwrap_err().to_string(),
            "the end frame has an unknown field `color`"
        );

        let mut map = ByteBuf::new();
        infallible(rmp::encode::write_map_len(&mut map, 0));
        assert_eq!(
            decode_end(map.as_slice()).unwrap_err().to_string(),
            "the end frame has no field `frames`"
        );

        let mut end = encode_end(&End { frames: 1, entries: 2, sha256: [0; 32] });
        end.push(0);
        assert_eq!(decode_end(&end).unwrap_err().to_string(), "1 unexpected bytes after the end frame");
        assert_eq!(decode_end(&[0x92]).unwrap_err().to_string(), "the end frame must be a map, not an array");
        assert!(
            decode_end(&[0x83, 0xa6, b'f'])
                .unwrap_err()
                .to_string()
                .contains("needs 6 bytes but only 1 are left")
        );

        let mut frame = StateFrame::new();
        frame.push("s", b"k", b"v");
        let mut payload = frame.take_payload("op", 0);
        // The value of the only entry as a string instead of binary data.
        let at = payload.len() - 3;
        payload[at] = 0xa1;
        payload.remove(at + 1);
        assert_eq!(
            decode_state(&payload).unwrap_err().to_string(),
            "the value of entry 1 must be binary data, not a string"
        );
        assert!(decode_header(&[0x90]).unwrap_err().to_string().contains("must be a map, not an array"));
    }
}
