//! The Kafka source: a fixed, deterministic assignment of partitions to subtasks (Flink's
//! `KafkaSource` rule, no consumer-group rebalancing), per-partition offsets as the position a
//! checkpoint records (the source of truth on restore), partition discovery while running, and a
//! watermark per partition with idle partitions left out.
//!
//! Each subtask owns a fetcher thread (blocking I/O off the task's runtime thread) that fetches
//! ahead into a bounded queue; the task takes whole chunks from it without blocking. Offsets
//! advance only when the task takes a chunk, so [`KafkaSource::position`] is exactly what was
//! emitted. A seek starts a new generation: chunks of an older one are dropped.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::time::{Duration, Instant};

use super::client::{Client, ClientConfig, KafkaError, OffsetSpec};
use super::format::{self, Format, FormatError, RecordPart};
use crate::connectors::{BatchLimit, ConnectorError, Origin, Rejected, RescaleError, bad_position};
use crate::record::Batch;

/// Which topics a source reads.
#[derive(Clone)]
pub enum Topics {
    /// These topics (each must exist at start).
    Names(Vec<String>),
    /// Every topic the matcher accepts (found again at each discovery).
    Matching(Arc<dyn Fn(&str) -> bool + Send + Sync>),
}

impl std::fmt::Debug for Topics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topics::Names(n) => f.debug_tuple("Names").field(n).finish(),
            Topics::Matching(_) => f.write_str("Matching(..)"),
        }
    }
}

/// Where partitions start when there is no checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The first offset in each partition.
    Earliest,
    /// The end of each partition at start.
    Latest,
    /// The first record at or after this time (ms).
    Timestamp(i64),
    /// The group's committed offsets (earliest where it has none).
    Group,
}

pub use super::config::EventTime;

/// Everything a source subtask needs (the connector config, resolved).
#[derive(Debug, Clone)]
pub struct SourceSettings {
    /// How to connect.
    pub client: ClientConfig,
    /// What to read.
    pub topics: Topics,
    /// Where to start without a checkpoint.
    pub start: Start,
    /// The consumer group (for `Start::Group` and committing offsets).
    pub group_id: Option<String>,
    /// Commit the checkpoint's offsets to the group when it completes (for lag tools).
    pub commit_offsets: bool,
    /// Key format.
    pub key_format: Format,
    /// Value format.
    pub value_format: Format,
    /// Event time.
    pub event_time: EventTime,
    /// A partition with no record for this long no longer holds the watermark back.
    pub idle_timeout: Option<Duration>,
    /// How often to look for new partitions (and topics); `None`: never.
    pub discovery_interval: Option<Duration>,
    /// How long a fetch waits for data.
    pub fetch_max_wait: Duration,
    /// Bytes per fetch.
    pub fetch_max_bytes: i32,
    /// Bytes per partition per fetch.
    pub partition_max_bytes: i32,
    /// Read only committed transactions.
    pub read_committed: bool,
    /// End at the offsets that were the end when the source opened (a bounded read).
    pub bounded: bool,
    /// Where batches are cut.
    pub batch: BatchLimit,
    /// Watermarks trail each partition's highest event time by this much (`None`: no
    /// watermarks from this source).
    pub out_of_orderness_ms: Option<i64>,
}

type TopicPartition = (String, i32);

/// Java's `String.hashCode`.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// The subtask that reads `partition` of `topic` among `parallelism`: Flink's
/// `KafkaSourceEnumerator#getSplitOwner`, so a topic's partitions spread round-robin from a
/// start that depends on the topic.
// K1: a fixed function of the topic, the partition and the parallelism (no rebalancing).
pub fn owner(topic: &str, partition: i32, parallelism: u32) -> u32 {
    let start = ((java_hash(topic).wrapping_mul(31)) & 0x7FFF_FFFF) as i64 % parallelism as i64;
    ((start + partition as i64) % parallelism as i64) as u32
}

