//! Sources and sinks: where a job's records come from and where they go.
//!
//! A connector's config is parsed when the job is planned (so a wrong field fails before
//! anything runs) and opened once per subtask when the job starts.

mod blackhole;
mod file_sink;
mod file_source;
pub mod generator;
pub mod kafka;
pub mod nexmark;
mod rejected;
mod stream;

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::record::Batch;
use crate::retry::{Retry, RetryHint};
use kafka::client::KafkaError;
use kafka::config::KafkaConfigError;
use kafka::format::{FormatError, RecordPart};

pub use blackhole::{BlackholeConfig, BlackholeSink};
pub use file_sink::{FileSink, FileSinkConfig};
pub use file_source::{DEFAULT_SPLIT_BYTES, FilePosition, FileSource, FileSourceConfig};
pub use generator::{GeneratorConfig, GeneratorSource};
pub use kafka::{KafkaSinkConfig, KafkaSourceConfig};
pub use nexmark::{NexmarkSource, NexmarkSourceConfig};
pub use rejected::{Origin, Rejected};
pub use stream::{StreamSink, StreamSinkConfig, StreamSource, StreamSourceConfig};

/// Default number of records per source batch.
pub const DEFAULT_BATCH_SIZE: usize = 1024;

/// Default bytes (keys and values) at which a source cuts a batch: 1 MiB.
pub const DEFAULT_BATCH_BYTES: usize = 1 << 20;

/// The largest `batch_bytes` a source config may set (plan limits may lower it): 256 MiB.
pub const MAX_BATCH_BYTES: usize = 256 << 20;

/// Where a source cuts its batches: at `records` records, or once their keys and values
/// reach `bytes`, whichever comes first — so a batch of large records (long lines, fat Kafka
/// messages) holds fewer of them, and what a channel of batches holds is bounded in bytes
/// too. A record larger than `bytes` makes a batch of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimit {
    /// Records per batch at most.
    pub records: usize,
    /// Bytes of keys and values at which the batch is cut.
    pub bytes: usize,
}

impl BatchLimit {
    /// The batch is full: no record goes in after this one.
    #[inline]
    pub fn is_full(&self, batch: &Batch) -> bool {
        batch.len() >= self.records || batch.byte_len() >= self.bytes
    }

    /// Room to reserve for a batch of records of about `record_bytes` each.
    pub fn reserve(&self, record_bytes: usize) -> (usize, usize) {
        (self.records, self.records.saturating_mul(record_bytes).min(self.bytes))
    }
}

impl From<usize> for BatchLimit {
    /// `records` per batch, cut at the default bytes.
    fn from(records: usize) -> Self {
        BatchLimit { records, bytes: DEFAULT_BATCH_BYTES }
    }
}

