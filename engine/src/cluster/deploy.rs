//! The controller's side of running a job on workers: one attempt spread over the live
//! workers' slots.
//!
//! The attempt gets a number from the store's durable id counter (it grows across the
//! controller's restarts), its slots are reserved ([`Workers::reserve`]), and its messages
//! are routed to it alone ([`Workers::attach`]): anything a worker sends about another
//! attempt is dropped. Subtasks whose connectors need the controller's store (stream log,
//! files) run here, in the controller's own part (a Kafka sink on a worker reaches its
//! outbox over the session); every other subtask runs where placement puts it. Every part
//! registers its inputs (`Deploy`, answered `Deployed`), then every part opens its outputs
//! and runs (`Start`), so no channel is opened before its receiving end exists. The
//! coordinator runs here; its
//! controls to subtasks elsewhere and their acks travel over the sessions, as do their
//! checkpoint storage calls (`storage_service`; the store here stays the single commit point). The attempt
//! fails as soon as a worker of it is lost or a part of it fails; every worker is then told
//! to cancel, and the job's restart places the next attempt on the workers that remain.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use weir_store::{CheckpointMeta, Manifest};

use super::controller::{AttemptInbox, WorkerEvent, Workers};
use super::data::DataPlane;
use super::protocol::{AttemptId, Deploy, ModuleBytes, SharedChunkStore, ToController, ToWorker};
use super::quota::Reservations;
use super::storage_service::{Leases, StorageService};
use crate::connectors::{SinkConfig, SourceKind};
use crate::guest::logs::{LogLine, LogSink};
use crate::plan::{NodeBody, Plan, PlanNode};
use crate::runtime::attempt::{Layout, Part, control_channels, spawn_coordinator, task_infos};
use crate::runtime::store_call::store_call;
use crate::runtime::{
    AttemptStep, ClusterError, Control, JobError, JobMetrics, JobReport, RunEnv, StopMode, SubtaskMetrics,
    ToCoordinator,
};

/// How long the workers have to set up their parts of an attempt (plan, compile modules,
/// register inputs).
const DEPLOY_TIMEOUT: Duration = Duration::from_secs(120);

/// The controller's cluster: the registry of workers and the controller's own data plane
/// (for the subtasks that run here).
#[derive(Debug, Clone)]
pub struct Cluster {
    /// The workers.
    pub workers: Workers,
    data: DataPlane,
    data_addr: String,
    /// Where the store's chunk objects are, when workers can share them
    /// ([`super::objects::ObjectStoreConfig::location`]).
    chunk_store: Option<String>,
}

impl Cluster {
    /// Starts the controller's data plane on `listener`, reachable at `advertise` (its
    /// bound address when `None`), over `transport`. Refused over plain TCP when an address
    /// of the cluster's is off loopback and `cluster.insecure_plaintext` is not set.
    pub fn start(
        workers: Workers,
        listener: TcpListener,
        advertise: Option<String>,
        transport: super::tls::Transport,
    ) -> Result<Self, ClusterStartError> {
        let bound = listener.local_addr()?;
        let data_addr = advertise.unwrap_or_else(|| bound.to_string());
        let config = workers.config();
        let addresses = [
            ("cluster.listen", config.listen.clone().unwrap_or_default()),
            ("cluster.data_listen", bound.to_string()),
            ("cluster.data_advertise", data_addr.clone()),
        ];
        let addresses: Vec<(&str, &str)> = addresses.iter().map(|(s, a)| (*s, a.as_str())).collect();
        transport.check_plaintext(
            &addresses,
            "cluster.insecure_plaintext = true",
            config.insecure_plaintext,
        )?;
        let token = config.token.clone().unwrap_or_default();
        let data = DataPlane::new(&token, &data_addr, super::data::DATA_FRAME_BYTES, transport);
        tokio::spawn(data.clone().serve(listener));
        Ok(Cluster { workers, data, data_addr, chunk_store: None })
    }

    /// Workers whose chunk store is at `location` too put their chunks there themselves.
    pub fn with_chunk_store(mut self, location: Option<String>) -> Self {
        self.chunk_store = location;
        self
    }
}

