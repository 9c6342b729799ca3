//! The Kafka sink.
//!
//! Deliveries:
//! - `exactly_once` (any Kafka-protocol broker): a checkpoint's output is staged in Weir's
//!   store (the outbox) at the barrier and produced when the checkpoint completes. Each record
//!   carries its origin (`weir-origin: <writer>:<checkpoint>:<seq>`). Before the first record
//!   of a checkpoint is produced, the end offset of every partition of the topic is noted in
//!   the store; after a crash, or after any produce error, the sink reads the partitions back
//!   from the noted offsets, collects the origins already there, and sends only the rest. A
//!   checkpoint's output is dropped from the outbox only when all of it is acknowledged. So a
//!   record is in the topic once, whatever fails when (docs/design.md, "Kafka sink").
//! - `at_least_once`: produced as it comes; the barrier waits until all is acknowledged.
//! - `none`: produced as it comes; nothing waits.
//! - `transactional`: see `transactional.rs`.
//!
//! Production runs on a thread of the sink's own (blocking I/O off the task's runtime
//! thread), fed through a queue of 4 jobs. `commit` hands it the checkpoints to deliver, in
//! order; its errors surface at the sink's next call, and fail the task (recovery then
//! delivers again, exactly once). Where the task must wait for that thread (a full queue, a
//! barrier's flush, the end) it waits through [`wait_off_runtime`], which holds no runtime
//! worker: a broker that stops answering stalls this task only, never the others or the API
//! (docs/design.md §11, T7), until the request timeout fails the call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use serde::{Deserialize, Serialize};
use weir_store::Outbox;

use super::client::{Client, ClientConfig, KafkaError, ProduceRecord, ProducerIdentity, encode_batch};
use super::format::{self, Format, FormatError, RecordPart};
use crate::connectors::{ConnectorError, Sink};
use crate::record::Batch;

/// The outbox a sink stages in: the embedded store, or the controller's reached from a worker.
pub type SharedOutbox = Arc<dyn Outbox>;

/// The header that names a record's origin.
pub const ORIGIN_HEADER: &str = "weir-origin";

/// Bytes of output a sink holds in memory before it stages (or produces) them.
pub(super) const SPILL_BYTES: usize = 4 << 20;

/// How long a read-back waits first, so that a produce request the broker received before a
/// crash or a failed call is appended (or dropped) before the partitions are read. The one
/// timing assumption of `exactly_once` (docs/design.md, "Kafka").
const READ_BACK_GRACE: Duration = Duration::from_secs(2);

pub use super::config::{Delivery, Partitioner};

/// Everything a sink subtask needs (the connector config, resolved).
#[derive(Debug, Clone)]
pub struct SinkSettings {
    /// How to connect.
    pub client: ClientConfig,
    /// The topic (it must exist).
    pub topic: String,
    /// Delivery guarantee.
    pub delivery: Delivery,
    /// Key format.
    pub key_format: Format,
    /// Value format.
    pub value_format: Format,
    /// Partitioner.
    pub partitioner: Partitioner,
    /// Transactional ids start with this (`transactional`).
    pub transactional_id_prefix: String,
    /// Transaction timeout (`transactional`).
    pub transaction_timeout: Duration,
    /// Largest produce request (one partition's records).
    pub max_request_bytes: usize,
    /// `at_least_once`/`none`: records are handed to the producer at the first write this
    /// long after the last hand-off (and at every barrier).
    pub linger: Duration,
}

