//! The job specification: the JSON document a user submits.

use serde::{Deserialize, Serialize};

pub use super::restart::RestartSettings;
use utoipa::ToSchema;

/// A job: a graph of sources, operators and sinks, and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// A human-readable name.
    #[serde(default)]
    pub name: String,
    /// The nodes of the graph.
    pub nodes: Vec<NodeSpec>,
    /// The edges of the graph.
    #[serde(default)]
    pub edges: Vec<EdgeSpec>,
    /// Job-wide settings.
    #[serde(default)]
    pub settings: Settings,
    /// Where records go that a source cannot read or an operator cannot process (nodes with
    /// `on_error: dead_letter`), and what operators send there themselves: a sink connector
    /// (`stream`, or `kafka`) and its config. Each dead letter is a MessagePack map with the
    /// record's raw bytes and where it came from (docs/when-things-go-wrong.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letter: Option<DeadLetterSpec>,
}

/// The dead-letter destination of a job: a sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSpec {
    /// The sink connector: `stream` (a stream of the tenant) or `kafka` (a granted topic).
    pub connector: String,
    /// The connector's config, as a sink node's.
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
}

/// The id of the sink node a job's dead-letter destination runs as (no node of the spec may
/// have it).
pub const DEAD_LETTER_NODE: &str = "dead-letters";

/// The side output dead letters travel on, from a source or an operator to the dead-letter
/// sink. An operator's guest emits on it (the SDKs' `dead_letter`) a MessagePack array
/// `[reason, key, value]`.
pub const DEAD_LETTER_OUTPUT: &str = "dead-letter";

/// What a node does with a record it cannot read (a source) or process (an operator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The task fails and the job restarts (or fails) by its restart strategy.
    #[default]
    Fail,
    /// Sources: the record is left out and counted.
    Drop,
    /// Operators: the record is left out, its effects on state undone, and counted.
    Skip,
    /// The record goes to the job's dead-letter destination with its provenance and error.
    DeadLetter,
}

impl OnError {
    /// The policy's name in a spec.
    pub fn name(self) -> &'static str {
        match self {
            OnError::Fail => "fail",
            OnError::Drop => "drop",
            OnError::Skip => "skip",
            OnError::DeadLetter => "dead_letter",
        }
    }

    /// The record is taken out of the stream (dropped, skipped or dead-lettered).
    pub fn takes_out(self) -> bool {
        self != OnError::Fail
    }
}

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Produces records from a connector.
    Source,
    /// Runs a Wasm operator.
    Operator,
    /// Writes records to a connector.
    Sink,
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// The node's id, stable across versions of the job (state is mapped by it).
    pub id: String,
    /// Source, operator or sink.
    pub kind: NodeKind,
    /// Number of parallel subtasks.
    #[serde(default = "one")]
    pub parallelism: u32,
    /// For operators: the module that implements it (a path, or `builtin:<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// For sources and sinks: the connector (`generator`, `nexmark`, `file`, `blackhole`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Configuration handed to the operator or connector.
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
    /// For operators with several inputs: the names of its input ports, in the order of the
    /// input index the operator sees (e.g. `["left", "right"]` → `left` is input 0). When
    /// given, every incoming edge names its port (`input`) and every port has exactly one
    /// edge; when absent, the inputs are the incoming edges in spec order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<String>>,
    /// Sources: `fail` (default), `drop` or `dead_letter` a record that cannot be decoded.
    /// Operators: `fail` (default), `skip` or `dead_letter` a record the guest returns an
    /// error for or traps on; the operator's state is as if the record never arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
}

/// How records move along an edge from the upstream subtasks to the downstream ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Partitioning {
    /// Subtask `i` sends to subtask `i` (needs equal parallelism).
    Forward,
    /// Each record goes to the subtask that owns its key's key group.
    Hash,
    /// Every batch goes to every downstream subtask.
    Broadcast,
    /// Batches go round-robin to the downstream subtasks.
    #[default]
    Rebalance,
}

/// One edge of the graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EdgeSpec {
    /// Upstream node id.
    pub from: String,
    /// Downstream node id.
    pub to: String,
    /// Partitioning (default `rebalance`, or `forward` where parallelism is equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitioning: Option<Partitioning>,
    /// The input port of `to` this edge feeds, one of the names in its `inputs`; required
    /// when `to` names its inputs, refused when it does not. One node may feed two ports of
    /// another (a self-join): each port gets every record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The output of `from` this edge carries: absent for its main output (the records its
    /// calls return), a name for the operator's side output of that name (records it emits
    /// with the `side-output` import, such as a window's late records). Only operators have
    /// side outputs; at most 16 names per operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// Job-wide settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Number of key groups (the largest parallelism keyed state can be rescaled to).
    pub max_parallelism: u32,
    /// Capacity of every channel, in messages (batches). Backpressure starts when full.
    pub channel_capacity: usize,
    /// Capacity of every channel between subtasks of one process, in bytes of the batches
    /// queued (keys and values): backpressure starts when either capacity is reached, so a
    /// channel of large records holds fewer of them. A task queues one call's output past
    /// it. Channels to another worker count batches only.
    pub channel_capacity_bytes: u64,
    /// CPU time one guest call may take, in milliseconds, before it is stopped.
    pub cpu_limit_ms: u64,
    /// Wall-clock time one guest call may take, in milliseconds, waiting included (a guest
    /// that sleeps or polls never uses up its CPU limit); at least `cpu_limit_ms`.
    pub wall_limit_ms: u64,
    /// Linear memory one operator instance may use, in MiB.
    pub memory_limit_mb: u64,
    /// Output one guest call may return, in bytes: its records' key and value bytes plus 16
    /// bytes per record. A call that returns more fails the job.
    pub max_output_bytes_per_call: u64,
    /// Checkpointing (used when the job runs with a store).
    pub checkpoint: CheckpointSettings,
    /// What to do when the job fails.
    pub restart: RestartSettings,
    /// Records one node may drop, skip or dead-letter in any minute; one more fails the job
    /// (a bug that turns every record into a dead letter ends it, with an error that says so).
    pub max_dead_letters_per_minute: u64,
}