/// Why a connector failed while running. [`Retry`] tells whether a restart may get past it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectorError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Input data is malformed.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A saved position does not fit this source.
    #[error("cannot resume the source from position {0}")]
    Position(String),
    /// The built-in store failed (boxed: connector errors travel in every task's `Result`).
    #[error("{0}")]
    Store(#[source] Box<weir_store::StoreError>),
    /// The connector needs the built-in store, and the job runs without one.
    #[error("{what} needs the embedded store (run with a data directory)")]
    NoStore {
        /// The connector, e.g. "the `stream` connector".
        what: String,
    },
    /// Stored connector data (a note, a staged record, a recorded transaction) does not decode.
    #[error("{what} is unreadable: {reason}")]
    Unreadable {
        /// What was read.
        what: &'static str,
        /// What the decoder said.
        reason: String,
    },
    /// A checkpoint handed the sink a transaction it did not write.
    #[error("not a {connector} transaction: {transaction}")]
    NotATransaction {
        /// The sink.
        connector: &'static str,
        /// The transaction, as JSON.
        transaction: String,
    },
    /// A Kafka broker refused, failed or could not be reached.
    #[error("{0}")]
    Kafka(#[from] KafkaError),
    /// The output of a completed checkpoint could not be produced.
    #[error("producing the output of checkpoint {checkpoint} to `{topic}` failed: {source}")]
    Deliver {
        /// The checkpoint.
        checkpoint: u64,
        /// The topic.
        topic: String,
        /// The last Kafka error.
        source: Box<KafkaError>,
    },
    /// Records (`at_least_once`, `none`) could not be produced.
    #[error("producing to `{topic}` failed: {source}")]
    Produce {
        /// The topic.
        topic: String,
        /// The last Kafka error.
        source: Box<KafkaError>,
    },
    /// The broker cannot end a transaction (the `transactional` sink's probe).
    #[error(
        "the Kafka broker does not support transactions (its answer to EndTxn: {0}); use \
         `exactly_once` delivery, which needs no transactions"
    )]
    NoTransactions(KafkaError),
    /// The sink's topic has no partitions.
    #[error("the Kafka topic `{0}` has no partitions")]
    NoPartitions(String),
    /// A Kafka record's key or value does not fit the source's format.
    #[error("the record at offset {offset} of {topic}/{partition} cannot be read: its {part} {source}")]
    RecordUnreadable {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The record's offset.
        offset: i64,
        /// The key or the value.
        part: RecordPart,
        /// What is wrong.
        source: Box<FormatError>,
    },
    /// A record's key or value does not fit the sink's format.
    #[error("a record's {part} cannot be written to Kafka: it {source}")]
    RecordUnwritable {
        /// The key or the value.
        part: RecordPart,
        /// What is wrong.
        source: Box<FormatError>,
    },
    /// The Kafka settings do not let the node open (the message says what to change).
    #[error("{0}")]
    KafkaConfig(#[from] KafkaConfigError),
    /// A connector's I/O thread could not be started.
    #[error("cannot start the {what} thread: {source}")]
    Thread {
        /// `fetcher` or `producer`.
        what: &'static str,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A connector's I/O thread ended without saying why.
    #[error("the {0} thread ended")]
    ThreadEnded(&'static str),
    /// The task dropped the source while its fetcher was still working.
    #[error("stopped")]
    Stopped,
    /// An error the sink's production thread met, reported again at every later call.
    #[error("{0}")]
    Shared(std::sync::Arc<ConnectorError>),
}

impl From<weir_store::StoreError> for ConnectorError {
    fn from(e: weir_store::StoreError) -> Self {
        ConnectorError::Store(Box::new(e))
    }
}

impl Retry for ConnectorError {
    /// Transient: a broker or the store's disk or network failing for a moment, a thread
    /// that could not start or died. Final: bad input, config or saved data, a missing store,
    /// a topic without partitions, a broker without transactions.
    fn retry_hint(&self) -> RetryHint {
        use std::io::ErrorKind;
        match self {
            ConnectorError::Io { source, .. } => match source.kind() {
                ErrorKind::TimedOut
                | ErrorKind::Interrupted
                | ErrorKind::WouldBlock
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionRefused
                | ErrorKind::ConnectionAborted
                | ErrorKind::BrokenPipe => RetryHint::Transient,
                _ => RetryHint::Final,
            },
            ConnectorError::Store(e) => e.retry_hint(),
            ConnectorError::Kafka(e) => e.retry_hint(),
            ConnectorError::Deliver { source, .. } | ConnectorError::Produce { source, .. } => {
                source.retry_hint()
            }
            ConnectorError::KafkaConfig(e) => e.retry_hint(),
            ConnectorError::Thread { .. } | ConnectorError::ThreadEnded(_) => RetryHint::Transient,
            ConnectorError::Shared(e) => e.retry_hint(),
            ConnectorError::Parse { .. }
            | ConnectorError::Position(_)
            | ConnectorError::NoStore { .. }
            | ConnectorError::Unreadable { .. }
            | ConnectorError::NotATransaction { .. }
            | ConnectorError::NoTransactions(_)
            | ConnectorError::NoPartitions(_)
            | ConnectorError::RecordUnreadable { .. }
            | ConnectorError::RecordUnwritable { .. }
            | ConnectorError::Stopped => RetryHint::Final,
        }
    }
}

/// Why a connector's config in a job spec is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config is not a JSON object.
    #[error("config must be a JSON object, got {0}")]
    NotAnObject(serde_json::Value),
    /// No connector of that name.
    #[error("unknown {kind} connector `{name}` (known: {known})")]
    UnknownConnector {
        /// `source` or `sink`.
        kind: &'static str,
        /// The name given.
        name: String,
        /// The names there are.
        known: &'static str,
    },
    /// The config does not fit the connector's settings.
    #[error("invalid config for connector `{connector}`: {message}")]
    Invalid {
        /// The connector.
        connector: String,
        /// What serde found (unknown or missing fields, wrong types).
        message: String,
    },
    /// A setting outside its range (the message names the connector, the setting and the range).
    #[error("{0}")]
    OutOfRange(String),
    /// A Kafka setting is refused.
    #[error("kafka: {0}")]
    Kafka(#[from] KafkaConfigError),
}

impl Retry for ConfigError {
    /// A config never works on a retry.
    fn retry_hint(&self) -> RetryHint {
        RetryHint::Final
    }
}

/// Why saved source positions cannot be spread over another parallelism.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RescaleError {
    /// A saved position does not decode.
    #[error("the saved {connector} position {position} is not readable")]
    Unreadable {
        /// `stream`, `file` or `Kafka`.
        connector: &'static str,
        /// The position, as JSON.
        position: String,
    },
    /// The stream source needs the store to count the stream's partitions.
    #[error("the stream connector needs the embedded store")]
    NoStore,
    /// The store failed.
    #[error("{0}")]
    Store(#[from] weir_store::StoreError),
    /// A saved offset for a partition the stream no longer has.
    #[error(
        "the savepoint has an offset for partition {partition} of stream `{stream}`, which has {partitions} partition(s)"
    )]
    PartitionGone {
        /// The stream.
        stream: String,
        /// The partition.
        partition: u32,
        /// The stream's partition count.
        partitions: u32,
    },
    /// A file-source subtask recorded no position.
    #[error("subtask {0} recorded no file position, so its splits are unknown")]
    NoFilePosition(usize),
    /// Saved file splits that overlap.
    #[error("the saved splits of {file} overlap ({}..{} and {}..{})", first.0, first.1, second.0, second.1)]
    Overlap {
        /// The file.
        file: String,
        /// One split's `start..end`.
        first: (u64, u64),
        /// The other's.
        second: (u64, u64),
    },
    /// A generated source, whose position counts records within one subtask.
    #[error(
        "the `{connector}` source cannot change parallelism (its position counts records within one \
         subtask of {parallelism}); keep parallelism {parallelism}"
    )]
    FixedParallelism {
        /// `generator` or `nexmark`.
        connector: &'static str,
        /// The parallelism it was saved at.
        parallelism: usize,
    },
}