/// What the fetcher thread hands the task.
enum Event {
    /// A partition discovered while running, to read from `offset`.
    Assigned { tp: TopicPartition, offset: i64 },
    /// Records of one partition (possibly none: the offset moved past control records), and
    /// those among them that could not be read, with the first one's error.
    Chunk {
        generation: u64,
        tp: TopicPartition,
        batch: Batch,
        next_offset: i64,
        max_time: i64,
        rejected: Vec<Rejected>,
        error: Option<Box<ConnectorError>>,
        /// The partition's end (high watermark) when fetched (-1: unknown).
        end_offset: i64,
    },
    /// The fetcher failed for good.
    Failed(ConnectorError),
}

enum Command {
    Seek { generation: u64, offsets: BTreeMap<TopicPartition, i64> },
    Commit(BTreeMap<TopicPartition, i64>),
}

/// Records of one partition converted into a batch, up to offset `last`, their latest event
/// time (a watermark passes no record the task has not taken: not the rest of the fetch),
/// with those among them that could not be read.
struct Chunk {
    batch: Batch,
    last: i64,
    max_time: i64,
    rejected: Vec<Rejected>,
    error: Option<Box<ConnectorError>>,
}

/// One partition as the task sees it.
#[derive(Debug, Clone)]
struct PartitionState {
    next: i64,
    /// The partition's end as last fetched (-1: not yet known).
    end: i64,
    /// Highest event time emitted.
    max_time: i64,
    /// When it last delivered a record (or was assigned).
    active_at: Instant,
}

/// A Kafka source subtask.
pub struct KafkaSource {
    settings: SourceSettings,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    /// Bounded reads: where each partition ends.
    stop: BTreeMap<TopicPartition, i64>,
    generation: u64,
    events: Receiver<Event>,
    commands: std::sync::mpsc::Sender<Command>,
    /// The highest watermark handed out (never goes back).
    watermark: std::cell::Cell<i64>,
    /// `on_error` is not `fail`: unreadable records are left out and kept here.
    reject: bool,
    rejected: Vec<Rejected>,
}

/// The partitions `settings` reads that subtask `index` of `parallelism` owns.
fn discover(
    client: &mut Client,
    settings: &SourceSettings,
    index: u32,
    parallelism: u32,
) -> Result<Vec<TopicPartition>, KafkaError> {
    let topics = match &settings.topics {
        Topics::Names(names) => client.partitions(names)?,
        Topics::Matching(accept) => client.all_topics()?.into_iter().filter(|t| accept(&t.name)).collect(),
    };
    Ok(topics
        .into_iter()
        .flat_map(|t| t.partitions.into_iter().map(move |p| (t.name.clone(), p)))
        .filter(|(t, p)| owner(t, *p, parallelism) == index)
        .collect())
}

/// Start offsets of `parts` by `start`.
fn start_offsets(
    client: &mut Client,
    settings: &SourceSettings,
    parts: &[TopicPartition],
    start: Start,
) -> Result<BTreeMap<TopicPartition, i64>, KafkaError> {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in parts {
        by_topic.entry(t).or_default().push(*p);
    }
    let mut out = BTreeMap::new();
    for (topic, ps) in by_topic {
        let offsets = match start {
            Start::Earliest => client.list_offsets(topic, &ps, OffsetSpec::Earliest)?,
            Start::Latest => client.end_offsets(topic, &ps)?,
            Start::Timestamp(t) => client.list_offsets(topic, &ps, OffsetSpec::Timestamp(t))?,
            Start::Group => {
                let group = settings.group_id.as_deref().unwrap_or_default();
                let committed = client.committed_offsets(group, topic, &ps)?;
                let missing: Vec<i32> =
                    committed.iter().filter(|(_, o)| o.is_none()).map(|(p, _)| *p).collect();
                let mut found: BTreeMap<i32, i64> =
                    committed.into_iter().filter_map(|(p, o)| Some((p, o?))).collect();
                if !missing.is_empty() {
                    found.extend(client.list_offsets(topic, &missing, OffsetSpec::Earliest)?);
                }
                found
            }
        };
        out.extend(offsets.into_iter().map(|(p, o)| ((topic.to_string(), p), o)));
    }
    Ok(out)
}