/// `settings.channel_capacity_bytes` unless a spec says otherwise: 8 MiB, a default
/// channel's 8 batches of 1 MiB (a source's default `batch_bytes`).
pub const DEFAULT_CHANNEL_CAPACITY_BYTES: u64 = 8 << 20;

/// The least `settings.channel_capacity_bytes` a spec may set.
pub const MIN_CHANNEL_CAPACITY_BYTES: u64 = 64 << 10;

impl Settings {
    /// `channel_capacity_bytes` as a size in memory.
    pub fn channel_capacity_bytes(&self) -> usize {
        usize::try_from(self.channel_capacity_bytes).unwrap_or(usize::MAX)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_parallelism: 128,
            channel_capacity: 8,
            channel_capacity_bytes: DEFAULT_CHANNEL_CAPACITY_BYTES,
            cpu_limit_ms: 10_000,
            wall_limit_ms: 60_000,
            memory_limit_mb: 512,
            max_output_bytes_per_call: 64 << 20,
            checkpoint: CheckpointSettings::default(),
            restart: RestartSettings::default(),
            max_dead_letters_per_minute: 1000,
        }
    }
}

/// Checkpointing settings (Flink's names where they exist).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointSettings {
    /// Trigger a checkpoint this often; `null` for none but the final one and those
    /// triggered on demand.
    pub interval_ms: Option<u64>,
    /// A checkpoint not completed within this time is aborted.
    pub timeout_ms: u64,
    /// Least time between the end of one checkpoint and the trigger of the next.
    pub min_pause_ms: u64,
    /// Most checkpoints in progress at once.
    pub max_concurrent: usize,
    /// Consecutive failed checkpoints the job tolerates; one more fails the job.
    pub tolerable_failures: u32,
    /// Completed checkpoints kept for recovery (older ones are removed with their state).
    pub retained: usize,
    /// Most increments (checkpoints that added to it, its base one) a key group's chain may
    /// hold before it is compacted into a new base. Each chain compacts at a threshold of
    /// its own between half this and this, so that key groups do not all compact at the
    /// same checkpoint.
    pub max_chain_length: usize,
    /// `aligned`: a task snapshots when the barrier has arrived on every input, reading
    /// none of the inputs it already arrived on meanwhile. `unaligned`: a task snapshots at
    /// the first barrier, which overtakes the records queued before it; they are persisted
    /// with the checkpoint as channel state (docs/design.md §6). Savepoints and final
    /// checkpoints are always aligned.
    pub mode: CheckpointMode,
    /// A checkpoint starts aligned and switches to unaligned once it has waited this long
    /// since its trigger (Flink's `aligned-checkpoint-timeout`); `null`: never switch.
    /// With `mode: unaligned` a missing value means 0 (unaligned from the start).
    pub aligned_timeout_ms: Option<u64>,
}

/// How checkpoint barriers pass the records in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointMode {
    /// Barriers travel with the records; a task aligns them.
    #[default]
    Aligned,
    /// Barriers overtake the records; what they overtake is persisted as channel state.
    Unaligned,
}

impl CheckpointSettings {
    /// How long a checkpoint waits aligned before it switches to unaligned; `None`: it
    /// never switches.
    pub fn effective_aligned_timeout(&self) -> Option<std::time::Duration> {
        let ms = match self.mode {
            CheckpointMode::Aligned => self.aligned_timeout_ms?,
            CheckpointMode::Unaligned => self.aligned_timeout_ms.unwrap_or(0),
        };
        Some(std::time::Duration::from_millis(ms))
    }
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            interval_ms: Some(1000),
            timeout_ms: 60_000,
            min_pause_ms: 0,
            max_concurrent: 1,
            tolerable_failures: 3,
            retained: 2,
            max_chain_length: 8,
            mode: CheckpointMode::Aligned,
            aligned_timeout_ms: None,
        }
    }
}

fn one() -> u32 {
    1
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl JobSpec {
    /// Parses a job from JSON text, with an error that names the line and column.
    pub fn from_json(text: &str) -> Result<Self, super::PlanError> {
        serde_json::from_str(text).map_err(|e| super::PlanError::Json(e.to_string()))
    }
}
