//! Transcoders of the `encoded-batches` fast path (wit/encoded.wit): a MessagePack batch to
//! one document that the guest's runtime parses natively (Python `pickle`, JavaScript
//! `JSON.parse`), and a guest's output document back to a MessagePack batch.
//!
//! Invariants:
//! - `encode_batch` either writes a document that the guest's runtime reads as exactly the
//!   values the guest SDK's own MessagePack decoder would return, or refuses the batch
//!   ([`Unrepresentable`]): the host then calls the plain `process` for it.
//! - `decode_batch` writes compact MessagePack (as weirpy's `packb` and rmp-serde do), never
//!   more than `max_output_bytes` counted like the plain path counts output (data bytes + 16
//!   per entry), and never allocates more than that or in proportion to lengths the document
//!   claims; it never panics on any input.
//! - Values nest at most [`MAX_DEPTH`] containers deep, both ways.
//! - State documents (`encode_state`, `decode_state`) follow the same rules for decoded
//!   values; raw values and keys pass through byte for byte. `decode_state` yields exactly
//!   the entries, in document order, that the guest's plain `snapshot` would have.

mod from_json;
mod from_pickle;
mod msgpack;
mod to_json;
mod to_pickle;

#[cfg(test)]
mod tests;

pub use super::bindings::encoded::BatchFormat;
use super::bindings::encoded::ValueForm;
use super::bindings::{Batch, ChangeKind, StateDelta};

/// How many containers a record's value may nest (64 nested arrays pass, 65 do not).
pub const MAX_DEPTH: usize = 64;

/// Bounds of a document's size (see [`encode_batch`]).
#[allow(dead_code)]
pub const MAX_GROWTH: usize = 6;
/// Bounds of a document's size (see [`encode_batch`]).
#[allow(dead_code)]
pub const RECORD_OVERHEAD: usize = 32;

/// What one output entry costs besides its bytes, as the plain path counts output.
const ENTRY_COST: usize = 16;

/// Why a batch cannot go as a document: the host then uses the plain `process` for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unrepresentable(pub String);

/// Why one value cannot go into a document: the reason of an [`Unrepresentable`], which
/// prefixes it with the record or state entry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum Unfit {
    /// The MessagePack value does not read.
    #[error(transparent)]
    Read(#[from] msgpack::ReadError),
    #[error("the value is empty")]
    Empty,
    #[error("the value has trailing bytes after one MessagePack value")]
    Trailing,
    #[error("the value nests containers deeper than {}", MAX_DEPTH)]
    TooDeep,
    #[error("a string is not valid UTF-8")]
    NotUtf8,
    #[error("the value holds bin, which JSON lacks")]
    BinInJson,
    /// A map key of this MessagePack type in a JSON document.
    #[error("a map key is not a string ({0}), which JSON lacks")]
    KeyNotString(&'static str),
    #[error("the integer {0} is beyond ±(2^53 − 1), which JSON.parse cannot read exactly")]
    UnsafeInteger(i128),
    #[error("the timestamp {0} is beyond ±(2^53 − 1)")]
    UnsafeTimestamp(i64),
    #[error("the float {0} has no JSON form")]
    NotFinite(f64),
    #[error("a map key is (or holds) a map, which Python cannot hash")]
    MapInKey,
}

/// Why a guest's output document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The document is not a list of `(key, value, timestamp)` records made of plain values.
    #[error("malformed output document: {0}")]
    Malformed(String),
    /// The MessagePack batch would exceed the call's output limit.
    #[error("the output batch exceeds the call's output limit")]
    TooLarge,
    /// Reading the document would take more host memory than its bound (a pickle's objects:
    /// twice the call's output limit, at least 16 MiB), however small its output.
    #[error(
        "reading the document takes more than {0} bytes of host memory (twice the call's output limit, at least 16 MiB)"
    )]
    HostMemory(usize),
}

/// The document for `batch` (its entries are already validated: lengths add up).
/// `out` is cleared first. The document is at most [`MAX_GROWTH`] times the batch's data
/// plus [`RECORD_OVERHEAD`] bytes per record and 8 (JSON escapes a control byte in six).
pub fn encode_batch(format: BatchFormat, batch: &Batch, out: &mut Vec<u8>) -> Result<(), Unrepresentable> {
    out.clear();
    match format {
        BatchFormat::Pickle => to_pickle::encode(batch, out),
        BatchFormat::Json => to_json::encode(batch, out),
    }
}

/// The MessagePack batch for a guest's document. The batch's size counted like the plain
/// path counts output (data bytes + 16 per entry) stays <= `max_output_bytes`, checked as it
/// is built.
pub fn decode_batch(format: BatchFormat, doc: &[u8], max_output_bytes: usize) -> Result<Batch, DecodeError> {
    match format {
        BatchFormat::Pickle => from_pickle::decode(doc, max_output_bytes),
        BatchFormat::Json => from_json::decode(doc, max_output_bytes),
    }
}

