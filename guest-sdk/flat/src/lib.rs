//! The flat encoding of Weir's batches, shared by the host (`weir`) and the guest SDK
//! (`weir-guest`).
//!
//! A batch (`wit/types.wit` `batch`) is one `data` buffer holding each record's key then
//! value, back to back, and one entry per record with the key's length, the value's length
//! and the event time. Offsets are running sums: record `i` starts where record `i - 1`
//! ended. A state delta (`state-delta`) lays out its keys and values the same way. The host
//! and the guest each get their own Rust type for an entry from the same WIT (wasmtime's and
//! wit-bindgen's generators); both implement [`FlatEntry`] (and [`RecordEntry`]) with
//! [`impl_record_entry!`] or [`impl_flat_entry!`], and every walk over the entries is
//! this crate's:
//!
//! - [`Reader`] iterates over `(key, value, entry)`, checking that each entry lies within the
//!   data (an entry that runs past it ends the walk with an [`Overrun`]);
//! - [`validate`] checks that the entries describe exactly the bytes of the data;
//! - [`Writer`] appends records to a data buffer and its entries.
//!
//! ```
//! use weir_flat::{Reader, Writer, validate};
//!
//! struct Entry { key_len: u32, value_len: u32, timestamp: i64 }
//! weir_flat::impl_record_entry!(Entry);
//!
//! let (mut data, mut entries) = (Vec::new(), Vec::<Entry>::new());
//! let mut writer = Writer::new(&mut data, &mut entries);
//! writer.push(b"k", b"value", 7);
//! writer.push(b"", b"v2", 8);
//! validate(&data, &entries).unwrap();
//! let records: Vec<_> = Reader::new(&data, &entries).map(|r| r.unwrap()).map(|(k, v, e)| (k, v, e.timestamp)).collect();
//! assert_eq!(records, [(&b"k"[..], &b"value"[..], 7), (&b""[..], &b"v2"[..], 8)]);
//! ```
#![no_std]
#![deny(missing_docs)]

extern crate alloc;

use alloc::vec::Vec;
use core::fmt;

/// An entry that places one key and one value in the data: the lengths of both. The key
/// starts where the previous entry's value ended; the value follows the key.
pub trait FlatEntry {
    /// Length in bytes of the key.
    fn key_len(&self) -> u32;
    /// Length in bytes of the value.
    fn value_len(&self) -> u32;
}

/// The entry of one record of a batch (the WIT `entry`): lengths and event time.
pub trait RecordEntry: FlatEntry {
    /// The entry of a record with a key of `key_len` bytes, a value of `value_len` bytes and
    /// event time `timestamp`.
    fn new(key_len: u32, value_len: u32, timestamp: i64) -> Self;
    /// Event time in milliseconds.
    fn timestamp(&self) -> i64;
}

/// Implements [`FlatEntry`] for a type with fields `key_len: u32` and `value_len: u32` (a
/// bindgen `state-entry`).
#[macro_export]
macro_rules! impl_flat_entry {
    ($entry:ty) => {
        impl $crate::FlatEntry for $entry {
            #[inline(always)]
            fn key_len(&self) -> u32 {
                self.key_len
            }

            #[inline(always)]
            fn value_len(&self) -> u32 {
                self.value_len
            }
        }
    };
}

/// Implements [`FlatEntry`] and [`RecordEntry`] for a type with fields `key_len: u32`,
/// `value_len: u32` and `timestamp: i64` (a bindgen `entry`).
#[macro_export]
macro_rules! impl_record_entry {
    ($entry:ty) => {
        $crate::impl_flat_entry!($entry);

        impl $crate::RecordEntry for $entry {
            #[inline(always)]
            fn new(key_len: u32, value_len: u32, timestamp: i64) -> Self {
                Self { key_len, value_len, timestamp }
            }

            #[inline(always)]
            fn timestamp(&self) -> i64 {
                self.timestamp
            }
        }
    };
}

/// An entry that runs past the end of the data: the entry's index and the data's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overrun {
    /// Index of the entry.
    pub index: usize,
    /// Length of the data in bytes.
    pub data_len: usize,
}

impl fmt::Display for Overrun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "entry {} runs past the end of the data ({} bytes)", self.index, self.data_len)
    }
}

/// Iterates over the `(key, value, entry)` of every entry, in order.
///
/// Each entry is checked to lie within the data: the first one that does not yields
/// `Err(Overrun)` and ends the walk. Bytes of the data after the last entry are not looked
/// at; [`validate`] checks that there are none.
#[derive(Debug, Clone)]
pub struct Reader<'a, E> {
    data: &'a [u8],
    entries: core::slice::Iter<'a, E>,
    /// Number of entries in all, to tell an entry's index (only on the error path).
    count: usize,
    offset: usize,
}

