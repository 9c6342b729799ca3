//! One attempt at running a planned job: wire a channel for every connected pair of
//! subtasks, spawn every subtask (and, checkpointed, its snapshot writer and the
//! coordinator), join them ([`Tasks`]), and report.
//!
//! An attempt spread over a cluster's processes runs as one [`Part`] in each: the subtasks
//! its [`Layout`] places there, with local queues between them and the data plane
//! ([`RemoteChannels`]) to the others.

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use weir_store::{CheckpointMeta, CheckpointStorage, Manifest};

use super::channel::{ChannelStats, Receiver, Sender, bounded_channel};
use super::control::{Control, ToCoordinator};
use super::coordinator::{Coordinator, TaskInfo};
use super::env::{RunEnv, TaskEnv};
use super::error::{ClusterError, DataError, JobError, TaskError};
use super::faults::FaultInjector;
use super::input_gate::InputGate;
use super::metrics::{JobMetrics, SubtaskMetrics};
use super::output::{EdgeOutput, Output};
use super::report::{ChannelReport, JobReport, NodeReport};
use super::snapshot_writer::{WriterConfig, snapshot_writer};
use super::source_task::run_source;
use super::stop::StopMode;
use super::subtask_blob::{TaskState, restored_state, subtask_state};
use super::subtask_env::{connector_env, dead_letters, instance_logs, local_place, operator_context};
use super::task::{
    Checkpointing, open_recovered_sink, restore_channel_state, restore_instance, run_operator, run_sink,
};
pub(crate) use super::tasks::Tasks;
use crate::connectors::{ConnectorEnv, SinkConfig, SourceConfig};
use crate::guest::bindings::Context;
use crate::guest::logs::InstanceLogs;
use crate::guest::{InstanceLimits, OperatorInstance, OperatorModule};
use crate::local_state::LocalPlace;
use crate::plan::{NodeBody, NodeKind, Partitioning, Plan, PlanNode};