/// Runs `wait`, which blocks on a Kafka connector's own thread, without holding a runtime
/// worker: on a multi-threaded tokio runtime the worker first hands its other tasks to a new
/// worker (`block_in_place`); elsewhere (a blocking thread, a plain thread) it just waits.
pub(super) fn wait_off_runtime<T>(wait: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

/// Kafka's murmur2 (`org.apache.kafka.common.utils.Utils.murmur2`).
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let seed: u32 = 0x9747_b28c;
    let len = data.len();
    let mut h: u32 = seed ^ len as u32;
    let chunks = data.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    match rest.len() {
        3 => {
            h ^= (rest[2] as u32) << 16;
            h ^= (rest[1] as u32) << 8;
            h ^= rest[0] as u32;
            h = h.wrapping_mul(M);
        }
        2 => {
            h ^= (rest[1] as u32) << 8;
            h ^= rest[0] as u32;
            h = h.wrapping_mul(M);
        }
        1 => {
            h ^= rest[0] as u32;
            h = h.wrapping_mul(M);
        }
        _ => {}
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// A record on its way: its target partition and the record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Staged {
    pub(super) partition: i32,
    pub(super) record: ProduceRecord,
}

/// Converts a batch's records (formats, partition) onto `out`; returns the bytes added.
pub(super) fn convert(
    settings: &SinkSettings,
    index: u32,
    partitions: i32,
    batch: &Batch,
    out: &mut Vec<Staged>,
) -> Result<usize, ConnectorError> {
    let mut bytes = 0;
    for r in batch.iter() {
        let bad = |part: RecordPart, source: FormatError| ConnectorError::RecordUnwritable {
            part,
            source: Box::new(source),
        };
        let key = format::encode(settings.key_format, r.key).map_err(|m| bad(RecordPart::Key, m))?;
        let value = format::encode(settings.value_format, r.value).map_err(|m| bad(RecordPart::Value, m))?;
        let partition = match (settings.partitioner, key.as_deref()) {
            (Partitioner::Key, Some(k)) => (murmur2(k) & 0x7fff_ffff) % partitions,
            _ => (index as i32) % partitions,
        };
        let record = ProduceRecord { key, value, timestamp: r.timestamp, headers: Vec::new() };
        bytes += record.size();
        out.push(Staged { partition, record });
    }
    Ok(bytes)
}

/// What the production thread is asked to do.
enum Job {
    /// Deliver every checkpoint staged in `outbox` up to `upto` (exactly_once).
    DeliverUpTo { outbox: SharedOutbox, upto: u64 },
    /// Produce these now (at_least_once, none).
    Produce(Vec<Staged>),
    /// Answer when everything before is acknowledged.
    Flush(Sender<()>),
}

/// How a [`KafkaSink`] delivers, with what the mode needs: `exactly_once` owns its outbox.
enum Mode {
    /// Output is staged in the outbox at each barrier and produced when its checkpoint
    /// completes.
    ExactlyOnce(SharedOutbox),
    /// Output is produced as it comes; with `wait` (`at_least_once`) each barrier waits
    /// until all of it is acknowledged.
    Direct {
        /// Wait for acknowledgements at every barrier.
        wait: bool,
    },
}

/// A failure of the production thread, kept for the sink's next calls.
type Failure = Arc<Mutex<Option<Arc<ConnectorError>>>>;

/// A Kafka sink subtask (exactly_once, at_least_once, none).
pub struct KafkaSink {
    settings: SinkSettings,
    mode: Mode,
    writer: String,
    index: u32,
    partitions: i32,
    buffer: Vec<Staged>,
    buffered_bytes: usize,
    next_epoch: u64,
    spilled: bool,
    /// When the buffer was last handed to the producer (`at_least_once`, `none`).
    handed_off: std::time::Instant,
    jobs: SyncSender<Job>,
    failure: Failure,
}

impl KafkaSink {
    /// Opens subtask `index`; `writer` names it uniquely (job/node/subtask). `exactly_once`
    /// needs the store (`store`).
    pub fn open(
        settings: SinkSettings,
        store: Option<SharedOutbox>,
        writer: String,
        index: u32,
    ) -> Result<KafkaSink, ConnectorError> {
        let mut client = Client::connect(settings.client.clone())?;
        let partitions = client.partitions(std::slice::from_ref(&settings.topic))?;
        let partitions = partitions.first().map(|t| t.partitions.len() as i32).unwrap_or(0);
        if partitions == 0 {
            return Err(ConnectorError::NoPartitions(settings.topic.clone()));
        }
        let mode = match (settings.delivery, store) {
            (Delivery::ExactlyOnce, Some(outbox)) => Mode::ExactlyOnce(outbox),
            (Delivery::ExactlyOnce, None) => {
                return Err(ConnectorError::NoStore {
                    what: "the `kafka` sink with `exactly_once` delivery".into(),
                });
            }
            (delivery, _) => Mode::Direct { wait: delivery == Delivery::AtLeastOnce },
        };
        let (jobs, job_rx) = sync_channel(4);
        let failure = Arc::new(Mutex::new(None));
        let producer = Producer {
            client,
            topic: settings.topic.clone(),
            writer: writer.clone(),
            session: None,
            partitions,
            request_bytes: settings.max_request_bytes,
        };
        let fail = failure.clone();
        std::thread::Builder::new()
            .name(format!("weir-kafka-sink-{index}"))
            .spawn(move || producer.run(job_rx, fail))
            .map_err(|source| ConnectorError::Thread { what: "producer", source })?;
        Ok(KafkaSink {
            settings,
            mode,
            writer,
            index,
            partitions,
            buffer: Vec::new(),
            buffered_bytes: 0,
            next_epoch: 1,
            spilled: false,
            handed_off: std::time::Instant::now(),
            jobs,
            failure,
        })
    }

    fn check(&self) -> Result<(), ConnectorError> {
        match self.failure.lock().expect("not poisoned").as_ref() {
            Some(e) => Err(ConnectorError::Shared(e.clone())),
            None => Ok(()),
        }
    }

    /// Queues `job`; with the queue full, waits for room off the runtime.
    fn send(&self, job: Job) -> Result<(), ConnectorError> {
        let sent = match self.jobs.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(job)) => wait_off_runtime(|| self.jobs.send(job)).map_err(|_| ()),
            Err(TrySendError::Disconnected(_)) => Err(()),
        };
        sent.map_err(|()| match self.failure.lock().expect("not poisoned").clone() {
            Some(e) => ConnectorError::Shared(e),
            None => ConnectorError::ThreadEnded("Kafka producer"),
        })
    }

    /// Stages the buffer in `outbox` under checkpoint `epoch` (exactly_once). Invariant K3:
    /// durable before the checkpoint completes, produced only after.
    fn stage(
        outbox: &SharedOutbox,
        writer: &str,
        epoch: u64,
        buffer: &mut Vec<Staged>,
        buffered_bytes: &mut usize,
    ) -> Result<(), ConnectorError> {
        let encoded: Vec<Vec<u8>> =
            buffer.iter().map(|s| rmp_serde::to_vec(s).expect("encoding into a Vec")).collect();
        outbox.outbox_stage(writer, epoch, &encoded)?;
        buffer.clear();
        *buffered_bytes = 0;
        Ok(())
    }

    /// Waits until the producer acknowledged everything handed to it.
    fn flush(&self) -> Result<(), ConnectorError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.send(Job::Flush(tx))?;
        if wait_off_runtime(|| rx.recv()).is_err() {
            self.check()?;
            return Err(ConnectorError::ThreadEnded("Kafka producer"));
        }
        self.check()
    }
}

