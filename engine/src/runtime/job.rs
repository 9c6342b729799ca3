//! Running a planned job: channels, one tokio task per subtask, failure handling and the
//! final report.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use super::channel::{Receiver, Sender, channel};
use super::error::{JobError, TaskError};
use super::input_gate::InputGate;
use super::metrics::{JobMetrics, SubtaskMetrics};
use super::output::{EdgeOutput, Output};
use super::task::{run_operator, run_sink, run_source};
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

/// Runs `plan` to completion. The first failing subtask stops the job; its error is
/// returned (errors that merely follow from it, like a closed channel, are not).
pub async fn run_job(plan: &Plan) -> Result<JobReport, JobError> {
    let start = Instant::now();
    let settings = &plan.spec.settings;
    let limits = InstanceLimits {
        memory_bytes: usize::try_from(settings.memory_limit_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
        cpu_limit_ms: settings.cpu_limit_ms,
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

    let mut tasks: JoinSet<Result<(), TaskError>> = JoinSet::new();
    let mut task_names: HashMap<tokio::task::Id, (String, u32)> = HashMap::new();
    for (index, node) in plan.nodes.iter().enumerate() {
        for s in 0..node.parallelism {
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
            let handle = match &node.body {
                NodeBody::Source(config) => {
                    let source = config.open(s, node.parallelism).map_err(|e| JobError::Task {
                        node: node.id.clone(),
                        subtask: s,
                        error: e.into(),
                    })?;
                    let delay = config.out_of_orderness_ms;
                    tasks.spawn(run_source(source, delay, output, sub_metrics, job_metrics))
                }
                NodeBody::Sink(config) => {
                    let sink = config.open(s, node.parallelism).map_err(|e| JobError::Task {
                        node: node.id.clone(),
                        subtask: s,
                        error: e.into(),
                    })?;
                    tasks.spawn(run_sink(sink, gate, sub_metrics, job_metrics))
                }
                NodeBody::Operator { module, config } => {
                    let range = key_group_range(s, node.parallelism, settings.max_parallelism);
                    let context = Context {
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
                    tasks.spawn(async move {
                        let instance = OperatorInstance::new(&module, &id, s, limits).await?;
                        run_operator(instance, context, gate, output, sub_metrics).await
                    })
                }
            };
            task_names.insert(handle.id(), (node.id.clone(), s));
        }
    }
    let task_count = task_names.len();

    let mut first_error: Option<JobError> = None;
    let mut secondary: Option<JobError> = None;
    while let Some(joined) = tasks.join_next_with_id().await {
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
    if let Some(e) = first_error.or(secondary) {
        return Err(e);
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
    })
}