/// The limits every operator instance of a job with `settings` runs under.
pub fn instance_limits(settings: &crate::plan::Settings) -> InstanceLimits {
    InstanceLimits {
        memory_bytes: usize::try_from(settings.memory_limit_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
        cpu_limit_ms: settings.cpu_limit_ms,
        wall_limit_ms: settings.wall_limit_ms,
        max_output_bytes: usize::try_from(settings.max_output_bytes_per_call).unwrap_or(usize::MAX),
    }
}

/// Runs one attempt of `plan` in this process; checkpointed in `env`, restored from the
/// given checkpoint.
pub(crate) async fn run_attempt(
    plan: &Plan,
    checkpointed: Option<(&RunEnv, Option<(CheckpointMeta, Manifest)>)>,
) -> Result<JobReport, JobError> {
    let start = Instant::now();
    let (env, restore) = match checkpointed {
        Some((env, restore)) => (Some(env), restore),
        None => (None, None),
    };
    let part = Part::prepare(plan, None)?;
    let task_env = env.map(RunEnv::task_env);
    let infos = task_infos(plan);
    let (to_coordinator, inbox) = mpsc::unbounded_channel::<ToCoordinator>();
    let (controls, control_rx) = control_channels(infos.len());
    let (part, tasks) = part.spawn(task_env.as_ref(), restore.as_ref(), control_rx, &to_coordinator)?;
    drop(to_coordinator);
    if let Some(env) = env {
        env.set_live_metrics(part.metrics());
    }
    let coordinator = env.map(|env| spawn_coordinator(plan, env, infos.clone(), controls, inbox));
    let final_checkpoint = tasks.join(coordinator).await?;
    part.finish(plan, env, start, infos.len(), final_checkpoint)
}

/// A control channel for each of `tasks` tasks: the coordinator's senders, and the
/// receivers by task index.
pub(crate) fn control_channels(
    tasks: usize,
) -> (Vec<mpsc::UnboundedSender<Control>>, BTreeMap<usize, mpsc::UnboundedReceiver<Control>>) {
    let mut senders = Vec::with_capacity(tasks);
    let mut receivers = BTreeMap::new();
    for task in 0..tasks {
        let (tx, rx) = mpsc::unbounded_channel::<Control>();
        senders.push(tx);
        receivers.insert(task, rx);
    }
    (senders, receivers)
}

/// Spawns the attempt's coordinator.
pub(crate) fn spawn_coordinator(
    plan: &Plan,
    env: &RunEnv,
    tasks: Vec<TaskInfo>,
    controls: Vec<mpsc::UnboundedSender<Control>>,
    inbox: mpsc::UnboundedReceiver<ToCoordinator>,
) -> JoinHandle<Result<u64, JobError>> {
    tokio::spawn(
        Coordinator {
            job: env.job_id.clone(),
            settings: plan.spec.settings.checkpoint.clone(),
            storage: env.storage.clone(),
            tasks,
            controls,
            inbox,
            requests: env.requests.clone(),
            events: env.events.clone(),
            faults: env.faults.clone(),
            stop: env.stop.clone(),
            hold: env.hold.clone(),
        }
        .run(),
    )
}

/// Where the subtasks of an attempt spread over several processes run, as one of them
/// sees it.
pub(crate) struct Layout {
    /// The job.
    pub job: String,
    /// The attempt (channels are keyed by it: an older attempt's cannot connect).
    pub attempt: u64,
    /// Per node (plan order), per subtask: the place that runs it.
    pub places: Vec<Vec<u32>>,
    /// Each place's data address.
    pub addresses: Vec<String>,
    /// This process's place.
    pub here: u32,
    /// This process's data plane.
    pub data: Arc<dyn RemoteChannels>,
}

/// Channels to and from other processes (a cluster's data plane): each is keyed by the
/// job, the attempt and its number in the attempt's wiring.
pub(crate) trait RemoteChannels: Send + Sync {
    /// Registers the receiving end of channel `channel` (from subtask `from` to `to`, a
    /// window of `capacity` batches and bytes).
    fn input(
        &self,
        key: (String, u64, u32),
        capacity: (usize, usize),
        from: (String, u32),
        to: (String, u32),
    ) -> Result<Receiver, DataError>;

    /// Opens the sending end of channel `key` to the process at `peer`.
    fn output<'a>(
        &'a self,
        peer: &'a str,
        key: (String, u64, u32),
        capacity: (usize, usize),
        from: (String, u32),
        to: (String, u32),
    ) -> Pin<Box<dyn Future<Output = Result<Sender, DataError>> + Send + 'a>>;
}

impl Layout {
    fn place(&self, node: usize, subtask: u32) -> u32 {
        self.places.get(node).and_then(|p| p.get(subtask as usize)).copied().unwrap_or(u32::MAX)
    }

    /// Whether subtask `subtask` of node `node` runs here.
    pub fn is_here(&self, node: usize, subtask: u32) -> bool {
        self.place(node, subtask) == self.here
    }
}

/// A channel from a subtask here to one elsewhere, opened when the attempt starts.
struct PendingOutput {
    /// Where its sender goes: (upstream node, edge index, upstream subtask) and its slot.
    target: (usize, usize, u32),
    slot: usize,
    /// (job, attempt, channel number).
    key: (String, u64, u32),
    peer: String,
    from: (String, u32),
    to: (String, u32),
}

/// The part of an attempt that runs in this process: all of it, or (spread over workers)
/// the subtasks its layout places here.
pub(crate) struct Part<'a> {
    plan: &'a Plan,
    layout: Option<&'a Layout>,
    wiring: Wiring,
    pending: Vec<PendingOutput>,
}

impl<'a> Part<'a> {
    /// Wires the channels of this process's subtasks; registers the inputs that come from
    /// elsewhere (so that the other places can open them once every place is prepared).
    pub(crate) fn prepare(plan: &'a Plan, layout: Option<&'a Layout>) -> Result<Self, JobError> {
        let (wiring, pending) = Wiring::new(plan, layout)?;
        Ok(Part { plan, layout, wiring, pending })
    }

