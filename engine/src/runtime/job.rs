//! Running a planned job: channels, one tokio task per subtask, failure handling and the
//! final report.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, broadcast, mpsc};
use tokio::task::JoinSet;
use weir_store::{CheckpointMeta, CheckpointStorage, Manifest, Store, SubtaskState};

use super::channel::{Receiver, Sender, channel};
use super::checkpoint::{
    Control, Coordinator, JobEvent, TASKS_GONE, TaskInfo, TaskState, ToCoordinator, TriggerRequest,
    WriterConfig, blocking, restore_chunks, snapshot_writer,
};
use super::error::{JobError, TaskError};
use super::faults::{FaultInjector, FaultPoint};
use super::input_gate::InputGate;
use super::metrics::{JobMetrics, SubtaskMetrics};
use super::output::{EdgeOutput, Output};
use super::task::{Checkpointing, run_operator, run_sink, run_source};
use crate::connectors::{ConnectorEnv, Sink, SinkConfig};
use crate::guest::bindings::Context;
use crate::guest::{InstanceLimits, OperatorInstance};
use crate::plan::key_groups::key_group_range;
use crate::plan::{NodeBody, NodeKind, Partitioning, Plan};

/// Per-node figures of a finished job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeReport {
    /// Node id.
    pub id: String,
    /// Source, operator or sink.
    pub kind: NodeKind,
    /// Parallelism.
    pub parallelism: u32,
    /// Records received (sources: 0).
    pub records_in: u64,
    /// Records emitted (sinks: 0).
    pub records_out: u64,
}

/// Per-channel figures of a finished job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelReport {
    /// Upstream node and subtask.
    pub from: (String, u32),
    /// Downstream node and subtask.
    pub to: (String, u32),
    /// Capacity in messages.
    pub capacity: usize,
    /// Most messages queued at once.
    pub max_depth: usize,
    /// Batches sent.
    pub batches: u64,
}

/// The outcome of a job that ran to completion.
#[derive(Debug, Clone)]
pub struct JobReport {
    /// Wall-clock duration.
    pub duration: Duration,
    /// Per node, in spec order.
    pub nodes: Vec<NodeReport>,
    /// Every channel.
    pub channels: Vec<ChannelReport>,
    /// Largest number of batches produced by sources but not yet received by sinks.
    pub max_batches_in_flight: u64,
    /// Number of tasks (subtasks).
    pub tasks: usize,
    /// Restarts after failures.
    pub restarts: u32,
    /// The checkpoints the job was restored from, in order.
    pub restored_from: Vec<u64>,
    /// The final checkpoint (checkpointed jobs).
    pub final_checkpoint: Option<u64>,
    /// The job had finished before this run: it only re-committed its final output.
    pub already_finished: bool,
    /// The job ended because it was stopped ([`RunEnv::stop`]); it resumes from its final
    /// checkpoint when run again.
    pub stopped: bool,
    /// The job ended because it was stopped with [`StopMode::Drain`]: its input ended early,
    /// the pipeline emptied, and it finished.
    pub drained: bool,
}

impl JobReport {
    /// Records produced by all sources.
    pub fn source_records(&self) -> u64 {
        self.nodes.iter().filter(|n| n.kind == NodeKind::Source).map(|n| n.records_out).sum()
    }

    /// Source records per second of wall-clock time.
    pub fn records_per_second(&self) -> f64 {
        self.source_records() as f64 / self.duration.as_secs_f64().max(1e-9)
    }

    /// The report of node `id`.
    pub fn node(&self, id: &str) -> Option<&NodeReport> {
        self.nodes.iter().find(|n| n.id == id)
    }
}

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
    events: broadcast::Sender<JobEvent>,
    requests: Arc<Mutex<mpsc::UnboundedReceiver<TriggerRequest>>>,
    trigger_tx: mpsc::UnboundedSender<TriggerRequest>,
    stop: Arc<StopSignal>,
    live: Arc<std::sync::Mutex<Option<Arc<JobMetrics>>>>,
}

