//! The worker's side of running jobs: the parts of attempts the controller deploys here.
//!
//! A `Deploy` plans the job again from its spec and the shipped modules, registers the
//! inputs of the subtasks placed here with the data plane and answers `Deployed`; `Start`
//! opens the outputs and spawns the subtasks with today's task code; `Control` and `Stop`
//! reach them; their messages to the coordinator and their checkpoint storage calls go back
//! over the session ([`RemoteStorage`]: the controller's store stays the single commit
//! point; with the controller's chunk store shared, the subtasks put their chunks and read
//! the chains they restore there themselves); `Ended` reports how the part ended. Every
//! job-scoped message names its attempt: a deploy older than one already seen for the job
//! is refused and messages of an attempt that is not the job's current one are dropped. A session that ends takes every part with
//! it (nothing they do could be reported any more).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use weir_store::{
    CheckpointMeta, CheckpointStorage, EntryVisitor, ExternalChains, GcReport, Manifest, StateEntry,
    StoreError, SubtaskState, SubtaskWrite,
};

use super::data::DataPlane;
use super::protocol::{
    AttemptId, Deploy, ModuleBytes, RemoteFailure, StorageReply, StorageRequest, SubtaskCounters,
    ToController, ToWorker, WireSubtaskWrite,
};
use crate::guest::{GuestHost, OperatorModule};
use crate::local_state::{LocalQuota, LocalStateConfig};
use crate::plan::{JobSpec, LoadError, ModuleLoader, Plan};
use crate::runtime::attempt::{Layout, Part};
use crate::runtime::env::TaskEnv;
use crate::runtime::{Control, JobError, JobMetrics, StopMode, StopSignal, SubtaskMetrics, ToCoordinator};

/// How long a storage call may wait for the controller's answer.
const STORAGE_TIMEOUT: Duration = Duration::from_secs(600);

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
    /// is refused (the tenant's quota is the controller's, [`super::quota`]).
    pub disk_floor: Arc<weir_store::DiskFloor>,
}

/// A worker's chunk store and where it is ([`super::objects::ObjectStoreConfig::location`]).
#[derive(Clone)]
pub struct WorkerChunks {
    /// The store.
    pub objects: Arc<super::objects::BlockingChunks>,
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
    controls: Arc<Mutex<HashMap<usize, mpsc::UnboundedSender<Control>>>>,
    stop: Arc<StopSignal>,
    task: tokio::task::JoinHandle<()>,
}

/// Storage calls waiting for the controller's answers, by call number.
type Calls = Arc<Mutex<HashMap<u64, std::sync::mpsc::Sender<StorageReply>>>>;

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
        if attempt.attempt < *newest {
            let refused = ToController::Deployed {
                attempt: attempt.clone(),
                result: Err(format!("attempt {} is older than attempt {newest}", attempt.attempt)),
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
            (Some(shared), Some(own)) if shared.location == own.location => Some(DirectChunks {
                objects: own.objects.clone(),
                max_chunk_bytes: usize::try_from(shared.max_chunk_bytes).unwrap_or(usize::MAX),
                lease: Mutex::new(0..0),
            }),
            _ => None,
        };
        if let Some(direct) = &direct {
            tracing::info!(
                job = attempt.job,
                attempt = attempt.attempt,
                "this part puts its chunks in the object store and reads its restores from there \
                 itself ({} bytes at most each)",
                direct.max_chunk_bytes
            );
        }
        let storage = Arc::new(RemoteStorage {
            attempt: attempt.clone(),
            outbox: self.outbox.clone(),
            calls: self.calls.clone(),
            next_call: self.next_call.clone(),
            direct,
        });
        let run = run_part(
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

/// Loads the modules the controller shipped.
struct Shipped<'a> {
    host: &'a GuestHost,
    modules: &'a BTreeMap<String, ModuleBytes>,
}

impl ModuleLoader for Shipped<'_> {
    fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, LoadError> {
        let module = self
            .modules
            .get(reference)
            .ok_or_else(|| format!("module `{reference}` was not shipped with the deploy"))?;
        Ok(self.host.load(&module.name, &module.bytes)?)
    }
}

