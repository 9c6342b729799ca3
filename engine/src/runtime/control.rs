//! The control plane of a checkpointed run: what the coordinator tells tasks
//! ([`Control`]), what tasks and their writers tell the coordinator ([`ToCoordinator`]),
//! on-demand triggers ([`TriggerRequest`]) and what the job reports ([`JobEvent`]).
//!
//! These are plain messages: the coordinator and the tasks never reach into each other
//! (docs/design.md §6, invariant C1).

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use weir_store::{SubtaskState, SubtaskStats};

use super::error::FailureInfo;

/// What the coordinator tells a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Sources: inject barrier `id` now.
    Trigger {
        /// Checkpoint id.
        id: u64,
        /// When it was triggered.
        triggered: Instant,
        /// The final checkpoint (every source has ended).
        is_final: bool,
        /// When it may switch to unaligned (zero: unaligned from the start, the barrier
        /// overtakes the source's queued output); `None`: aligned only.
        unaligned_after: Option<Duration>,
    },
    /// Operators and sinks: checkpoint `id` was triggered and switches to unaligned
    /// `unaligned_after` its trigger, whether or not a barrier of it has arrived by then.
    Started {
        /// Checkpoint id.
        id: u64,
        /// When it was triggered.
        triggered: Instant,
        /// When it switches to unaligned, after its trigger.
        unaligned_after: Duration,
    },
    /// Checkpoint `id` completed (it is durable): sinks commit what it covers.
    Completed(u64),
    /// Checkpoint `id` was aborted.
    Aborted(u64),
}

/// What a task (or its writer) tells the coordinator.
#[derive(Debug)]
pub enum ToCoordinator {
    /// A subtask's snapshot for checkpoint `id` is stored.
    Ack {
        /// Checkpoint id.
        id: u64,
        /// Index of the task in the job's task list.
        task: usize,
        /// Its state handles.
        state: SubtaskState,
        /// Its statistics.
        stats: SubtaskStats,
    },
    /// A subtask could not take or store its snapshot for checkpoint `id`.
    Decline {
        /// Checkpoint id.
        id: u64,
        /// Index of the task.
        task: usize,
        /// Why (recorded as the checkpoint's failure).
        reason: String,
    },
    /// A source subtask has no more input; it waits for the final checkpoint.
    SourceFinished {
        /// Index of the task.
        task: usize,
        /// It ended because the job is stopping, not because its input ended.
        stopped: bool,
    },
}

/// Something that happened to a running job (for the CLI, the server and tests).
#[derive(Debug, Clone, PartialEq)]
pub enum JobEvent {
    /// A checkpoint completed.
    CheckpointCompleted {
        /// Its id.
        id: u64,
        /// The final checkpoint.
        is_final: bool,
        /// End-to-end duration.
        duration_ms: f64,
        /// Bytes written by it.
        size: u64,
    },
    /// A checkpoint failed.
    CheckpointFailed {
        /// Its id.
        id: u64,
        /// Why.
        reason: String,
    },
    /// The job failed and is being restarted.
    Restarting {
        /// The restart number (1 for the first).
        attempt: u32,
        /// The failure.
        error: String,
        /// Where and whose it was.
        failure: FailureInfo,
        /// The pause before the restart.
        delay_ms: u64,
    },
    /// An operator's record that broke it was found and is taken out (skipped or sent to
    /// the dead letters): the job restarts from its checkpoint at once, without it.
    TookOut {
        /// Where it broke the operator.
        failure: FailureInfo,
        /// The guest's error, with the record's identity.
        error: String,
        /// The operator's `on_error`.
        action: crate::plan::OnError,
    },
    /// The job was restored from a checkpoint.
    Restored {
        /// The checkpoint.
        checkpoint: u64,
    },
}

/// A request to trigger a checkpoint now; the reply is its id.
#[derive(Debug)]
pub struct TriggerRequest {
    /// Where the checkpoint's id (or why none was triggered) goes.
    pub reply: oneshot::Sender<Result<u64, TriggerError>>,
    /// Pin the checkpoint against retention (a savepoint copies it).
    pub pin: bool,
}

/// Why an on-demand checkpoint was not triggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TriggerError {
    /// No attempt of the job is running (it ended, failed or is between restarts).
    #[error("the job is not running")]
    NotRunning,
    /// Every source has ended: only the final checkpoint is still taken.
    #[error("the job is finishing")]
    Finishing,
    /// Checkpoints are held back (an upgraded job on probation).
    #[error("the job takes no checkpoint until its upgrade is confirmed")]
    Held,
}