    /// Opens the channels to subtasks elsewhere (every place registered its inputs).
    pub(crate) async fn open_outputs(&mut self) -> Result<(), JobError> {
        let Some(layout) = self.layout else { return Ok(()) };
        let settings = &self.plan.spec.settings;
        let capacity = (settings.channel_capacity, settings.channel_capacity_bytes());
        for p in std::mem::take(&mut self.pending) {
            let sender = layout
                .data
                .output(&p.peer, p.key, capacity, p.from, p.to)
                .await
                .map_err(ClusterError::from)?;
            self.wiring.channel_stats.push(sender.stats().clone());
            let slots = self.wiring.senders.get_mut(&p.target).expect("senders built");
            slots[p.slot] = Some(sender);
        }
        Ok(())
    }

    /// Spawns every subtask here (and, checkpointed, its snapshot writer), each with its
    /// control receiver from `controls` (by task index).
    pub(crate) fn spawn(
        mut self,
        env: Option<&TaskEnv>,
        restore: Option<&(CheckpointMeta, Manifest)>,
        mut controls: BTreeMap<usize, mpsc::UnboundedReceiver<Control>>,
        to_coordinator: &mpsc::UnboundedSender<ToCoordinator>,
    ) -> Result<(Finished, Tasks), JobError> {
        let plan = self.plan;
        // Every channel here is open now: the counters see them all.
        let metrics = Arc::new(JobMetrics {
            subtasks: std::mem::take(&mut self.wiring.subtasks),
            channels: self.wiring.channel_stats.clone(),
            ..JobMetrics::default()
        });
        let mut tasks = Tasks::default();
        let mut task_index = 0usize;
        for (index, node) in plan.nodes.iter().enumerate() {
            for s in 0..node.parallelism {
                let task = task_index;
                task_index += 1;
                if self.layout.is_some_and(|l| !l.is_here(index, s)) {
                    continue;
                }
                let control = controls.remove(&task).ok_or_else(|| ClusterError::NoControlChannel {
                    task,
                    node: node.id.clone(),
                    subtask: s,
                })?;
                let subtask = Subtask {
                    plan,
                    node,
                    s,
                    task,
                    env,
                    restore,
                    output: self.wiring.output(plan, index, s),
                    gate: self.wiring.gate(index, s),
                    metrics: metrics.subtasks[index][s as usize].clone(),
                    job_metrics: metrics.clone(),
                };
                subtask.spawn(&mut tasks, control, to_coordinator)?;
            }
        }
        let channel_stats = self.wiring.channel_stats;
        Ok((Finished { metrics, channel_stats }, tasks))
    }
}

/// What is left of a part once its subtasks run: the counters for its report.
pub(crate) struct Finished {
    metrics: Arc<JobMetrics>,
    channel_stats: Vec<Arc<ChannelStats>>,
}

impl Finished {
    /// The counters of the attempt (those of subtasks elsewhere as their workers report
    /// them).
    pub(crate) fn metrics(&self) -> Arc<JobMetrics> {
        self.metrics.clone()
    }

    /// The attempt's report.
    pub(crate) fn finish(
        self,
        plan: &Plan,
        env: Option<&RunEnv>,
        start: Instant,
        tasks: usize,
        final_checkpoint: Option<u64>,
    ) -> Result<JobReport, JobError> {
        if env.is_some() && final_checkpoint.is_none() {
            return Err(JobError::NoFinalCheckpoint);
        }
        let mut report = report(plan, &self.metrics, &self.channel_stats, start, tasks);
        report.final_checkpoint = final_checkpoint;
        report.stopped = env.is_some_and(|e| e.stop.requested() == Some(StopMode::Suspend));
        report.drained = env.is_some_and(|e| e.stop.requested() == Some(StopMode::Drain));
        Ok(report)
    }
}

/// Task indices (for the coordinator): nodes in spec order, subtasks in order.
pub(crate) fn task_infos(plan: &Plan) -> Vec<TaskInfo> {
    plan.nodes
        .iter()
        .flat_map(|node| {
            (0..node.parallelism).map(|s| TaskInfo {
                node: node.id.clone(),
                subtask: s,
                is_source: node.kind == NodeKind::Source,
            })
        })
        .collect()
}