/// Runs one part: prepare, answer `Deployed`, wait for `Start`, run, answer `Ended`.
async fn run_part(
    config: ExecutorConfig,
    deploy: Deploy,
    outbox: mpsc::Sender<ToController>,
    storage: Arc<RemoteStorage>,
    controls: Arc<Mutex<HashMap<usize, mpsc::UnboundedSender<Control>>>>,
    stop: Arc<StopSignal>,
    start: oneshot::Receiver<()>,
) {
    let attempt = deploy.attempt.clone();
    let fail = |node: &str, subtask: u32, message: String| RemoteFailure {
        node: node.to_string(),
        subtask,
        message,
        secondary: false,
    };
    // Planning compiles modules: a blocking call.
    let planned = {
        let host = config.host.clone();
        let (spec_json, modules, kafka) =
            (deploy.spec_json.clone(), deploy.modules.clone(), deploy.kafka.clone());
        tokio::task::spawn_blocking(move || -> Result<Plan, String> {
            let spec: JobSpec = serde_json::from_str(&spec_json).map_err(|e| format!("the spec: {e}"))?;
            let mut plan = crate::plan::plan(&spec, &Shipped { host: &host, modules: &modules })
                .map_err(|e| e.to_string())?;
            // The connections the controller resolved (a spec names connections only).
            super::protocol::set_kafka_access(&mut plan, &kafka);
            Ok(plan)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r)
    };
    let plan = match planned {
        Ok(plan) => plan,
        Err(e) => {
            let _ = outbox.send(ToController::Deployed { attempt, result: Err(e) }).await;
            return;
        }
    };
    let layout = Layout {
        job: attempt.job.clone(),
        attempt: attempt.attempt,
        places: deploy.places.clone(),
        addresses: deploy.addresses.clone(),
        here: deploy.here,
        data: Arc::new(config.data.clone()),
    };
    let mut part = match Part::prepare(&plan, Some(&layout)) {
        Ok(part) => part,
        Err(e) => {
            let _ = outbox.send(ToController::Deployed { attempt, result: Err(e.to_string()) }).await;
            return;
        }
    };
    // A control channel for every task here.
    let mut receivers = BTreeMap::new();
    {
        let mut senders = lock(&controls);
        let mut task = 0usize;
        for (index, node) in plan.nodes.iter().enumerate() {
            for s in 0..node.parallelism {
                if layout.is_here(index, s) {
                    let (tx, rx) = mpsc::unbounded_channel();
                    senders.insert(task, tx);
                    receivers.insert(task, rx);
                }
                task += 1;
            }
        }
    }
    if outbox.send(ToController::Deployed { attempt: attempt.clone(), result: Ok(()) }).await.is_err() {
        return;
    }
    if start.await.is_err() {
        return;
    }
    let failure = async {
        part.open_outputs().await.map_err(|e| fail("", 0, e.to_string()))?;
        let env = TaskEnv {
            job_id: attempt.job.clone(),
            storage: storage.clone() as Arc<dyn CheckpointStorage>,
            faults: None,
            stop,
            store: None,
            outbox: Some(storage.clone() as Arc<dyn weir_store::Outbox>),
            local: LocalStateConfig {
                base: config.local_state.clone(),
                job: attempt.job.clone(),
                quota: Some(LocalQuota::new(Arc::new(super::quota::RemoteQuota {
                    storage: storage.clone(),
                    floor: config.disk_floor.clone(),
                }))),
            },
        };
        let (to_coordinator, mut inbox) = mpsc::unbounded_channel::<ToCoordinator>();
        let forward = {
            let (outbox, attempt) = (outbox.clone(), attempt.clone());
            tokio::spawn(async move {
                while let Some(message) = inbox.recv().await {
                    let message =
                        ToController::Coordinator { attempt: attempt.clone(), message: message.into() };
                    if outbox.send(message).await.is_err() {
                        return;
                    }
                }
            })
        };
        let spawned = part.spawn(Some(&env), deploy.restore.as_ref(), receivers, &to_coordinator);
        drop(to_coordinator);
        let (finished, tasks) = spawned.map_err(|e| fail("", 0, e.to_string()))?;
        let counters = Counters::new(&plan, &layout, finished.metrics());
        let reporting = {
            let (outbox, attempt, counters) = (outbox.clone(), attempt.clone(), counters.clone());
            tokio::spawn(async move {
                let mut every = tokio::time::interval(METRICS_EVERY);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    let message =
                        ToController::Metrics { attempt: attempt.clone(), counters: counters.now() };
                    if outbox.send(message).await.is_err() {
                        return;
                    }
                }
            })
        };
        let joined = tasks.join(None).await;
        reporting.abort();
        // Every message of the subtasks reaches the controller before `Ended`, and so do
        // their final counters.
        let _ = forward.await;
        let _ =
            outbox.send(ToController::Metrics { attempt: attempt.clone(), counters: counters.now() }).await;
        joined.map(drop).map_err(|e| match e {
            JobError::Task { node, subtask, error } => {
                RemoteFailure { node, subtask, secondary: error.is_secondary(), message: error.to_string() }
            }
            JobError::Panic { node, subtask, message } => {
                fail(&node, subtask, format!("panicked: {message}"))
            }
            other => fail("", 0, other.to_string()),
        })
    }
    .await
    .err();
    let _ = outbox.send(ToController::Ended { attempt, failure }).await;
}

