//! Errors of running a job, and of running it on a cluster's workers.
//!
//! [`ClusterError`] and its parts ([`PlacementError`], [`DataError`]) are defined here, at
//! the runtime's seam with the cluster (the runtime asks a cluster to run attempts through
//! [`super::AttemptRunner`] and to carry channels through `attempt::RemoteChannels`):
//! [`JobError::Cluster`] carries them, and `cluster/` imports the runtime, never the
//! reverse. `cluster/` builds them; each says whether a retry may help ([`Retry`]).

use std::time::Duration;

use super::barrier::ProtocolError;
use super::channel::Closed;
use super::input_gate::UpstreamGone;
use super::scopes::DeltaError;
use super::subtask_blob::TaskRestoreError;
use crate::connectors::ConnectorError;
use crate::guest::GuestError;
use crate::plan::PlanError;
use crate::retry::{Retry, RetryHint};

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
    /// An operator that takes bad records out (`on_error: skip | dead_letter`) failed on a
    /// batch: the job restarts from its checkpoint and replays that operator's input record
    /// by record to find the record (docs/design.md §6, "Records that break an operator").
    #[error("{0}; replaying from the checkpoint record by record to find the record")]
    PoisonSuspected(Box<GuestError>),
    /// Replayed record by record, an operator failed on this record: the job restarts from
    /// its checkpoint and takes it out. `hash` is its content's (key, value, time).
    #[error("record {} of its content on input {} since checkpoint {} broke the operator: {}", poison_occurrence(record), poison_input(record), poison_checkpoint(record), record.error)]
    Poison {
        /// The record's content hash.
        hash: u64,
        /// The record, its origin and the guest's error.
        record: Box<crate::connectors::Rejected>,
    },
    /// The node took out more records in a minute than `max_dead_letters_per_minute`.
    #[error(
        "{count} records were taken out (dropped, skipped or dead-lettered) within a minute, more than \
         settings.max_dead_letters_per_minute ({limit}): the job stops, as a bug or bad input turns every \
         record into a dead letter; the last: {last}"
    )]
    DeadLetterLimit {
        /// Records taken out in the last minute.
        count: u64,
        /// The limit.
        limit: u64,
        /// The last one's error.
        last: String,
        /// The records could not be read (a source), rather than processed (an operator).
        unreadable: bool,
    },
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

/// Connector, store and cluster errors keep their own class. A guest's trap, a broken
/// protocol or bad saved state fails again on the same input; a task that only went down with
/// another one, a lost worker or a cancelled call may pass.
fn poison_origin(record: &crate::connectors::Rejected) -> (u32, u64, u32) {
    match record.origin {
        crate::connectors::Origin::Operator { input, checkpoint, occurrence } => {
            (input, checkpoint, occurrence)
        }
        _ => (0, 0, 0),
    }
}

fn poison_input(record: &crate::connectors::Rejected) -> u32 {
    poison_origin(record).0
}

fn poison_checkpoint(record: &crate::connectors::Rejected) -> u64 {
    poison_origin(record).1
}

fn poison_occurrence(record: &crate::connectors::Rejected) -> u32 {
    poison_origin(record).2
}

impl From<super::dead_letter::TakeOutError> for TaskError {
    fn from(e: super::dead_letter::TakeOutError) -> Self {
        match e {
            super::dead_letter::TakeOutError::Limit { count, limit, last, unreadable } => {
                TaskError::DeadLetterLimit { count, limit, last, unreadable }
            }
            super::dead_letter::TakeOutError::Closed(c) => TaskError::Downstream(c),
        }
    }
}