/// Why the controller's cluster did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterStartError {
    /// Its data plane's listener.
    #[error("the cluster's data plane: {0}")]
    Io(#[from] std::io::Error),
    /// Plain TCP off loopback, not waived.
    #[error(transparent)]
    Plaintext(#[from] super::tls::PlaintextError),
}

/// How often a running attempt whose workers put chunks deletes what nobody recorded (a
/// fenced worker's puts); a job's start does it too.
const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

impl crate::runtime::AttemptRunner for Cluster {
    fn active(&self) -> bool {
        self.workers.any_live()
    }

    fn run_attempt<'a>(
        &'a self,
        plan: &'a Plan,
        env: &'a RunEnv,
        restore: Option<(CheckpointMeta, Manifest)>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<JobReport, JobError>> + Send + 'a>> {
        Box::pin(run_attempt_on_workers(plan, env, restore, self))
    }
}

/// Whether a node's subtasks must run in the controller: their connector uses its store
/// or its disk.
fn pinned_here(node: &PlanNode) -> bool {
    match &node.body {
        NodeBody::Source(config) => matches!(config.kind, SourceKind::Stream(_) | SourceKind::File(_)),
        NodeBody::Sink(config) => !matches!(config, SinkConfig::Blackhole(_) | SinkConfig::Kafka(_)),
        NodeBody::Operator { .. } => false,
    }
}

/// Runs one attempt of `plan` on the cluster's workers (and the subtasks pinned here).
pub(crate) async fn run_attempt_on_workers(
    plan: &Plan,
    env: &RunEnv,
    restore: Option<(CheckpointMeta, Manifest)>,
    cluster: &Cluster,
) -> Result<JobReport, JobError> {
    let start = Instant::now();
    let workers = &cluster.workers;
    let job = env.job_id.clone();
    let store = env.store.clone();
    // W5: attempt numbers come from the store's durable counter and never repeat.
    let number = store_call(move || store.lease_chunk_ids(1)).await?.start;
    let attempt = AttemptId { job: job.clone(), attempt: number };
    let mut events = workers.subscribe();
    let parallelisms: Vec<u32> =
        plan.nodes.iter().map(|n| if pinned_here(n) { 0 } else { n.parallelism }).collect();
    let assignment = workers.reserve(&job, &parallelisms).map_err(ClusterError::from)?;
    let _release = Release { workers: workers.clone(), job: job.clone() };
    let placed = Placed::new(plan, &assignment, cluster)?;
    let mut inbox = workers.attach(attempt.clone());
    let _cancel = Cancel { workers: workers.clone(), attempt: attempt.clone(), to: placed.used.clone() };
    let layout = Layout {
        job: job.clone(),
        attempt: number,
        places: placed.places.clone(),
        addresses: placed.addresses.clone(),
        here: 0,
        data: Arc::new(cluster.data.clone()),
    };
    // Inputs an earlier attempt registered and never opened go first.
    cluster.data.forget(&job);
    let mut part = Part::prepare(plan, Some(&layout))?;
    // Deploy every worker's part and wait until each registered its inputs.
    deploy_parts(plan, env, &restore, cluster, &attempt, &placed).await?;
    await_deployed(&mut inbox, &mut events, &placed.used).await?;
    for &worker in &placed.used {
        if !workers.send(worker, ToWorker::Start { attempt: attempt.clone() }).await {
            return Err(ClusterError::WorkerGone { worker, step: AttemptStep::Starting }.into());
        }
    }
    part.open_outputs().await?;
    let infos = task_infos(plan);
    let (controls, mut receivers) = control_channels(infos.len());
    let worker_of_task = forward_controls(plan, &placed, &mut receivers, workers, &attempt);
    let stop_forwarder =
        tokio::spawn(forward_stops(env.stop.clone(), workers.clone(), attempt.clone(), placed.used.clone()));
    let _stop_forwarder = AbortOnDrop(stop_forwarder);
    let (to_coordinator, coordinator_inbox) = mpsc::unbounded_channel::<ToCoordinator>();
    let task_env = env.task_env();
    let (finished, tasks) = part.spawn(Some(&task_env), restore.as_ref(), receivers, &to_coordinator)?;
    let metrics = finished.metrics();
    let counters = counters_by_task(plan, &metrics, &worker_of_task);
    let logs =
        task_env.logs.clone().map(|sink| RemoteLogs::new(sink, task_env.attempt, plan, &worker_of_task));
    env.set_live_metrics(metrics);
    let remote = Box::pin(follow_workers(
        (inbox, attempt.clone()),
        events,
        to_coordinator,
        Followed { worker_of_task, counters, used: placed.used.clone(), logs },
        StorageService {
            workers: workers.clone(),
            storage: env.storage.clone(),
            job: job.clone(),
            leases: Leases::default(),
            store: env.store.clone(),
            reservations: Reservations::new(env.store.clone(), &job),
        },
        cluster.chunk_store.is_some(),
    ));
    let coordinator = spawn_coordinator(plan, env, infos.clone(), controls, coordinator_inbox);
    let final_checkpoint = tasks.with_remote(remote).join(Some(coordinator)).await?;
    finished.finish(plan, Some(env), start, infos.len(), final_checkpoint)
}