pub(crate) fn bad_position(position: &serde_json::Value) -> ConnectorError {
    ConnectorError::Position(position.to_string())
}

/// What connectors may use besides their config.
#[derive(Clone, Copy)]
pub struct ConnectorEnv<'a> {
    /// The embedded store (the stream log lives in it); `None` when the job runs without one.
    pub store: Option<&'a weir_store::Store>,
    /// The job id.
    pub job: &'a str,
    /// The node id.
    pub node: &'a str,
    /// Sinks: write through two-phase commit (the job is checkpointed).
    pub transactional: bool,
    /// Where sinks stage their output when not in `store` (a sink on a worker: the
    /// controller's store, over the session).
    pub outbox: Option<&'a std::sync::Arc<dyn weir_store::Outbox>>,
}

impl std::fmt::Debug for ConnectorEnv<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectorEnv")
            .field("job", &self.job)
            .field("node", &self.node)
            .field("transactional", &self.transactional)
            .finish_non_exhaustive()
    }
}

impl ConnectorEnv<'_> {
    /// An environment without store, for jobs that are not checkpointed.
    pub fn plain() -> ConnectorEnv<'static> {
        ConnectorEnv { store: None, job: "", node: "", transactional: false, outbox: None }
    }

    fn store(&self, connector: &str) -> Result<&weir_store::Store, ConnectorError> {
        self.store.ok_or_else(|| ConnectorError::NoStore { what: format!("the `{connector}` connector") })
    }
}

