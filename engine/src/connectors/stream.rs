//! Source and sink over the built-in stream log (a partitioned, offset-addressed log in the
//! embedded store).
//!
//! The source is replayable: subtask `i` of `p` reads the partitions `j` with `j % p == i`,
//! and its position is the next offset of each of them, so a checkpoint resumes every
//! partition exactly where it was. A following source with `idle_timeout_ms` is idle
//! ([`Source::idle`]) while its partitions have delivered nothing for that long, so the
//! watermarks downstream do not wait for it. The sink writes exactly once: records are staged in the
//! store per checkpoint (pre-commit) and appended to the log when the checkpoint completes.
//! Between checkpoints the sink holds at most [`SPILL_BYTES`] in memory: beyond that it
//! stages what it holds early (see [`StreamSink::write`]), so a job without periodic
//! checkpoints (committed only at its end) does not hold all its output in memory.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use weir_store::{ChunkBuffer, Store};

use super::{BatchLimit, ConnectorError, Sink, Source, bad_position};
use crate::key_groups::key_group;
use crate::record::Batch;

/// Config of the stream source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSourceConfig {
    /// The stream's name.
    pub stream: String,
    /// Keep reading as records are appended instead of ending at the end of the log: the job
    /// runs until it is stopped or cancelled.
    #[serde(default)]
    pub follow: bool,
    /// Following: a subtask whose partitions have delivered nothing for this many
    /// milliseconds (or that has no partition) is idle until a record arrives, so event time
    /// downstream advances without it. `None` (the default): never idle.
    #[serde(default)]
    pub idle_timeout_ms: Option<NonZeroU64>,
}

/// Reads the partitions of one subtask, in turn, from its saved offsets to the end.
pub struct StreamSource {
    store: Store,
    stream: String,
    batch: BatchLimit,
    /// Partition → next offset.
    offsets: BTreeMap<u32, u64>,
    turn: usize,
    follow: bool,
    idle_timeout: Option<Duration>,
    /// When a partition last delivered records (or the source opened).
    last_record: Instant,
}

impl StreamSource {
    /// Subtask `index` of `parallelism` over `config.stream` (which must exist).
    pub fn open(
        config: &StreamSourceConfig,
        store: &Store,
        batch: impl Into<BatchLimit>,
        index: u32,
        parallelism: u32,
    ) -> Result<Self, ConnectorError> {
        let partitions = store.stream_partitions(&config.stream)?;
        let offsets = (0..partitions).filter(|p| p % parallelism == index).map(|p| (p, 0)).collect();
        Ok(StreamSource {
            store: store.clone(),
            stream: config.stream.clone(),
            batch: batch.into(),
            offsets,
            turn: 0,
            follow: config.follow,
            idle_timeout: config.idle_timeout_ms.map(|ms| Duration::from_millis(ms.get())),
            last_record: Instant::now(),
        })
    }
}

impl Source for StreamSource {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        let partitions: Vec<u32> = self.offsets.keys().copied().collect();
        for k in 0..partitions.len() {
            let p = partitions[(self.turn + k) % partitions.len()];
            let from = self.offsets[&p];
            // Straight from the store's pages into the batch: no record is built.
            let mut batch: Option<Batch> = None;
            let mut next = from;
            let limit = self.batch;
            let (records, bytes) = limit.reserve(64);
            self.store.read_with(&self.stream, p, from, limit.records, |offset, key, value, timestamp| {
                let batch = batch.get_or_insert_with(|| Batch::with_capacity(records, bytes));
                batch.push(key, value, timestamp);
                next = offset + 1;
                !limit.is_full(batch)
            })?;
            if let Some(batch) = batch {
                self.offsets.insert(p, next);
                self.turn = (self.turn + k + 1) % partitions.len();
                self.last_record = Instant::now();
                return Ok(Some(batch));
            }
        }
        // Following: nothing new yet is an empty batch, not the end.
        Ok(self.follow.then(Batch::empty))
    }

    fn position(&self) -> serde_json::Value {
        serde_json::json!({ "offsets": self.offsets })
    }

    fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError> {
        let offsets: BTreeMap<u32, u64> = position
            .get("offsets")
            .and_then(|o| serde_json::from_value(o.clone()).ok())
            .ok_or_else(|| bad_position(position))?;
        if offsets.keys().ne(self.offsets.keys()) {
            return Err(bad_position(position));
        }
        self.offsets = offsets;
        Ok(())
    }

    fn idle(&self) -> bool {
        match self.idle_timeout {
            Some(timeout) if self.follow => self.offsets.is_empty() || self.last_record.elapsed() >= timeout,
            _ => false,
        }
    }
}