impl KafkaSource {
    /// Opens subtask `index` of `parallelism`: finds its partitions and their start offsets
    /// (within the request timeout: an unreachable broker or a missing topic is an error
    /// here), then starts the fetcher.
    pub fn open(
        settings: SourceSettings,
        index: u32,
        parallelism: u32,
    ) -> Result<KafkaSource, ConnectorError> {
        let mut client = Client::connect(settings.client.clone())?;
        let parts = discover(&mut client, &settings, index, parallelism)?;
        let offsets = start_offsets(&mut client, &settings, &parts, settings.start)?;
        let stop = if settings.bounded {
            start_offsets(&mut client, &settings, &parts, Start::Latest)?
        } else {
            BTreeMap::new()
        };
        let now = Instant::now();
        let partitions = offsets
            .iter()
            .map(|(tp, o)| {
                (tp.clone(), PartitionState { next: *o, end: -1, max_time: i64::MIN, active_at: now })
            })
            .collect();
        let (event_tx, events) = sync_channel(8);
        let (commands, command_rx) = std::sync::mpsc::channel();
        let fetcher = Fetcher {
            client,
            settings: settings.clone(),
            index,
            parallelism,
            offsets,
            stop: stop.clone(),
            generation: 0,
            events: event_tx,
            commands: command_rx,
            discovered_at: Instant::now(),
        };
        // T7: the fetcher's blocking I/O runs on a thread of its own, off the runtime's.
        std::thread::Builder::new()
            .name(format!("weir-kafka-source-{index}"))
            .spawn(move || fetcher.run())
            .map_err(|source| ConnectorError::Thread { what: "fetcher", source })?;
        Ok(KafkaSource {
            settings,
            partitions,
            stop,
            generation: 0,
            events,
            commands,
            watermark: std::cell::Cell::new(i64::MIN),
            reject: false,
            rejected: Vec::new(),
        })
    }

