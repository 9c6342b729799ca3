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

mod from_json;
mod from_pickle;
mod msgpack;
mod to_json;
mod to_pickle;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_decode;
#[cfg(test)]
mod tests_python;

use super::bindings::Batch;
pub use super::bindings::encoded::BatchFormat;

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

/// Why a guest's output document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The document is not a list of `(key, value, timestamp)` records made of plain values.
    #[error("malformed output document: {0}")]
    Malformed(String),
    /// The MessagePack batch would exceed the call's output limit.
    #[error("the output batch exceeds the call's output limit")]
    TooLarge,
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
fn at_record(i: usize) -> impl Fn(String) -> Unrepresentable {
    move |why| Unrepresentable(format!("record {i}: {why}"))
}