/// A parallel instance of a source: produces batches until it is exhausted.
pub trait Source: Send {
    /// The next batch, or `None` when the source has no more records. An empty batch means
    /// nothing is available yet (a source that follows a log); the task asks again later.
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError>;
    /// The current position (what a checkpoint records), as JSON.
    fn position(&self) -> serde_json::Value;
    /// Resumes from a position that [`Source::position`] returned.
    fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError>;
    /// The source's own watermark, for a source that tracks event time itself (a Kafka
    /// source: a watermark per partition, the subtask's the minimum over its active
    /// partitions). When `Some`, the task sends it downstream whenever it advances (never
    /// backwards) instead of `highest event time − out_of_orderness_ms − 1`; `None` (the
    /// default) keeps the task's own watermarks.
    fn watermark(&self) -> Option<i64> {
        None
    }
    /// True while the subtask has no active input (every partition idle beyond the source's
    /// idleness timeout, or no partition at all): the task marks its output idle, so the
    /// watermarks downstream do not wait for it, until it emits a batch or its watermark
    /// advances. Default: never idle.
    fn idle(&self) -> bool {
        false
    }
    /// Checkpoint `id` completed; `position` is what [`Source::position`] returned when the
    /// checkpoint was triggered at this subtask. A Kafka source commits these offsets to its
    /// consumer group (for lag tools; recovery uses the checkpoint's position). An error
    /// fails the task like any connector error. Default: nothing.
    fn checkpoint_completed(&mut self, id: u64, position: &serde_json::Value) -> Result<(), ConnectorError> {
        let _ = (id, position);
        Ok(())
    }
    /// How far behind its input the subtask is, per partition: (topic, partition, records
    /// between the position and the partition's end as last seen). Kafka only; default none.
    fn lag(&self) -> Vec<(String, i32, i64)> {
        Vec::new()
    }
    /// The node's `on_error` is not `fail`: from now on a record the source cannot decode is
    /// left out and kept for [`Source::take_rejected`] instead of failing the task. Sources
    /// that decode nothing (the stream log, generators) ignore it.
    fn reject_bad_records(&mut self) {}
    /// The records left out since the last call, taken with the batch just read (so a
    /// checkpoint's position covers exactly the records emitted and rejected before it).
    fn take_rejected(&mut self) -> Vec<Rejected> {
        Vec::new()
    }
}

/// A parallel instance of a sink.
pub trait Sink: Send {
    /// Writes a batch.
    fn write(&mut self, batch: &Batch) -> Result<(), ConnectorError>;
    /// How long to pause after each batch (a deliberately slow sink); `None` for no pause.
    fn pause(&self) -> Option<Duration> {
        None
    }
    /// Pre-commits everything written since the last pre-commit as the transaction of
    /// checkpoint `epoch`: durable but not visible. `None` when there is nothing to commit.
    fn precommit(&mut self, epoch: u64) -> Result<Option<serde_json::Value>, ConnectorError> {
        let _ = epoch;
        Ok(None)
    }
    /// Makes pre-committed transactions visible. Idempotent: committing a transaction
    /// again (after a crash between the checkpoint and the commit) changes nothing.
    fn commit(&mut self, transactions: &[serde_json::Value]) -> Result<(), ConnectorError> {
        let _ = transactions;
        Ok(())
    }
    /// At (re)start from checkpoint `checkpoint` (0: none): commits `transactions`, which
    /// that checkpoint owns, and discards every other pending output of this subtask.
    fn recover(&mut self, checkpoint: u64, transactions: &[serde_json::Value]) -> Result<(), ConnectorError> {
        let _ = checkpoint;
        self.commit(transactions)
    }
    /// Flushes and closes at the end of the stream.
    fn close(&mut self) -> Result<(), ConnectorError>;
}