    /// The next batch; an empty one when nothing is ready yet; `None` at the end of a bounded read.
    pub fn poll_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        loop {
            match self.events.try_recv() {
                Ok(Event::Assigned { tp, offset }) => {
                    self.partitions.entry(tp).or_insert(PartitionState {
                        next: offset,
                        end: -1,
                        max_time: i64::MIN,
                        active_at: Instant::now(),
                    });
                }
                Ok(Event::Chunk {
                    generation,
                    tp,
                    batch,
                    next_offset,
                    max_time,
                    rejected,
                    error,
                    end_offset,
                }) => {
                    if generation != self.generation {
                        continue;
                    }
                    let Some(state) = self.partitions.get_mut(&tp) else { continue };
                    if let Some(error) = error
                        && !self.reject
                    {
                        return Err(*error);
                    }
                    // K2: the position moves only as the task takes the chunk (with the
                    // records of it that could not be read).
                    state.next = next_offset;
                    state.end = state.end.max(end_offset);
                    self.rejected.extend(rejected);
                    if !batch.is_empty() {
                        state.max_time = state.max_time.max(max_time);
                        state.active_at = Instant::now();
                        return Ok(Some(batch));
                    }
                }
                Ok(Event::Failed(e)) => return Err(e),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    return Err(ConnectorError::ThreadEnded("Kafka fetcher"));
                }
            }
        }
        if self.settings.bounded
            && self.stop.iter().all(|(tp, end)| self.partitions.get(tp).is_none_or(|s| s.next >= *end))
        {
            return Ok(None);
        }
        Ok(Some(Batch::empty()))
    }

    /// Each partition's lag: its end as last fetched minus the next offset to read (never
    /// below 0), once its end is known.
    pub fn lag(&self) -> Vec<(String, i32, i64)> {
        self.partitions
            .iter()
            .filter(|(_, s)| s.end >= 0)
            .map(|((t, p), s)| (t.clone(), *p, (s.end - s.next).max(0)))
            .collect()
    }

    /// From now on, records that cannot be read are left out and kept for
    /// [`KafkaSource::take_rejected`] instead of failing the task.
    pub fn reject_bad_records(&mut self) {
        self.reject = true;
    }

    /// The records left out since the last call.
    pub fn take_rejected(&mut self) -> Vec<Rejected> {
        std::mem::take(&mut self.rejected)
    }

    /// `{"offsets": {topic: {partition: next offset}}}`.
    pub fn position(&self) -> serde_json::Value {
        let mut by_topic: BTreeMap<&str, BTreeMap<String, i64>> = BTreeMap::new();
        for ((t, p), s) in &self.partitions {
            by_topic.entry(t).or_default().insert(p.to_string(), s.next);
        }
        serde_json::json!({ "offsets": by_topic })
    }

    /// Resumes from a position: its offsets for the partitions this subtask owns (a position
    /// merged from several subtasks holds others too); owned partitions it does not name are
    /// new since then and start at their earliest offset.
    pub fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError> {
        let saved = parse_position(position).ok_or_else(|| bad_position(position))?;
        let mut offsets = BTreeMap::new();
        let mut fresh = Vec::new();
        for (tp, state) in &mut self.partitions {
            match saved.get(tp) {
                Some(o) => state.next = *o,
                None => fresh.push(tp.clone()),
            }
        }
        if !fresh.is_empty() {
            let mut client = Client::connect(self.settings.client.clone())?;
            let earliest = start_offsets(&mut client, &self.settings, &fresh, Start::Earliest)?;
            for (tp, o) in earliest {
                if let Some(s) = self.partitions.get_mut(&tp) {
                    s.next = o;
                }
            }
        }
        for (tp, s) in &self.partitions {
            offsets.insert(tp.clone(), s.next);
        }
        self.generation += 1;
        self.commands
            .send(Command::Seek { generation: self.generation, offsets })
            .map_err(|_| ConnectorError::ThreadEnded("Kafka fetcher"))
    }

    /// The subtask's watermark: the lowest of its active partitions' (highest event time
    /// minus the out-of-orderness); idle partitions do not count. Never goes back.
    pub fn current_watermark(&self) -> Option<i64> {
        let delay = self.settings.out_of_orderness_ms?;
        let now = Instant::now();
        let active = self.partitions.values().filter(|s| !self.is_idle(s, now));
        let w = active
            .map(|s| {
                if s.max_time == i64::MIN {
                    i64::MIN
                } else {
                    s.max_time.saturating_sub(delay).saturating_sub(1)
                }
            })
            .min();
        if let Some(w) = w
            && w > self.watermark.get()
        {
            self.watermark.set(w);
        }
        // Some even before any record: the task then takes this source's watermarks only
        // (an empty partition holds event time back until it idles), not the records'.
        Some(self.watermark.get())
    }

    fn is_idle(&self, s: &PartitionState, now: Instant) -> bool {
        self.settings.idle_timeout.is_some_and(|t| now.duration_since(s.active_at) >= t)
    }

    /// Every partition of the subtask is idle (or it has none).
    pub fn all_idle(&self) -> bool {
        let now = Instant::now();
        self.settings.idle_timeout.is_some() && self.partitions.values().all(|s| self.is_idle(s, now))
    }

    /// Commits the offsets of `position` (a completed checkpoint's) to the consumer group.
    pub fn completed(&mut self, position: &serde_json::Value) {
        if !self.settings.commit_offsets || self.settings.group_id.is_none() {
            return;
        }
        if let Some(offsets) = parse_position(position) {
            let _ = self.commands.send(Command::Commit(offsets));
        }
    }
}

/// Reads a position's offsets.
pub fn parse_position(position: &serde_json::Value) -> Option<BTreeMap<TopicPartition, i64>> {
    let by_topic: BTreeMap<String, BTreeMap<String, i64>> =
        serde_json::from_value(position.get("offsets")?.clone()).ok()?;
    let mut out = BTreeMap::new();
    for (t, ps) in by_topic {
        for (p, o) in ps {
            out.insert((t.clone(), p.parse().ok()?), o);
        }
    }
    Some(out)
}

