//! The built-in stream log: named streams of partitions, each a dense, offset-addressed
//! sequence of records starting at offset 0, plus staging for exactly-once sinks.
//!
//! Exactly-once sinks write in two phases: [`Store::stage`] stores records invisibly under
//! `(writer, epoch)` (not durable on its own: the completion commit of the checkpoint, in the
//! same database, makes it durable), and once the checkpoint of that epoch completed,
//! [`Store::commit_staged`] appends them to their partitions in one durable transaction. After
//! a restart the sink calls [`Store::discard_staged`] for the epochs after the restored
//! checkpoint and [`Store::commit_staged`] for those up to it (idempotent).

use redb::{Durability, ReadableTable, Table};
use serde::{Deserialize, Serialize};

use crate::codec::{Reader, decode_record, encode_record, put_varint};
use crate::error::StoreError;
use crate::store::{LOG, LOG_ENDS, STAGED, STREAMS, Store};
use crate::usage::{Meter, Subject, charge};

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

/// About the bytes `record` stores, for the free-space floor.
fn record_size(record: &LogRecord) -> u64 {
    (record.key.len() + record.value.len() + 16) as u64
}

fn corrupt_record(name: &str, partition: u32, offset: u64, detail: String) -> StoreError {
    StoreError::corrupt(format!("record {offset} of partition {partition} of stream `{name}`"), detail)
}