/// How a stopped job ends its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// Sources end at a batch boundary without advancing event time: the final checkpoint
    /// is a stop point the job resumes from as if it had never stopped.
    Suspend,
    /// Sources end and send the end-of-input watermark, so every event-time timer fires and
    /// the pipeline empties before the final checkpoint: the job finishes.
    Drain,
}

/// A stop request shared by a job's sources and its coordinator.
#[derive(Debug, Default)]
pub struct StopSignal {
    /// 0: running; 1: suspend; 2: drain.
    mode: std::sync::atomic::AtomicU8,
    /// The final checkpoint is taken for a savepoint: pin it against retention.
    pin: AtomicBool,
}

impl StopSignal {
    /// Asks for a stop. A later request replaces an earlier one's mode; a pin stays.
    pub fn request(&self, mode: StopMode, pin: bool) {
        if pin {
            self.pin.store(true, Ordering::Relaxed);
        }
        let m = match mode {
            StopMode::Suspend => 1,
            StopMode::Drain => 2,
        };
        self.mode.store(m, Ordering::Relaxed);
    }

    /// The requested stop, if any.
    pub fn requested(&self) -> Option<StopMode> {
        match self.mode.load(Ordering::Relaxed) {
            1 => Some(StopMode::Suspend),
            2 => Some(StopMode::Drain),
            _ => None,
        }
    }

    /// Whether the final checkpoint must be pinned.
    pub fn pinned(&self) -> bool {
        self.pin.load(Ordering::Relaxed)
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
        }
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
    /// [`JobReport::stopped`]. Running the job again resumes from that checkpoint.
    pub fn stop(&self) {
        self.stop.request(StopMode::Suspend, false);
    }

    /// Asks the running job to stop as `mode` says; with `pin`, its final checkpoint is
    /// pinned against retention (it is the source of a savepoint: see
    /// [`CheckpointMeta::pinned`]). A drained job ends with [`JobReport::drained`].
    pub fn stop_with(&self, mode: StopMode, pin: bool) {
        self.stop.request(mode, pin);
    }

    /// The counters of the current attempt (none before the first attempt starts).
    pub fn live_metrics(&self) -> Option<Arc<JobMetrics>> {
        self.live.lock().map(|m| m.clone()).unwrap_or(None)
    }
}

/// Triggers checkpoints of a running job.
#[derive(Debug, Clone)]
pub struct CheckpointTrigger {
    tx: mpsc::UnboundedSender<TriggerRequest>,
}

impl CheckpointTrigger {
    /// Triggers a checkpoint now; returns its id (poll the store or the events for its fate).
    pub async fn trigger(&self) -> Result<u64, String> {
        self.request(false).await
    }

    /// Triggers a checkpoint for a savepoint: it is pinned against retention (see
    /// [`CheckpointMeta::pinned`]) until the savepoint copied it and unpinned it.
    pub async fn trigger_pinned(&self) -> Result<u64, String> {
        self.request(true).await
    }

    async fn request(&self, pin: bool) -> Result<u64, String> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.tx.send(TriggerRequest { reply, pin }).map_err(|_| "the job is not running".to_string())?;
        rx.await.map_err(|_| "the job is not running".to_string())?
    }
}

/// Runs `plan` to completion without checkpoints. The first failing subtask stops the job;
/// its error is returned (errors that merely follow from it, like a closed channel, are
/// not).
pub async fn run_job(plan: &Plan) -> Result<JobReport, JobError> {
    run_attempt(plan, None).await
}

