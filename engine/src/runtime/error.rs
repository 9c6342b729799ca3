//! Errors of running a job.

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
    /// A subtask panicked (a bug in Weir).
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