impl Retry for TaskError {
    fn retry_hint(&self) -> RetryHint {
        match self {
            TaskError::Connector(e) => e.retry_hint(),
            TaskError::Store(e) => e.retry_hint(),
            TaskError::LocalState(crate::local_state::LocalStateError::Store(_))
            | TaskError::Downstream(_)
            | TaskError::Upstream(_)
            | TaskError::Injected(_)
            | TaskError::WriterGone
            | TaskError::Blocking(_)
            | TaskError::PoisonSuspected(_)
            | TaskError::Poison { .. }
            | TaskError::Remote { .. } => RetryHint::Transient,
            TaskError::Guest(_)
            | TaskError::Protocol(_)
            | TaskError::Delta(_)
            | TaskError::LocalState(_)
            | TaskError::Restore(_)
            | TaskError::DeadLetterLimit { .. }
            | TaskError::Uncommitted(_) => RetryHint::Final,
        }
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
    Cluster(#[from] ClusterError),
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

/// The class of the failure that ended the job: a task's, the store's or the cluster's own;
/// an invalid plan, a panic and used-up restarts are final; failed checkpoints and a job that
/// ended without its final checkpoint may pass.
impl Retry for JobError {
    fn retry_hint(&self) -> RetryHint {
        match self {
            JobError::Task { error, .. } => error.retry_hint(),
            JobError::Store(e) => e.retry_hint(),
            JobError::Cluster(e) => e.retry_hint(),
            JobError::CheckpointsFailed { .. }
            | JobError::TasksGone
            | JobError::NoFinalCheckpoint
            | JobError::Background(_) => RetryHint::Transient,
            JobError::Plan(_) | JobError::RestartsExhausted { .. } | JobError::Panic { .. } => {
                RetryHint::Final
            }
        }
    }
}

/// Who a failure is down to, for the restart strategy and the exception history: the
/// platform's own failures (a lost worker, the store, a Weir bug) restart the job without
/// using up the tenant's attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The job's operator code: a guest's error or trap, its state or deltas.
    UserCode,
    /// Input the job cannot read: a record that does not decode or convert.
    BadData,
    /// The job's external systems: a broker, a bucket, a connector's config.
    External,
    /// The platform: a lost worker, the checkpoint store, a server going down, a Weir bug.
    Platform,
}

/// Where a failure happened and whose it was (the exception history's columns).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FailureInfo {
    /// Its class (`None`: not known).
    pub class: Option<FailureClass>,
    /// The node whose subtask failed.
    pub node: Option<String>,
    /// That subtask.
    pub subtask: Option<u32>,
    /// The worker it ran on.
    pub worker: Option<u64>,
}

impl FailureClass {
    /// Whether a failure of this class uses up the restart strategy's attempts.
    pub fn counts(self) -> bool {
        self != FailureClass::Platform
    }
}

impl TaskError {
    /// The class of this task's failure.
    pub fn class(&self) -> FailureClass {
        match self {
            TaskError::Guest(_) | TaskError::Delta(_) | TaskError::Restore(_) => FailureClass::UserCode,
            TaskError::Connector(ConnectorError::Parse { .. } | ConnectorError::RecordUnreadable { .. }) => {
                FailureClass::BadData
            }
            TaskError::PoisonSuspected(_) | TaskError::Poison { .. } => FailureClass::UserCode,
            TaskError::DeadLetterLimit { unreadable: true, .. } => FailureClass::BadData,
            TaskError::DeadLetterLimit { unreadable: false, .. } => FailureClass::UserCode,
            TaskError::Connector(ConnectorError::Store(e)) => store_class(e),
            TaskError::Store(e) => store_class(e),
            TaskError::Connector(_) => FailureClass::External,
            // A fault a test injects stands for the tenant's: it counts.
            TaskError::Injected(_) => FailureClass::UserCode,
            // Host state: the LSM store failing is the platform's; a quota, a limit or a
            // key the operator got wrong is the tenant's.
            TaskError::LocalState(crate::local_state::LocalStateError::Store(_)) => FailureClass::Platform,
            TaskError::LocalState(_) => FailureClass::UserCode,
            TaskError::Remote { secondary: false, .. } => FailureClass::UserCode,
            TaskError::Remote { secondary: true, .. }
            | TaskError::Downstream(_)
            | TaskError::Upstream(_)
            | TaskError::Protocol(_)
            | TaskError::WriterGone
            | TaskError::Blocking(_)
            | TaskError::Uncommitted(_) => FailureClass::Platform,
        }
    }
}

/// A store failure: the tenant's when it is its quota or an injected fault, else the
/// platform's.
fn store_class(e: &weir_store::StoreError) -> FailureClass {
    match e {
        weir_store::StoreError::QuotaExceeded { .. } | weir_store::StoreError::Injected(_) => {
            FailureClass::UserCode
        }
        _ => FailureClass::Platform,
    }
}

impl JobError {
    /// Where the failure happened and whose it was.
    pub fn info(&self) -> FailureInfo {
        let mut info = FailureInfo { class: Some(self.class()), ..Default::default() };
        match self {
            JobError::Task { node, subtask, error } => {
                info.node = Some(node.clone());
                info.subtask = Some(*subtask);
                if let TaskError::Remote { worker, .. } = error {
                    info.worker = Some(*worker);
                }
            }
            JobError::Panic { node, subtask, .. } => {
                info.node = Some(node.clone());
                info.subtask = Some(*subtask);
            }
            JobError::Cluster(
                ClusterError::WorkerLost { worker, .. }
                | ClusterError::WorkerGone { worker, .. }
                | ClusterError::DeployRefused { worker, .. },
            ) => info.worker = Some(*worker),
            JobError::RestartsExhausted { last, .. } => return last.info(),
            _ => {}
        }
        info
    }