impl<'a, E> Reader<'a, E> {
    /// A walk over `entries`, which place their keys and values in `data`.
    #[inline]
    pub fn new(data: &'a [u8], entries: &'a [E]) -> Self {
        Self { data, entries: entries.iter(), count: entries.len(), offset: 0 }
    }

    /// Where the next entry's key starts: the bytes of the entries read so far.
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }
}

impl<'a, E: FlatEntry> Iterator for Reader<'a, E> {
    type Item = Result<(&'a [u8], &'a [u8], &'a E), Overrun>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.entries.next()?;
        // Wrapping (on 32-bit targets) makes an end smaller than its start, which `get`
        // refuses like an end past the data.
        let key_end = self.offset.wrapping_add(entry.key_len() as usize);
        let value_end = key_end.wrapping_add(entry.value_len() as usize);
        match (self.data.get(self.offset..key_end), self.data.get(key_end..value_end)) {
            (Some(key), Some(value)) => {
                self.offset = value_end;
                Some(Ok((key, value, entry)))
            }
            _ => {
                let index = self.count - self.entries.len() - 1;
                self.entries = [].iter();
                Some(Err(Overrun { index, data_len: self.data.len() }))
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl<E: FlatEntry> ExactSizeIterator for Reader<'_, E> {}

/// The entries describe `described` bytes but the data holds `held` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    /// Sum of every entry's key and value lengths (saturating).
    pub described: u64,
    /// Length of the data.
    pub held: usize,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "entries describe {} bytes but the data holds {} bytes", self.described, self.held)
    }
}

/// Checks that `entries` describe exactly the bytes of `data`: the sum of their key and value
/// lengths is its length. Then a [`Reader`] over them never yields an [`Overrun`].
#[inline]
pub fn validate<E: FlatEntry>(data: &[u8], entries: &[E]) -> Result<(), Mismatch> {
    let described = entries
        .iter()
        .fold(0u64, |sum, e| sum.saturating_add(u64::from(e.key_len()) + u64::from(e.value_len())));
    if described == data.len() as u64 { Ok(()) } else { Err(Mismatch { described, held: data.len() }) }
}

/// Appends records to a data buffer and its entries.
#[derive(Debug)]
pub struct Writer<'b, E> {
    data: &'b mut Vec<u8>,
    entries: &'b mut Vec<E>,
}

impl<'b, E: RecordEntry> Writer<'b, E> {
    /// Appends to `data` and `entries`, which must describe each other (see [`validate`]).
    #[inline]
    pub fn new(data: &'b mut Vec<u8>, entries: &'b mut Vec<E>) -> Self {
        Self { data, entries }
    }

    /// Appends a record.
    ///
    /// # Panics
    /// If the key or the value is 4 GiB or longer.
    #[inline]
    pub fn push(&mut self, key: &[u8], value: &[u8], timestamp: i64) {
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        self.entries.push(E::new(len32(key.len()), len32(value.len()), timestamp));
    }

    /// Appends a record whose value `write` appends straight to the data.
    ///
    /// # Panics
    /// If the key or the value is 4 GiB or longer.
    #[inline]
    pub fn push_with(&mut self, key: &[u8], timestamp: i64, write: impl FnOnce(&mut Vec<u8>)) {
        self.data.extend_from_slice(key);
        let start = self.data.len();
        write(self.data);
        let value_len = self.data.len() - start;
        self.entries.push(E::new(len32(key.len()), len32(value_len), timestamp));
    }

    /// Appends a record that `write` appends straight to the data, key then value, returning
    /// the key's length. If `write` fails, the bytes it appended are dropped and no record is
    /// added.
    ///
    /// # Panics
    /// If the key or the value is 4 GiB or longer, or `write` returns a key length longer
    /// than what it appended.
    #[inline]
    pub fn try_push_with<X>(
        &mut self,
        timestamp: i64,
        write: impl FnOnce(&mut Vec<u8>) -> Result<usize, X>,
    ) -> Result<(), X> {
        let start = self.data.len();
        match write(self.data) {
            Ok(key_len) => {
                let value_len = self.data.len() - start - key_len;
                self.entries.push(E::new(len32(key_len), len32(value_len), timestamp));
                Ok(())
            }
            Err(e) => {
                self.data.truncate(start);
                Err(e)
            }
        }
    }
}

/// A length as the WIT `u32`.
#[inline]
fn len32(n: usize) -> u32 {
    u32::try_from(n).expect("a record key or value of 4 GiB or more")
}

#[cfg(test)]
mod tests;