/// Kafka positions (`{"offsets": {"<topic>": {"<partition>": next_offset}}}`, one per
/// subtask) merged into one map. After a rescale every subtask carries every partition's
/// offset and advances only its own, so copies of one partition's offset may differ: the
/// largest is the owner's (offsets only grow), and it wins.
pub fn merge_offsets<'a>(
    positions: impl IntoIterator<Item = &'a serde_json::Value>,
) -> Result<BTreeMap<String, BTreeMap<i32, i64>>, RescaleError> {
    type Offsets = BTreeMap<String, BTreeMap<i32, i64>>;
    let mut merged = Offsets::new();
    for position in positions {
        let part: Offsets = position
            .get("offsets")
            .and_then(|o| serde_json::from_value(o.clone()).ok())
            .ok_or_else(|| RescaleError::Unreadable { connector: "Kafka", position: position.to_string() })?;
        for (topic, partitions) in part {
            let mine = merged.entry(topic).or_default();
            for (partition, offset) in partitions {
                let slot = mine.entry(partition).or_insert(offset);
                *slot = (*slot).max(offset);
            }
        }
    }
    Ok(merged)
}

/// The thread that fetches for one subtask.
struct Fetcher {
    client: Client,
    settings: SourceSettings,
    index: u32,
    parallelism: u32,
    offsets: BTreeMap<TopicPartition, i64>,
    stop: BTreeMap<TopicPartition, i64>,
    generation: u64,
    events: SyncSender<Event>,
    commands: Receiver<Command>,
    discovered_at: Instant,
}

impl Fetcher {
    fn run(mut self) {
        if let Err(e) = self.fetch_loop() {
            let _ = self.events.send(Event::Failed(e));
        }
    }

    fn fetch_loop(&mut self) -> Result<(), ConnectorError> {
        let mut last_error: Option<(KafkaError, Instant)> = None;
        loop {
            if !self.take_commands() {
                return Ok(());
            }
            if let Some(every) = self.settings.discovery_interval
                && !self.settings.bounded
                && self.discovered_at.elapsed() >= every
            {
                self.discovered_at = Instant::now();
                self.discover_new()?;
            }
            let wanted: BTreeMap<TopicPartition, i64> = self
                .offsets
                .iter()
                .filter(|(tp, o)| self.stop.get(*tp).is_none_or(|end| **o < *end))
                .map(|(tp, o)| (tp.clone(), *o))
                .collect();
            if wanted.is_empty() {
                // Nothing to read (no partitions yet, or a bounded read is done): wait for
                // the next discovery or command.
                std::thread::sleep(self.settings.fetch_max_wait.min(Duration::from_millis(100)));
                continue;
            }
            let fetched = self.client.fetch(
                &wanted,
                self.settings.fetch_max_wait,
                self.settings.fetch_max_bytes,
                self.settings.partition_max_bytes,
                self.settings.read_committed,
            )?;
            for part in fetched {
                let tp = (part.topic.clone(), part.partition);
                match part.error {
                    Some(e) => self.partition_failed(tp, e, &mut last_error)?,
                    None => {
                        last_error = None;
                        self.emit(tp, &part.records, part.next_offset, part.high_watermark)?;
                    }
                }
            }
        }
    }

