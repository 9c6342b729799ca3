//! The worker's side of running jobs: the parts of attempts the controller deploys here.
//!
//! A `Deploy` plans the job again from its spec and the shipped modules, registers the
//! inputs of the subtasks placed here with the data plane and answers `Deployed`; `Start`
//! opens the outputs and spawns the subtasks with today's task code; `Control` and `Stop`
//! reach them; their messages to the coordinator and their checkpoint storage calls go back
//! over the session ([`RemoteStorage`]: the controller's store stays the single commit
//! point; with the controller's chunk store shared, the subtasks put their chunks and read
//! the chains they restore there themselves); `Ended` reports how the part ended (`part`;
//! its counters go to the controller every second, `counters`, its operators' log lines
//! every quarter second, `logs`). Every job-scoped message
//! names its attempt: a deploy older than one already seen for the job is refused and
//! messages of an attempt that is not the job's current one are dropped. A session that
//! ends takes every part with it (nothing they do could be reported any more).

mod counters;
mod logs;
mod part;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

use super::data::DataPlane;
use super::objects::BlockingChunks;
use super::protocol::{AttemptId, Deploy, DeployRefusal, StorageReply, ToController, ToWorker};
use super::remote_storage::{Calls, DirectChunks, RemoteStorage};
use crate::guest::GuestHost;
use crate::plan::PlanError;
use crate::runtime::{JobError, StopMode, StopSignal};

/// What the worker runs jobs with (for the life of the process).
#[derive(Clone)]
pub struct ExecutorConfig {
    /// Compiles the shipped modules (and caches them).
    pub host: Arc<GuestHost>,
    /// The worker's data plane.
    pub data: DataPlane,
    /// Where host keyed state keeps its working copies.
    pub local_state: PathBuf,
    /// The worker's own chunk store: when it is the controller's
    /// ([`Deploy::chunk_store`]), subtasks put their chunks there themselves.
    pub chunks: Option<WorkerChunks>,
    /// The free-space floor of the disk under `local_state`: host state that would pass it
    /// is refused (the tenant's quota is the controller's, `super::quota`).
    pub disk_floor: Arc<weir_store::DiskFloor>,
}

/// A worker's chunk store and where it is ([`super::objects::ObjectStoreConfig::location`]).
#[derive(Clone)]
pub struct WorkerChunks {
    /// The store.
    pub objects: Arc<BlockingChunks>,
    /// Where it is.
    pub location: String,
}

impl std::fmt::Debug for WorkerChunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerChunks").field("location", &self.location).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ExecutorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorConfig")
            .field("local_state", &self.local_state)
            .field("chunks", &self.chunks)
            .finish_non_exhaustive()
    }
}

/// One part running here.
struct PartHandle {
    attempt: u64,
    start: Option<oneshot::Sender<()>>,
    controls: part::Controls,
    stop: Arc<StopSignal>,
    task: tokio::task::JoinHandle<()>,
}