/// The channels of an attempt's part and its counters.
struct Wiring {
    /// Per node, per subtask: its input channels with their ports.
    gates: Vec<Vec<Vec<(u32, Receiver)>>>,
    /// (upstream node, edge index in its outputs, upstream subtask) → senders in
    /// downstream subtask order (a sender to a subtask elsewhere is filled in when the
    /// attempt starts).
    senders: HashMap<(usize, usize, u32), Vec<Option<Sender>>>,
    /// Per node, per subtask: its counters.
    subtasks: Vec<Vec<Arc<SubtaskMetrics>>>,
    channel_stats: Vec<Arc<ChannelStats>>,
}

impl Wiring {
    /// A channel for every edge and every connected pair of subtasks: a forward edge
    /// connects subtask `j` to `j`, every other edge every upstream subtask to every
    /// downstream one. Spread over places (`layout`), channels are numbered in this order
    /// by every place alike; a channel between two subtasks here is a local queue, one
    /// from elsewhere is registered with the data plane, one to elsewhere is opened later.
    fn new(plan: &Plan, layout: Option<&Layout>) -> Result<(Self, Vec<PendingOutput>), JobError> {
        let settings = &plan.spec.settings;
        let mut gates: Vec<Vec<Vec<(u32, Receiver)>>> =
            plan.nodes.iter().map(|n| (0..n.parallelism).map(|_| Vec::new()).collect()).collect();
        let mut senders: HashMap<(usize, usize, u32), Vec<Option<Sender>>> = HashMap::new();
        let mut channel_stats = Vec::new();
        let mut pending = Vec::new();
        let mut number = 0u32;
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
                    let forward = edge.partitioning == Partitioning::Forward;
                    // A forward edge's subtask has one target; any other, every subtask.
                    let (width, slot) = if forward { (1, 0) } else { (node.parallelism, j as usize) };
                    for i in upstream {
                        let channel_number = number;
                        number += 1;
                        let (from_id, to_id) = ((up.id.clone(), i), (node.id.clone(), j));
                        let targets = senders
                            .entry((edge.from, out_index, i))
                            .or_insert_with(|| (0..width).map(|_| None).collect());
                        let capacity = (settings.channel_capacity, settings.channel_capacity_bytes());
                        let Some(layout) = layout else {
                            let (tx, rx) = bounded_channel(capacity, from_id, to_id);
                            channel_stats.push(tx.stats().clone());
                            gates[to][j as usize].push((edge.port, rx));
                            targets[slot] = Some(tx);
                            continue;
                        };
                        let key = (layout.job.clone(), layout.attempt, channel_number);
                        match (layout.is_here(edge.from, i), layout.is_here(to, j)) {
                            (true, true) => {
                                let (tx, rx) = bounded_channel(capacity, from_id, to_id);
                                channel_stats.push(tx.stats().clone());
                                gates[to][j as usize].push((edge.port, rx));
                                targets[slot] = Some(tx);
                            }
                            (false, true) => {
                                let rx = layout
                                    .data
                                    .input(key, capacity, from_id, to_id)
                                    .map_err(ClusterError::from)?;
                                gates[to][j as usize].push((edge.port, rx));
                            }
                            (true, false) => {
                                let place = layout.place(to, j) as usize;
                                let peer = layout
                                    .addresses
                                    .get(place)
                                    .cloned()
                                    .ok_or(ClusterError::NoAddress { place })?;
                                pending.push(PendingOutput {
                                    target: (edge.from, out_index, i),
                                    slot,
                                    key,
                                    peer,
                                    from: from_id,
                                    to: to_id,
                                });
                            }
                            (false, false) => {}
                        }
                    }
                }
            }
        }
        let subtasks = plan
            .nodes
            .iter()
            .map(|n| (0..n.parallelism).map(|_| Arc::new(SubtaskMetrics::default())).collect())
            .collect();
        Ok((Wiring { gates, senders, subtasks, channel_stats }, pending))
    }

    /// Subtask `s` of node `index`'s output: one router per outgoing edge.
    fn output(&mut self, plan: &Plan, index: usize, s: u32) -> Output {
        let settings = &plan.spec.settings;
        let edges = plan.nodes[index]
            .outputs
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let targets = self
                    .senders
                    .remove(&(index, k, s))
                    .expect("senders built")
                    .into_iter()
                    .map(|t| t.expect("every channel of a subtask here is open"))
                    .collect();
                EdgeOutput::new(e.partitioning, targets, settings.max_parallelism, s as usize)
                    .carrying(e.output)
            })
            .collect();
        Output::new(edges).with_side_outputs(plan.nodes[index].side_outputs.clone())
    }

    /// Subtask `s` of node `index`'s input gate.
    fn gate(&mut self, index: usize, s: u32) -> InputGate {
        InputGate::new(std::mem::take(&mut self.gates[index][s as usize]))
    }
}