/// The section kinds of a state document (wit/encoded.wit).
mod kind {
    /// Puts with decoded values.
    pub const PUT: u8 = 0;
    /// Deletes: the items are keys.
    pub const DELETE: u8 = 1;
    /// Puts whose values are their MessagePack bytes.
    pub const RAW: u8 = 2;
}

/// The state document of a restore chunk (puts only, as restore chunks are): the values of
/// state `names[i]` travel in form `forms[i]`. `out` is cleared first. Refuses the chunk
/// when a decoded value cannot be carried exactly (the plain `restore` then takes it), or
/// when it holds deletes, names a state past `forms` or its entries do not add up.
pub fn encode_state(
    format: BatchFormat,
    chunk: &StateDelta,
    forms: &[ValueForm],
    out: &mut Vec<u8>,
) -> Result<(), Unrepresentable> {
    out.clear();
    let mut sections: Vec<Section<'_>> = Vec::new();
    let mut pos = 0usize;
    for (i, e) in chunk.entries.iter().enumerate() {
        let refuse = |why: &str| Unrepresentable(format!("state entry {i}: {why}"));
        if !matches!(e.kind, ChangeKind::Put) {
            return Err(refuse("a restore chunk holds a delete"));
        }
        let form = forms.get(e.state as usize).ok_or_else(|| refuse("it names a state without a form"))?;
        let key_end = pos.checked_add(e.key_len as usize);
        let end =
            key_end.and_then(|k| k.checked_add(e.value_len as usize)).filter(|&end| end <= chunk.data.len());
        let (Some(key_end), Some(end)) = (key_end, end) else {
            return Err(refuse("it runs past the chunk's data"));
        };
        let kind = match form {
            ValueForm::Decoded => kind::PUT,
            ValueForm::Raw => kind::RAW,
        };
        let item = Item { key: &chunk.data[pos..key_end], value: &chunk.data[key_end..end], entry: i };
        match sections.last_mut() {
            Some(s) if s.state == e.state && s.kind == kind => s.items.push(item),
            _ => sections.push(Section { state: e.state, kind, items: vec![item] }),
        }
        pos = end;
    }
    match format {
        BatchFormat::Pickle => to_pickle::encode_state(&sections, out),
        BatchFormat::Json => to_json::encode_state(&sections, out),
    }
}

/// A run of puts of one state and kind: one section of a restore document.
struct Section<'a> {
    state: u32,
    kind: u8,
    items: Vec<Item<'a>>,
}

/// One put of a restore document: its key and value bytes, and its index in the chunk.
struct Item<'a> {
    key: &'a [u8],
    value: &'a [u8],
    entry: usize,
}

/// Prefixes a per-entry reason with the entry's index.
fn at_entry(i: usize) -> impl Fn(Unfit) -> Unrepresentable {
    move |why| Unrepresentable(format!("state entry {i}: {why}"))
}

/// The state delta of a guest's state document: the sections' items as entries, in
/// document order. The delta's size counted like output (data bytes + 16 per entry) stays
/// <= `max_bytes`. State indices are not checked against `names` here (the caller checks
/// the delta as it checks a plain one).
pub fn decode_state(
    format: BatchFormat,
    names: Vec<String>,
    doc: &[u8],
    max_bytes: usize,
) -> Result<StateDelta, DecodeError> {
    let (data, entries) = match format {
        BatchFormat::Pickle => from_pickle::decode_state(doc, max_bytes)?,
        BatchFormat::Json => from_json::decode_state(doc, max_bytes)?,
    };
    Ok(StateDelta { names, data, entries })
}

/// The records of a batch: `(key, value, timestamp)`, or an error when the entries do not
/// add up to the data (callers validate, so this is only a guard against panics).
fn records(batch: &Batch) -> impl Iterator<Item = Result<(&[u8], &[u8], i64), Unrepresentable>> {
    let mut pos = 0usize;
    batch.entries.iter().enumerate().map(move |(i, e)| {
        let key_end = pos.checked_add(e.key_len as usize);
        let end = key_end.and_then(|k| k.checked_add(e.value_len as usize));
        match (key_end, end) {
            (Some(k), Some(end)) if end <= batch.data.len() => {
                let record = (&batch.data[pos..k], &batch.data[k..end], e.timestamp);
                pos = end;
                Ok(record)
            }
            _ => Err(Unrepresentable(format!("record {i}: its entry runs past the batch data"))),
        }
    })
}

/// Prefixes a per-record reason with the record's index.
fn at_record(i: usize) -> impl Fn(Unfit) -> Unrepresentable {
    move |why| Unrepresentable(format!("record {i}: {why}"))
}
