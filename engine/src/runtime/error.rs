//! Errors of running a job.

use super::barrier::ProtocolError;
use super::channel::Closed;
use super::input_gate::UpstreamGone;
use super::scopes::DeltaError;
use super::subtask_blob::TaskRestoreError;
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
    Store(#[from] weir_store::StoreError),
    /// The task's snapshot writer is gone (its own error ends the job).
    #[error("the snapshot writer stopped")]
    WriterGone,
    /// The operator handed over a state delta that does not describe its data.
    #[error("cannot write the snapshot: {0}")]
    Delta(#[from] DeltaError),
    /// The local store of host keyed state failed (reading a checkpoint's changes, restoring).
    #[error("host keyed state: {0}")]
    LocalState(#[from] crate::local_state::LocalStateError),
    /// Work on the blocking pool (a store call, a snapshot write) panicked or was cancelled.
    #[error("a blocking call failed: {0}")]
    Blocking(#[from] tokio::task::JoinError),
    /// Saved state cannot be restored into this task.
    #[error("cannot restore: {0}")]
    Restore(#[from] TaskRestoreError),
    /// A sink's input ended with pre-committed output that no checkpoint committed.
    #[error("the input ended with {0} transaction(s) not committed by a checkpoint")]
    Uncommitted(usize),
    /// The subtask ran on a worker and failed there.
    #[error("on worker {worker}: {message}")]
    Remote {
        /// The worker's id.
        worker: u64,
        /// Its error.
        message: String,
        /// The error merely follows from another one (a channel closed).
        secondary: bool,
    },
}

impl TaskError {
    /// True for errors that only follow from another task's failure.
    pub fn is_secondary(&self) -> bool {
        matches!(
            self,
            TaskError::Downstream(_) | TaskError::Upstream(_) | TaskError::Remote { secondary: true, .. }
        )
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
    /// Too many consecutive checkpoints failed.
    #[error(
        "job failed: {failures} consecutive checkpoints failed (tolerable: {tolerable}); the last one: {last}"
    )]
    CheckpointsFailed {
        /// Consecutive failures.
        failures: u32,
        /// `settings.checkpoint.tolerable_failures`.
        tolerable: u32,
        /// Why the last one failed.
        last: String,
    },
    /// The checkpoint store failed.
    #[error("job failed: checkpoint store: {0}")]
    Store(#[from] weir_store::StoreError),
    /// Every task ended before the final checkpoint: a consequence of the tasks' own ends,
    /// which say why.
    #[error("job failed: every task stopped")]
    TasksGone,
    /// The tasks ended well but the final checkpoint never completed.
    #[error("job failed: the job ended without its final checkpoint")]
    NoFinalCheckpoint,
    /// The coordinator or a store call panicked or was cancelled.
    #[error("job failed: a background task failed: {0}")]
    Background(#[from] tokio::task::JoinError),
    /// The job failed and used up its restart attempts.
    #[error("job failed after {restarts} restart(s); last failure: {last}")]
    RestartsExhausted {
        /// Restarts made.
        restarts: u32,
        /// The failure that ended the job.
        last: Box<JobError>,
    },
    /// The job's attempt could not be placed or run on the cluster's workers (not enough
    /// slots, a worker lost, a deploy refused).
    #[error("job failed: cluster: {0}")]
    Cluster(String),
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
