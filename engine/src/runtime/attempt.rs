//! One attempt at running a planned job: wire a channel for every connected pair of
//! subtasks, spawn every subtask (and, checkpointed, its snapshot writer and the
//! coordinator), join them, and report.
//!
//! The first real failure (not a "channel closed" that merely follows from it) aborts
//! every other task and is returned with its node id and subtask.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use weir_store::{CheckpointMeta, Manifest};

use super::channel::{Receiver, Sender, channel};
use super::control::{Control, ToCoordinator};
use super::coordinator::{Coordinator, TaskInfo};
use super::env::RunEnv;
use super::error::{JobError, TaskError};
use super::input_gate::InputGate;
use super::metrics::{JobMetrics, SubtaskMetrics};
use super::output::{EdgeOutput, Output};
use super::report::{ChannelReport, JobReport, NodeReport};
use super::snapshot_writer::{WriterConfig, snapshot_writer};
use super::stop::StopMode;
use super::task::{
    Checkpointing, open_recovered_sink, restore_channel_state, restore_instance, run_operator, run_sink,
    run_source,
};
use super::task_state::{TaskState, restored_state, subtask_state};
use crate::connectors::ConnectorEnv;
use crate::guest::bindings::Context;
use crate::guest::{InstanceLimits, OperatorInstance};
use crate::key_groups::key_group_range;
use crate::local_state::{LocalPlace, LocalStateConfig};
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