/// Config of the stream sink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSinkConfig {
    /// The stream's name.
    pub stream: String,
    /// Create the stream with this many partitions if it does not exist.
    #[serde(default)]
    pub partitions: Option<u32>,
}

/// Bytes of records a transactional stream sink holds in memory before it stages them.
pub const SPILL_BYTES: usize = 4 << 20;

/// Writes records to the log: keyed records to the partition of their key's hash,
/// unkeyed ones to the partition of the subtask.
pub struct StreamSink {
    store: Store,
    stream: String,
    writer: String,
    index: u32,
    partitions: u32,
    transactional: bool,
    /// Records encoded into chunks per partition, as they will be stored.
    buffer: ChunkBuffer,
    /// Encoded bytes in `buffer`.
    buffered_bytes: usize,
    /// The epoch records staged early go under: one above the last pre-committed (or
    /// recovered) checkpoint. Invariant: at most the id of the next barrier (checkpoint ids
    /// only grow, across restarts too), and above the checkpoint a recovery restores (so
    /// `discard_staged` drops them if that checkpoint never completes).
    next_epoch: u64,
    /// Records were staged under `next_epoch` since the last pre-commit.
    spilled: bool,
}

impl StreamSink {
    /// Opens the sink for subtask `index`; `writer` names it uniquely (job/node/subtask).
    pub fn open(
        config: &StreamSinkConfig,
        store: Store,
        writer: String,
        index: u32,
        transactional: bool,
    ) -> Result<Self, ConnectorError> {
        if let Some(p) = config.partitions
            && store.stream_partitions(&config.stream).is_err()
        {
            store.create_stream(&config.stream, p)?;
        }
        let partitions = store.stream_partitions(&config.stream)?;
        Ok(StreamSink {
            store,
            stream: config.stream.clone(),
            writer,
            index,
            partitions,
            transactional,
            buffer: ChunkBuffer::new(),
            buffered_bytes: 0,
            next_epoch: 1,
            spilled: false,
        })
    }

    fn partition(&self, key: &[u8]) -> u32 {
        if key.is_empty() { self.index % self.partitions } else { key_group(key, self.partitions) }
    }
}

impl Sink for StreamSink {
    /// Transactional: buffers, and past `SPILL_BYTES` stages the buffer under the coming
    /// epoch. Staging (not refusing sinks without periodic checkpoints) is what a log with
    /// transactions does: the open transaction lives in the store, invisible to readers until
    /// its checkpoint commits it, so exactly-once holds and memory stays bounded.
    fn write(&mut self, batch: &Batch) -> Result<(), ConnectorError> {
        for r in batch.iter() {
            let partition = self.partition(r.key);
            self.buffer.push(partition, r.key, r.value, r.timestamp);
        }
        self.buffered_bytes = self.buffer.bytes();
        if self.transactional {
            if self.buffered_bytes >= SPILL_BYTES {
                self.store.stage_buffer(&self.stream, &self.writer, self.next_epoch, &self.buffer)?;
                self.buffer.clear();
                self.buffered_bytes = 0;
                self.spilled = true;
            }
        } else if !self.buffer.is_empty() {
            self.store.append_buffer(&self.stream, &self.buffer)?;
            self.buffer.clear();
            self.buffered_bytes = 0;
        }
        Ok(())
    }

    fn precommit(&mut self, epoch: u64) -> Result<Option<serde_json::Value>, ConnectorError> {
        if !self.transactional {
            return Ok(None);
        }
        // Records staged early under `next_epoch` (<= `epoch`) belong to this checkpoint.
        let spilled = std::mem::take(&mut self.spilled);
        self.next_epoch = self.next_epoch.max(epoch.saturating_add(1));
        if self.buffer.is_empty() && !spilled {
            return Ok(None);
        }
        if !self.buffer.is_empty() {
            self.store.stage_buffer(&self.stream, &self.writer, epoch, &self.buffer)?;
            self.buffer.clear();
            self.buffered_bytes = 0;
        }
        Ok(Some(serde_json::json!({ "epoch": epoch })))
    }

    fn commit(&mut self, transactions: &[serde_json::Value]) -> Result<(), ConnectorError> {
        let Some(upto) = transactions.iter().filter_map(|t| t.get("epoch").and_then(|e| e.as_u64())).max()
        else {
            return Ok(());
        };
        self.store.commit_staged(&self.stream, &self.writer, upto)?;
        Ok(())
    }