/// How often a part reports its subtasks' counters.
const METRICS_EVERY: Duration = Duration::from_secs(1);

/// A task here: its index, its counters, and the (node, subtask) its channels name as their
/// sender.
type CountedTask = (u64, Arc<SubtaskMetrics>, (String, u32));

/// The counters of a part's subtasks, by task index.
#[derive(Clone)]
struct Counters {
    tasks: Arc<Vec<CountedTask>>,
    metrics: Arc<JobMetrics>,
}

impl Counters {
    fn new(plan: &Plan, layout: &Layout, metrics: Arc<JobMetrics>) -> Self {
        let mut tasks = Vec::new();
        let mut task = 0u64;
        for (index, node) in plan.nodes.iter().enumerate() {
            for s in 0..node.parallelism {
                if layout.is_here(index, s) {
                    tasks.push((task, metrics.subtasks[index][s as usize].clone(), (node.id.clone(), s)));
                }
                task += 1;
            }
        }
        Counters { tasks: Arc::new(tasks), metrics }
    }

    fn now(&self) -> Vec<SubtaskCounters> {
        let relaxed = Ordering::Relaxed;
        self.tasks
            .iter()
            .map(|(task, m, sender)| SubtaskCounters {
                task: *task,
                records_in: m.records_in.load(relaxed),
                records_out: m.records_out.load(relaxed),
                batches_in: m.batches_in.load(relaxed),
                batches_out: m.batches_out.load(relaxed),
                blocked_ns: self
                    .metrics
                    .channels
                    .iter()
                    .filter(|c| &c.from == sender)
                    .map(|c| c.blocked_ns.load(relaxed))
                    .sum(),
            })
            .collect()
    }
}

/// Checkpoint storage of a worker's subtasks: their calls go to the controller over the
/// session. Only what subtasks call is served: writing a snapshot, reading channel state,
/// visiting chains to restore. With `direct`, a snapshot's chunks are put in the object
/// store here, under ids leased from the controller, and only their ids and sizes travel.
pub(super) struct RemoteStorage {
    attempt: AttemptId,
    outbox: mpsc::Sender<ToController>,
    calls: Calls,
    next_call: Arc<AtomicU64>,
    direct: Option<DirectChunks>,
}

/// Chunk ids leased at once (a lease's unused ids are never used by anyone).
const LEASE_BLOCK: u64 = 4096;

/// Where a worker's subtasks put their chunks, and read the chains they restore, themselves.
struct DirectChunks {
    objects: Arc<super::objects::BlockingChunks>,
    max_chunk_bytes: usize,
    /// Ids leased to this attempt and not used yet.
    lease: Mutex<std::ops::Range<u64>>,
}

fn unavailable(what: &str) -> StoreError {
    StoreError::Remote(format!("{what} is not available on a worker"))
}