    /// Applies the task's commands; false once the task has dropped the source.
    fn take_commands(&mut self) -> bool {
        loop {
            match self.commands.try_recv() {
                Ok(Command::Seek { generation, offsets }) => {
                    self.generation = generation;
                    self.offsets = offsets;
                }
                Ok(Command::Commit(offsets)) => self.commit(offsets),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// A partition's fetch failed: records deleted under its offset resume at the earliest;
    /// a retriable error is waited out up to the request timeout (`last_error`: the first
    /// of the run and when it came); any other fails the source.
    fn partition_failed(
        &mut self,
        tp: TopicPartition,
        e: KafkaError,
        last_error: &mut Option<(KafkaError, Instant)>,
    ) -> Result<(), ConnectorError> {
        if matches!(e, KafkaError::Broker { code: 1, .. }) {
            // OffsetOutOfRange: the records were deleted (retention); go on from the earliest
            // still there.
            tracing::warn!(topic = %tp.0, partition = tp.1, "offset out of range; resuming at the earliest offset");
            let earliest =
                start_offsets(&mut self.client, &self.settings, std::slice::from_ref(&tp), Start::Earliest)?;
            self.offsets.extend(earliest);
            return Ok(());
        }
        if !e.retriable() {
            return Err(e.into());
        }
        // A retriable error that lasts longer than the request timeout is fatal.
        match last_error {
            Some((_, since)) if since.elapsed() > self.settings.client.request_timeout => {
                return Err(e.into());
            }
            Some(_) => {}
            None => *last_error = Some((e, Instant::now())),
        }
        std::thread::sleep(Duration::from_millis(50));
        Ok(())
    }

    /// Hands the task a partition's fetched records as chunks (one empty chunk when only the
    /// offset moved, past control records), each with the offset to resume after it.
    fn emit(
        &mut self,
        tp: TopicPartition,
        records: &[super::client::FetchedRecord],
        fetched_next: i64,
        end_offset: i64,
    ) -> Result<(), ConnectorError> {
        let batches = self.convert(&tp, records);
        let stop = self.stop.get(&tp).copied();
        let next_offset = stop.map_or(fetched_next, |end| fetched_next.min(end.max(self.offsets[&tp])));
        self.offsets.insert(tp.clone(), next_offset);
        let count = batches.len();
        if count == 0 {
            return self.send(Event::Chunk {
                generation: self.generation,
                tp,
                batch: Batch::empty(),
                next_offset,
                max_time: i64::MIN,
                rejected: Vec::new(),
                error: None,
                end_offset,
            });
        }
        for (i, chunk) in batches.into_iter().enumerate() {
            let next = if i + 1 == count { next_offset } else { chunk.last + 1 };
            self.send(Event::Chunk {
                generation: self.generation,
                tp: tp.clone(),
                batch: chunk.batch,
                next_offset: next,
                max_time: chunk.max_time,
                rejected: chunk.rejected,
                error: chunk.error,
                end_offset,
            })?;
        }
        Ok(())
    }

    fn send(&self, event: Event) -> Result<(), ConnectorError> {
        // The task dropped the source: stop quietly.
        self.events.send(event).map_err(|_| ConnectorError::Stopped)
    }

    /// Converts records into chunks: batches cut at `batch`, each with its last offset and
    /// the records among them that cannot be read (left out, with the first one's error:
    /// the task fails on it unless the node rejects bad records). Returns the chunks and the
    /// highest event time among them.
    fn convert(&self, tp: &TopicPartition, records: &[super::client::FetchedRecord]) -> Vec<Chunk> {
        let end = self.stop.get(tp).copied().unwrap_or(i64::MAX);
        let mut out = Vec::new();
        let limit = self.settings.batch;
        let new_chunk = || Chunk {
            batch: Batch::with_capacity(records.len().min(limit.records), 0),
            last: -1,
            max_time: i64::MIN,
            rejected: Vec::new(),
            error: None,
        };
        let mut chunk = new_chunk();
        for r in records.iter().filter(|r| r.offset < end) {
            chunk.last = r.offset;
            match self.read(r) {
                Ok((key, value, time)) => {
                    chunk.max_time = chunk.max_time.max(time);
                    chunk.batch.push(&key, &value, time);
                    if limit.is_full(&chunk.batch) {
                        out.push(std::mem::replace(&mut chunk, new_chunk()));
                    }
                }
                Err((part, error)) => {
                    let reason = match part {
                        RecordPart::Key => "bad_key",
                        RecordPart::Value => error.reason(),
                    };
                    let e = ConnectorError::RecordUnreadable {
                        topic: tp.0.clone(),
                        partition: tp.1,
                        offset: r.offset,
                        part,
                        source: Box::new(error),
                    };
                    chunk.rejected.push(Rejected {
                        reason: reason.into(),
                        error: e.to_string(),
                        origin: Origin::Kafka { topic: tp.0.clone(), partition: tp.1, offset: r.offset },
                        key: r.key.clone().map(|k| k.to_vec()).unwrap_or_default(),
                        value: r.value.clone().map(|v| v.to_vec()).unwrap_or_default(),
                        timestamp: Some(r.timestamp),
                    });
                    chunk.error.get_or_insert_with(|| Box::new(e));
                }
            }
        }
        if !chunk.batch.is_empty() || !chunk.rejected.is_empty() {
            out.push(chunk);
        }
        out
    }

    /// One record's key, value (in Weir's bytes) and event time, or which part cannot be read.
    #[allow(clippy::type_complexity)]
    fn read<'r>(
        &self,
        r: &'r super::client::FetchedRecord,
    ) -> Result<(std::borrow::Cow<'r, [u8]>, std::borrow::Cow<'r, [u8]>, i64), (RecordPart, FormatError)>
    {
        let key =
            format::decode(self.settings.key_format, r.key.as_deref()).map_err(|m| (RecordPart::Key, m))?;
        let value = format::decode(self.settings.value_format, r.value.as_deref())
            .map_err(|m| (RecordPart::Value, m))?;
        let time = match &self.settings.event_time {
            EventTime::Kafka => r.timestamp,
            EventTime::Field(f) => format::field_time(&value, f).map_err(|m| (RecordPart::Value, m))?,
        };
        Ok((key, value, time))
    }

    fn discover_new(&mut self) -> Result<(), ConnectorError> {
        let parts = match discover(&mut self.client, &self.settings, self.index, self.parallelism) {
            Ok(p) => p,
            // A failed discovery is tried again at the next interval.
            Err(e) if e.retriable() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let new: Vec<TopicPartition> =
            parts.into_iter().filter(|tp| !self.offsets.contains_key(tp)).collect();
        if new.is_empty() {
            return Ok(());
        }
        // New partitions are read from their beginning (they are new since the job started).
        let offsets = start_offsets(&mut self.client, &self.settings, &new, Start::Earliest)?;
        for (tp, offset) in offsets {
            tracing::info!(topic = %tp.0, partition = tp.1, offset, "reading a new partition");
            self.offsets.insert(tp.clone(), offset);
            self.send(Event::Assigned { tp, offset })?;
        }
        Ok(())
    }

    fn commit(&mut self, offsets: BTreeMap<TopicPartition, i64>) {
        let Some(group) = self.settings.group_id.clone() else { return };
        let mut by_topic: HashMap<String, BTreeMap<i32, i64>> = HashMap::new();
        for ((t, p), o) in offsets {
            by_topic.entry(t).or_default().insert(p, o);
        }
        for (topic, offsets) in by_topic {
            // For lag tools only: the checkpoint holds the offsets that count.
            if let Err(e) = self.client.commit_offsets(&group, &topic, &offsets) {
                tracing::warn!(%group, %topic, error = %e, "committing offsets to the consumer group failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_spreads_partitions_like_flink() {
        // Flink: ((topic.hashCode() * 31) & 0x7FFFFFFF) % n is the start, then round-robin.
        assert_eq!(java_hash("orders"), -1008770331);
        for n in 1..5u32 {
            let owners: Vec<u32> = (0..8).map(|p| owner("orders", p, n)).collect();
            for w in owners.windows(2) {
                assert_eq!(w[1], (w[0] + 1) % n);
            }
        }
        // Every partition has exactly one owner, and the counts differ by at most one.
        let counts =
            (0..3u32).map(|s| (0..10).filter(|p| owner("t", *p, 3) == s).count()).collect::<Vec<_>>();
        assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1, "{counts:?}");
    }

    #[test]
    fn merged_offsets_keep_the_largest() {
        let a = serde_json::json!({ "offsets": { "t": { "0": 5, "1": 7 }, "u": { "0": 1 } } });
        let b = serde_json::json!({ "offsets": { "t": { "0": 9, "2": 3 } } });
        let merged = merge_offsets([&a, &b]).unwrap();
        assert_eq!(
            serde_json::to_value(&merged).unwrap(),
            serde_json::json!({ "t": { "0": 9, "1": 7, "2": 3 }, "u": { "0": 1 } })
        );
        let e = merge_offsets([&serde_json::json!({ "offsets": { "t": { "x": 1 } } })]).unwrap_err();
        assert!(e.to_string().contains("not readable"), "{e}");
    }

    #[test]
    fn positions_parse_back() {
        let v = serde_json::json!({"offsets": {"a": {"0": 5, "3": 7}, "b": {"1": 0}}});
        let p = parse_position(&v).unwrap();
        assert_eq!(p.get(&("a".to_string(), 3)), Some(&7));
        assert_eq!(p.len(), 3);
        assert!(parse_position(&serde_json::json!({"offsets": {"a": {"x": 1}}})).is_none());
    }
}
