//! Staging for exactly-once sinks: chunks of one partition each, keyed `(stream, writer,
//! epoch, sequence, partition)`, moved into the log whole on commit.

use std::collections::BTreeMap;

use redb::{Durability, ReadableTable};

use super::chunk::{ChunkBuffer, chunk_count, validate};
use super::{LogRecord, check_partition, end_of, partitions_of};
use crate::error::StoreError;
use crate::store::{LOG, LOG_ENDS, STAGED, STREAMS, Store};
use crate::usage::{Meter, Subject, charge};

/// Key bytes a staged chunk counts for (name, writer, epoch, sequence, partition).
pub(crate) fn staged_key_len(name: &str, writer: &str) -> usize {
    name.len() + writer.len() + 20
}

fn corrupt_staged(name: &str, writer: &str, epoch: u64, seq: u64, detail: String) -> StoreError {
    StoreError::corrupt(
        format!("staged chunk {seq} of epoch {epoch} of writer `{writer}` on stream `{name}`"),
        detail,
    )
}

impl Store {
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
        let mut buffer = ChunkBuffer::new();
        for (partition, r) in records {
            buffer.push(*partition, &r.key, &r.value, r.timestamp);
        }
        self.stage_buffer(name, writer, epoch, &buffer)
    }

    /// [`Store::stage`] for records already encoded in `buffer`: one staged chunk per chunk of
    /// the buffer, in the buffer's order within each partition.
    pub fn stage_buffer(
        &self,
        name: &str,
        writer: &str,
        epoch: u64,
        buffer: &ChunkBuffer,
    ) -> Result<(), StoreError> {
        self.check_disk(buffer.bytes() as u64)?;
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        {
            let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
            for (partition, _) in buffer.partitions() {
                check_partition(name, partition, partitions)?;
            }
            if buffer.is_empty() {
                return Ok(());
            }
            let mut staged = txn.open_table(STAGED)?;
            let range = (name, writer, epoch, 0, 0)..=(name, writer, epoch, u64::MAX, u32::MAX);
            let mut seq = match staged.range(range)?.next_back() {
                Some(last) => last?.0.value().3 + 1,
                None => 0,
            };
            for (partition, chunks) in buffer.partitions() {
                for (chunk, _) in chunks.chunks() {
                    let old =
                        staged.insert((name, writer, epoch, seq, partition), chunk)?.map(|v| v.value().len());
                    meter.put(staged_key_len(name, writer), chunk.len(), old);
                    seq += 1;
                }
            }
        }
        charge(&txn, Subject::Stream(name), meter.0, true)?;
        txn.commit()?;
        Ok(())
    }

    /// Makes every staged record of `writer` with epoch `<= up_to_epoch` visible, in (epoch,
    /// staging order), in one durable transaction; returns how many. Calling it again commits
    /// nothing more.
    ///
    /// Each staged chunk becomes one log chunk as it is (no re-encoding). Its records are
    /// walked first (bounds-checked, no copies): the count in its header decides the offsets
    /// of everything after it, so a damaged chunk fails with [`StoreError::Corrupt`] and
    /// commits nothing rather than corrupting the log.
    pub fn commit_staged(&self, name: &str, writer: &str, up_to_epoch: u64) -> Result<u64, StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        let committed = {
            let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
            let mut staged = txn.open_table(STAGED)?;
            let mut log = txn.open_table(LOG)?;
            let mut ends = txn.open_table(LOG_ENDS)?;
            let mut done = Vec::new();
            let mut committed = 0u64;
            // Partition → next offset; written once at the end.
            let mut next: BTreeMap<u32, u64> = BTreeMap::new();
            let range = (name, writer, 0, 0, 0)..=(name, writer, up_to_epoch, u64::MAX, u32::MAX);
            for item in staged.range(range)? {
                let (key, bytes) = item?;
                let (_, _, epoch, seq, partition) = key.value();
                let corrupt = |detail: String| corrupt_staged(name, writer, epoch, seq, detail);
                if partition >= partitions {
                    return Err(corrupt(format!("partition {partition} out of range")));
                }
                let bytes = bytes.value();
                let count = validate(bytes).map_err(corrupt)?;
                let first = match next.get(&partition) {
                    Some(first) => *first,
                    None => end_of(&ends, name, partition)?,
                };
                let old = log.insert((name, partition, first), bytes)?.map(|v| v.value().len());
                meter.put(super::log_key_len(name), bytes.len(), old);
                let end =
                    first.checked_add(u64::from(count)).ok_or_else(|| corrupt("offsets overflow".into()))?;
                next.insert(partition, end);
                committed += u64::from(count);
                done.push((epoch, seq, partition, bytes.len()));
            }
            for (partition, end) in next {
                let old = ends.insert((name, partition), end)?.map(|_| 8);
                meter.put(name.len() + 4, 8, old);
            }
            for (epoch, seq, partition, len) in done {
                staged.remove((name, writer, epoch, seq, partition))?;
                meter.remove(staged_key_len(name, writer), len);
            }
            committed
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
            let mut records = 0u64;
            let range = (name, writer, first, 0, 0)..=(name, writer, u64::MAX, u64::MAX, u32::MAX);
            for item in staged.range(range)? {
                let (key, value) = item?;
                let (_, _, epoch, seq, partition) = key.value();
                let value = value.value();
                records +=
                    u64::from(chunk_count(value).map_err(|d| corrupt_staged(name, writer, epoch, seq, d))?);
                doomed.push((epoch, seq, partition, value.len()));
            }
            for (epoch, seq, partition, len) in doomed {
                staged.remove((name, writer, epoch, seq, partition))?;
                meter.remove(staged_key_len(name, writer), len);
            }
            records
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
        let range = (name, writer, 0, 0, 0)..=(name, writer, u64::MAX, u64::MAX, u32::MAX);
        for item in staged.range(range)? {
            let (key, value) = item?;
            let (_, _, epoch, seq, _) = key.value();
            count += u64::from(
                chunk_count(value.value()).map_err(|d| corrupt_staged(name, writer, epoch, seq, d))?,
            );
        }
        Ok(count)
    }
}