/// Appends already-encoded records to one partition; returns the offset of the first.
fn append_encoded<'r>(
    log: &mut Table<'_, (&'static str, u32, u64), &'static [u8]>,
    ends: &mut Table<'_, (&'static str, u32), u64>,
    name: &str,
    partition: u32,
    records: impl IntoIterator<Item = &'r [u8]>,
    meter: &mut Meter,
) -> Result<u64, StoreError> {
    let first = end_of(ends, name, partition)?;
    let mut next = first;
    for record in records {
        let old = log.insert((name, partition, next), record)?.map(|v| v.value().len());
        meter.put(name.len() + 12, record.len(), old);
        next += 1;
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
        self.check_disk(groups.iter().flat_map(|(_, r)| r.iter()).map(record_size).sum())?;
        let txn = self.write_txn(Durability::Immediate)?;
        let mut firsts = Vec::with_capacity(groups.len());
        let mut meter = Meter::default();
        {
            let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
            let mut log = txn.open_table(LOG)?;
            let mut ends = txn.open_table(LOG_ENDS)?;
            for (partition, records) in groups {
                check_partition(name, *partition, partitions)?;
                let encoded: Vec<Vec<u8>> = records
                    .iter()
                    .map(|record| {
                        let mut out = Vec::with_capacity(record.key.len() + record.value.len() + 16);
                        encode_record(&mut out, record);
                        out
                    })
                    .collect();
                firsts.push(append_encoded(
                    &mut log,
                    &mut ends,
                    name,
                    *partition,
                    encoded.iter().map(Vec::as_slice),
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
        let txn = self.read_txn()?;
        let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
        check_partition(name, partition, partitions)?;
        let log = txn.open_table(LOG)?;
        let mut records = Vec::new();
        if max == 0 {
            return Ok(records);
        }
        for item in log.range((name, partition, from_offset)..=(name, partition, u64::MAX))? {
            let (key, bytes) = item?;
            let offset = key.value().2;
            let record = decode_record(bytes.value())
                .map_err(|detail| corrupt_record(name, partition, offset, detail))?;
            records.push((offset, record));
            if records.len() == max {
                break;
            }
        }
        Ok(records)
    }

    /// The next offset to be written in a partition (0 for an empty one).
    pub fn end_offset(&self, name: &str, partition: u32) -> Result<u64, StoreError> {
        let txn = self.read_txn()?;
        let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
        check_partition(name, partition, partitions)?;
        end_of(&txn.open_table(LOG_ENDS)?, name, partition)
    }

    /// Pre-commit for an exactly-once sink: stores `records` (partition, record) for `writer`
    /// (e.g. "job/node/3") under `epoch`, invisible to readers. Not durable on its own; may be
    /// called several times per epoch (the records are appended in call order).
    pub fn stage(
        &self,
        name: &str,
        writer: &str,
        epoch: u64,
        records: &[(u32, LogRecord)],
    ) -> Result<(), StoreError> {
        self.check_disk(records.iter().map(|(_, r)| record_size(r)).sum())?;
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        {
            let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
            for (partition, _) in records {
                check_partition(name, *partition, partitions)?;
            }
            let mut staged = txn.open_table(STAGED)?;
            let first_seq =
                match staged.range((name, writer, epoch, 0)..=(name, writer, epoch, u64::MAX))?.next_back() {
                    Some(last) => last?.0.value().3 + 1,
                    None => 0,
                };
            let mut out = Vec::new();
            for (seq, (partition, record)) in (first_seq..).zip(records) {
                out.clear();
                put_varint(&mut out, u64::from(*partition));
                encode_record(&mut out, record);
                let old = staged.insert((name, writer, epoch, seq), out.as_slice())?.map(|v| v.value().len());
                meter.put(name.len() + writer.len() + 16, out.len(), old);
            }
        }
        charge(&txn, Subject::Stream(name), meter.0, true)?;
        txn.commit()?;
        Ok(())
    }

    /// Makes every staged record of `writer` with epoch `<= up_to_epoch` visible, in (epoch,
    /// staging order), in one durable transaction; returns how many. Calling it again commits
    /// nothing more.
    pub fn commit_staged(&self, name: &str, writer: &str, up_to_epoch: u64) -> Result<u64, StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        let committed = {
            let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
            let mut staged = txn.open_table(STAGED)?;
            let mut log = txn.open_table(LOG)?;
            let mut ends = txn.open_table(LOG_ENDS)?;
            let mut done = Vec::new();
            for item in staged.range((name, writer, 0, 0)..=(name, writer, up_to_epoch, u64::MAX))? {
                let (key, bytes) = item?;
                let (_, _, epoch, seq) = key.value();
                let bytes = bytes.value();
                let corrupt = |detail: String| {
                    StoreError::corrupt(
                        format!(
                            "staged record {seq} of epoch {epoch} of writer `{writer}` on stream `{name}`"
                        ),
                        detail,
                    )
                };
                let mut reader = Reader::new(bytes);
                let partition = reader.varint().map_err(&corrupt)?;
                let record = reader.rest();
                decode_record(record).map_err(&corrupt)?;
                let partition = u32::try_from(partition)
                    .ok()
                    .filter(|p| *p < partitions)
                    .ok_or_else(|| corrupt(format!("partition {partition} out of range")))?;
                append_encoded(&mut log, &mut ends, name, partition, [record], &mut meter)?;
                done.push((epoch, seq, bytes.len()));
            }
            for (epoch, seq, len) in &done {
                staged.remove((name, writer, *epoch, *seq))?;
                meter.remove(name.len() + writer.len() + 16, *len);
            }
            done.len() as u64
        };
        // Committing records that were counted when staged is never refused.
        charge(&txn, Subject::Stream(name), meter.0, false)?;
        txn.commit()?;
        Ok(committed)
    }

    /// Drops the staged records of `writer` with epoch `> after_epoch` (used at recovery);
    /// returns how many. Not durable on its own.
    pub fn discard_staged(&self, name: &str, writer: &str, after_epoch: u64) -> Result<u64, StoreError> {
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        let discarded = {
            partitions_of(&txn.open_table(STREAMS)?, name)?;
            let Some(first) = after_epoch.checked_add(1) else {
                return Ok(0);
            };
            let mut staged = txn.open_table(STAGED)?;
            let mut doomed = Vec::new();
            for item in staged.range((name, writer, first, 0)..=(name, writer, u64::MAX, u64::MAX))? {
                let (key, value) = item?;
                let (_, _, epoch, seq) = key.value();
                doomed.push((epoch, seq, value.value().len()));
            }
            for (epoch, seq, len) in &doomed {
                staged.remove((name, writer, *epoch, *seq))?;
                meter.remove(name.len() + writer.len() + 16, *len);
            }
            doomed.len() as u64
        };
        charge(&txn, Subject::Stream(name), meter.0, false)?;
        txn.commit()?;
        Ok(discarded)
    }

    /// The number of records staged by `writer` on stream `name` and not yet committed.
    pub fn staged_count(&self, name: &str, writer: &str) -> Result<u64, StoreError> {
        let txn = self.read_txn()?;
        partitions_of(&txn.open_table(STREAMS)?, name)?;
        let staged = txn.open_table(STAGED)?;
        let mut count = 0;
        for item in staged.range((name, writer, 0, 0)..=(name, writer, u64::MAX, u64::MAX))? {
            item?;
            count += 1;
        }
        Ok(count)
    }
}
