//! Opens a store written before chunks: its one-record-per-value tables `weir.log` and
//! `weir.log_staged` are rewritten into chunks, and dropped, in the transaction that opens the
//! store (all or nothing: a crash during the migration leaves the old tables, migrated at the
//! next open). The usage ledger is corrected by the difference in charged bytes, so it still
//! equals a recount.
//!
//! A damaged old entry does not fail the open: it becomes a chunk of its own (its bytes behind
//! a header of one record, or under partition `u32::MAX` when even its partition is
//! unreadable), so reading or committing it reports [`StoreError::Corrupt`] as it did before,
//! and its neighbours stay readable.

use std::collections::BTreeMap;

use redb::{ReadableTable, Table, TableDefinition, TableHandle, WriteTransaction};

use super::chunk::{HEADER, MAX_CHUNK_BYTES, MAX_CHUNK_RECORDS, VERSION};
use crate::codec::{Reader, read_record};
use crate::error::StoreError;
use crate::tables::{LOG, STAGED, log_key_len, staged_key_len};
use crate::usage::{Subject, charge, entry_bytes};

/// (stream, partition, offset) → one encoded record: the log before chunks.
const OLD_LOG: TableDefinition<'_, (&str, u32, u64), &[u8]> = TableDefinition::new("weir.log");
/// (stream, writer, epoch, sequence) → partition (varint) + one encoded record.
const OLD_STAGED: TableDefinition<'_, (&str, &str, u64, u64), &[u8]> =
    TableDefinition::new("weir.log_staged");

fn valid_record(bytes: &[u8]) -> bool {
    let mut reader = Reader::new(bytes);
    read_record(&mut reader).is_ok() && reader.finish().is_ok()
}

/// A chunk being filled from old records.
struct Filling {
    bytes: Vec<u8>,
    count: u32,
}

impl Filling {
    fn new() -> Self {
        let mut bytes = Vec::with_capacity(MAX_CHUNK_BYTES);
        bytes.push(VERSION);
        bytes.extend_from_slice(&[0; 4]);
        Filling { bytes, count: 0 }
    }

    fn fits(&self, record: &[u8]) -> bool {
        self.count == 0
            || (self.count < MAX_CHUNK_RECORDS && self.bytes.len() + record.len() <= MAX_CHUNK_BYTES)
    }

    fn push(&mut self, record: &[u8]) {
        self.bytes.extend_from_slice(record);
        self.count += 1;
    }

    /// The finished chunk; the filling starts over.
    fn take(&mut self) -> Vec<u8> {
        let count = self.count;
        let mut bytes = std::mem::replace(self, Filling::new()).bytes;
        bytes[1..HEADER].copy_from_slice(&count.to_le_bytes());
        bytes
    }
}

/// Byte changes of the ledger per stream.
type Deltas = BTreeMap<String, i64>;

/// Migrates the old stream tables inside the store's opening transaction, if there are any.
pub(crate) fn migrate(txn: &WriteTransaction) -> Result<(), StoreError> {
    let names: Vec<String> = txn.list_tables()?.map(|t| t.name().to_owned()).collect();
    let has = |table: &str| names.iter().any(|n| n == table);
    let mut deltas = Deltas::new();
    if has("weir.log") {
        migrate_log(txn, &mut deltas)?;
        txn.delete_table(OLD_LOG)?;
    }
    if has("weir.log_staged") {
        migrate_staged(txn, &mut deltas)?;
        txn.delete_table(OLD_STAGED)?;
    }
    for (name, delta) in deltas {
        charge(txn, Subject::Stream(&name), delta, false)?;
    }
    Ok(())
}

