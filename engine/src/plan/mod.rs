//! Job plans: a JSON [`JobSpec`] validated and resolved into a [`Plan`] of nodes, edges and
//! subtasks that the runtime executes.

mod dead_letter;
mod error;
mod limits;
mod planner;
mod restart;
mod spec;

pub use dead_letter::{dead_letter_node, with_dead_letters};
pub use error::PlanError;
pub use limits::{PlanLimits, channel_count};
pub use planner::{LoadError, ModuleLoader, NodeBody, Plan, PlanEdge, PlanNode, plan};
pub use restart::{Decision, RestartStrategy, RestartTracker, Strategy};
pub use spec::{
    CheckpointMode, CheckpointSettings, DEAD_LETTER_NODE, DEAD_LETTER_OUTPUT, DEFAULT_CHANNEL_CAPACITY_BYTES,
    DeadLetterSpec, EdgeSpec, JobSpec, MIN_CHANNEL_CAPACITY_BYTES, NodeKind, NodeSpec, OnError, Partitioning,
    RestartSettings, Settings,
};