/// What a source node reads.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKind {
    /// Deterministic generated records.
    Generator(GeneratorConfig),
    /// Nexmark events.
    Nexmark(NexmarkSourceConfig),
    /// JSON-lines files.
    File(FileSourceConfig),
    /// The built-in stream log.
    Stream(StreamSourceConfig),
    /// Kafka topics.
    Kafka(Box<KafkaSourceConfig>),
}

/// A parsed source config.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceConfig {
    /// The connector and its settings.
    pub kind: SourceKind,
    /// Records per batch.
    pub batch_size: usize,
    /// Bytes of keys and values at which a batch is cut (see [`BatchLimit`]).
    pub batch_bytes: usize,
    /// Watermarks trail the highest event time seen by this much (bounded out-of-orderness);
    /// `None` disables watermarks (only the final one at the end of input is sent).
    pub out_of_orderness_ms: Option<i64>,
    /// Emit at most this many records per second per subtask (`None`: as fast as possible).
    pub records_per_second: Option<u64>,
}

/// A parsed sink config.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkConfig {
    /// JSON-lines files.
    File(FileSinkConfig),
    /// Counts and drops.
    Blackhole(BlackholeConfig),
    /// The built-in stream log.
    Stream(StreamSinkConfig),
    /// A Kafka topic.
    Kafka(Box<KafkaSinkConfig>),
}

fn parse<T: DeserializeOwned>(connector: &str, value: serde_json::Value) -> Result<T, ConfigError> {
    serde_json::from_value(value)
        .map_err(|e| ConfigError::Invalid { connector: connector.to_string(), message: e.to_string() })
}

fn take_object(
    config: &serde_json::Value,
) -> Result<serde_json::Map<String, serde_json::Value>, ConfigError> {
    match config {
        serde_json::Value::Object(m) => Ok(m.clone()),
        serde_json::Value::Null => Ok(serde_json::Map::new()),
        other => Err(ConfigError::NotAnObject(other.clone())),
    }
}

