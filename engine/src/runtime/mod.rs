//! The dataflow runtime: bounded channels, input gates, output routing, the subtask loops
//! that move batches, watermarks and timers through a job, and the checkpoint protocol.
//!
//! Where things are (docs/design.md §6 has the protocol and its numbered invariants):
//! - data plane: `channel` ([`Sender`], [`Receiver`]), [`InputGate`], [`Output`], [`Message`],
//!   watermarks;
//! - subtasks: `task` (the source, operator and sink loops), `barrier` (aligned and
//!   unaligned checkpoints at a task), `in_flight` (the channel state of an unaligned
//!   checkpoint: in-flight messages, encoded);
//! - checkpoints: `control` (messages), `coordinator`, `snapshot_writer` (the async part),
//!   `scopes` (key-group split and restore chunks), `restore` (chains into a guest),
//!   `subtask_blob` ([`TaskState`], a subtask's non-keyed state, stored as its blob);
//! - running a job: `job` (attempts, restarts, recommits), `attempt` (wiring, spawning,
//!   joining one attempt), `env` ([`RunEnv`]), `stop`, `report`.
//!
//! Imports between these files go one way; `engine/tests/all/layout.rs` checks it.

pub(crate) mod attempt;
pub mod barrier;
mod channel;
mod control;
mod coordinator;
pub mod dead_letter;
pub(crate) mod env;
mod error;
pub mod faults;
pub mod in_flight;
mod input_gate;
mod job;
mod message;
mod metrics;
mod output;
mod report;
mod restore;
mod scopes;
mod snapshot_writer;
mod source_task;
mod stop;
pub(crate) mod store_call;
mod subtask_blob;
mod subtask_env;
mod task;
mod tasks;
mod watermark;

pub use attempt::instance_limits;
pub use channel::{
    ChannelStats, Closed, CreditSink, Credits, Outbound, Received, Receiver, Sender, Wanted, bounded_channel,
    channel, credited_channel, remote_sender,
};
pub use control::{Control, JobEvent, ToCoordinator, TriggerError, TriggerRequest};
pub use coordinator::{Coordinator, TaskInfo};
pub use env::{AttemptRunner, CheckpointHold, CheckpointTrigger, RunEnv};
pub use error::{
    AttemptStep, ClusterError, DataError, FailureClass, FailureInfo, JobError, PlacementError, TaskError,
};
pub use input_gate::{InputGate, UpstreamGone};
pub use job::{commit_latest, run_job, run_job_checkpointed};
pub use message::{Barrier, Message};
pub use metrics::{GUEST_COUNTERS, JobMetrics, SubtaskMetrics};
pub use output::{EdgeOutput, Output};
pub use report::{ChannelReport, JobReport, NodeReport};
pub use restore::restore_chains;
pub use scopes::{DeltaError, RESTORE_CHUNK_BYTES, RestoreChunker, restore_chunks, split_into_scopes};
pub use snapshot_writer::{SnapshotWriter, WriteRequest, WriterConfig, snapshot_writer};
pub use stop::{StopMode, StopSignal};
pub use subtask_blob::{TaskRestoreError, TaskState};
pub use subtask_env::operator_context;
pub use watermark::WatermarkTracker;