/// Runs `plan` with checkpoints in `env`: restores the latest completed checkpoint of the
/// job if there is one, restarts after failures as `settings.restart` allows, and ends with
/// a final checkpoint whose completion commits the sinks' last output.
pub async fn run_job_checkpointed(plan: &Plan, env: &RunEnv) -> Result<JobReport, JobError> {
    let restart = &plan.spec.settings.restart;
    let mut restarts = 0u32;
    let mut restored_from = Vec::new();
    loop {
        let storage = env.storage.clone();
        let job = env.job_id.clone();
        let latest = blocking(move || {
            storage.recover(&job)?;
            storage.latest_completed(&job)
        })
        .await?;
        if let Some((meta, manifest)) = &latest {
            if meta.is_final && !meta.stopped {
                recommit_final(plan, env, meta, manifest).await?;
                return Ok(JobReport {
                    duration: Duration::ZERO,
                    nodes: Vec::new(),
                    channels: Vec::new(),
                    max_batches_in_flight: 0,
                    tasks: 0,
                    restarts,
                    restored_from,
                    final_checkpoint: Some(meta.id),
                    already_finished: true,
                    stopped: false,
                    drained: false,
                });
            }
            // A checkpoint that does not fit the job (other nodes, other parallelism) will
            // not fit on a retry either: fail at once.
            check_manifest(plan, manifest)?;
            restored_from.push(meta.id);
            let _ = env.events.send(JobEvent::Restored { checkpoint: meta.id });
            tracing::info!(job = %env.job_id, checkpoint = meta.id, "restoring from checkpoint");
        }
        match run_attempt(plan, Some((env, latest))).await {
            Ok(mut report) => {
                report.restarts = restarts;
                report.restored_from = restored_from;
                return Ok(report);
            }
            Err(e @ JobError::Plan(_)) => return Err(e),
            Err(e) if restarts < restart.attempts => {
                restarts += 1;
                tracing::warn!(job = %env.job_id, attempt = restarts, "job failed, restarting: {e}");
                let _ = env.events.send(JobEvent::Restarting { attempt: restarts, error: e.to_string() });
                tokio::time::sleep(Duration::from_millis(restart.delay_ms)).await;
            }
            Err(e) if restarts == 0 => return Err(e),
            Err(e) => return Err(JobError::RestartsExhausted { restarts, last: Box::new(e) }),
        }
    }
}

/// A checkpoint owns the sinks' transactions it pre-committed; committing them again is
/// harmless and covers a crash (or a cancel) between the checkpoint and the commit.
async fn recommit_final(
    plan: &Plan,
    env: &RunEnv,
    meta: &CheckpointMeta,
    manifest: &Manifest,
) -> Result<(), JobError> {
    for node in &plan.nodes {
        let NodeBody::Sink(config) = &node.body else { continue };
        for s in 0..node.parallelism {
            let state = restored_state(manifest, &node.id, s)?;
            let cenv = ConnectorEnv {
                store: Some(&env.store),
                job: &env.job_id,
                node: &node.id,
                transactional: true,
            };
            open_recovered_sink(config, s, node.parallelism, cenv, meta.id, &state)
                .map_err(|error| JobError::Task { node: node.id.clone(), subtask: s, error })?;
        }
    }
    Ok(())
}

/// Commits the sink output that the latest completed checkpoint of the job covers (a job
/// cancelled right after a checkpoint may not have committed it yet). Idempotent: commits
/// are keyed by checkpoint, and a restart commits the same transactions again.
pub async fn commit_latest(plan: &Plan, env: &RunEnv) -> Result<Option<u64>, JobError> {
    let storage = env.storage.clone();
    let job = env.job_id.clone();
    let Some((meta, manifest)) = blocking(move || storage.latest_completed(&job)).await? else {
        return Ok(None);
    };
    recommit_final(plan, env, &meta, &manifest).await?;
    Ok(Some(meta.id))
}

/// Opens subtask `subtask` of a transactional sink and recovers it to checkpoint
/// `checkpoint` (0: none): commits the transactions that checkpoint owns, drops the rest.
fn open_recovered_sink(
    config: &SinkConfig,
    subtask: u32,
    parallelism: u32,
    env: ConnectorEnv<'_>,
    checkpoint: u64,
    state: &TaskState,
) -> Result<Box<dyn Sink>, TaskError> {
    let mut sink = config.open(subtask, parallelism, env)?;
    let txns: Vec<serde_json::Value> = state.sink_pending.iter().map(|(_, t)| t.clone()).collect();
    sink.recover(checkpoint, &txns)?;
    Ok(sink)
}