impl SourceConfig {
    /// Parses the `config` of a source node using connector `connector`.
    pub fn parse(connector: &str, config: &serde_json::Value) -> Result<Self, ConfigError> {
        let range = ConfigError::OutOfRange;
        let mut map = take_object(config)?;
        let batch_size = match map.remove("batch_size") {
            None => DEFAULT_BATCH_SIZE,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=1_000_000).contains(&n) => n as usize,
                _ => return Err(range(format!("batch_size must be an integer from 1 to 1000000, got {v}"))),
            },
        };
        let batch_bytes = match map.remove("batch_bytes") {
            None => DEFAULT_BATCH_BYTES,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=MAX_BATCH_BYTES as u64).contains(&n) => n as usize,
                _ => {
                    return Err(range(format!(
                        "batch_bytes must be an integer from 1 to {MAX_BATCH_BYTES}, got {v}"
                    )));
                }
            },
        };
        let out_of_orderness_ms = match map.remove("out_of_orderness_ms") {
            None => Some(0),
            Some(serde_json::Value::Null) => None,
            Some(v) => match v.as_i64() {
                Some(n) if n >= 0 => Some(n),
                _ => {
                    return Err(range(format!(
                        "out_of_orderness_ms must be a non-negative integer or null, got {v}"
                    )));
                }
            },
        };
        let records_per_second = match map.remove("records_per_second") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Some(n),
                _ => {
                    return Err(range(format!(
                        "records_per_second must be a positive integer or null, got {v}"
                    )));
                }
            },
        };
        let rest = serde_json::Value::Object(map);
        let mut kind = match connector {
            "generator" => SourceKind::Generator(parse(connector, rest)?),
            "nexmark" => SourceKind::Nexmark(parse(connector, rest)?),
            "file" => SourceKind::File(parse(connector, rest)?),
            "stream" => SourceKind::Stream(parse(connector, rest)?),
            "kafka" => SourceKind::Kafka(parse(connector, rest)?),
            other => {
                return Err(ConfigError::UnknownConnector {
                    kind: "source",
                    name: other.to_string(),
                    known: "generator, nexmark, file, stream, kafka",
                });
            }
        };
        match &mut kind {
            SourceKind::Kafka(c) => c.validate()?,
            SourceKind::Nexmark(c) => c.validate()?,
            SourceKind::Generator(c) => c.validate()?,
            SourceKind::File(c) => c.validate()?,
            SourceKind::Stream(_) => {}
        }
        Ok(SourceConfig { kind, batch_size, batch_bytes, out_of_orderness_ms, records_per_second })
    }

    /// Opens subtask `index` of `parallelism`.
    pub fn open(
        &self,
        index: u32,
        parallelism: u32,
        env: ConnectorEnv<'_>,
    ) -> Result<Box<dyn Source>, ConnectorError> {
        let limit = BatchLimit { records: self.batch_size, bytes: self.batch_bytes };
        Ok(match &self.kind {
            SourceKind::Stream(c) => {
                Box::new(StreamSource::open(c, env.store("stream")?, limit, index, parallelism)?)
            }
            SourceKind::Generator(c) => Box::new(GeneratorSource::new(c.clone(), limit, index, parallelism)),
            SourceKind::Nexmark(c) => Box::new(NexmarkSource::new(c, limit, index, parallelism)),
            SourceKind::File(c) => Box::new(FileSource::open(c, limit, index, parallelism)?),
            SourceKind::Kafka(c) => {
                kafka::open_source(c, limit, self.out_of_orderness_ms, index, parallelism)?
            }
        })
    }

    /// Positions for `parallelism` subtasks made from the positions that `old.len()`
    /// subtasks recorded (`None`: a subtask recorded none), when a job restores a savepoint
    /// at another parallelism. The stream log merges every partition's offset and hands each
    /// new subtask its partitions; the file source reassigns its unfinished splits (cut
    /// further so every new subtask gets one; see the file source's module docs); Kafka
    /// hands every new subtask every partition's offset (see
    /// [`kafka::source::merge_offsets`]), and each reads only the partitions it is assigned.
    /// Generated sources refuse: their position is a count within one subtask of one
    /// parallelism.
    pub fn rescale_positions(
        &self,
        old: &[Option<serde_json::Value>],
        parallelism: u32,
        store: Option<&weir_store::Store>,
    ) -> Result<Vec<Option<serde_json::Value>>, RescaleError> {
        let recorded = || old.iter().flatten();
        match &self.kind {
            SourceKind::Stream(c) => {
                let mut offsets: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
                for position in recorded() {
                    let part: std::collections::BTreeMap<u32, u64> = position
                        .get("offsets")
                        .and_then(|o| serde_json::from_value(o.clone()).ok())
                        .ok_or_else(|| RescaleError::Unreadable {
                            connector: "stream",
                            position: position.to_string(),
                        })?;
                    offsets.extend(part);
                }
                let store = store.ok_or(RescaleError::NoStore)?;
                let partitions = store.stream_partitions(&c.stream)?;
                if let Some(p) = offsets.keys().find(|p| **p >= partitions) {
                    return Err(RescaleError::PartitionGone {
                        stream: c.stream.clone(),
                        partition: *p,
                        partitions,
                    });
                }
                Ok((0..parallelism)
                    .map(|s| {
                        let mine: std::collections::BTreeMap<u32, u64> = (0..partitions)
                            .filter(|p| p % parallelism == s)
                            .map(|p| (p, offsets.get(&p).copied().unwrap_or(0)))
                            .collect();
                        Some(serde_json::json!({ "offsets": mine }))
                    })
                    .collect())
            }
            SourceKind::File(c) => file_source::rescale(c, old, parallelism),
            SourceKind::Kafka(_) => {
                let merged = kafka::source::merge_offsets(recorded())?;
                let position = serde_json::json!({ "offsets": merged });
                Ok((0..parallelism).map(|_| Some(position.clone())).collect())
            }
            SourceKind::Generator(_) | SourceKind::Nexmark(_) => {
                let connector =
                    if matches!(self.kind, SourceKind::Generator(_)) { "generator" } else { "nexmark" };
                Err(RescaleError::FixedParallelism { connector, parallelism: old.len() })
            }
        }
    }
}

