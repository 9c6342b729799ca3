//! The built-in stream log: named streams of partitions, each a dense, offset-addressed
//! sequence of records starting at offset 0, plus staging for exactly-once sinks.
//!
//! Exactly-once sinks write in two phases: [`Store::stage`] stores records invisibly under
//! `(writer, epoch)` (not durable on its own: the completion commit of the checkpoint, in the
//! same database, makes it durable), and once the checkpoint of that epoch completed,
//! [`Store::commit_staged`] appends them to their partitions in one durable transaction. After
//! a restart the sink calls [`Store::discard_staged`] for the epochs after the restored
//! checkpoint and [`Store::commit_staged`] for those up to it (idempotent).
//!
//! Records are stored in chunks (`chunk`): the log maps `(stream, partition, first offset)` to
//! a chunk of consecutive records, staging maps `(stream, writer, epoch, sequence, partition)`
//! to a chunk of one partition. Appends store chunks inline; staging stores each chunk once in
//! the bodies table and a small reference to it, and a commit moves the reference into the log
//! (the body is never rewritten). A log value is either kind; readers take both. A read from
//! offset X starts at the chunk with the greatest first offset at or below X.

mod chunk;
mod migrate;
mod staged;

use redb::{Durability, ReadableTable, Table};
use serde::{Deserialize, Serialize};

pub use chunk::{ChunkBuffer, MAX_CHUNK_BYTES, MAX_CHUNK_RECORDS};
pub(crate) use migrate::migrate;

use crate::codec::CodecError;
use crate::error::StoreError;
use crate::store::Store;
use crate::tables::{BODIES, LOG, LOG_ENDS, STREAMS, log_key_len};
use crate::usage::{Meter, Subject, charge};
use chunk::{ChunkRecords, PartChunks, Stored, stored};

/// The largest partition count of a stream.
pub const MAX_PARTITIONS: u32 = 1024;
/// The longest stream name.
pub const MAX_STREAM_NAME_LEN: usize = 128;

/// One record of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRecord {
    /// The key (may be empty).
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// Event time, unix ms.
    pub timestamp: i64,
}

/// Checks a stream name: 1 to 128 characters of `A-Z a-z 0-9 . _ -`, not starting with `.`.
pub fn validate_stream_name(name: &str) -> Result<(), StoreError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > MAX_STREAM_NAME_LEN {
        Some("it is longer than 128 characters")
    } else if name.starts_with('.') {
        Some("it starts with '.'")
    } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')) {
        Some("it contains a character other than A-Z a-z 0-9 . _ -")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoreError::InvalidStreamName { name: name.to_owned(), reason }),
        None => Ok(()),
    }
}

/// The partition count of `name`, read from the streams table.
fn partitions_of(table: &impl ReadableTable<&'static str, u32>, name: &str) -> Result<u32, StoreError> {
    match table.get(name)? {
        Some(partitions) => Ok(partitions.value()),
        None => Err(StoreError::UnknownStream { name: name.to_owned() }),
    }
}

fn check_partition(name: &str, partition: u32, partitions: u32) -> Result<(), StoreError> {
    if partition < partitions {
        Ok(())
    } else {
        Err(StoreError::UnknownPartition { name: name.to_owned(), partition, partitions })
    }
}

fn end_of(
    table: &impl ReadableTable<(&'static str, u32), u64>,
    name: &str,
    partition: u32,
) -> Result<u64, StoreError> {
    Ok(table.get((name, partition))?.map_or(0, |end| end.value()))
}

fn corrupt_chunk(name: &str, partition: u32, first: u64, detail: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(
        format!("chunk at offset {first} of partition {partition} of stream `{name}`"),
        detail,
    )
}

/// Appends chunks to one partition's log; returns the offset of the first record (the end
/// when there are none).
fn append_chunks<'c>(
    log: &mut Table<'_, (&'static str, u32, u64), &'static [u8]>,
    ends: &mut Table<'_, (&'static str, u32), u64>,
    name: &str,
    partition: u32,
    chunks: impl IntoIterator<Item = (&'c [u8], u32)>,
    meter: &mut Meter,
) -> Result<u64, StoreError> {
    let first = end_of(ends, name, partition)?;
    let mut next = first;
    for (chunk, count) in chunks {
        let old = log.insert((name, partition, next), chunk)?.map(|v| v.value().len());
        meter.put(log_key_len(name), chunk.len(), old);
        next = next
            .checked_add(u64::from(count))
            .ok_or_else(|| corrupt_chunk(name, partition, next, "offsets overflow".to_owned()))?;
    }
    if next != first {
        let old = ends.insert((name, partition), next)?.map(|_| 8);
        meter.put(name.len() + 4, 8, old);
    }
    Ok(first)
}

