//! What starting a job from a savepoint did ([`RestoreReport`], per node [`NodeRestore`]).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What starting a job from a savepoint did, per node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RestoreReport {
    /// The savepoint.
    pub savepoint: String,
    /// The job's checkpoint that holds the restored state (its first).
    pub checkpoint: u64,
    /// Per node of the new job, in spec order.
    pub nodes: Vec<NodeRestore>,
    /// State of the savepoint that was dropped (with `allow_non_restored_state`), described.
    pub dropped: Vec<String>,
}

/// How one node of a new job was restored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NodeRestore {
    /// Node id.
    pub id: String,
    /// Whether the savepoint had state for it.
    pub restored: bool,
    /// Its parallelism in the savepoint (when it had the node).
    pub from_parallelism: Option<u32>,
    /// Its parallelism in the job.
    pub parallelism: u32,
    /// Operators: the state schema version in the savepoint and the module's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_versions: Option<(u32, u32)>,
    /// Operators: the new module migrated the state.
    pub migrated: bool,
    /// Keyed entries restored.
    pub keyed_entries: u64,
}

/// What starting a job from a savepoint would do, per node, as checked before anything
/// stops or is written ([`check_restore`](super::check_restore)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RestoreCheck {
    /// The savepoint checked against.
    pub savepoint: String,
    /// Per node of the job, in spec order.
    pub nodes: Vec<NodeCheck>,
    /// State of the savepoint that would be dropped (with `allow_non_restored_state`), described.
    pub dropped: Vec<String>,
}

/// What one node of a job would get from a savepoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NodeCheck {
    /// Node id.
    pub id: String,
    /// Whether the savepoint holds state for it (keyed or operator state, timers, a source
    /// position).
    pub has_state: bool,
    /// Its parallelism in the savepoint (when it had the node).
    pub from_parallelism: Option<u32>,
    /// Its parallelism in the job.
    pub parallelism: u32,
    /// Operators: the state schema version in the savepoint and the module's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_versions: Option<(u32, u32)>,
    /// Operators: the new module would migrate the state.
    pub migrates: bool,
}
