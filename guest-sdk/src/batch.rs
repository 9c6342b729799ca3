//! Records in and out: reading an input batch, writing the output batch.
//!
//! A batch is flat (see `wit/types.wit`): one byte buffer holding every record's key then
//! value, back to back, and one fixed-size entry per record. Reading walks the entries with
//! `weir_flat::Reader` (a running offset); writing encodes straight into the output buffer
//! through `weir_flat::Writer`.

use serde::{Deserialize, Serialize};
use weir_flat::{Reader, Writer};

use crate::__bindings::weir::operator::types::{Batch, Entry};
use crate::codec::write_msgpack;
use crate::{Error, Result};

weir_flat::impl_record_entry!(Entry);

/// One record of an input batch, borrowed from the batch.
///
/// The key and value are MessagePack by convention; [`Record::value`] and [`Record::key`]
/// decode them, and strings or byte slices may borrow from the batch (`record.value::<&str>()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    input: u32,
    index: u32,
    key: &'a [u8],
    value: &'a [u8],
    timestamp: i64,
}

impl<'a> Record<'a> {
    /// A record with the given parts, as record `index` of input `input`.
    pub fn new(input: u32, index: u32, key: &'a [u8], value: &'a [u8], timestamp: i64) -> Self {
        Self { input, index, key, value, timestamp }
    }

    /// The encoded key; empty when the record has no key.
    pub fn key_bytes(&self) -> &'a [u8] {
        self.key
    }

    /// The encoded value.
    pub fn value_bytes(&self) -> &'a [u8] {
        self.value
    }

    /// Event time in milliseconds since the Unix epoch.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// The input (upstream edge) the record arrived on; 0 for single-input operators.
    pub fn input(&self) -> u32 {
        self.input
    }

    /// Position of the record in its batch.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// True when the record has a key.
    pub fn has_key(&self) -> bool {
        !self.key.is_empty()
    }

    /// Decodes the value from MessagePack.
    ///
    /// Fails with [`Error::InvalidInput`] naming the input, the record index and the
    /// MessagePack error.
    pub fn value<T: Deserialize<'a>>(&self) -> Result<T> {
        crate::codec::decode(self.value).map_err(|e| self.decode_error::<T>("value", &e))
    }

    /// Decodes the key from MessagePack.
    ///
    /// Fails with [`Error::InvalidInput`] when the record has no key or the key does not
    /// decode as `T`.
    pub fn key<T: Deserialize<'a>>(&self) -> Result<T> {
        if self.key.is_empty() {
            return Err(Error::invalid_input(format!(
                "input {}, record {}: the record has no key",
                self.input, self.index
            )));
        }
        crate::codec::decode(self.key).map_err(|e| self.decode_error::<T>("key", &e))
    }

    #[cold]
    fn decode_error<T>(&self, part: &str, e: &rmp_serde::decode::Error) -> Error {
        Error::invalid_input(format!(
            "input {}, record {}: cannot decode the {part} as `{}`: {e}",
            self.input,
            self.index,
            std::any::type_name::<T>(),
        ))
    }
}

/// Iterates over the records of `batch`, checking that each entry lies within its data.
pub(crate) struct Records<'a> {
    reader: Reader<'a, Entry>,
    input: u32,
    index: u32,
}