fn subtask_state<'m>(manifest: &'m Manifest, node: &str, subtask: u32) -> Option<&'m SubtaskState> {
    manifest.get(node).and_then(|m| m.get(&subtask))
}

fn restored_state(manifest: &Manifest, node: &str, subtask: u32) -> Result<TaskState, JobError> {
    match subtask_state(manifest, node, subtask) {
        Some(s) => TaskState::decode(&s.blob).map_err(|e| JobError::Task {
            node: node.to_string(),
            subtask,
            error: TaskError::Restore(e),
        }),
        None => Ok(TaskState::default()),
    }
}

/// Checks that a checkpoint's manifest fits the plan: same nodes with the same parallelism.
fn check_manifest(plan: &Plan, manifest: &Manifest) -> Result<(), JobError> {
    for node in &plan.nodes {
        let restore_err =
            |m: String| JobError::Task { node: node.id.clone(), subtask: 0, error: TaskError::Restore(m) };
        match manifest.get(&node.id) {
            None => return Err(restore_err(format!("the checkpoint has no state for node `{}`", node.id))),
            Some(m) if m.len() != node.parallelism as usize => {
                return Err(restore_err(format!(
                    "the checkpoint has {} subtask(s) of node `{}`, the job {} (changing parallelism needs a savepoint)",
                    m.len(),
                    node.id,
                    node.parallelism
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The limits every operator instance of a job with `settings` runs under.
pub fn instance_limits(settings: &crate::plan::Settings) -> InstanceLimits {
    InstanceLimits {
        memory_bytes: usize::try_from(settings.memory_limit_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
        cpu_limit_ms: settings.cpu_limit_ms,
        max_output_bytes: usize::try_from(settings.max_output_bytes_per_call).unwrap_or(usize::MAX),
    }
}

async fn run_attempt(
    plan: &Plan,
    checkpointed: Option<(&RunEnv, Option<(CheckpointMeta, Manifest)>)>,
) -> Result<JobReport, JobError> {
    let start = Instant::now();
    let settings = &plan.spec.settings;
    let limits = instance_limits(settings);
    let (env, restore) = match checkpointed {
        Some((env, restore)) => (Some(env), restore),
        None => (None, None),
    };
    // Channels: for every edge and every connected pair of subtasks.
    let mut gates: Vec<Vec<Vec<(u32, Receiver)>>> =
        plan.nodes.iter().map(|n| (0..n.parallelism).map(|_| Vec::new()).collect()).collect();
    // (edge index in upstream's outputs, upstream subtask) -> senders by downstream subtask
    let mut senders: HashMap<(usize, usize, u32), Vec<Sender>> = HashMap::new();
    let mut channel_stats = Vec::new();
    for (to, node) in plan.nodes.iter().enumerate() {
        for edge in &node.inputs {
            let up = &plan.nodes[edge.from];
            let out_index = up.outputs.iter().position(|e| e == edge).expect("edge listed upstream");
            for j in 0..node.parallelism {
                let upstream: Vec<u32> = if edge.partitioning == Partitioning::Forward {
                    vec![j]
                } else {
                    (0..up.parallelism).collect()
                };
                for i in upstream {
                    let (tx, rx) =
                        channel(settings.channel_capacity, (up.id.clone(), i), (node.id.clone(), j));
                    channel_stats.push(tx.stats().clone());
                    gates[to][j as usize].push((edge.port, rx));
                    senders.entry((edge.from, out_index, i)).or_default().push(tx);
                }
            }
        }
    }
    let metrics = Arc::new(JobMetrics {
        subtasks: plan
            .nodes
            .iter()
            .map(|n| (0..n.parallelism).map(|_| Arc::new(SubtaskMetrics::default())).collect())
            .collect(),
        channels: channel_stats,
        ..JobMetrics::default()
    });
    if let Some(env) = env
        && let Ok(mut live) = env.live.lock()
    {
        *live = Some(metrics.clone());
    }

    // Task indices (for the coordinator): nodes in spec order, subtasks in order.
    let mut infos = Vec::new();
    for node in &plan.nodes {
        for s in 0..node.parallelism {
            infos.push(TaskInfo {
                node: node.id.clone(),
                subtask: s,
                is_source: node.kind == NodeKind::Source,
            });
        }
    }
    let (to_coordinator, inbox) = mpsc::unbounded_channel::<ToCoordinator>();
    let mut controls = Vec::new();
    let mut control_rx = Vec::new();
    for _ in &infos {
        let (tx, rx) = mpsc::unbounded_channel::<Control>();
        controls.push(tx);
        control_rx.push(Some(rx));
    }

    let mut tasks: JoinSet<Result<(), TaskError>> = JoinSet::new();
    let mut task_names: HashMap<tokio::task::Id, (String, u32)> = HashMap::new();
    let mut task_index = 0usize;
    for (index, node) in plan.nodes.iter().enumerate() {
        for s in 0..node.parallelism {
            let this_task = task_index;
            task_index += 1;
            let edges = node
                .outputs
                .iter()
                .enumerate()
                .map(|(k, e)| {
                    let targets = senders.remove(&(index, k, s)).expect("senders built");
                    EdgeOutput::new(e.partitioning, targets, settings.max_parallelism, s as usize)
                })
                .collect();
            let output = Output::new(edges);
            let gate = InputGate::new(std::mem::take(&mut gates[index][s as usize]));
            let sub_metrics = metrics.subtasks[index][s as usize].clone();
            let job_metrics = metrics.clone();
            let task_err = |error: TaskError| JobError::Task { node: node.id.clone(), subtask: s, error };
            // Checkpointing: the task's control channel, its writer and what it restores.
            let mut checkpointing = None;
            let mut restored_id = 0;
            let mut chains = std::collections::BTreeMap::new();
            if let Some(env) = env {
                let mut restored = TaskState::default();
                if let Some(r) = &restore {
                    restored_id = r.0.id;
                    restored = restored_state(&r.1, &node.id, s)?;
                    if let Some(st) = subtask_state(&r.1, &node.id, s) {
                        chains = st.chains.clone();
                    }
                }
                let (writer, writer_task) = snapshot_writer(WriterConfig {
                    job: env.job_id.clone(),
                    operator: node.id.clone(),
                    subtask: s,
                    task: this_task,
                    max_parallelism: settings.max_parallelism,
                    max_chain_length: settings.checkpoint.max_chain_length,
                    previous: chains.clone(),
                    storage: env.storage.clone(),
                    coordinator: to_coordinator.clone(),
                    faults: env.faults.clone(),
                });
                let handle = tasks.spawn(writer_task);
                task_names.insert(handle.id(), (format!("{} (snapshot writer)", node.id), s));
                checkpointing = Some(Checkpointing {
                    task: this_task,
                    node: node.id.clone(),
                    subtask: s,
                    control: control_rx[this_task].take().expect("control receiver"),
                    coordinator: to_coordinator.clone(),
                    writer,
                    faults: env.faults.clone(),
                    restored,
                    final_id: None,
                    control_closed: false,
                    stop: env.stop.clone(),
                });
            }
            let cenv = match env {
                Some(env) => ConnectorEnv {
                    store: Some(&env.store),
                    job: &env.job_id,
                    node: &node.id,
                    transactional: true,
                },
                None => ConnectorEnv::plain(),
            };
            let faults = env.and_then(|e| e.faults.clone());
            let handle = match &node.body {
                NodeBody::Source(config) => {
                    let mut source =
                        config.open(s, node.parallelism, cenv).map_err(|e| task_err(e.into()))?;
                    if let Some(position) = checkpointing.as_ref().and_then(|c| c.restored.position.clone()) {
                        source.seek(&position).map_err(|e| task_err(e.into()))?;
                    }
                    let (delay, rate) = (config.out_of_orderness_ms, config.records_per_second);
                    tasks.spawn(run_source(
                        source,
                        delay,
                        rate,
                        output,
                        sub_metrics,
                        job_metrics,
                        checkpointing,
                    ))
                }
                NodeBody::Sink(config) => {
                    let sink = match &checkpointing {
                        Some(c) => {
                            open_recovered_sink(config, s, node.parallelism, cenv, restored_id, &c.restored)
                                .map_err(task_err)?
                        }
                        None => config.open(s, node.parallelism, cenv).map_err(|e| task_err(e.into()))?,
                    };
                    tasks.spawn(run_sink(sink, gate, sub_metrics, job_metrics, checkpointing))
                }
                NodeBody::Operator { module, config } => {
                    let range = key_group_range(s, node.parallelism, settings.max_parallelism);
                    let mut context = Context {
                        operator_id: node.id.clone(),
                        config: config.clone(),
                        subtask_index: s,
                        parallelism: node.parallelism,
                        max_parallelism: settings.max_parallelism,
                        key_group_start: range.start,
                        key_group_end: range.end,
                        inputs: node.inputs.len() as u32,
                        restored: false,
                    };
                    let (module, id) = (module.clone(), node.id.clone());
                    let storage = env.map(|e| (e.storage.clone(), e.job_id.clone()));
                    let restoring = restore.is_some();
                    tasks.spawn(async move {
                        let mut instance = OperatorInstance::new(&module, &id, s, limits).await?;
                        let state_version = instance.describe().await?.state_version;
                        if let (Some((storage, job)), true) = (storage, restoring) {
                            let version = match &checkpointing {
                                Some(c) => c
                                    .restored
                                    .restore_version(&id, state_version)
                                    .map_err(TaskError::Restore)?,
                                None => state_version,
                            };
                            restore_instance(&mut instance, version, storage, job, chains, faults).await?;
                            context.restored = true;
                        }
                        run_operator(
                            instance,
                            state_version,
                            context,
                            gate,
                            output,
                            sub_metrics,
                            checkpointing,
                        )
                        .await
                    })
                }
            };
            task_names.insert(handle.id(), (node.id.clone(), s));
        }
    }
    drop(to_coordinator);
    let coordinator = env.map(|env| {
        tokio::spawn(
            Coordinator {
                job: env.job_id.clone(),
                settings: settings.checkpoint.clone(),
                storage: env.storage.clone(),
                tasks: infos.clone(),
                controls,
                inbox,
                requests: env.requests.clone(),
                events: env.events.clone(),
                faults: env.faults.clone(),
                stop: env.stop.clone(),
            }
            .run(),
        )
    });
    let mut coordinator = coordinator;
    let mut final_checkpoint = None;
    let task_count = infos.len();

    let mut first_error: Option<JobError> = None;
    let mut secondary: Option<JobError> = None;
    loop {
        let joined = match &mut coordinator {
            Some(c) => tokio::select! {
                joined = tasks.join_next_with_id() => joined,
                result = c => {
                    coordinator = None;
                    match result {
                        Ok(Ok(id)) => final_checkpoint = Some(id),
                        // The tasks ended (the coordinator may see it before this loop
                        // joins them): their own errors come first.
                        Ok(Err(JobError::Checkpoint(m))) if m == TASKS_GONE => {
                            secondary.get_or_insert(JobError::Checkpoint(m));
                        }
                        Ok(Err(e)) => {
                            first_error.get_or_insert(e);
                            tasks.abort_all();
                        }
                        Err(e) => {
                            first_error.get_or_insert(JobError::Checkpoint(format!("the checkpoint coordinator failed: {e}")));
                            tasks.abort_all();
                        }
                    }
                    continue;
                }
            },
            None => tasks.join_next_with_id().await,
        };
        let Some(joined) = joined else { break };
        let (id, result) = match joined {
            Ok((id, r)) => (id, r.map_err(Some)),
            Err(e) if e.is_panic() => {
                let id = e.id();
                let payload = e.into_panic();
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                let (node, subtask) = task_names[&id].clone();
                first_error.get_or_insert(JobError::Panic { node, subtask, message });
                tasks.abort_all();
                continue;
            }
            Err(e) => (e.id(), Err(None)),
        };
        if let Err(Some(error)) = result {
            let (node, subtask) = task_names[&id].clone();
            let secondary_error = error.is_secondary();
            let err = JobError::Task { node, subtask, error };
            if secondary_error {
                secondary.get_or_insert(err);
            } else if first_error.is_none() {
                first_error = Some(err);
                tasks.abort_all();
            }
        }
    }
    if let Some(c) = coordinator.take() {
        if first_error.is_some() || secondary.is_some() {
            c.abort();
        } else {
            // Every task ended well: the sources ended only after the final checkpoint
            // completed, so the coordinator has returned (or returns now: its inbox closed).
            match c.await {
                Ok(Ok(id)) => final_checkpoint = Some(id),
                Ok(Err(e)) => first_error = Some(e),
                Err(e) => {
                    first_error =
                        Some(JobError::Checkpoint(format!("the checkpoint coordinator failed: {e}")))
                }
            }
        }
    }
    if let Some(e) = first_error.or(secondary) {
        return Err(e);
    }
    if env.is_some() && final_checkpoint.is_none() {
        return Err(JobError::Checkpoint("the job ended without its final checkpoint".into()));
    }

    let nodes = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| NodeReport {
            id: n.id.clone(),
            kind: n.kind,
            parallelism: n.parallelism,
            records_in: metrics.subtasks[i].iter().map(|m| m.records_in.load(Ordering::Relaxed)).sum(),
            records_out: metrics.subtasks[i].iter().map(|m| m.records_out.load(Ordering::Relaxed)).sum(),
        })
        .collect();
    let channels = metrics
        .channels
        .iter()
        .map(|c| ChannelReport {
            from: c.from.clone(),
            to: c.to.clone(),
            capacity: c.capacity,
            max_depth: c.max_depth.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
        })
        .collect();
    Ok(JobReport {
        duration: start.elapsed(),
        nodes,
        channels,
        max_batches_in_flight: metrics.max_batches_in_flight.load(Ordering::Relaxed),
        tasks: task_count,
        restarts: 0,
        restored_from: Vec::new(),
        final_checkpoint,
        already_finished: false,
        stopped: env.is_some_and(|e| e.stop.requested() == Some(StopMode::Suspend)),
        drained: env.is_some_and(|e| e.stop.requested() == Some(StopMode::Drain)),
    })
}

/// Restores an operator instance from its chains: every scope's live entries, in chunks,
/// written by a module of state schema version `state_version`.
async fn restore_instance(
    instance: &mut OperatorInstance,
    state_version: u32,
    storage: Arc<dyn CheckpointStorage>,
    job: String,
    chains: std::collections::BTreeMap<u32, Vec<u64>>,
    faults: Option<Arc<FaultInjector>>,
) -> Result<(), TaskError> {
    if let Some(f) = &faults {
        f.hit(FaultPoint::Restore)?;
    }
    for (_, chain) in chains {
        let storage = storage.clone();
        let job = job.clone();
        let entries = tokio::task::spawn_blocking(move || storage.read_chain(&job, &chain))
            .await
            .map_err(|e| TaskError::Storage(format!("restore panicked: {e}")))?
            .map_err(|e| TaskError::Storage(e.to_string()))?;
        for chunk in restore_chunks(entries, 4 << 20) {
            instance.restore(state_version, &chunk).await?;
        }
    }
    Ok(())
}