/// The parts of one session.
pub(crate) struct Executor {
    config: ExecutorConfig,
    outbox: mpsc::Sender<ToController>,
    parts: HashMap<String, PartHandle>,
    /// The newest attempt seen per job.
    latest: HashMap<String, u64>,
    calls: Calls,
    next_call: Arc<AtomicU64>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Executor {
    /// The executor of a session whose messages to the controller go to `outbox`.
    pub(crate) fn new(config: ExecutorConfig, outbox: mpsc::Sender<ToController>) -> Self {
        Executor {
            config,
            outbox,
            parts: HashMap::new(),
            latest: HashMap::new(),
            calls: Calls::default(),
            next_call: Arc::new(AtomicU64::new(1)),
        }
    }

    fn current(&self, attempt: &AttemptId) -> Option<&PartHandle> {
        self.parts.get(&attempt.job).filter(|p| p.attempt == attempt.attempt)
    }

    /// Handles a job-scoped message of the controller.
    pub(crate) fn handle(&mut self, message: ToWorker) {
        match message {
            ToWorker::Deploy(deploy) => self.deploy(*deploy),
            ToWorker::Start { attempt } => {
                if let Some(part) = self.parts.get_mut(&attempt.job).filter(|p| p.attempt == attempt.attempt)
                    && let Some(start) = part.start.take()
                {
                    let _ = start.send(());
                }
            }
            ToWorker::Control { attempt, task, control } => {
                if let Some(part) = self.current(&attempt)
                    && let Some(tx) = lock(&part.controls).get(&(task as usize))
                {
                    let _ = tx.send(control.into());
                }
            }
            ToWorker::Stop { attempt, drain, pin } => {
                if let Some(part) = self.current(&attempt) {
                    part.stop.request(if drain { StopMode::Drain } else { StopMode::Suspend }, pin);
                }
            }
            ToWorker::Cancel { attempt } => {
                if self.current(&attempt).is_some()
                    && let Some(part) = self.parts.remove(&attempt.job)
                {
                    part.task.abort();
                }
            }
            ToWorker::Storage { call, reply } => {
                let done = !matches!(reply, StorageReply::Entries { done: false, .. });
                let mut calls = lock(&self.calls);
                if let Some(tx) = calls.get(&call) {
                    let _ = tx.send(reply);
                }
                if done {
                    calls.remove(&call);
                }
            }
            ToWorker::Welcome { .. } | ToWorker::Refused { .. } | ToWorker::HeartbeatAck { .. } => {}
        }
        self.parts.retain(|_, p| !p.task.is_finished());
    }

    fn deploy(&mut self, deploy: Deploy) {
        let attempt = deploy.attempt.clone();
        let newest = self.latest.entry(attempt.job.clone()).or_insert(0);
        // W4: a deploy older than the newest seen for the job is refused.
        if attempt.attempt < *newest {
            let stale = DeployError::Stale { attempt: attempt.attempt, newest: *newest };
            let refused = ToController::Deployed {
                attempt: attempt.clone(),
                result: Err(DeployRefusal(stale.to_string())),
            };
            let _ = self.outbox.try_send(refused);
            return;
        }
        *newest = attempt.attempt;
        if let Some(old) = self.parts.remove(&attempt.job) {
            old.task.abort();
        }
        self.config.data.forget(&attempt.job);
        let (start_tx, start_rx) = oneshot::channel();
        let controls = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(StopSignal::default());
        // Chunks go straight to the object store when this worker's is the controller's.
        let direct = match (&deploy.chunk_store, &self.config.chunks) {
            (Some(shared), Some(own)) if shared.location == own.location => Some(DirectChunks::new(
                own.objects.clone(),
                usize::try_from(shared.max_chunk_bytes).unwrap_or(usize::MAX),
            )),
            _ => None,
        };
        if let Some(direct) = &direct {
            tracing::info!(
                job = attempt.job,
                attempt = attempt.attempt,
                "this part puts its chunks in the object store and reads its restores from there \
                 itself ({} bytes at most each)",
                direct.max_chunk_bytes()
            );
        }
        let storage = Arc::new(RemoteStorage::new(
            attempt.clone(),
            self.outbox.clone(),
            self.calls.clone(),
            self.next_call.clone(),
            direct,
        ));
        let run = part::run_part(
            self.config.clone(),
            deploy,
            self.outbox.clone(),
            storage,
            controls.clone(),
            stop.clone(),
            start_rx,
        );
        let task = tokio::spawn(run);
        self.parts.insert(
            attempt.job.clone(),
            PartHandle { attempt: attempt.attempt, start: Some(start_tx), controls, stop, task },
        );
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        for (_, part) in self.parts.drain() {
            part.task.abort();
        }
        lock(&self.calls).clear();
    }
}

/// Why a worker could not set up its part of an attempt (the controller is told its text,
/// a [`DeployRefusal`]).
#[derive(Debug, thiserror::Error)]
enum DeployError {
    /// A deploy of an attempt older than one already seen for the job.
    #[error("attempt {attempt} is older than attempt {newest}")]
    Stale {
        /// The deploy's attempt.
        attempt: u64,
        /// The newest attempt seen.
        newest: u64,
    },
    /// The spec did not decode.
    #[error("the spec: {0}")]
    Spec(#[source] serde_json::Error),
    /// The spec did not plan (with the shipped modules).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Planning panicked or was cancelled.
    #[error("{0}")]
    Blocking(#[from] tokio::task::JoinError),
    /// The part's channels could not be wired.
    #[error(transparent)]
    Wiring(#[from] JobError),
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn deploy(attempt: u64, spec_json: &str) -> ToWorker {
        ToWorker::Deploy(Box::new(Deploy {
            attempt: AttemptId { job: "j".into(), attempt },
            spec_json: spec_json.into(),
            modules: BTreeMap::new(),
            restore: None,
            places: vec![],
            addresses: vec![],
            here: 1,
            chunk_store: None,
            kafka: BTreeMap::new(),
        }))
    }

    async fn deployed(rx: &mut mpsc::Receiver<ToController>) -> (u64, Result<(), DeployRefusal>) {
        match rx.recv().await {
            Some(ToController::Deployed { attempt, result }) => (attempt.attempt, result),
            other => panic!("not an answer to a deploy: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_deploy_older_than_the_newest_seen_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let config = ExecutorConfig {
            host: GuestHost::new(None).unwrap(),
            data: DataPlane::new("0123456789abcdef", "127.0.0.1:9", 1 << 20, Default::default()),
            local_state: dir.path().to_path_buf(),
            chunks: None,
            disk_floor: Arc::new(weir_store::DiskFloor::new(dir.path().to_path_buf())),
        };
        let (tx, mut rx) = mpsc::channel(16);
        let mut executor = Executor::new(config, tx);
        executor.handle(deploy(5, "not a spec"));
        let (attempt, result) = deployed(&mut rx).await;
        assert_eq!(attempt, 5);
        assert!(result.unwrap_err().0.contains("the spec"));
        // A deploy of an older attempt (a controller's message that was overtaken, or a
        // stale one) is refused without touching anything.
        executor.handle(deploy(4, "{}"));
        let (attempt, result) = deployed(&mut rx).await;
        assert_eq!(attempt, 4);
        assert_eq!(result.unwrap_err().0, "attempt 4 is older than attempt 5");
        // Messages of an attempt that is not the current one are dropped.
        let other = AttemptId { job: "j".into(), attempt: 4 };
        executor.handle(ToWorker::Start { attempt: other.clone() });
        executor.handle(ToWorker::Cancel { attempt: other });
        assert!(rx.try_recv().is_err());
    }
}
