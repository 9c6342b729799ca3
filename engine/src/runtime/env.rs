//! What a checkpointed job runs with ([`RunEnv`]): its id, the store, and the handles
//! through which it is asked for checkpoints, asked to stop, and watched.

use std::sync::Arc;

use tokio::sync::{Mutex, broadcast, mpsc};
use weir_store::{CheckpointStorage, Store};

use crate::guest::logs::{LogRate, LogSink};
use crate::local_state::LocalStateConfig;

use super::control::{JobEvent, TriggerError, TriggerRequest};
use super::faults::FaultInjector;
use super::metrics::JobMetrics;
use super::stop::{StopMode, StopSignal};

/// What a checkpointed job runs with: its id, the store, and the channels through which it
/// can be asked for checkpoints and reports what happens.
pub struct RunEnv {
    /// The job id (checkpoints are stored under it).
    pub job_id: String,
    /// The embedded store (stream connectors use it).
    pub store: Store,
    /// Where checkpoints go (the store itself, or a fault-injecting wrapper).
    pub storage: Arc<dyn CheckpointStorage>,
    /// Fault injection (tests).
    pub faults: Option<Arc<FaultInjector>>,
    pub(crate) events: broadcast::Sender<JobEvent>,
    pub(crate) requests: Arc<Mutex<mpsc::UnboundedReceiver<TriggerRequest>>>,
    trigger_tx: mpsc::UnboundedSender<TriggerRequest>,
    pub(crate) stop: Arc<StopSignal>,
    live: Arc<std::sync::Mutex<Option<Arc<JobMetrics>>>>,
    /// Runs the job's attempts elsewhere (a cluster's workers, while any is live).
    pub(crate) cluster: Option<Arc<dyn AttemptRunner>>,
    /// The records the job took out, and the operators' poison records (across attempts).
    pub dead_letters: Arc<super::dead_letter::DeadLetterBook>,
    /// Where the operators' log lines go (`None`: the process's own log), and at what rate
    /// per instance.
    pub(crate) logs: Option<Arc<dyn LogSink>>,
    pub(crate) log_rate: LogRate,
    /// The attempt running (0: the first; the job loop counts them).
    pub(crate) attempt: std::sync::atomic::AtomicU32,
    /// Whether periodic and on-demand checkpoints are held back (see
    /// [`RunEnv::hold_checkpoints`]).
    pub(crate) hold: Arc<CheckpointHold>,
}

/// Whether a job takes checkpoints other than its final one: while an upgraded job is on
/// probation, none — its output stays uncommitted, so that rolling it back to the savepoint
/// it started from loses and doubles nothing.
#[derive(Debug, Default)]
pub struct CheckpointHold {
    held: std::sync::atomic::AtomicBool,
    /// Wakes the coordinator when the hold changes.
    pub(crate) changed: tokio::sync::Notify,
}

impl CheckpointHold {
    /// Whether checkpoints are held back.
    pub fn held(&self) -> bool {
        self.held.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Holds checkpoints back (`true`) or releases them.
    pub fn set(&self, held: bool) {
        self.held.store(held, std::sync::atomic::Ordering::Release);
        self.changed.notify_one();
    }
}

impl std::fmt::Debug for RunEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEnv").field("job_id", &self.job_id).finish_non_exhaustive()
    }
}

impl RunEnv {
    /// An environment for job `job_id` over `store`.
    pub fn new(job_id: impl Into<String>, store: Store) -> Self {
        let (events, _) = broadcast::channel(1024);
        let (trigger_tx, rx) = mpsc::unbounded_channel();
        RunEnv {
            job_id: job_id.into(),
            storage: Arc::new(store.clone()),
            store,
            faults: None,
            events,
            requests: Arc::new(Mutex::new(rx)),
            trigger_tx,
            stop: Arc::new(StopSignal::default()),
            live: Arc::new(std::sync::Mutex::new(None)),
            cluster: None,
            dead_letters: Arc::default(),
            logs: None,
            log_rate: LogRate::default(),
            attempt: std::sync::atomic::AtomicU32::new(0),
            hold: Arc::default(),
        }
    }

    /// Takes no checkpoint but the final one while `held`: periodic checkpoints wait for
    /// the release, on-demand ones are refused ([`TriggerError::Held`]).
    pub fn hold_checkpoints(&self, held: bool) {
        self.hold.set(held);
    }

    /// The operators' log lines go to `sink`, at most `rate` per instance.
    pub fn with_logs(mut self, sink: Arc<dyn LogSink>, rate: LogRate) -> Self {
        self.logs = Some(sink);
        self.log_rate = rate;
        self
    }

    /// Runs the job's attempts with `cluster` whenever it is active (a cluster's workers).
    pub fn with_cluster(mut self, cluster: Option<Arc<dyn AttemptRunner>>) -> Self {
        self.cluster = cluster;
        self
    }

    /// Uses `storage` for checkpoints instead of the store itself.
    pub fn with_storage(mut self, storage: Arc<dyn CheckpointStorage>) -> Self {
        self.storage = storage;
        self
    }