/// Runs one attempt of `plan`; checkpointed in `env`, restored from the given checkpoint.
pub(crate) async fn run_attempt(
    plan: &Plan,
    checkpointed: Option<(&RunEnv, Option<(CheckpointMeta, Manifest)>)>,
) -> Result<JobReport, JobError> {
    let start = Instant::now();
    let (env, restore) = match checkpointed {
        Some((env, restore)) => (Some(env), restore),
        None => (None, None),
    };
    let mut wiring = Wiring::new(plan);
    if let Some(env) = env {
        env.set_live_metrics(wiring.metrics.clone());
    }
    let infos = task_infos(plan);
    let (to_coordinator, inbox) = mpsc::unbounded_channel::<ToCoordinator>();
    let (controls, mut control_rx): (Vec<_>, Vec<_>) = infos
        .iter()
        .map(|_| {
            let (tx, rx) = mpsc::unbounded_channel::<Control>();
            (tx, Some(rx))
        })
        .unzip();

    let mut tasks = Tasks::default();
    let mut task_index = 0usize;
    for (index, node) in plan.nodes.iter().enumerate() {
        for s in 0..node.parallelism {
            let subtask = Subtask {
                plan,
                node,
                s,
                task: task_index,
                env,
                restore: restore.as_ref(),
                output: wiring.output(plan, index, s),
                gate: wiring.gate(index, s),
                metrics: wiring.metrics.subtasks[index][s as usize].clone(),
                job_metrics: wiring.metrics.clone(),
            };
            let control = control_rx[task_index].take().expect("control receiver");
            subtask.spawn(&mut tasks, control, &to_coordinator)?;
            task_index += 1;
        }
    }
    drop(to_coordinator);
    let coordinator = env.map(|env| {
        tokio::spawn(
            Coordinator {
                job: env.job_id.clone(),
                settings: plan.spec.settings.checkpoint.clone(),
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
    let final_checkpoint = tasks.join(coordinator).await?;
    if env.is_some() && final_checkpoint.is_none() {
        return Err(JobError::NoFinalCheckpoint);
    }
    let mut report = wiring.report(plan, start, infos.len());
    report.final_checkpoint = final_checkpoint;
    report.stopped = env.is_some_and(|e| e.stop.requested() == Some(StopMode::Suspend));
    report.drained = env.is_some_and(|e| e.stop.requested() == Some(StopMode::Drain));
    Ok(report)
}

/// Task indices (for the coordinator): nodes in spec order, subtasks in order.
fn task_infos(plan: &Plan) -> Vec<TaskInfo> {
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

/// The channels of an attempt and its counters.
struct Wiring {
    /// Per node, per subtask: its input channels with their ports.
    gates: Vec<Vec<Vec<(u32, Receiver)>>>,
    /// (upstream node, edge index in its outputs, upstream subtask) → senders in
    /// downstream subtask order.
    senders: HashMap<(usize, usize, u32), Vec<Sender>>,
    metrics: Arc<JobMetrics>,
}

impl Wiring {
    /// A channel for every edge and every connected pair of subtasks: a forward edge
    /// connects subtask `j` to `j`, every other edge every upstream subtask to every
    /// downstream one.
    fn new(plan: &Plan) -> Self {
        let settings = &plan.spec.settings;
        let mut gates: Vec<Vec<Vec<(u32, Receiver)>>> =
            plan.nodes.iter().map(|n| (0..n.parallelism).map(|_| Vec::new()).collect()).collect();
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
        Wiring { gates, senders, metrics }
    }

    /// Subtask `s` of node `index`'s output: one router per outgoing edge.
    fn output(&mut self, plan: &Plan, index: usize, s: u32) -> Output {
        let settings = &plan.spec.settings;
        let edges = plan.nodes[index]
            .outputs
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let targets = self.senders.remove(&(index, k, s)).expect("senders built");
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

    /// The figures of the attempt that ran.
    fn report(&self, plan: &Plan, start: Instant, tasks: usize) -> JobReport {
        let metrics = &self.metrics;
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
}

/// One subtask about to be spawned, with everything it is wired to.
struct Subtask<'a> {
    plan: &'a Plan,
    node: &'a PlanNode,
    s: u32,
    task: usize,
    env: Option<&'a RunEnv>,
    restore: Option<&'a (CheckpointMeta, Manifest)>,
    output: Output,
    gate: InputGate,
    metrics: Arc<SubtaskMetrics>,
    job_metrics: Arc<JobMetrics>,
}

impl Subtask<'_> {
    /// Spawns the subtask (and, checkpointed, its snapshot writer) into `tasks`.
    fn spawn(
        self,
        tasks: &mut Tasks,
        control: mpsc::UnboundedReceiver<Control>,
        to_coordinator: &mpsc::UnboundedSender<ToCoordinator>,
    ) -> Result<(), JobError> {
        let Subtask { plan, node, s, task, env, restore, output, gate, metrics, job_metrics } = self;
        let settings = &plan.spec.settings;
        let task_err = |error: TaskError| JobError::Task { node: node.id.clone(), subtask: s, error };
        // Checkpointing: the task's control channel, its writer and what it restores.
        let mut checkpointing = None;
        let mut restored_id = 0;
        let mut chains = BTreeMap::new();
        // The channel state of an unaligned checkpoint: its chunks, and how many messages.
        let mut in_flight: Option<(Vec<u64>, u64)> = None;
        if let Some(env) = env {
            let mut restored = TaskState::default();
            if let Some((meta, manifest)) = restore {
                restored_id = meta.id;
                restored = restored_state(manifest, &node.id, s).map_err(|e| task_err(e.into()))?;
                if let Some(st) = subtask_state(manifest, &node.id, s) {
                    chains = st.chains.clone();
                    in_flight = Some((st.channel.clone(), restored.in_flight_messages));
                }
            }
            let (writer, writer_task) = snapshot_writer(WriterConfig {
                job: env.job_id.clone(),
                operator: node.id.clone(),
                subtask: s,
                task,
                max_parallelism: settings.max_parallelism,
                max_chain_length: settings.checkpoint.max_chain_length,
                previous: chains.clone(),
                storage: env.storage.clone(),
                coordinator: to_coordinator.clone(),
                faults: env.faults.clone(),
            });
            tasks.spawn(format!("{} (snapshot writer)", node.id), s, writer_task);
            checkpointing = Some(Checkpointing {
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
            });
        }
        // Connectors open on a blocking thread: opening one may wait on the network (a Kafka
        // broker: bounded by its request timeout), which must not hold a runtime thread that
        // other jobs' tasks (and the server) run on.
        let store = env.map(|e| e.store.clone());
        let job_id = env.map(|e| e.job_id.clone()).unwrap_or_default();
        let channel_state = match (env, in_flight) {
            (Some(env), Some((chunks, expected))) => Some((env.storage.clone(), chunks, expected)),
            _ => None,
        };
        let mut gate = gate;
        let (node_id, parallelism) = (node.id.clone(), node.parallelism);
        let name = node.id.clone();
        match &node.body {
            NodeBody::Source(config) => {
                let config = config.clone();
                let position = checkpointing.as_ref().and_then(|c| c.restored.position.clone());
                let (delay, rate) = (config.out_of_orderness_ms, config.records_per_second);
                tasks.spawn(name, s, async move {
                    let source = tokio::task::spawn_blocking(move || -> Result<_, TaskError> {
                        let cenv = connector_env(store.as_ref(), &job_id, &node_id);
                        let mut source = config.open(s, parallelism, cenv)?;
                        if let Some(position) = position {
                            source.seek(&position)?;
                        }
                        Ok(source)
                    })
                    .await??;
                    run_source(source, delay, rate, output, metrics, job_metrics, checkpointing).await
                });
            }
            NodeBody::Sink(config) => {
                let config = config.clone();
                let job_id_replay = job_id.clone();
                let restored = checkpointing.as_ref().map(|c| c.restored.clone());
                tasks.spawn(name, s, async move {
                    let sink = tokio::task::spawn_blocking(move || -> Result<_, TaskError> {
                        let cenv = connector_env(store.as_ref(), &job_id, &node_id);
                        match restored {
                            Some(state) => {
                                open_recovered_sink(&config, s, parallelism, cenv, restored_id, &state)
                            }
                            None => Ok(config.open(s, parallelism, cenv)?),
                        }
                    })
                    .await??;
                    if let Some((storage, chunks, expected)) = channel_state {
                        restore_channel_state(&mut gate, storage, job_id_replay, chunks, expected).await?;
                    }
                    run_sink(sink, gate, metrics, job_metrics, checkpointing).await
                });
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
                let local = LocalPlace {
                    config: match env {
                        Some(e) => LocalStateConfig::beside(&e.store, &e.job_id),
                        None => LocalStateConfig::temporary(&job_id),
                    },
                    operator: node.id.clone(),
                    subtask: s,
                    max_parallelism: settings.max_parallelism,
                    owned: range.clone(),
                };
                let (module, id) = (module.clone(), node.id.clone());
                let job_replay = job_id.clone();
                let storage = env.map(|e| (e.storage.clone(), e.job_id.clone()));
                let faults = env.and_then(|e| e.faults.clone());
                let restoring = restore.is_some();
                let limits = instance_limits(settings);
                tasks.spawn(name, s, async move {
                    let mut instance = OperatorInstance::new(&module, &id, s, limits).await?;
                    instance.keyed_states().set_place(local);
                    let state_version = instance.describe().await?.state_version;
                    if let (Some((storage, job)), true) = (storage, restoring) {
                        let version = match &checkpointing {
                            Some(c) => c.restored.restore_version(&id, state_version)?,
                            None => state_version,
                        };
                        restore_instance(&mut instance, version, storage, job, chains, faults).await?;
                        context.restored = true;
                    }
                    if let Some((storage, chunks, expected)) = channel_state {
                        restore_channel_state(&mut gate, storage, job_replay, chunks, expected).await?;
                    }
                    run_operator(instance, state_version, context, gate, output, metrics, checkpointing).await
                });
            }
        }
        Ok(())
    }
}

/// What a connector of a job may use: the store (checkpointed jobs; then sinks write through
/// two-phase commit) or nothing.
fn connector_env<'a>(store: Option<&'a weir_store::Store>, job: &'a str, node: &'a str) -> ConnectorEnv<'a> {
    match store {
        Some(store) => ConnectorEnv { store: Some(store), job, node, transactional: true },
        None => ConnectorEnv::plain(),
    }
}

/// The tasks of an attempt, with the node and subtask each runs.
#[derive(Default)]
struct Tasks {
    set: JoinSet<Result<(), TaskError>>,
    names: HashMap<tokio::task::Id, (String, u32)>,
}

impl Tasks {
    fn spawn(
        &mut self,
        node: String,
        subtask: u32,
        task: impl Future<Output = Result<(), TaskError>> + Send + 'static,
    ) {
        let handle = self.set.spawn(task);
        self.names.insert(handle.id(), (node, subtask));
    }

    /// Joins every task and the coordinator; returns the final checkpoint's id (when
    /// checkpointed) or the first real failure.
    async fn join(
        mut self,
        mut coordinator: Option<JoinHandle<Result<u64, JobError>>>,
    ) -> Result<Option<u64>, JobError> {
        let mut final_checkpoint = None;
        let mut first_error: Option<JobError> = None;
        let mut secondary: Option<JobError> = None;
        loop {
            let joined = match &mut coordinator {
                Some(c) => tokio::select! {
                    joined = self.set.join_next_with_id() => joined,
                    result = c => {
                        coordinator = None;
                        match result {
                            Ok(Ok(id)) => final_checkpoint = Some(id),
                            // The tasks ended (the coordinator may see it before this loop
                            // joins them): their own errors come first.
                            Ok(Err(JobError::TasksGone)) => {
                                secondary.get_or_insert(JobError::TasksGone);
                            }
                            Ok(Err(e)) => {
                                first_error.get_or_insert(e);
                                self.set.abort_all();
                            }
                            Err(e) => {
                                first_error.get_or_insert(JobError::Background(e));
                                self.set.abort_all();
                            }
                        }
                        continue;
                    }
                },
                None => self.set.join_next_with_id().await,
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
                    let (node, subtask) = self.names[&id].clone();
                    first_error.get_or_insert(JobError::Panic { node, subtask, message });
                    self.set.abort_all();
                    continue;
                }
                Err(e) => (e.id(), Err(None)),
            };
            if let Err(Some(error)) = result {
                let (node, subtask) = self.names[&id].clone();
                let secondary_error = error.is_secondary();
                let err = JobError::Task { node, subtask, error };
                if secondary_error {
                    secondary.get_or_insert(err);
                } else if first_error.is_none() {
                    first_error = Some(err);
                    self.set.abort_all();
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
                    Err(e) => first_error = Some(JobError::Background(e)),
                }
            }
        }
        match first_error.or(secondary) {
            Some(e) => Err(e),
            None => Ok(final_checkpoint),
        }
    }
}