/// Where an attempt's subtasks run: place 0 is the controller, the workers follow in id
/// order.
struct Placed {
    /// The workers the attempt uses.
    used: BTreeSet<u64>,
    /// Each place's data address.
    addresses: Vec<String>,
    /// Each worker's place.
    place_of: BTreeMap<u64, u32>,
    /// Per node, per subtask: its place.
    places: Vec<Vec<u32>>,
}

impl Placed {
    /// The places of `assignment` (per node, per subtask, a worker; no worker: here).
    fn new(plan: &Plan, assignment: &[Vec<u64>], cluster: &Cluster) -> Result<Self, ClusterError> {
        let used: BTreeSet<u64> = assignment.iter().flatten().copied().collect();
        let mut addresses = vec![cluster.data_addr.clone()];
        let mut place_of = BTreeMap::new();
        for &worker in &used {
            let addr = cluster
                .workers
                .data_addr(worker)
                .ok_or(ClusterError::WorkerGone { worker, step: AttemptStep::Placing })?;
            place_of.insert(worker, addresses.len() as u32);
            addresses.push(addr);
        }
        let places = plan
            .nodes
            .iter()
            .zip(assignment)
            .map(|(node, workers_of)| {
                if workers_of.is_empty() {
                    vec![0; node.parallelism as usize]
                } else {
                    workers_of.iter().map(|w| place_of[w]).collect()
                }
            })
            .collect();
        Ok(Placed { used, addresses, place_of, places })
    }

    /// The worker at `place` (not 0).
    fn worker_at(&self, place: u32) -> u64 {
        *self.place_of.iter().find(|(_, p)| **p == place).expect("placed").0
    }
}

/// The operator modules of `plan`, by the reference its spec uses.
fn shipped_modules(plan: &Plan) -> BTreeMap<String, ModuleBytes> {
    let mut modules = BTreeMap::new();
    for (node, spec_node) in plan.nodes.iter().zip(&plan.spec.nodes) {
        if let (NodeBody::Operator { module, .. }, Some(reference)) = (&node.body, &spec_node.module) {
            modules.entry(reference.clone()).or_insert_with(|| ModuleBytes {
                name: module.name().to_string(),
                bytes: module.bytes().to_vec(),
            });
        }
    }
    modules
}

/// Sends every worker of the attempt its part.
async fn deploy_parts(
    plan: &Plan,
    env: &RunEnv,
    restore: &Option<(CheckpointMeta, Manifest)>,
    cluster: &Cluster,
    attempt: &AttemptId,
    placed: &Placed,
) -> Result<(), ClusterError> {
    let spec_json = serde_json::to_string(&plan.spec).map_err(ClusterError::Spec)?;
    let modules = shipped_modules(plan);
    let chunk_store = cluster
        .chunk_store
        .clone()
        .map(|location| SharedChunkStore { location, max_chunk_bytes: env.store.max_chunk_bytes() as u64 });
    let kafka = super::protocol::kafka_access(plan);
    for (&worker, &here) in &placed.place_of {
        let deploy = Deploy {
            attempt: attempt.clone(),
            spec_json: spec_json.clone(),
            modules: modules.clone(),
            restore: restore.clone(),
            places: placed.places.clone(),
            addresses: placed.addresses.clone(),
            here,
            chunk_store: chunk_store.clone(),
            kafka: kafka.clone(),
        };
        if !cluster.workers.send(worker, ToWorker::Deploy(Box::new(deploy))).await {
            return Err(ClusterError::WorkerGone { worker, step: AttemptStep::Deploying });
        }
    }
    Ok(())
}