    /// The class of the failure.
    pub fn class(&self) -> FailureClass {
        match self {
            JobError::Task { error, .. } => error.class(),
            JobError::Store(e) => store_class(e),
            JobError::Plan(_) => FailureClass::UserCode,
            JobError::RestartsExhausted { last, .. } => last.class(),
            JobError::Cluster(ClusterError::DeployRefused { .. } | ClusterError::Spec(_)) => {
                FailureClass::UserCode
            }
            // Injected by tests as the tenant's checkpoints failing; a store or timeout
            // failure otherwise. Counted, as `tolerable_failures` is the tenant's setting.
            JobError::CheckpointsFailed { .. } => FailureClass::UserCode,
            JobError::Cluster(_)
            | JobError::TasksGone
            | JobError::NoFinalCheckpoint
            | JobError::Background(_)
            | JobError::Panic { .. } => FailureClass::Platform,
        }
    }
}

/// Why a job's attempt could not run on a cluster's workers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The attempt's subtasks do not fit on the live workers.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// A channel between two processes of the attempt could not be set up.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A worker of the attempt was lost (its session ended, or its heartbeats stopped).
    #[error("worker {worker} was lost: {reason}")]
    WorkerLost {
        /// The worker's id.
        worker: u64,
        /// Why the controller dropped it.
        reason: String,
    },
    /// A worker of the attempt was gone when the controller next reached for it.
    #[error("worker {worker} was lost {step}")]
    WorkerGone {
        /// The worker's id.
        worker: u64,
        /// What the attempt was doing.
        step: AttemptStep,
    },
    /// A worker could not set up its part of the attempt (plan the spec, compile the
    /// modules, register its channels).
    #[error("worker {worker} could not deploy the job: {reason}")]
    DeployRefused {
        /// The worker's id.
        worker: u64,
        /// The worker's reason.
        reason: String,
    },
    /// The workers did not all set up their parts in time.
    #[error("the workers did not deploy the job within {} s", .timeout.as_secs())]
    DeployTimeout {
        /// The time they had.
        timeout: Duration,
    },
    /// The controller stopped routing the workers' messages to the attempt.
    #[error("the attempt's inbox closed")]
    InboxClosed,
    /// The job's spec could not be encoded for the workers.
    #[error("the job's spec cannot be sent to the workers: {0}")]
    Spec(#[source] serde_json::Error),
    /// The attempt's layout names no control channel for a task here (a bug in Weir).
    #[error("no control channel for task {task} ({node} {subtask})")]
    NoControlChannel {
        /// The task's index.
        task: usize,
        /// Its node.
        node: String,
        /// Its subtask.
        subtask: u32,
    },
    /// The attempt's layout names no data address for a place (a bug in Weir).
    #[error("no address for place {place}")]
    NoAddress {
        /// The place.
        place: usize,
    },
}

/// What an attempt on a cluster was doing when one of its workers was found gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptStep {
    /// Placing its subtasks.
    Placing,
    /// Sending the workers their parts.
    Deploying,
    /// Telling the workers to start.
    Starting,
    /// Running.
    Running,
}

impl std::fmt::Display for AttemptStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AttemptStep::Placing => "while the job was placed",
            AttemptStep::Deploying => "while the job was deployed",
            AttemptStep::Starting => "while the job started",
            AttemptStep::Running => "while the job ran",
        })
    }
}

impl Retry for ClusterError {
    /// A lost worker, a failed connection, a timeout or too few slots may pass (workers
    /// come back); a refused deploy, a spec that does not encode or a broken layout will
    /// not.
    fn retry_hint(&self) -> RetryHint {
        match self {
            ClusterError::Placement(e) => e.retry_hint(),
            ClusterError::Data(e) => e.retry_hint(),
            ClusterError::WorkerLost { .. }
            | ClusterError::WorkerGone { .. }
            | ClusterError::DeployTimeout { .. }
            | ClusterError::InboxClosed => RetryHint::Transient,
            ClusterError::DeployRefused { .. }
            | ClusterError::Spec(_)
            | ClusterError::NoControlChannel { .. }
            | ClusterError::NoAddress { .. } => RetryHint::Final,
        }
    }
}