    fn recover(&mut self, checkpoint: u64, transactions: &[serde_json::Value]) -> Result<(), ConnectorError> {
        self.commit(transactions)?;
        self.store.discard_staged(&self.stream, &self.writer, checkpoint)?;
        self.next_epoch = checkpoint.saturating_add(1);
        self.spilled = false;
        Ok(())
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A following subtask goes idle once its partitions delivered nothing for the timeout,
    /// and is active again when a record arrives; one without partitions is idle at once;
    /// without a timeout, or without `follow`, a source is never idle.
    #[test]
    fn a_following_source_is_idle_after_its_timeout_until_a_record_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        store.create_stream("in", 2).unwrap();
        let config = |follow, idle_timeout_ms: Option<u64>| StreamSourceConfig {
            stream: "in".into(),
            follow,
            idle_timeout_ms: idle_timeout_ms.and_then(NonZeroU64::new),
        };
        let timeout = Duration::from_millis(300);
        let mut source = StreamSource::open(&config(true, Some(300)), &store, 16, 0, 1).unwrap();
        let opened = Instant::now();
        let deadline = opened + Duration::from_secs(30);
        while !source.idle() {
            assert_eq!(source.next_batch().unwrap().map(|b| b.len()), Some(0));
            assert!(Instant::now() < deadline, "never went idle");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(opened.elapsed() >= timeout, "idle before its timeout");
        let record = weir_store::LogRecord { key: vec![], value: vec![1], timestamp: 5 };
        store.append("in", 1, &[record]).unwrap();
        let read = Instant::now();
        assert_eq!(source.next_batch().unwrap().map(|b| b.len()), Some(1));
        let active = !source.idle();
        // Unless this thread stalled for the whole timeout, the record made it active.
        assert!(active || read.elapsed() >= timeout, "still idle right after a record");

        let none = StreamSource::open(&config(true, Some(60_000)), &store, 16, 2, 3).unwrap();
        assert!(none.idle(), "no partition: idle at once");
        let never = StreamSource::open(&config(true, None), &store, 16, 2, 3).unwrap();
        assert!(!never.idle(), "no timeout: never idle");
        let bounded = StreamSource::open(&config(false, Some(1)), &store, 16, 2, 3).unwrap();
        assert!(!bounded.idle(), "not following: never idle");
        let parse = |v| serde_json::from_value::<StreamSourceConfig>(v);
        assert!(parse(serde_json::json!({ "stream": "in", "idle_timeout_ms": 0 })).is_err(), "0 is refused");
        let unset = parse(serde_json::json!({ "stream": "in", "idle_timeout_ms": null })).unwrap();
        assert_eq!(unset.idle_timeout_ms, None);
    }

    #[test]
    fn a_sink_without_checkpoints_stages_early_and_commits_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        let config = StreamSinkConfig { stream: "out".into(), partitions: Some(1) };
        let mut sink = StreamSink::open(&config, store.clone(), "job/out/0".into(), 0, true).unwrap();
        sink.recover(0, &[]).unwrap();
        let value = vec![7u8; 1000];
        let batches = 3 * SPILL_BYTES / (100 * 1000);
        for b in 0..batches {
            let mut batch = Batch::with_capacity(100, 100 * 1000);
            for i in 0..100 {
                batch.push(&[], &value, (b * 100 + i) as i64);
            }
            sink.write(&batch).unwrap();
            // Never more than the spill threshold in memory.
            assert!(sink.buffered_bytes < SPILL_BYTES, "{} bytes held", sink.buffered_bytes);
        }
        assert!(store.staged_count("out", "job/out/0").unwrap() > 0, "staged before any checkpoint");
        assert_eq!(store.end_offset("out", 0).unwrap(), 0, "nothing visible before the commit");
        // The final checkpoint's id is above the early epoch: everything commits, in order.
        let txn = sink.precommit(5).unwrap().expect("a transaction");
        sink.commit(&[txn]).unwrap();
        let total = (batches * 100) as u64;
        assert_eq!(store.end_offset("out", 0).unwrap(), total);
        let records = store.read("out", 0, 0, total as usize).unwrap();
        assert!(records.iter().enumerate().all(|(i, (_, r))| r.timestamp == i as i64));
        // A recovery to a checkpoint before an early stage drops it.
        let mut batch = Batch::with_capacity(1, 1000);
        batch.push(&[], &vec![1u8; SPILL_BYTES], 0);
        sink.write(&batch).unwrap();
        assert_eq!(store.staged_count("out", "job/out/0").unwrap(), 1);
        let mut again = StreamSink::open(&config, store.clone(), "job/out/0".into(), 0, true).unwrap();
        again.recover(5, &[]).unwrap();
        assert_eq!(store.staged_count("out", "job/out/0").unwrap(), 0);
    }
}