type LogTable<'t> = Table<'t, (&'static str, u32, u64), &'static [u8]>;
type StagedTable<'t> = Table<'t, (&'static str, &'static str, u64, u64, u32), &'static [u8]>;

/// Stores the chunk being filled (if any) at `at`.
fn flush_log(
    log: &mut LogTable<'_>,
    at: &Option<(String, u32, u64)>,
    filling: &mut Filling,
    deltas: &mut Deltas,
) -> Result<(), StoreError> {
    if let Some((name, partition, first)) = at
        && filling.count > 0
    {
        let chunk = filling.take();
        log.insert((name.as_str(), *partition, *first), chunk.as_slice())?;
        *deltas.entry(name.clone()).or_default() += entry_bytes(log_key_len(name), chunk.len());
    }
    Ok(())
}

/// Stages the chunk being filled (if any) at `at` under sequence `seq`, and counts it.
fn flush_staged(
    staged: &mut StagedTable<'_>,
    at: &Option<(String, String, u64, u32)>,
    seq: &mut u64,
    filling: &mut Filling,
    deltas: &mut Deltas,
) -> Result<(), StoreError> {
    if let Some((name, writer, epoch, partition)) = at
        && filling.count > 0
    {
        let chunk = filling.take();
        staged.insert((name.as_str(), writer.as_str(), *epoch, *seq, *partition), chunk.as_slice())?;
        *seq += 1;
        *deltas.entry(name.clone()).or_default() += entry_bytes(staged_key_len(name, writer), chunk.len());
    }
    Ok(())
}

fn migrate_log(txn: &WriteTransaction, deltas: &mut Deltas) -> Result<(), StoreError> {
    let old = txn.open_table(OLD_LOG)?;
    let mut log = txn.open_table(LOG)?;
    // (stream, partition, first offset) of the chunk being filled.
    let mut at: Option<(String, u32, u64)> = None;
    let mut filling = Filling::new();
    for item in old.iter()? {
        let (key, value) = item?;
        let (name, partition, offset) = key.value();
        let record = value.value();
        *deltas.entry(name.to_owned()).or_default() -= entry_bytes(name.len() + 12, record.len());
        let follows = at.as_ref().is_some_and(|(n, p, first)| {
            n == name && *p == partition && first.checked_add(u64::from(filling.count)) == Some(offset)
        });
        let valid = valid_record(record);
        if !follows || !valid || !filling.fits(record) {
            flush_log(&mut log, &at, &mut filling, deltas)?;
            at = Some((name.to_owned(), partition, offset));
        }
        filling.push(record);
        if !valid {
            // A damaged record is a chunk of its own.
            flush_log(&mut log, &at, &mut filling, deltas)?;
            at = None;
        }
    }
    flush_log(&mut log, &at, &mut filling, deltas)
}

fn migrate_staged(txn: &WriteTransaction, deltas: &mut Deltas) -> Result<(), StoreError> {
    let old = txn.open_table(OLD_STAGED)?;
    let mut staged = txn.open_table(STAGED)?;
    // (stream, writer, epoch, partition) of the chunk being filled and the next sequence of
    // its epoch.
    let mut at: Option<(String, String, u64, u32)> = None;
    let mut seq = 0u64;
    let mut filling = Filling::new();
    for item in old.iter()? {
        let (key, value) = item?;
        let (name, writer, epoch, _) = key.value();
        let bytes = value.value();
        *deltas.entry(name.to_owned()).or_default() -=
            entry_bytes(name.len() + writer.len() + 16, bytes.len());
        let mut reader = Reader::new(bytes);
        let (partition, record) = match reader.varint().ok().and_then(|p| u32::try_from(p).ok()) {
            Some(partition) => (partition, reader.rest()),
            None => (u32::MAX, bytes),
        };
        let same_epoch = at.as_ref().is_some_and(|(n, w, e, _)| n == name && w == writer && *e == epoch);
        let follows = same_epoch && at.as_ref().is_some_and(|(_, _, _, p)| *p == partition);
        let valid = partition != u32::MAX && valid_record(record);
        if !follows || !valid || !filling.fits(record) {
            flush_staged(&mut staged, &at, &mut seq, &mut filling, deltas)?;
            if !same_epoch {
                seq = 0;
            }
            at = Some((name.to_owned(), writer.to_owned(), epoch, partition));
        }
        filling.push(record);
        if !valid {
            flush_staged(&mut staged, &at, &mut seq, &mut filling, deltas)?;
        }
    }
    flush_staged(&mut staged, &at, &mut seq, &mut filling, deltas)
}