/// Why a job's attempt cannot be placed on the cluster's workers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    /// Not enough free slots.
    #[error("the job needs {needed} slots (its largest parallelism) and the workers have {free} free")]
    NotEnoughSlots {
        /// Slots the job needs.
        needed: u32,
        /// Free slots on the live workers.
        free: u32,
    },
}

impl Retry for PlacementError {
    /// Slots free up as jobs end and workers join.
    fn retry_hint(&self) -> RetryHint {
        match self {
            PlacementError::NotEnoughSlots { .. } => RetryHint::Transient,
        }
    }
}

/// Why the data plane could not set up a channel between two processes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The peer could not be reached or the connection failed.
    #[error("the data connection to {peer} failed: {reason}")]
    Connection {
        /// The peer's data address.
        peer: String,
        /// Why.
        reason: String,
    },
    /// The peer refused the connection.
    #[error("the worker at {peer} refused the data connection: {reason}")]
    Refused {
        /// The peer's data address.
        peer: String,
        /// Its reason.
        reason: String,
    },
    /// The channel is registered already.
    #[error("channel {channel} of attempt {attempt} of job `{job}` is registered already")]
    Duplicate {
        /// The job.
        job: String,
        /// The attempt.
        attempt: u64,
        /// The channel's number in the attempt's wiring.
        channel: u32,
    },
}

impl Retry for DataError {
    /// A connection may succeed next time; a refusal (another token, another protocol) or
    /// a channel registered twice (a bug) will not.
    fn retry_hint(&self) -> RetryHint {
        match self {
            DataError::Connection { .. } => RetryHint::Transient,
            DataError::Refused { .. } | DataError::Duplicate { .. } => RetryHint::Final,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_errors_say_whether_a_retry_may_help() {
        let transient = [
            ClusterError::from(PlacementError::NotEnoughSlots { needed: 4, free: 2 }),
            ClusterError::WorkerLost { worker: 1, reason: "heartbeat timeout".into() },
            ClusterError::WorkerGone { worker: 1, step: AttemptStep::Running },
            ClusterError::DeployTimeout { timeout: Duration::from_secs(1) },
            DataError::Connection { peer: "p".into(), reason: "refused".into() }.into(),
        ];
        for e in transient {
            assert_eq!(e.retry_hint(), RetryHint::Transient, "{e}");
        }
        let last = [
            ClusterError::DeployRefused { worker: 1, reason: "a bad spec".into() },
            ClusterError::NoAddress { place: 3 },
            DataError::Refused { peer: "p".into(), reason: "the cluster token is not valid".into() }.into(),
        ];
        for e in last {
            assert_eq!(e.retry_hint(), RetryHint::Final, "{e}");
        }
    }

    #[test]
    fn a_failed_job_keeps_the_class_of_the_error_under_it() {
        use crate::connectors::ConnectorError;
        use crate::connectors::kafka::client::KafkaError;
        let task = |error: TaskError| JobError::Task { node: "sink".into(), subtask: 0, error };
        let timeout = KafkaError::Timeout { broker: "broker 1 of Kafka connection `main`".into() };
        let denied = KafkaError::NotAuthorized {
            what: "the produce".into(),
            code: "TOPIC_AUTHORIZATION_FAILED".into(),
        };
        assert_eq!(task(ConnectorError::Kafka(timeout).into()).retry_hint(), RetryHint::Transient);
        assert_eq!(task(ConnectorError::Kafka(denied).into()).retry_hint(), RetryHint::Final);
        assert_eq!(
            task(TaskError::Remote { worker: 2, message: "gone".into(), secondary: false }).retry_hint(),
            RetryHint::Transient
        );
        let lost = ClusterError::WorkerLost { worker: 1, reason: "heartbeat timeout".into() };
        assert_eq!(JobError::from(lost).retry_hint(), RetryHint::Transient);
        let full = weir_store::StoreError::DiskFull { free: 1, reserved: 2, needed: 3 };
        assert_eq!(JobError::Store(full).retry_hint(), RetryHint::Final);
        let exhausted = JobError::RestartsExhausted { restarts: 3, last: Box::new(JobError::TasksGone) };
        assert_eq!(exhausted.retry_hint(), RetryHint::Final);
    }
}
