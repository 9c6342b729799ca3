//! Errors of running a job.

use super::barrier::ProtocolError;
use super::channel::Closed;
use super::input_gate::UpstreamGone;
use crate::connectors::ConnectorError;
use crate::guest::GuestError;
use crate::plan::PlanError;

/// Why a subtask stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The Wasm operator failed.
    #[error(transparent)]
    Guest(#[from] GuestError),
    /// A source or sink failed.
    #[error(transparent)]
    Connector(#[from] ConnectorError),
    /// A downstream task is gone (a consequence of another failure).
    #[error("{0}")]
    Downstream(#[from] Closed),
    /// An upstream task is gone (a consequence of another failure).
    #[error("{0}")]
    Upstream(#[from] UpstreamGone),
    /// The barrier protocol was violated (a bug in Weir).
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// A fault injected by a test.
    #[error("{0}")]
    Injected(String),
    /// The checkpoint store failed where the task cannot go on without it (restore).
    #[error("checkpoint storage: {0}")]
    Storage(String),
    /// Saved state cannot be restored into this task.
    #[error("cannot restore: {0}")]
    Restore(String),
}

impl TaskError {
    /// True for errors that only follow from another task's failure.
    pub fn is_secondary(&self) -> bool {
        matches!(self, TaskError::Downstream(_) | TaskError::Upstream(_))
    }
}

/// Why a job failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The job spec is invalid.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A subtask failed; the job was stopped.
    #[error("job failed: node `{node}` subtask {subtask}: {error}")]
    Task {
        /// The node id.
        node: String,
        /// The subtask index.
        subtask: u32,
        /// What happened.
        error: TaskError,
    },
    /// Checkpointing failed for good (too many consecutive failed checkpoints, or the
    /// store is unusable).
    #[error("job failed: {0}")]
    Checkpoint(String),
    /// The job failed and used up its restart attempts.
    #[error("job failed after {restarts} restart(s); last failure: {last}")]
    RestartsExhausted {
        /// Restarts made.
        restarts: u32,
        /// The failure that ended the job.
        last: Box<JobError>,
    },
    /// A subtask panicked (a bug in Weir, or an injected fault).
    #[error("job failed: node `{node}` subtask {subtask} panicked: {message}")]
    Panic {
        /// The node id.
        node: String,
        /// The subtask index.
        subtask: u32,
        /// The panic message.
        message: String,
    },
}
