//! Job plans: a JSON [`JobSpec`] validated and resolved into a [`Plan`] of nodes, edges and
//! subtasks that the runtime executes.

mod error;
mod limits;
mod planner;
mod restart;
mod spec;

pub use error::PlanError;
pub use limits::{PlanLimits, channel_count};
pub use planner::{LoadError, ModuleLoader, NodeBody, Plan, PlanEdge, PlanNode, plan};
pub use restart::{Decision, RestartStrategy, RestartTracker, Strategy};
pub use spec::{
    CheckpointMode, CheckpointSettings, DEFAULT_CHANNEL_CAPACITY_BYTES, EdgeSpec, JobSpec,
    MIN_CHANNEL_CAPACITY_BYTES, NodeKind, NodeSpec, Partitioning, RestartSettings, Settings,
};