impl Store {
    /// Creates stream `name` with `partitions` partitions (1 to 1024). Creating an existing
    /// stream again with the same count is a no-op; another count is an error.
    pub fn create_stream(&self, name: &str, partitions: u32) -> Result<(), StoreError> {
        validate_stream_name(name)?;
        if !(1..=MAX_PARTITIONS).contains(&partitions) {
            return Err(StoreError::InvalidPartitionCount { name: name.to_owned(), partitions });
        }
        let txn = self.write_txn(Durability::Immediate)?;
        {
            let mut streams = txn.open_table(STREAMS)?;
            match partitions_of(&streams, name) {
                Ok(existing) if existing == partitions => return Ok(()),
                Ok(existing) => {
                    return Err(StoreError::StreamExists {
                        name: name.to_owned(),
                        existing,
                        requested: partitions,
                    });
                }
                Err(StoreError::UnknownStream { .. }) => {}
                Err(error) => return Err(error),
            }
            streams.insert(name, partitions)?;
        }
        txn.commit()?;
        Ok(())
    }

    /// The partition count of stream `name`.
    pub fn stream_partitions(&self, name: &str) -> Result<u32, StoreError> {
        let txn = self.read_txn()?;
        partitions_of(&txn.open_table(STREAMS)?, name)
    }

    /// Every stream with its partition count, by name.
    pub fn streams(&self) -> Result<Vec<(String, u32)>, StoreError> {
        let txn = self.read_txn()?;
        let mut streams = Vec::new();
        for item in txn.open_table(STREAMS)?.iter()? {
            let (name, partitions) = item?;
            streams.push((name.value().to_owned(), partitions.value()));
        }
        Ok(streams)
    }

    /// Appends `records` to a partition durably; returns the offset of the first one (the end
    /// offset when `records` is empty).
    pub fn append(&self, name: &str, partition: u32, records: &[LogRecord]) -> Result<u64, StoreError> {
        if records.is_empty() {
            return self.end_offset(name, partition);
        }
        let firsts = self.append_partitions(name, &[(partition, records)])?;
        Ok(firsts[0])
    }

    /// Appends records to several partitions in one durable transaction (all or nothing);
    /// returns the offset of the first record of each group, in order.
    pub fn append_partitions(
        &self,
        name: &str,
        groups: &[(u32, &[LogRecord])],
    ) -> Result<Vec<u64>, StoreError> {
        let encoded: Vec<(u32, PartChunks)> = groups
            .iter()
            .map(|(partition, records)| {
                let mut chunks = PartChunks::default();
                for r in records.iter() {
                    chunks.push(&r.key, &r.value, r.timestamp);
                }
                (*partition, chunks)
            })
            .collect();
        self.append_encoded(name, encoded.iter().map(|(p, c)| (*p, c)))
    }

    /// Appends the records of `buffer` to their partitions in one durable transaction (all or
    /// nothing); returns each partition that got records with the offset of its first one.
    pub fn append_buffer(&self, name: &str, buffer: &ChunkBuffer) -> Result<Vec<(u32, u64)>, StoreError> {
        let firsts = self.append_encoded(name, buffer.partitions())?;
        Ok(buffer.partitions().map(|(p, _)| p).zip(firsts).collect())
    }