/// Waits until every worker of `used` set up its part (within [`DEPLOY_TIMEOUT`]).
async fn await_deployed(
    inbox: &mut AttemptInbox,
    events: &mut tokio::sync::broadcast::Receiver<WorkerEvent>,
    used: &BTreeSet<u64>,
) -> Result<(), ClusterError> {
    let mut deployed = BTreeSet::new();
    let deadline = tokio::time::Instant::now() + DEPLOY_TIMEOUT;
    while deployed.len() < used.len() {
        tokio::select! {
            message = inbox.recv() => match message {
                Some((worker, ToController::Deployed { result: Ok(()), .. })) => {
                    deployed.insert(worker);
                }
                Some((worker, ToController::Deployed { result: Err(refusal), .. })) => {
                    return Err(ClusterError::DeployRefused { worker, reason: refusal.0 });
                }
                Some(_) => {}
                None => return Err(ClusterError::InboxClosed),
            },
            event = events.recv() => {
                if let Ok(WorkerEvent::Lost(worker, reason)) = event
                    && used.contains(&worker)
                {
                    return Err(ClusterError::WorkerLost { worker, reason });
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                return Err(ClusterError::DeployTimeout { timeout: DEPLOY_TIMEOUT });
            }
        }
    }
    Ok(())
}

/// The coordinator's controls: to the tasks here directly (their receivers stay in
/// `receivers`), to the others over their worker's session. Returns the worker of each
/// task elsewhere, by task index.
fn forward_controls(
    plan: &Plan,
    placed: &Placed,
    receivers: &mut BTreeMap<usize, mpsc::UnboundedReceiver<Control>>,
    workers: &Workers,
    attempt: &AttemptId,
) -> BTreeMap<usize, u64> {
    let mut worker_of_task = BTreeMap::new();
    let mut task = 0usize;
    for (index, node) in plan.nodes.iter().enumerate() {
        for s in 0..node.parallelism {
            let place = placed.places[index][s as usize];
            if place != 0 {
                let worker = placed.worker_at(place);
                worker_of_task.insert(task, worker);
                let mut rx = receivers.remove(&task).expect("a receiver per task");
                let (workers, attempt) = (workers.clone(), attempt.clone());
                tokio::spawn(async move {
                    while let Some(control) = rx.recv().await {
                        let message = ToWorker::Control {
                            attempt: attempt.clone(),
                            task: task as u32,
                            control: control.into(),
                        };
                        if !workers.send(worker, message).await {
                            return;
                        }
                    }
                });
            }
            task += 1;
        }
    }
    worker_of_task
}

/// Task index → its counters; those of subtasks elsewhere name their worker.
fn counters_by_task(
    plan: &Plan,
    metrics: &JobMetrics,
    worker_of_task: &BTreeMap<usize, u64>,
) -> Vec<Arc<SubtaskMetrics>> {
    let mut counters = Vec::new();
    for (index, node) in plan.nodes.iter().enumerate() {
        for s in 0..node.parallelism {
            let m = metrics.subtasks[index][s as usize].clone();
            if let Some(&worker) = worker_of_task.get(&counters.len()) {
                m.worker.store(worker, std::sync::atomic::Ordering::Relaxed);
            }
            counters.push(m);
        }
    }
    counters
}

/// Forwards the job's stop requests to its workers (their sources end their input).
async fn forward_stops(
    stop: Arc<crate::runtime::StopSignal>,
    workers: Workers,
    attempt: AttemptId,
    to: BTreeSet<u64>,
) {
    let mut sent = None;
    loop {
        let next = stop.next_request();
        tokio::pin!(next);
        next.as_mut().enable();
        if let Some(mode) = stop.requested() {
            let now = (mode, stop.pinned());
            if sent != Some(now) {
                sent = Some(now);
                for &worker in &to {
                    let message = ToWorker::Stop {
                        attempt: attempt.clone(),
                        drain: mode == StopMode::Drain,
                        pin: now.1,
                    };
                    workers.send(worker, message).await;
                }
            }
        }
        next.await;
    }
}

/// Follows the workers' parts: hands their messages to the coordinator, serves their
/// storage calls, and ends when every part ended (`Ok`) or one failed or its worker was
/// lost.
async fn follow_workers(
    (inbox, attempt): (AttemptInbox, AttemptId),
    mut events: tokio::sync::broadcast::Receiver<WorkerEvent>,
    to_coordinator: mpsc::UnboundedSender<ToCoordinator>,
    followed: Followed,
    serving: StorageService,
    sweep: bool,
) -> Result<(), JobError> {
    let Followed { worker_of_task, counters, used, logs } = followed;
    let workers = serving.workers.clone();
    let mut sweeps = tokio::time::interval_at(tokio::time::Instant::now() + SWEEP_INTERVAL, SWEEP_INTERVAL);
    let reservations = serving.reservations.clone();
    let mut parts = Parts { inbox, running: used.clone(), workers: workers.clone(), attempt, reservations };
    // A worker lost before this loop subscribed is not live any more.
    if let Some(&gone) = parts.running.iter().find(|w| !workers.is_live(**w)) {
        return Err(ClusterError::WorkerGone { worker: gone, step: AttemptStep::Running }.into());
    }
    while !parts.running.is_empty() {
        tokio::select! {
            message = parts.inbox.recv() => {
                let Some((worker, message)) = message else {
                    return Err(ClusterError::InboxClosed.into());
                };
                match message {
                    ToController::Coordinator { message, .. } => {
                        // A worker speaks for its own tasks only.
                        let task = message.task() as usize;
                        if worker_of_task.get(&task) == Some(&worker) {
                            let _ = to_coordinator.send(message.into_message());
                        }
                    }
                    ToController::Storage { call, request, .. } if used.contains(&worker) => {
                        tokio::spawn(serving.clone().serve_call(worker, call, request));
                    }
                    ToController::Metrics { counters: reported, .. } => {
                        for c in reported {
                            let task = c.task as usize;
                            if worker_of_task.get(&task) != Some(&worker) {
                                continue;
                            }
                            let m = &counters[task];
                            let relaxed = std::sync::atomic::Ordering::Relaxed;
                            m.records_in.store(c.records_in, relaxed);
                            m.records_out.store(c.records_out, relaxed);
                            m.batches_in.store(c.batches_in, relaxed);
                            m.batches_out.store(c.batches_out, relaxed);
                            m.bytes_in.store(c.bytes_in, relaxed);
                            m.bytes_out.store(c.bytes_out, relaxed);
                            m.busy_ns.store(c.busy_ns, relaxed);
                            m.reported_blocked_ns.store(c.blocked_ns, relaxed);
                            m.report_event_time(c.watermark, c.idle, c.kafka_lag, c.guest_counters);
                        }
                    }
                    ToController::Logs { lines, dropped, .. } => {
                        if let Some(logs) = &logs {
                            logs.keep(worker, lines, dropped);
                        }
                    }
                    ToController::Ended { failure: None, .. } => {
                        parts.running.remove(&worker);
                    }
                    ToController::Ended { failure: Some(failure), .. } => {
                        parts.running.remove(&worker);
                        let error = crate::runtime::TaskError::Remote {
                            worker,
                            message: failure.message,
                            secondary: failure.secondary,
                        };
                        return Err(JobError::Task { node: failure.node, subtask: failure.subtask, error });
                    }
                    _ => {}
                }
            }
            _ = sweeps.tick(), if sweep => {
                let (store, job, leases) = (serving.store.clone(), serving.job.clone(), serving.leases.clone());
                tokio::task::spawn_blocking(move || {
                    match store.sweep_orphans(&job, &|id| leases.contains(id)) {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(job, deleted = n, "deleted chunk objects nobody recorded"),
                        Err(e) => tracing::warn!(job, error = %e, "sweeping the chunk objects failed"),
                    }
                });
            }
            event = events.recv() => match event {
                Ok(WorkerEvent::Lost(worker, reason)) if parts.running.contains(&worker) => {
                    return Err(ClusterError::WorkerLost { worker, reason }.into());
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    if let Some(&gone) = parts.running.iter().find(|w| !workers.is_live(**w)) {
                        return Err(ClusterError::WorkerGone { worker: gone, step: AttemptStep::Running }.into());
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The parts of an attempt on workers that have not ended yet. Should the attempt end here
/// first (a failure elsewhere, a stop), each keeps the attempt's quota reservations held
/// until it says it ended — its host state folders are gone then — or its worker is lost.
struct Parts {
    inbox: AttemptInbox,
    running: BTreeSet<u64>,
    workers: Workers,
    attempt: AttemptId,
    reservations: Reservations,
}

impl Drop for Parts {
    fn drop(&mut self) {
        for &worker in &self.running {
            self.workers.hold_until_ended(worker, &self.attempt, self.reservations.clone());
        }
        // An `Ended` routed before the hold sits here unread (one routed after it releases
        // the hold on its way).
        while let Some((worker, message)) = self.inbox.try_recv() {
            if matches!(message, ToController::Ended { .. }) {
                self.workers.held.ended(worker, &self.attempt);
            }
        }
    }
}

/// What the controller knows of the subtasks on workers.
struct Followed {
    /// Task index → the worker that runs it (tasks here are not listed).
    worker_of_task: BTreeMap<usize, u64>,
    /// Task index → its counters.
    counters: Vec<Arc<SubtaskMetrics>>,
    /// The workers of the attempt.
    used: BTreeSet<u64>,
    /// Where the lines their operators log go (none: the controller's own log).
    logs: Option<RemoteLogs>,
}

/// The job's log, as the workers' operators log into it.
struct RemoteLogs {
    sink: Arc<dyn LogSink>,
    /// The job's attempt the lines were logged in.
    attempt: u32,
    /// (node, subtask) → the worker that runs it.
    worker_of: BTreeMap<(String, u32), u64>,
}

impl RemoteLogs {
    fn new(sink: Arc<dyn LogSink>, attempt: u32, plan: &Plan, worker_of_task: &BTreeMap<usize, u64>) -> Self {
        let mut worker_of = BTreeMap::new();
        let mut task = 0;
        for node in &plan.nodes {
            for s in 0..node.parallelism {
                if let Some(&worker) = worker_of_task.get(&task) {
                    worker_of.insert((node.id.clone(), s), worker);
                }
                task += 1;
            }
        }
        RemoteLogs { sink, attempt, worker_of }
    }

    /// Keeps the lines `worker` shipped: only of the subtasks it runs, in this attempt.
    fn keep(&self, worker: u64, lines: Vec<LogLine>, dropped: Vec<(String, u32, u64)>) {
        let runs =
            |node: &String, subtask: u32| self.worker_of.get(&(node.clone(), subtask)) == Some(&worker);
        for (node, subtask, n) in dropped {
            if runs(&node, subtask) {
                self.sink.dropped(&node, subtask, n);
            }
        }
        for mut line in lines {
            if runs(&line.node, line.subtask) {
                line.attempt = self.attempt;
                self.sink.append(line);
            }
        }
    }
}

/// Gives up an attempt's slot reservation when the attempt ends (the next attempt
/// reserves again).
struct Release {
    workers: Workers,
    job: String,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.workers.release(&self.job);
    }
}

/// Tells every worker of an attempt to cancel its part when the attempt ends here (a part
/// that ended already is gone there; the message is then dropped).
struct Cancel {
    workers: Workers,
    attempt: AttemptId,
    to: BTreeSet<u64>,
}

impl Drop for Cancel {
    fn drop(&mut self) {
        let (workers, attempt, to) =
            (self.workers.clone(), self.attempt.clone(), std::mem::take(&mut self.to));
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                for worker in to {
                    workers.send(worker, ToWorker::Cancel { attempt: attempt.clone() }).await;
                }
            });
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
