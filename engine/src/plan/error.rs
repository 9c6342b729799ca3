//! Errors found while validating and planning a job.

/// Why a job spec cannot run. Every message names the node or edge at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The document is not a valid job spec.
    #[error("invalid job spec: {0}")]
    Json(String),
    /// The job has no node.
    #[error("the job has no nodes")]
    Empty,
    /// A node id is empty, too long or uses characters outside `[A-Za-z0-9_-]`.
    #[error("node id `{0}` is invalid: use 1 to 64 characters of A-Z, a-z, 0-9, `_` or `-`")]
    InvalidId(String),
    /// Two nodes share an id.
    #[error("node id `{0}` is used by more than one node")]
    DuplicateId(String),
    /// An edge names a node that does not exist.
    #[error("edge {from} -> {to}: unknown node `{missing}`")]
    UnknownNode {
        /// The edge's upstream id.
        from: String,
        /// The edge's downstream id.
        to: String,
        /// The id that does not exist.
        missing: String,
    },
    /// Parallelism out of range.
    #[error("node `{node}`: parallelism must be between 1 and max_parallelism ({max}), got {got}")]
    Parallelism {
        /// The node.
        node: String,
        /// What the spec asked for.
        got: u32,
        /// The job's max parallelism.
        max: u32,
    },
    /// A setting is out of range.
    #[error("settings: {0}")]
    Settings(String),
    /// A value above this server's limit (`plan_limits` in its config).
    #[error("{what} {value} is above this server's limit of {limit} (plan_limits.{key}){note}")]
    Limit {
        /// What is limited (`settings.channel_capacity`, `the job's edge count`, ...).
        what: String,
        /// What the spec asked for.
        value: u64,
        /// The server's limit.
        limit: u64,
        /// The limit's key under `plan_limits`.
        key: &'static str,
        /// What to do about it, if more than lowering the value (starts with `; `).
        note: &'static str,
    },
    /// The graph has a cycle.
    #[error("the job graph has a cycle through node `{0}`; jobs must be acyclic")]
    Cycle(String),
    /// A node is connected in a way its kind does not allow.
    #[error("node `{node}`: {problem}")]
    Shape {
        /// The node.
        node: String,
        /// What is wrong.
        problem: String,
    },
    /// A forward edge between nodes of different parallelism.
    #[error(
        "edge {from} -> {to}: forward partitioning needs equal parallelism ({from_p} vs {to_p}); use rebalance or hash"
    )]
    ForwardParallelism {
        /// Upstream id.
        from: String,
        /// Downstream id.
        to: String,
        /// Upstream parallelism.
        from_p: u32,
        /// Downstream parallelism.
        to_p: u32,
    },
    /// The same edge is listed more than once.
    #[error("the edge `{from}` → `{to}` is listed more than once (one edge carries every record)")]
    DuplicateEdge {
        /// Upstream node.
        from: String,
        /// Downstream node.
        to: String,
    },
    /// The input ports of a node, or an edge's port, are wrong.
    #[error("node `{node}`: {problem}")]
    Inputs {
        /// The downstream node.
        node: String,
        /// What is wrong.
        problem: String,
    },
    /// An edge's `output` (a side output of its upstream node) is wrong.
    #[error("node `{node}`: {problem}")]
    Outputs {
        /// The upstream node.
        node: String,
        /// What is wrong.
        problem: String,
    },
    /// The operator's module cannot be found or loaded.
    #[error("node `{node}`: {message}")]
    Module {
        /// The node.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// The connector is unknown or its config is wrong.
    #[error("node `{node}`: {source}")]
    Connector {
        /// The node.
        node: String,
        /// What went wrong.
        source: crate::connectors::ConfigError,
    },
    /// A node's `on_error`, or the job's `dead_letter` destination, is wrong.
    #[error("node `{node}`: {problem}")]
    OnError {
        /// The node.
        node: String,
        /// What is wrong.
        problem: String,
    },
}