    fn append_encoded<'c>(
        &self,
        name: &str,
        groups: impl Iterator<Item = (u32, &'c PartChunks)> + Clone,
    ) -> Result<Vec<u64>, StoreError> {
        let bytes = groups.clone().flat_map(|(_, c)| c.chunks()).map(|(c, _)| c.len() as u64).sum();
        self.check_disk(bytes)?;
        let txn = self.write_txn(Durability::Immediate)?;
        let mut firsts = Vec::new();
        let mut meter = Meter::default();
        {
            let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
            let mut log = txn.open_table(LOG)?;
            let mut ends = txn.open_table(LOG_ENDS)?;
            for (partition, chunks) in groups {
                check_partition(name, partition, partitions)?;
                firsts.push(append_chunks(
                    &mut log,
                    &mut ends,
                    name,
                    partition,
                    chunks.chunks(),
                    &mut meter,
                )?);
            }
        }
        charge(&txn, Subject::Stream(name), meter.0, true)?;
        txn.commit()?;
        Ok(firsts)
    }

    /// Up to `max` records of a partition from `from_offset` on, with their offsets (empty at or
    /// past the end).
    pub fn read(
        &self,
        name: &str,
        partition: u32,
        from_offset: u64,
        max: usize,
    ) -> Result<Vec<(u64, LogRecord)>, StoreError> {
        let mut records = Vec::new();
        self.read_with(name, partition, from_offset, max, |offset, key, value, timestamp| {
            records.push((offset, LogRecord { key: key.to_vec(), value: value.to_vec(), timestamp }));
            true
        })?;
        Ok(records)
    }

    /// [`Store::read`] without copies: calls `visit(offset, key, value, timestamp)` for each of
    /// up to `max` records from `from_offset` on, in order, with bytes borrowed from the store,
    /// until it returns false (it saw enough: say, a batch full in bytes); returns how many it
    /// saw. On an error `visit` may have seen some records already.
    pub fn read_with(
        &self,
        name: &str,
        partition: u32,
        from_offset: u64,
        max: usize,
        mut visit: impl FnMut(u64, &[u8], &[u8], i64) -> bool,
    ) -> Result<usize, StoreError> {
        let txn = self.read_txn()?;
        let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
        check_partition(name, partition, partitions)?;
        if max == 0 {
            return Ok(0);
        }
        let log = txn.open_table(LOG)?;
        let bodies = txn.open_table(BODIES)?;
        // The chunk holding `from_offset` starts at or before it.
        let start = match log.range((name, partition, 0)..=(name, partition, from_offset))?.next_back() {
            Some(item) => item?.0.value().2,
            None => from_offset,
        };
        let mut seen = 0;
        let mut expected = None;
        for item in log.range((name, partition, start)..=(name, partition, u64::MAX))? {
            let (key, bytes) = item?;
            let first = key.value().2;
            let corrupt = |detail: String| corrupt_chunk(name, partition, first, detail);
            let malformed = |error: CodecError| corrupt_chunk(name, partition, first, error);
            if let Some(expected) = expected
                && first != expected
            {
                return Err(corrupt(format!("the previous chunk ends at offset {expected}")));
            }
            let body;
            let chunk = match stored(bytes.value()).map_err(malformed)? {
                Stored::Inline(chunk) => chunk,
                Stored::Ref(r) => {
                    body = bodies
                        .get((name, r.id))?
                        .ok_or_else(|| corrupt(format!("body {} is missing", r.id)))?;
                    r.check_body(body.value()).map_err(malformed)?;
                    body.value()
                }
            };
            let mut records = ChunkRecords::new(chunk).map_err(malformed)?;
            let end = first
                .checked_add(u64::from(records.count()))
                .ok_or_else(|| corrupt("offsets overflow".into()))?;
            expected = Some(end);
            if end <= from_offset {
                continue;
            }
            let mut offset = first;
            while let Some((key, value, timestamp)) = records.next_record().map_err(malformed)? {
                if offset >= from_offset {
                    let more = visit(offset, key, value, timestamp);
                    seen += 1;
                    if seen == max || !more {
                        return Ok(seen);
                    }
                }
                offset += 1;
            }
        }
        Ok(seen)
    }

    /// The next offset to be written in a partition (0 for an empty one).
    pub fn end_offset(&self, name: &str, partition: u32) -> Result<u64, StoreError> {
        let txn = self.read_txn()?;
        let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
        check_partition(name, partition, partitions)?;
        end_of(&txn.open_table(LOG_ENDS)?, name, partition)
    }
}