impl Sink for KafkaSink {
    fn write(&mut self, batch: &Batch) -> Result<(), ConnectorError> {
        self.check()?;
        self.buffered_bytes += convert(&self.settings, self.index, self.partitions, batch, &mut self.buffer)?;
        let lingered = self.settings.delivery != Delivery::ExactlyOnce
            && self.settings.delivery != Delivery::Transactional
            && self.handed_off.elapsed() >= self.settings.linger;
        if self.buffered_bytes >= SPILL_BYTES || lingered {
            self.handed_off = std::time::Instant::now();
            match &self.mode {
                Mode::ExactlyOnce(outbox) => {
                    let epoch = self.next_epoch;
                    Self::stage(outbox, &self.writer, epoch, &mut self.buffer, &mut self.buffered_bytes)?;
                    self.spilled = true;
                }
                Mode::Direct { .. } => {
                    let records = std::mem::take(&mut self.buffer);
                    self.buffered_bytes = 0;
                    self.send(Job::Produce(records))?;
                }
            }
        }
        Ok(())
    }

    fn precommit(&mut self, epoch: u64) -> Result<Option<serde_json::Value>, ConnectorError> {
        self.check()?;
        match &self.mode {
            Mode::ExactlyOnce(outbox) => {
                let spilled = std::mem::take(&mut self.spilled);
                self.next_epoch = self.next_epoch.max(epoch.saturating_add(1));
                if self.buffer.is_empty() && !spilled {
                    return Ok(None);
                }
                if !self.buffer.is_empty() {
                    Self::stage(outbox, &self.writer, epoch, &mut self.buffer, &mut self.buffered_bytes)?;
                }
                Ok(Some(serde_json::json!({ "epoch": epoch })))
            }
            &Mode::Direct { wait } => {
                let records = std::mem::take(&mut self.buffer);
                self.buffered_bytes = 0;
                if !records.is_empty() {
                    self.send(Job::Produce(records))?;
                }
                if wait {
                    self.flush()?;
                }
                Ok(None)
            }
        }
    }