impl SinkConfig {
    /// Parses the `config` of a sink node using connector `connector`.
    pub fn parse(connector: &str, config: &serde_json::Value) -> Result<Self, ConfigError> {
        let rest = serde_json::Value::Object(take_object(config)?);
        match connector {
            "file" => Ok(SinkConfig::File(parse(connector, rest)?)),
            "blackhole" => Ok(SinkConfig::Blackhole(parse(connector, rest)?)),
            "stream" => Ok(SinkConfig::Stream(parse(connector, rest)?)),
            "kafka" => {
                let mut c: Box<KafkaSinkConfig> = parse(connector, rest)?;
                c.validate()?;
                Ok(SinkConfig::Kafka(c))
            }
            other => Err(ConfigError::UnknownConnector {
                kind: "sink",
                name: other.to_string(),
                known: "file, blackhole, stream, kafka",
            }),
        }
    }

    /// Opens subtask `index` of `parallelism`.
    pub fn open(
        &self,
        index: u32,
        _parallelism: u32,
        env: ConnectorEnv<'_>,
    ) -> Result<Box<dyn Sink>, ConnectorError> {
        Ok(match self {
            SinkConfig::File(c) => Box::new(FileSink::open(c, index, env.transactional)?),
            SinkConfig::Blackhole(c) => Box::new(BlackholeSink::new(c.clone())),
            SinkConfig::Stream(c) => {
                let writer = format!("{}/{}/{index}", env.job, env.node);
                Box::new(StreamSink::open(c, env.store("stream")?.clone(), writer, index, env.transactional)?)
            }
            SinkConfig::Kafka(c) => kafka::open_sink(c, index, env)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::{Retry, RetryHint};

    #[test]
    fn connector_errors_say_whether_a_retry_can_help() {
        let unreachable = KafkaError::Timeout { broker: "broker 1 of Kafka connection `main`".into() };
        assert_eq!(ConnectorError::Kafka(unreachable.clone()).retry_hint(), RetryHint::Transient);
        let delivery =
            ConnectorError::Deliver { checkpoint: 3, topic: "out".into(), source: Box::new(unreachable) };
        assert!(delivery.retry_hint().is_transient());
        assert!(ConnectorError::Shared(std::sync::Arc::new(delivery)).retry_hint().is_transient());
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(ConnectorError::Io { path: "/in".into(), source: reset }.retry_hint().is_transient());

        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let last = [
            ConnectorError::Io { path: "/in".into(), source: missing },
            ConnectorError::KafkaConfig(KafkaConfigError::NoSaslMechanism),
            ConnectorError::Kafka(KafkaError::UnknownTopic("in".into())),
            ConnectorError::NoTransactions(KafkaError::Unsupported {
                broker: "the cluster of Kafka connection `main`".into(),
                what: "EndTxn".into(),
            }),
            ConnectorError::RecordUnwritable {
                part: RecordPart::Value,
                source: Box::new(FormatError::NotJsonWritable),
            },
            ConnectorError::from(weir_store::StoreError::UnknownStream { name: "s".into() }),
            ConnectorError::NoStore { what: "the `stream` connector".into() },
        ];
        for e in &last {
            assert_eq!(e.retry_hint(), RetryHint::Final, "{e}");
        }
        assert_eq!(
            ConnectorError::from(weir_store::StoreError::Remote("no answer".into())).retry_hint(),
            RetryHint::Transient
        );
    }

    #[test]
    fn connector_errors_stay_small() {
        // They travel in every task's and job's `Result`: large payloads are boxed.
        let size = size_of::<ConnectorError>();
        assert!(size <= 64, "{size}");
    }

    #[test]
    fn kafka_config_errors_keep_their_messages() {
        let e = SinkConfig::parse("kafka", &serde_json::json!({ "connection": "m", "topic": "a b" }))
            .unwrap_err();
        assert!(matches!(e, ConfigError::Kafka(KafkaConfigError::TopicName(_))), "{e:?}");
        assert_eq!(
            e.to_string(),
            "kafka: topic `a b` is not a Kafka topic name: 1 to 249 of A-Z a-z 0-9 . _ -"
        );
        assert_eq!(e.retry_hint(), RetryHint::Final);
    }
}