impl<'a> Records<'a> {
    pub(crate) fn new(input: u32, batch: &'a Batch) -> Self {
        Self { reader: Reader::new(&batch.data, &batch.entries), input, index: 0 }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let index = self.index;
        self.index = self.index.wrapping_add(1);
        Some(match self.reader.next()? {
            Ok((key, value, entry)) => {
                Ok(Record { input: self.input, index, key, value, timestamp: entry.timestamp })
            }
            Err(overrun) => Err(Error::invalid_input(format!(
                "input {}, record {index}: the entry runs past the end of the batch data ({} bytes)",
                self.input, overrun.data_len
            ))),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.reader.size_hint()
    }
}

/// The records an operator call emits downstream.
///
/// Keys and values are encoded as MessagePack with named fields straight into the output
/// batch. An empty key means "no key"; emit a key so that a downstream `hash` edge routes the
/// record by it.
#[derive(Debug)]
pub struct Output {
    data: Vec<u8>,
    entries: Vec<Entry>,
}

impl Output {
    /// An empty output with room for `records` records of `bytes` bytes in total.
    pub(crate) fn with_capacity(records: usize, bytes: usize) -> Self {
        Self { data: Vec::with_capacity(bytes), entries: Vec::with_capacity(records) }
    }

    pub(crate) fn into_batch(self) -> Batch {
        Batch { data: self.data, entries: self.entries }
    }

    #[inline]
    fn writer(&mut self) -> Writer<'_, Entry> {
        Writer::new(&mut self.data, &mut self.entries)
    }

    /// Emits a record with key `key` and value `value`, both encoded as MessagePack.
    pub fn emit<K, V>(&mut self, key: &K, value: &V, timestamp: i64) -> Result<()>
    where
        K: Serialize + ?Sized,
        V: Serialize + ?Sized,
    {
        self.writer().try_push_with(timestamp, |data| {
            let start = data.len();
            write_msgpack(data, key)?;
            let key_len = data.len() - start;
            write_msgpack(data, value).map(|()| key_len)
        })
    }

    /// Emits a record without a key whose value is `value` encoded as MessagePack.
    pub fn emit_value<V: Serialize + ?Sized>(&mut self, value: &V, timestamp: i64) -> Result<()> {
        self.writer().try_push_with(timestamp, |data| write_msgpack(data, value).map(|()| 0))
    }

    /// Emits a record with an already encoded key (for example an input record's key bytes;
    /// may be empty) and `value` encoded as MessagePack.
    pub fn emit_with_key_bytes<V>(&mut self, key: &[u8], value: &V, timestamp: i64) -> Result<()>
    where
        V: Serialize + ?Sized,
    {
        self.writer().try_push_with(timestamp, |data| {
            data.extend_from_slice(key);
            write_msgpack(data, value).map(|()| key.len())
        })
    }

    /// Emits a record from already encoded key and value bytes.
    pub fn emit_raw(&mut self, key: &[u8], value: &[u8], timestamp: i64) {
        self.writer().push(key, value, timestamp);
    }

    /// Emits `record` unchanged (same key, value and timestamp), without decoding it.
    pub fn forward(&mut self, record: &Record<'_>) {
        self.emit_raw(record.key, record.value, record.timestamp);
    }

    /// Number of records emitted so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing was emitted yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::testing::{TestRecord, batch_of, records_of};
    use crate::to_msgpack;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Bid {
        auction: u64,
        price: u64,
        channel: String,
    }

    #[test]
    fn output_encodes_named_records_back_to_back() {
        let mut out = Output::with_capacity(0, 0);
        let bid = Bid { auction: 1, price: 2, channel: "web".into() };
        out.emit("k", &bid, 10).unwrap();
        out.emit_value(&7u64, 11).unwrap();
        out.emit_with_key_bytes(&to_msgpack(&3u8).unwrap(), "v", 12).unwrap();
        out.emit_raw(b"K", b"V", 13);
        assert_eq!(out.len(), 4);
        let records = records_of(&out.into_batch());
        assert_eq!(records[0], TestRecord::keyed("k", &bid, 10));
        // Named fields: a struct is a map with its field names.
        assert_eq!(records[0].value, rmp_serde::to_vec_named(&bid).unwrap());
        assert_eq!(records[1], TestRecord::unkeyed(&7u64, 11));
        assert_eq!(records[2], TestRecord::keyed(&3u8, "v", 12));
        assert_eq!(records[3], TestRecord { key: b"K".to_vec(), value: b"V".to_vec(), timestamp: 13 });
    }

    #[test]
    fn failed_encoding_leaves_no_partial_record() {
        struct Refuses;
        impl Serialize for Refuses {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        let mut out = Output::with_capacity(0, 0);
        out.emit_value(&1u8, 0).unwrap();
        assert!(out.emit("key", &Refuses, 0).is_err());
        assert_eq!(records_of(&out.into_batch()), vec![TestRecord::unkeyed(&1u8, 0)]);
    }

    #[test]
    fn records_decode_in_order_and_borrow_strings() {
        let batch = batch_of(&[
            TestRecord::keyed("w", &Bid { auction: 5, price: 6, channel: "c".into() }, 1),
            TestRecord::unkeyed("a line", 2),
        ]);
        let records: Vec<Record<'_>> = Records::new(3, &batch).map(Result::unwrap).collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].key::<&str>().unwrap(), "w");
        assert_eq!(records[0].value::<Bid>().unwrap().price, 6);
        assert_eq!((records[0].input(), records[0].index(), records[0].timestamp()), (3, 0, 1));
        assert!(!records[1].has_key());
        let line: &str = records[1].value().unwrap();
        assert_eq!(line, "a line");
        assert_eq!(records[1].index(), 1);
    }

    #[test]
    fn decode_errors_name_input_record_and_cause() {
        let batch = batch_of(&[TestRecord::unkeyed(&1u64, 0), TestRecord::unkeyed("not a number", 0)]);
        let second = Records::new(2, &batch).nth(1).unwrap().unwrap();
        let err = second.value::<u64>().unwrap_err();
        let Error::InvalidInput(message) = &err else { panic!("{err:?}") };
        assert!(message.starts_with("input 2, record 1: cannot decode the value as `u64`: "), "{message}");
        assert!(matches!(second.key::<String>(), Err(Error::InvalidInput(m)) if m.contains("has no key")));
    }

    #[test]
    fn entries_past_the_data_are_invalid_input() {
        let mut batch = batch_of(&[TestRecord::unkeyed(&1u64, 0), TestRecord::unkeyed(&2u64, 0)]);
        batch.data.pop();
        let results: Vec<_> = Records::new(0, &batch).collect();
        assert!(results[0].is_ok());
        assert!(matches!(&results[1], Err(Error::InvalidInput(m)) if m.contains("record 1")));
        assert_eq!(results.len(), 2);
    }
}