/// The figures of the attempt that ran (its part here).
fn report(
    plan: &Plan,
    metrics: &JobMetrics,
    channel_stats: &[Arc<ChannelStats>],
    start: Instant,
    tasks: usize,
) -> JobReport {
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
    let channels = channel_stats
        .iter()
        .map(|c| ChannelReport {
            from: c.from.clone(),
            to: c.to.clone(),
            capacity: c.capacity,
            capacity_bytes: c.capacity_bytes,
            max_depth: c.max_depth.load(Ordering::Relaxed),
            max_bytes: c.max_bytes.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
        })
        .collect();
    JobReport {
        duration: start.elapsed(),
        nodes,
        channels,
        max_batches_in_flight: metrics.max_batches_in_flight.load(Ordering::Relaxed),
        tasks,
        restarts: 0,
        restored_from: Vec::new(),
        final_checkpoint: None,
        already_finished: false,
        stopped: false,
        drained: false,
    }
}

/// One subtask about to be spawned, with everything it is wired to.
struct Subtask<'a> {
    plan: &'a Plan,
    node: &'a PlanNode,
    s: u32,
    task: usize,
    env: Option<&'a TaskEnv>,
    restore: Option<&'a (CheckpointMeta, Manifest)>,
    output: Output,
    gate: InputGate,
    metrics: Arc<SubtaskMetrics>,
    job_metrics: Arc<JobMetrics>,
}

/// What a checkpointed subtask starts from: its control and writer, and what it restores.
#[derive(Default)]
struct Restoring {
    /// The checkpointing of the subtask (none when the job is not checkpointed).
    checkpointing: Option<Checkpointing>,
    /// The checkpoint restored (0: none).
    id: u64,
    /// The operator's state chains in that checkpoint.
    chains: BTreeMap<u32, Vec<u64>>,
    /// The channel state of an unaligned checkpoint to replay before the first record.
    channel_state: Option<ChannelState>,
}

/// The in-flight records of an unaligned checkpoint, as stored: its chunks and how many
/// messages they hold.
struct ChannelState {
    storage: Arc<dyn CheckpointStorage>,
    chunks: Vec<u64>,
    expected: u64,
}

impl ChannelState {
    /// Puts the stored in-flight records back in front of the gate's inputs.
    async fn replay(self, gate: &mut InputGate, job: String) -> Result<(), TaskError> {
        restore_channel_state(gate, self.storage, job, self.chunks, self.expected).await
    }
}

/// What every kind of subtask is handed by the attempt, once checkpointing is set up.
struct Spawning {
    name: String,
    s: u32,
    parallelism: u32,
    job_id: String,
    store: Option<weir_store::Store>,
    outbox: Option<Arc<dyn weir_store::Outbox>>,
    gate: InputGate,
    output: Output,
    metrics: Arc<SubtaskMetrics>,
    job_metrics: Arc<JobMetrics>,
    restoring: Restoring,
}

impl Spawning {
    /// Opens a connector on a blocking thread: opening one may wait on the network (a
    /// Kafka broker: bounded by its request timeout), which must not hold a runtime thread
    /// that other jobs' tasks (and the server) run on.
    async fn open_connector<T: Send + 'static>(
        &self,
        open: impl FnOnce(ConnectorEnv<'_>) -> Result<T, TaskError> + Send + 'static,
    ) -> Result<T, TaskError> {
        let (store, outbox) = (self.store.clone(), self.outbox.clone());
        let (job, node) = (self.job_id.clone(), self.name.clone());
        tokio::task::spawn_blocking(move || open(connector_env(store.as_ref(), outbox.as_ref(), &job, &node)))
            .await?
    }
}