    fn commit(&mut self, transactions: &[serde_json::Value]) -> Result<(), ConnectorError> {
        self.check()?;
        let upto = transactions.iter().filter_map(|t| t.get("epoch").and_then(|e| e.as_u64())).max();
        if let (Mode::ExactlyOnce(outbox), Some(upto)) = (&self.mode, upto) {
            self.send(Job::DeliverUpTo { outbox: outbox.clone(), upto })?;
        }
        Ok(())
    }

    fn recover(
        &mut self,
        checkpoint: u64,
        _transactions: &[serde_json::Value],
    ) -> Result<(), ConnectorError> {
        if let Mode::ExactlyOnce(outbox) = &self.mode {
            let outbox = outbox.clone();
            // Output of checkpoints after the restored one never counted; every staged
            // checkpoint up to it did (completed, or owned by it), delivered or not.
            outbox.outbox_discard_after(&self.writer, checkpoint)?;
            self.next_epoch = checkpoint.saturating_add(1);
            self.spilled = false;
            if checkpoint > 0 {
                self.send(Job::DeliverUpTo { outbox, upto: checkpoint })?;
            }
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        if let Mode::Direct { .. } = self.mode {
            let records = std::mem::take(&mut self.buffer);
            if !records.is_empty() {
                self.send(Job::Produce(records))?;
            }
        }
        self.flush()
    }
}

/// Tests only: `WEIR_TEST_PAUSE_KAFKA_DELIVERY=<n>` stops the process's n-th delivery of a
/// completed checkpoint after part of its output is produced (and says so on stderr), so that a
/// test can kill the process exactly in the window the read-back exists for.
fn pause_for_test(epoch: u64) {
    static DELIVERIES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    static PAUSE_AT: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let Some(n) = *PAUSE_AT
        .get_or_init(|| std::env::var("WEIR_TEST_PAUSE_KAFKA_DELIVERY").ok().and_then(|v| v.parse().ok()))
    else {
        return;
    };
    if DELIVERIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 == n {
        eprintln!("weir-test: paused delivering checkpoint {epoch}");
        loop {
            std::thread::park();
        }
    }
}

/// The production thread's state.
struct Producer {
    client: Client,
    topic: String,
    writer: String,
    /// The idempotent producer of this session and each partition's next sequence number;
    /// `None` after an error (the next send starts a new session).
    session: Option<(ProducerIdentity, BTreeMap<i32, i32>)>,
    partitions: i32,
    request_bytes: usize,
}

/// The note taken before a checkpoint's first record is produced: each partition's end.
#[derive(Debug, Serialize, Deserialize)]
struct Note {
    ends: BTreeMap<i32, i64>,
}

impl Producer {
    fn run(mut self, jobs: Receiver<Job>, failure: Failure) {
        while let Ok(job) = jobs.recv() {
            if failure.lock().expect("not poisoned").is_some() {
                // Failed: answer flushes (the sink reports the failure), do nothing else.
                if let Job::Flush(done) = job {
                    let _ = done.send(());
                }
                continue;
            }
            let result = match job {
                Job::DeliverUpTo { outbox, upto } => self.deliver_upto(&outbox, upto),
                Job::Produce(records) => self.produce_plain(records),
                Job::Flush(done) => {
                    let _ = done.send(());
                    Ok(())
                }
            };
            if let Err(e) = result {
                *failure.lock().expect("not poisoned") = Some(Arc::new(e));
            }
        }
    }