    /// Injects the planned faults.
    pub fn with_faults(mut self, faults: Arc<FaultInjector>) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Events of the job from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.events.subscribe()
    }

    /// A handle that triggers checkpoints on demand.
    pub fn trigger_handle(&self) -> CheckpointTrigger {
        CheckpointTrigger { tx: self.trigger_tx.clone() }
    }

    /// Asks the running job to stop: its sources end their input at the next batch
    /// boundary, a final checkpoint commits every output, and the job ends with
    /// [`super::JobReport::stopped`]. Running the job again resumes from that checkpoint.
    pub fn stop(&self) {
        self.stop.request(StopMode::Suspend, false);
    }

    /// Asks the running job to stop as `mode` says; with `pin`, its final checkpoint is
    /// pinned against retention (it is the source of a savepoint: see
    /// [`weir_store::CheckpointMeta::pinned`]). A drained job ends with
    /// [`super::JobReport::drained`].
    pub fn stop_with(&self, mode: StopMode, pin: bool) {
        self.stop.request(mode, pin);
    }

    /// The stop requested so far, if any.
    pub fn stop_requested(&self) -> Option<StopMode> {
        self.stop.requested()
    }

    /// The counters of the current attempt (none before the first attempt starts).
    pub fn live_metrics(&self) -> Option<Arc<JobMetrics>> {
        self.live.lock().map(|m| m.clone()).unwrap_or(None)
    }

    /// Publishes the counters of a new attempt.
    pub(crate) fn set_live_metrics(&self, metrics: Arc<JobMetrics>) {
        if let Ok(mut live) = self.live.lock() {
            *live = Some(metrics);
        }
    }
}

/// Runs attempts of jobs somewhere else than in this process (a cluster's workers).
pub trait AttemptRunner: Send + Sync + std::fmt::Debug {
    /// Whether attempts go there now (any worker is live).
    fn active(&self) -> bool;

    /// Runs one attempt of `plan`, restored from `restore`.
    fn run_attempt<'a>(
        &'a self,
        plan: &'a crate::plan::Plan,
        env: &'a RunEnv,
        restore: Option<(weir_store::CheckpointMeta, weir_store::Manifest)>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<super::JobReport, super::JobError>> + Send + 'a>>;
}

/// What the subtasks of a checkpointed attempt run with in the process that runs them:
/// the server's [`RunEnv`], or a worker's (its storage reaches the controller's store).
#[derive(Clone)]
pub(crate) struct TaskEnv {
    /// The job.
    pub job_id: String,
    /// Where snapshots go and restores come from.
    pub storage: Arc<dyn CheckpointStorage>,
    /// Fault injection (tests).
    pub faults: Option<Arc<FaultInjector>>,
    /// Whether the job is asked to stop.
    pub stop: Arc<StopSignal>,
    /// The embedded store, where there is one (stream connectors, sinks' outboxes).
    pub store: Option<Store>,
    /// Where sinks stage their output without `store` (on a worker: the controller's).
    pub outbox: Option<Arc<dyn weir_store::Outbox>>,
    /// Where host keyed state keeps its working copies.
    pub local: LocalStateConfig,
    /// The job's book of records taken out.
    pub dead_letters: Arc<super::dead_letter::DeadLetterBook>,
    /// Where the operators' log lines go, at what rate, and the attempt they are of.
    pub logs: Option<Arc<dyn LogSink>>,
    pub log_rate: LogRate,
    pub attempt: u32,
}

impl RunEnv {
    /// What the subtasks of an attempt in this process run with.
    pub(crate) fn task_env(&self) -> TaskEnv {
        TaskEnv {
            job_id: self.job_id.clone(),
            storage: self.storage.clone(),
            faults: self.faults.clone(),
            stop: self.stop.clone(),
            store: Some(self.store.clone()),
            outbox: None,
            local: LocalStateConfig::beside(&self.store, &self.job_id),
            dead_letters: self.dead_letters.clone(),
            logs: self.logs.clone(),
            log_rate: self.log_rate,
            attempt: self.attempt.load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// Triggers checkpoints of a running job.
#[derive(Debug, Clone)]
pub struct CheckpointTrigger {
    tx: mpsc::UnboundedSender<TriggerRequest>,
}

impl CheckpointTrigger {
    /// Triggers a checkpoint now; returns its id (poll the store or the events for its fate).
    pub async fn trigger(&self) -> Result<u64, TriggerError> {
        self.request(false).await
    }

    /// Triggers a checkpoint for a savepoint: it is pinned against retention (see
    /// [`weir_store::CheckpointMeta::pinned`]) until the savepoint copied it and unpinned it.
    pub async fn trigger_pinned(&self) -> Result<u64, TriggerError> {
        self.request(true).await
    }

    async fn request(&self, pin: bool) -> Result<u64, TriggerError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx.send(TriggerRequest { reply, pin }).map_err(|_| TriggerError::NotRunning)?;
        rx.await.map_err(|_| TriggerError::NotRunning)?
    }
}