impl Subtask<'_> {
    /// Spawns the subtask (and, checkpointed, its snapshot writer) into `tasks`.
    fn spawn(
        self,
        tasks: &mut Tasks,
        control: mpsc::UnboundedReceiver<Control>,
        to_coordinator: &mpsc::UnboundedSender<ToCoordinator>,
    ) -> Result<(), JobError> {
        let restoring = self.start_checkpointing(tasks, control, to_coordinator)?;
        let Subtask { plan, node, s, env, restore, mut output, gate, metrics, job_metrics, .. } = self;
        if node.kind != NodeKind::Sink {
            output = output.with_dead_letters(dead_letters(plan, node, s, env));
        }
        let spawning = Spawning {
            name: node.id.clone(),
            s,
            parallelism: node.parallelism,
            job_id: env.map(|e| e.job_id.clone()).unwrap_or_default(),
            store: env.and_then(|e| e.store.clone()),
            outbox: env.and_then(|e| e.outbox.clone()),
            gate,
            output,
            metrics,
            job_metrics,
            restoring,
        };
        match &node.body {
            NodeBody::Source(config) => spawn_source(tasks, spawning, config.clone()),
            NodeBody::Sink(config) => spawn_sink(tasks, spawning, config.clone()),
            NodeBody::Operator { module, config } => {
                let operator = OperatorStart {
                    module: module.clone(),
                    context: operator_context(plan, node, s, config),
                    local: local_place(plan, node, s, env),
                    limits: instance_limits(&plan.spec.settings),
                    storage: env.map(|e| e.storage.clone()).filter(|_| restore.is_some()),
                    logs: instance_logs(node, s, env),
                    faults: env.and_then(|e| e.faults.clone()),
                };
                spawn_operator(tasks, spawning, operator);
            }
        }
        Ok(())
    }

    /// Checkpointed: reads what the subtask restores, and spawns its snapshot writer.
    fn start_checkpointing(
        &self,
        tasks: &mut Tasks,
        control: mpsc::UnboundedReceiver<Control>,
        to_coordinator: &mpsc::UnboundedSender<ToCoordinator>,
    ) -> Result<Restoring, JobError> {
        let Subtask { plan, node, s, task, env, restore, .. } = *self;
        let Some(env) = env else { return Ok(Restoring::default()) };
        let task_err = |error: TaskError| JobError::Task { node: node.id.clone(), subtask: s, error };
        let settings = &plan.spec.settings;
        let mut restoring = Restoring::default();
        let mut restored = TaskState::default();
        if let Some((meta, manifest)) = restore {
            restoring.id = meta.id;
            restored = restored_state(manifest, &node.id, s).map_err(|e| task_err(e.into()))?;
            if let Some(st) = subtask_state(manifest, &node.id, s) {
                restoring.chains = st.chains.clone();
                restoring.channel_state = Some(ChannelState {
                    storage: env.storage.clone(),
                    chunks: st.channel.clone(),
                    expected: restored.in_flight_messages,
                });
            }
        }
        let (writer, writer_task) = snapshot_writer(WriterConfig {
            job: env.job_id.clone(),
            operator: node.id.clone(),
            subtask: s,
            task,
            max_parallelism: settings.max_parallelism,
            max_chain_length: settings.checkpoint.max_chain_length,
            previous: restoring.chains.clone(),
            storage: env.storage.clone(),
            coordinator: to_coordinator.clone(),
            faults: env.faults.clone(),
        });
        tasks.spawn(format!("{} (snapshot writer)", node.id), s, writer_task);
        restoring.checkpointing = Some(Checkpointing {
            task,
            node: node.id.clone(),
            subtask: s,
            control,
            coordinator: to_coordinator.clone(),
            writer,
            faults: env.faults.clone(),
            restored,
            final_id: None,
            control_closed: false,
            stop: env.stop.clone(),
            channel_capacity_bytes: settings.channel_capacity_bytes,
            restored_id: restoring.id,
            dead_letters: env.dead_letters.clone(),
        });
        Ok(restoring)
    }
}