impl RemoteStorage {
    /// Sends `request`; the answers arrive on the returned receiver. Blocking: called from
    /// the blocking pool as every storage call is.
    pub(super) fn call(
        &self,
        request: StorageRequest,
    ) -> Result<std::sync::mpsc::Receiver<StorageReply>, StoreError> {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        lock(&self.calls).insert(call, tx);
        let message = ToController::Storage { attempt: self.attempt.clone(), call, request };
        self.outbox
            .blocking_send(message)
            .map_err(|_| StoreError::Remote("the session with the controller ended".into()))?;
        Ok(rx)
    }

    /// `count` chunk ids of this attempt's lease, leasing more from the controller when it
    /// runs short.
    fn take_ids(&self, direct: &DirectChunks, count: u64) -> Result<std::ops::Range<u64>, StoreError> {
        let mut lease = lock(&direct.lease);
        if lease.end - lease.start < count {
            let want = count.max(LEASE_BLOCK);
            if want > super::protocol::MAX_LEASE {
                return Err(StoreError::Remote(format!("a snapshot of {count} chunks is more than a lease")));
            }
            let rx = self.call(StorageRequest::LeaseChunkIds { count: want })?;
            match Self::answer(&rx)? {
                StorageReply::Leased { first, end } if end.saturating_sub(first) >= count => {
                    *lease = first..end
                }
                other => return Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        }
        let ids = lease.start..lease.start + count;
        lease.start += count;
        Ok(ids)
    }

    /// Writes a snapshot's chunks to the object store and has the controller record them.
    fn put_subtask(&self, direct: &DirectChunks, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
        let encoded = weir_store::encode_subtask(&write, direct.max_chunk_bytes)?;
        let ids = self.take_ids(direct, encoded.count() as u64)?;
        let (recorded, puts) = encoded.assign(write, ids);
        direct.objects.put_all(&self.attempt.job, puts)?;
        let rx = self.call(StorageRequest::RecordSubtask(recorded))?;
        match Self::answer(&rx)? {
            StorageReply::Written(state) => Ok(state),
            other => Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
        }
    }

    /// Visits `chains` as the controller reads them, batch by batch.
    fn visit_through_controller(
        &self,
        chains: Vec<Vec<u64>>,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        let rx = self.call(StorageRequest::VisitChains { chains })?;
        loop {
            match Self::answer(&rx)? {
                StorageReply::Entries { entries, done } => {
                    for entry in &entries {
                        if let Some(value) = &entry.value
                            && visit(&entry.state, &entry.key, value).is_break()
                        {
                            return Ok(ControlFlow::Break(()));
                        }
                    }
                    if done {
                        return Ok(ControlFlow::Continue(()));
                    }
                }
                other => return Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        }
    }

    /// Runs `wait` (a call that waits for the controller) where waiting is allowed: from a
    /// task of the runtime, the runtime's thread goes to the other tasks meanwhile
    /// (`block_in_place`), as subtasks call storage from their tasks (a sink staging at a
    /// barrier, a local store reserving room).
    pub(super) fn off_runtime<T>(&self, wait: impl FnOnce() -> T) -> T {
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }

    pub(super) fn answer(rx: &std::sync::mpsc::Receiver<StorageReply>) -> Result<StorageReply, StoreError> {
        match rx.recv_timeout(STORAGE_TIMEOUT) {
            Ok(StorageReply::Failed(reason)) => Err(StoreError::Remote(reason)),
            Ok(reply) => Ok(reply),
            Err(_) => Err(StoreError::Remote("no answer from the controller".into())),
        }
    }
}

impl CheckpointStorage for RemoteStorage {
    fn begin(&self, _meta: &CheckpointMeta) -> Result<(), StoreError> {
        Err(unavailable("begin"))
    }

    fn write_subtask(&self, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
        if let Some(direct) = &self.direct {
            return self.put_subtask(direct, write);
        }
        let wire = WireSubtaskWrite {
            checkpoint: write.checkpoint,
            operator: write.operator,
            subtask: write.subtask,
            full: write.full,
            scopes: Arc::unwrap_or_clone(write.scopes),
            previous: write.previous,
            blob: write.blob,
            channel_state: write.channel_state,
            max_chain_length: write.max_chain_length as u64,
        };
        let rx = self.call(StorageRequest::WriteSubtask(wire))?;
        match Self::answer(&rx)? {
            StorageReply::Written(state) => Ok(state),
            other => Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
        }
    }

    fn complete(&self, _: &CheckpointMeta, _: &Manifest, _: usize) -> Result<GcReport, StoreError> {
        Err(unavailable("complete"))
    }

    fn abort(&self, _meta: &CheckpointMeta) -> Result<(), StoreError> {
        Err(unavailable("abort"))
    }

    fn latest_completed(&self, _job: &str) -> Result<Option<(CheckpointMeta, Manifest)>, StoreError> {
        Err(unavailable("latest_completed"))
    }

    fn checkpoint(&self, _: &str, _: u64) -> Result<Option<(CheckpointMeta, Option<Manifest>)>, StoreError> {
        Err(unavailable("checkpoint"))
    }

    fn read_chain(&self, _job: &str, chain: &[u64]) -> Result<Vec<StateEntry>, StoreError> {
        if let Some(direct) = &self.direct
            && let Some(entries) =
                ExternalChains::default().read_chain(direct.objects.as_ref(), &self.attempt.job, chain)?
        {
            return Ok(entries);
        }
        let rx = self.call(StorageRequest::ReadChain { chain: chain.to_vec() })?;
        let mut all = Vec::new();
        loop {
            match Self::answer(&rx)? {
                StorageReply::Entries { entries, done } => {
                    all.extend(entries);
                    if done {
                        return Ok(all);
                    }
                }
                other => return Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        }
    }

    fn visit_chains(
        &self,
        _job: &str,
        chains: &[Vec<u64>],
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        if chains.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        let Some(direct) = &self.direct else {
            return self.visit_through_controller(chains.to_vec(), visit);
        };
        // Each chain from the objects, or (a chunk the controller keeps in its file) through
        // the controller: every chain is visited once either way.
        let mut objects = ExternalChains::default();
        let mut through_controller = 0;
        let mut flow = ControlFlow::Continue(());
        for chain in chains {
            flow = match objects.visit_chain(direct.objects.as_ref(), &self.attempt.job, chain, visit)? {
                Some(flow) => flow,
                None => {
                    through_controller += 1;
                    self.visit_through_controller(vec![chain.clone()], visit)?
                }
            };
            if flow.is_break() {
                break;
            }
        }
        tracing::info!(
            job = self.attempt.job,
            attempt = self.attempt.attempt,
            "restored {} chains ({} bytes) from the object store, {through_controller} through the controller",
            chains.len() - through_controller,
            objects.bytes
        );
        Ok(flow)
    }

    fn history(&self, _job: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        Err(unavailable("history"))
    }

    fn last_checkpoint_id(&self, _job: &str) -> Result<u64, StoreError> {
        Err(unavailable("last_checkpoint_id"))
    }

    fn recover(&self, _job: &str) -> Result<(), StoreError> {
        Err(unavailable("recover"))
    }

    fn chunk_usage(&self, _job: &str) -> Result<(u64, u64), StoreError> {
        Err(unavailable("chunk_usage"))
    }
}

#[cfg(test)]
mod tests {
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

    async fn deployed(rx: &mut mpsc::Receiver<ToController>) -> (u64, Result<(), String>) {
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
        assert!(result.unwrap_err().contains("the spec"));
        // A deploy of an older attempt (a controller's message that was overtaken, or a
        // stale one) is refused without touching anything.
        executor.handle(deploy(4, "{}"));
        let (attempt, result) = deployed(&mut rx).await;
        assert_eq!(attempt, 4);
        assert_eq!(result.unwrap_err(), "attempt 4 is older than attempt 5");
        // Messages of an attempt that is not the current one are dropped.
        let other = AttemptId { job: "j".into(), attempt: 4 };
        executor.handle(ToWorker::Start { attempt: other.clone() });
        executor.handle(ToWorker::Cancel { attempt: other });
        assert!(rx.try_recv().is_err());
    }
}
