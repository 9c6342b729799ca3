//! Records and batches: the unit of data that flows through a job.
//!
//! A [`Batch`] is the WIT `batch` type itself (one byte buffer plus one fixed-size entry per
//! record), so handing a batch to a guest costs two bulk copies and no conversion. Its
//! entries are read, written and checked by `weir-flat`, the code the guest SDK uses too.

use weir_flat::{Reader, Writer};

pub mod json;

pub use crate::guest::bindings::{Batch, Entry};

/// One record of a batch, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The record key (MessagePack by convention); empty when the record has no key.
    pub key: &'a [u8],
    /// The record value (MessagePack by convention).
    pub value: &'a [u8],
    /// Event time in milliseconds since the Unix epoch.
    pub timestamp: i64,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.key_len, self.value_len, self.timestamp) == (other.key_len, other.value_len, other.timestamp)
    }
}

impl Eq for Entry {}

impl PartialEq for Batch {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data && self.entries == other.entries
    }
}

impl Eq for Batch {}

impl Batch {
    /// An empty batch with room for `records` records and `bytes` bytes.
    pub fn with_capacity(records: usize, bytes: usize) -> Self {
        Batch { data: Vec::with_capacity(bytes), entries: Vec::with_capacity(records) }
    }

    /// An empty batch.
    pub fn empty() -> Self {
        Batch { data: Vec::new(), entries: Vec::new() }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of keys and values.
    pub fn byte_len(&self) -> usize {
        self.data.len()
    }

    /// Appends a record.
    #[inline]
    pub fn push(&mut self, key: &[u8], value: &[u8], timestamp: i64) {
        Writer::new(&mut self.data, &mut self.entries).push(key, value, timestamp);
    }

    /// Appends a record whose value is written by `write` straight into the batch buffer.
    #[inline]
    pub fn push_with(&mut self, key: &[u8], timestamp: i64, write: impl FnOnce(&mut Vec<u8>)) {
        Writer::new(&mut self.data, &mut self.entries).push_with(key, timestamp, write);
    }

    /// Iterates over the records.
    ///
    /// # Panics
    /// While iterating, at an entry that runs past the data: batches built by the host are
    /// well formed, and those of guests pass [`Batch::validate`] first.
    #[inline]
    pub fn iter(&self) -> Records<'_> {
        Records { reader: Reader::new(&self.data, &self.entries) }
    }

    /// Checks that the entries describe exactly the bytes of `data` (a guest may return
    /// anything).
    pub fn validate(&self) -> Result<(), weir_flat::Mismatch> {
        weir_flat::validate(&self.data, &self.entries)
    }

    /// Appends every record of `other`.
    pub fn extend_from(&mut self, other: &Batch) {
        self.data.extend_from_slice(&other.data);
        self.entries.extend_from_slice(&other.entries);
    }
}

/// Iterator over the records of a batch.
#[derive(Debug)]
pub struct Records<'a> {
    reader: Reader<'a, Entry>,
}

impl<'a> Iterator for Records<'a> {
    type Item = RecordRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<RecordRef<'a>> {
        let (key, value, entry) = match self.reader.next()? {
            Ok(record) => record,
            Err(overrun) => panic!("a batch that was not validated: {overrun}"),
        };
        Some(RecordRef { key, value, timestamp: entry.timestamp })
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.reader.size_hint()
    }
}

impl ExactSizeIterator for Records<'_> {}

/// Decodes MessagePack bytes into JSON for display and the file sink. Bytes that are not
/// MessagePack come back as `{"hex": "..."}`; an empty slice is `null`.
pub fn msgpack_to_json(bytes: &[u8]) -> serde_json::Value {
    if bytes.is_empty() {
        return serde_json::Value::Null;
    }
    let mut cursor = bytes;
    match rmpv::decode::read_value(&mut cursor) {
        Ok(v) if cursor.is_empty() => rmpv_to_json(v),
        _ => serde_json::json!({ "hex": hex::encode(bytes) }),
    }
}

fn rmpv_to_json(v: rmpv::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        rmpv::Value::Nil => J::Null,
        rmpv::Value::Boolean(b) => J::Bool(b),
        rmpv::Value::Integer(i) => {
            if let Some(u) = i.as_u64() {
                J::from(u)
            } else if let Some(s) = i.as_i64() {
                J::from(s)
            } else {
                J::Null
            }
        }
        rmpv::Value::F32(f) => serde_json::Number::from_f64(f64::from(f)).map_or(J::Null, J::Number),
        rmpv::Value::F64(f) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
        rmpv::Value::String(s) => match s.into_str() {
            Some(s) => J::String(s),
            None => J::Null,
        },
        rmpv::Value::Binary(b) => serde_json::json!({ "hex": hex::encode(b) }),
        rmpv::Value::Array(a) => J::Array(a.into_iter().map(rmpv_to_json).collect()),
        rmpv::Value::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m {
                let key = match k {
                    rmpv::Value::String(s) => s.into_str().unwrap_or_default(),
                    other => other.to_string(),
                };
                out.insert(key, rmpv_to_json(v));
            }
            J::Object(out)
        }
        rmpv::Value::Ext(t, b) => serde_json::json!({ "ext": t, "hex": hex::encode(b) }),
    }
}

/// Encodes a serde value as MessagePack with named fields (the record convention).
pub fn to_msgpack<T: serde::Serialize + ?Sized>(value: &T) -> Vec<u8> {
    rmp_serde::to_vec_named(value).expect("MessagePack encoding into a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_and_iterate_round_trip() {
        let mut b = Batch::empty();
        b.push(b"k1", b"v1", 5);
        b.push(b"", b"value-two", -3);
        b.push_with(b"k3", 9, |buf| buf.extend_from_slice(b"xyz"));
        assert_eq!(b.len(), 3);
        b.validate().unwrap();
        let recs: Vec<_> = b.iter().collect();
        assert_eq!(recs[0], RecordRef { key: b"k1", value: b"v1", timestamp: 5 });
        assert_eq!(recs[1], RecordRef { key: b"", value: b"value-two", timestamp: -3 });
        assert_eq!(recs[2], RecordRef { key: b"k3", value: b"xyz", timestamp: 9 });
    }

    #[test]
    fn validate_rejects_inconsistent_entries() {
        let mut b = Batch::empty();
        b.push(b"k", b"v", 0);
        b.data.push(1);
        assert_eq!(b.validate().unwrap_err(), weir_flat::Mismatch { described: 2, held: 3 });
    }

    #[test]
    fn msgpack_json_conversion() {
        let bytes = to_msgpack(&serde_json::json!({"a": 1, "b": ["x", -2, 1.5]}));
        assert_eq!(msgpack_to_json(&bytes), serde_json::json!({"a": 1, "b": ["x", -2, 1.5]}));
        assert_eq!(msgpack_to_json(&[]), serde_json::Value::Null);
        assert_eq!(msgpack_to_json(&[0x92, 0x01]), serde_json::json!({"hex": "9201"}));
    }
}
