//! Staging for exactly-once sinks: chunks of one partition each, keyed `(stream, writer,
//! epoch, sequence, partition)`. Each staged chunk is written once, to the bodies table; staging
//! holds a reference to it, and a commit moves the reference into the log. Chunks staged inline
//! (by a version before bodies) are moved whole.

use std::collections::BTreeMap;

use redb::{Durability, ReadableTable, Table};

use super::chunk::{BodyRef, ChunkBuffer, Stored, chunk_count, stored, validate};
use super::{LogRecord, check_partition, end_of, partitions_of};
use crate::codec::CodecError;
use crate::error::StoreError;
use crate::store::Store;
use crate::tables::{
    BODIES, COUNTERS, LOG, LOG_ENDS, NEXT_BODY_ID, STAGED, STREAMS, body_key_len, log_key_len, staged_key_len,
};
use crate::usage::{Meter, Subject, charge};

type Bodies<'t> = Table<'t, (&'static str, u64), &'static [u8]>;

fn corrupt_staged(
    name: &str,
    writer: &str,
    epoch: u64,
    seq: u64,
    detail: impl std::fmt::Display,
) -> StoreError {
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
            let mut bodies = txn.open_table(BODIES)?;
            let mut counters = txn.open_table(COUNTERS)?;
            let mut id = counters.get(NEXT_BODY_ID)?.map_or(1, |v| v.value());
            for (partition, chunks) in buffer.partitions() {
                for (chunk, count) in chunks.chunks() {
                    let reference = BodyRef::to(chunk, count, id).ok_or_else(|| StoreError::Encode {
                        what: format!("a chunk of stream `{name}`"),
                        detail: format!("{} bytes is 4 GiB or more", chunk.len()),
                    })?;
                    // Ids only grow: a body already there means the counter went back.
                    if bodies.insert((name, id), chunk)?.is_some() {
                        return Err(StoreError::corrupt(
                            format!("the bodies of stream `{name}`"),
                            format!("body {id} exists before its id was allocated"),
                        ));
                    }
                    meter.put(body_key_len(name), chunk.len(), None);
                    let reference = reference.encode();
                    let old = staged
                        .insert((name, writer, epoch, seq, partition), reference.as_slice())?
                        .map(|v| v.value().len());
                    meter.put(staged_key_len(name, writer), reference.len(), old);
                    seq += 1;
                    id += 1;
                }
            }
            counters.insert(NEXT_BODY_ID, id)?;
        }
        charge(&txn, Subject::Stream(name), meter.0, true)?;
        txn.commit()?;
        Ok(())
    }

    /// Makes every staged record of `writer` with epoch `<= up_to_epoch` visible, in (epoch,
    /// staging order), in one durable transaction; returns how many. Calling it again commits
    /// nothing more.
    ///
    /// Each staged value becomes one log value as it is: a reference moves (its body is not
    /// rewritten), an inline chunk is copied. The record count decides the offsets of
    /// everything after it, so it is checked first: a reference strictly (its layout, a count
    /// of 1 to [`MAX_CHUNK_RECORDS`](super::MAX_CHUNK_RECORDS), and a body of its length whose
    /// header holds that count), an inline chunk by walking its records (bounds-checked, no
    /// copies). A damaged one fails with [`StoreError::Corrupt`] and commits nothing rather
    /// than corrupting the log.
    pub fn commit_staged(&self, name: &str, writer: &str, up_to_epoch: u64) -> Result<u64, StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        let committed = {
            let partitions = partitions_of(&txn.open_table(STREAMS)?, name)?;
            let mut staged = txn.open_table(STAGED)?;
            let bodies = txn.open_table(BODIES)?;
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
                let malformed = |error: CodecError| corrupt_staged(name, writer, epoch, seq, error);
                if partition >= partitions {
                    return Err(corrupt(format!("partition {partition} out of range")));
                }
                let bytes = bytes.value();
                let count = match stored(bytes).map_err(malformed)? {
                    Stored::Inline(chunk) => validate(chunk).map_err(malformed)?,
                    Stored::Ref(r) => {
                        let body = bodies
                            .get((name, r.id))?
                            .ok_or_else(|| corrupt(format!("body {} is missing", r.id)))?;
                        r.check_body(body.value()).map_err(malformed)?;
                        r.count
                    }
                };
                let first = match next.get(&partition) {
                    Some(first) => *first,
                    None => end_of(&ends, name, partition)?,
                };
                let old = log.insert((name, partition, first), bytes)?.map(|v| v.value().len());
                meter.put(log_key_len(name), bytes.len(), old);
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

    /// Drops the staged records of `writer` with epoch `> after_epoch` (used at recovery),
    /// with their bodies; returns how many. Not durable on its own.
    pub fn discard_staged(&self, name: &str, writer: &str, after_epoch: u64) -> Result<u64, StoreError> {
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        let discarded = {
            partitions_of(&txn.open_table(STREAMS)?, name)?;
            let Some(first) = after_epoch.checked_add(1) else {
                return Ok(0);
            };
            let mut staged = txn.open_table(STAGED)?;
            let mut bodies = txn.open_table(BODIES)?;
            let mut doomed = Vec::new();
            let mut records = 0u64;
            let range = (name, writer, first, 0, 0)..=(name, writer, u64::MAX, u64::MAX, u32::MAX);
            for item in staged.range(range)? {
                let (key, value) = item?;
                let (_, _, epoch, seq, partition) = key.value();
                let value = value.value();
                let (count, body) =
                    staged_chunk(value).map_err(|d| corrupt_staged(name, writer, epoch, seq, d))?;
                records += u64::from(count);
                doomed.push((epoch, seq, partition, value.len(), body));
            }
            for (epoch, seq, partition, len, body) in doomed {
                if let Some(id) = body
                    && !remove_body(&mut bodies, name, id, &mut meter)?
                {
                    return Err(corrupt_staged(name, writer, epoch, seq, format!("body {id} is missing")));
                }
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
            let (records, _) =
                staged_chunk(value.value()).map_err(|d| corrupt_staged(name, writer, epoch, seq, d))?;
            count += u64::from(records);
        }
        Ok(count)
    }
}

/// The record count of a staged value and, for a reference, its body's id.
fn staged_chunk(value: &[u8]) -> Result<(u32, Option<u64>), CodecError> {
    match stored(value)? {
        Stored::Inline(chunk) => Ok((chunk_count(chunk)?, None)),
        Stored::Ref(r) => Ok((r.count, Some(r.id))),
    }
}

/// Removes body `id` of stream `name`, crediting its bytes; false when there is none.
fn remove_body(bodies: &mut Bodies<'_>, name: &str, id: u64, meter: &mut Meter) -> Result<bool, StoreError> {
    let Some(body) = bodies.remove((name, id))? else {
        return Ok(false);
    };
    meter.remove(body_key_len(name), body.value().len());
    Ok(true)
}
