//! The job specification: the JSON document a user submits.

use serde::{Deserialize, Serialize};

/// A job: a graph of sources, operators and sinks, and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub config: serde_json::Value,
}

/// How records move along an edge from the upstream subtasks to the downstream ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeSpec {
    /// Upstream node id.
    pub from: String,
    /// Downstream node id.
    pub to: String,
    /// Partitioning (default `rebalance`, or `forward` where parallelism is equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitioning: Option<Partitioning>,
}

/// Job-wide settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Number of key groups (the largest parallelism keyed state can be rescaled to).
    pub max_parallelism: u32,
    /// Capacity of every channel, in messages (batches). Backpressure starts when full.
    pub channel_capacity: usize,
    /// CPU time one guest call may take, in milliseconds, before it is stopped.
    pub cpu_limit_ms: u64,
    /// Linear memory one operator instance may use, in MiB.
    pub memory_limit_mb: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { max_parallelism: 128, channel_capacity: 8, cpu_limit_ms: 10_000, memory_limit_mb: 512 }
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