    fn deliver_upto(&mut self, outbox: &SharedOutbox, upto: u64) -> Result<(), ConnectorError> {
        let epochs = outbox.outbox_epochs(&self.writer)?;
        for epoch in epochs.into_iter().filter(|e| *e <= upto) {
            self.deliver(outbox, epoch)?;
        }
        Ok(())
    }

    /// Produces checkpoint `epoch`'s staged output exactly once, then drops it.
    fn deliver(&mut self, outbox: &SharedOutbox, epoch: u64) -> Result<(), ConnectorError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            match self.try_deliver(outbox, epoch) {
                Ok(()) => break,
                Err(ConnectorError::Kafka(e)) if e.retriable() && attempts < 5 => {
                    tracing::warn!(writer = %self.writer, epoch, error = %e, "producing a checkpoint's output failed; reading back and resuming");
                    self.session = None;
                    self.client.reset();
                    std::thread::sleep(Duration::from_millis(100 * attempts));
                }
                Err(ConnectorError::Kafka(source)) => {
                    return Err(ConnectorError::Deliver {
                        checkpoint: epoch,
                        topic: self.topic.clone(),
                        source: Box::new(source),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        // K4: dropped only once every record of it is acknowledged.
        outbox.outbox_drop(&self.writer, epoch)?;
        Ok(())
    }

    fn try_deliver(&mut self, outbox: &SharedOutbox, epoch: u64) -> Result<(), ConnectorError> {
        let note = outbox.outbox_note(&self.writer, epoch)?;
        let present = match note {
            // Produced before (a crash, or an error): what is there already? First let a
            // request the broker received before the crash or error land (the grace).
            Some(bytes) => {
                std::thread::sleep(READ_BACK_GRACE);
                let note: Note = serde_json::from_slice(&bytes).map_err(|e| ConnectorError::Unreadable {
                    what: "the outbox note",
                    reason: e.to_string(),
                })?;
                self.present(epoch, &note)?
            }
            None => {
                let parts: Vec<i32> = (0..self.partitions).collect();
                let ends = self.client.end_offsets(&self.topic, &parts)?;
                let note = serde_json::to_vec(&Note { ends }).expect("a map of numbers");
                // K4: the ends are durable before the first record of `epoch` is sent.
                outbox.outbox_set_note(&self.writer, epoch, &note)?;
                BTreeSet::new()
            }
        };
        let mut from = 0;
        loop {
            let page = outbox.outbox_read(&self.writer, epoch, from, 4096)?;
            let Some((last, _)) = page.last() else { break };
            from = last + 1;
            let mut by_partition: BTreeMap<i32, Vec<ProduceRecord>> = BTreeMap::new();
            for (seq, bytes) in page {
                if present.contains(&seq) {
                    continue;
                }
                let staged: Staged = rmp_serde::from_slice(&bytes).map_err(|e| {
                    ConnectorError::Unreadable { what: "a staged record", reason: e.to_string() }
                })?;
                let mut record = staged.record;
                record
                    .headers
                    .push((ORIGIN_HEADER.into(), format!("{}:{epoch}:{seq}", self.writer).into_bytes()));
                by_partition.entry(staged.partition).or_default().push(record);
            }
            for (partition, records) in by_partition {
                self.send_records(partition, &records)?;
                pause_for_test(epoch);
            }
        }
        Ok(())
    }

    /// The sequence numbers of checkpoint `epoch` already in the topic (read from the ends
    /// noted before its first record was produced).
    fn present(&mut self, epoch: u64, note: &Note) -> Result<BTreeSet<u64>, KafkaError> {
        let prefix = format!("{}:{epoch}:", self.writer);
        let mut present = BTreeSet::new();
        let parts: Vec<i32> = note.ends.keys().copied().collect();
        let ends = self.client.end_offsets(&self.topic, &parts)?;
        let mut at: BTreeMap<(String, i32), i64> = note
            .ends
            .iter()
            .filter(|(p, from)| ends.get(p).is_some_and(|end| end > from))
            .map(|(p, from)| ((self.topic.clone(), *p), *from))
            .collect();
        while !at.is_empty() {
            let fetched = self.client.fetch(&at, Duration::from_millis(100), 8 << 20, 1 << 20, false)?;
            for part in fetched {
                if let Some(e) = part.error {
                    return Err(e);
                }
                for r in &part.records {
                    if let Some(seq) = r
                        .header(ORIGIN_HEADER)
                        .and_then(|h| std::str::from_utf8(h).ok())
                        .and_then(|h| h.strip_prefix(&prefix))
                        .and_then(|s| s.parse().ok())
                    {
                        present.insert(seq);
                    }
                }
                let key = (part.topic.clone(), part.partition);
                if part.next_offset >= ends[&part.partition] {
                    at.remove(&key);
                } else {
                    at.insert(key, part.next_offset);
                }
            }
        }
        Ok(present)
    }

    /// Produces `records` to `partition` in order, in requests of at most `max_request_bytes`,
    /// through the session's idempotent producer.
    fn send_records(&mut self, partition: i32, records: &[ProduceRecord]) -> Result<(), KafkaError> {
        let mut start = 0;
        while start < records.len() {
            let mut end = start;
            let mut bytes = 0;
            while end < records.len() && (end == start || bytes + records[end].size() <= self.request_bytes) {
                bytes += records[end].size();
                end += 1;
            }
            if self.session.is_none() {
                // The broker may not offer idempotence; then records go without producer id
                // (exactly-once still holds: errors are resolved by reading back).
                let producer = self.client.init_producer_id(None, 60_000).ok();
                self.session = producer.map(|p| (p, BTreeMap::new()));
            }
            let producer =
                self.session.as_ref().map(|(p, seqs)| (*p, seqs.get(&partition).copied().unwrap_or(0)));
            let batch: Bytes = encode_batch(&records[start..end], producer, false, Compression::None)?;
            if let Err(e) = self.client.produce(&self.topic, partition, batch, None) {
                self.session = None;
                return Err(e);
            }
            if let Some((_, seqs)) = &mut self.session {
                let next = seqs.entry(partition).or_insert(0);
                *next = next.wrapping_add((end - start) as i32);
            }
            start = end;
        }
        Ok(())
    }

    /// at_least_once / none: produce, retrying an error a few times (duplicates possible).
    fn produce_plain(&mut self, records: Vec<Staged>) -> Result<(), ConnectorError> {
        let mut by_partition: BTreeMap<i32, Vec<ProduceRecord>> = BTreeMap::new();
        for s in records {
            by_partition.entry(s.partition).or_default().push(s.record);
        }
        for (partition, records) in by_partition {
            let mut attempts = 0;
            loop {
                attempts += 1;
                match self.send_records(partition, &records) {
                    Ok(()) => break,
                    Err(e) if e.retriable() && attempts < 5 => {
                        self.client.reset();
                        std::thread::sleep(Duration::from_millis(100 * attempts));
                    }
                    Err(source) => {
                        return Err(ConnectorError::Produce {
                            topic: self.topic.clone(),
                            source: Box::new(source),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafka() {
        // Values from Kafka's UtilsTest#testMurmur2.
        assert_eq!(murmur2(b"21"), -973932308);
        assert_eq!(murmur2(b"foobar"), -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string"), -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string"), -1486304829);
        assert_eq!(murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971);
        assert_eq!(murmur2(b"abc"), 479470107);
    }
}