/// Spawns a source subtask: opens its connector, seeks to the restored position, runs it.
fn spawn_source(tasks: &mut Tasks, spawning: Spawning, config: SourceConfig) {
    let (name, s) = (spawning.name.clone(), spawning.s);
    tasks.spawn(name, s, async move {
        let parallelism = spawning.parallelism;
        let checkpointing = spawning.restoring.checkpointing.as_ref();
        let position = checkpointing.and_then(|c| c.restored.position.clone());
        let (delay, rate) = (config.out_of_orderness_ms, config.records_per_second);
        let reject = spawning.output.on_error().takes_out();
        let source = spawning
            .open_connector(move |cenv| {
                let mut source = config.open(s, parallelism, cenv)?;
                if reject {
                    source.reject_bad_records();
                }
                if let Some(position) = position {
                    source.seek(&position)?;
                }
                Ok(source)
            })
            .await?;
        let Spawning { output, metrics, job_metrics, restoring, .. } = spawning;
        run_source(source, delay, rate, output, metrics, job_metrics, restoring.checkpointing).await
    });
}

/// Spawns a sink subtask: opens its connector (recovering its open transactions), replays
/// the channel state, runs it.
fn spawn_sink(tasks: &mut Tasks, spawning: Spawning, config: SinkConfig) {
    let (name, s) = (spawning.name.clone(), spawning.s);
    tasks.spawn(name, s, async move {
        let parallelism = spawning.parallelism;
        let restored = spawning.restoring.checkpointing.as_ref().map(|c| c.restored.clone());
        let restored_id = spawning.restoring.id;
        let sink = spawning
            .open_connector(move |cenv| match restored {
                Some(state) => open_recovered_sink(&config, s, parallelism, cenv, restored_id, &state),
                None => Ok(config.open(s, parallelism, cenv)?),
            })
            .await?;
        let Spawning { mut gate, metrics, job_metrics, restoring, job_id, .. } = spawning;
        if let Some(channel_state) = restoring.channel_state {
            channel_state.replay(&mut gate, job_id).await?;
        }
        run_sink(sink, gate, metrics, job_metrics, restoring.checkpointing).await
    });
}

/// What an operator subtask starts its instance with.
struct OperatorStart {
    module: Arc<OperatorModule>,
    context: Context,
    local: LocalPlace,
    limits: InstanceLimits,
    /// Where the checkpoint it restores is stored (none: it starts empty).
    storage: Option<Arc<dyn CheckpointStorage>>,
    /// Where its log lines go.
    logs: InstanceLogs,
    faults: Option<Arc<FaultInjector>>,
}

/// Spawns an operator subtask: instantiates its module, restores its state and channel
/// state, runs it.
fn spawn_operator(tasks: &mut Tasks, spawning: Spawning, operator: OperatorStart) {
    let (name, s) = (spawning.name.clone(), spawning.s);
    tasks.spawn(name, s, async move {
        let Spawning { name: id, mut gate, output, metrics, restoring, job_id, .. } = spawning;
        let OperatorStart { module, mut context, local, limits, storage, faults, logs } = operator;
        let mut instance = OperatorInstance::with_logs(&module, &id, s, limits, logs).await?;
        instance.keyed_states().set_place(local);
        let state_version = instance.describe().await?.state_version;
        let checkpointing = restoring.checkpointing;
        if let Some(storage) = storage {
            let version = match &checkpointing {
                Some(c) => c.restored.restore_version(&id, state_version)?,
                None => state_version,
            };
            restore_instance(&mut instance, version, storage, job_id.clone(), restoring.chains, faults)
                .await?;
            context.restored = true;
        }
        if let Some(channel_state) = restoring.channel_state {
            channel_state.replay(&mut gate, job_id).await?;
        }
        run_operator(instance, state_version, context, gate, output, metrics, checkpointing).await
    });
}
