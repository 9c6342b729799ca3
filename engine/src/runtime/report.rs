//! What a finished run of a job reports: per node and per channel figures.

use std::time::Duration;

use crate::plan::NodeKind;

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
    /// Capacity in bytes of batches (`usize::MAX`: none, as on a remote channel).
    pub capacity_bytes: usize,
    /// Most messages queued at once.
    pub max_depth: usize,
    /// Most bytes of batches queued at once.
    pub max_bytes: usize,
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
    /// The job ended because it was stopped ([`super::RunEnv::stop`]); it resumes from its
    /// final checkpoint when run again.
    pub stopped: bool,
    /// The job ended because it was stopped with [`super::StopMode::Drain`]: its input ended
    /// early, the pipeline emptied, and it finished.
    pub drained: bool,
}

impl JobReport {
    /// The report of a job that had already finished: nothing ran.
    pub(crate) fn already_finished(final_checkpoint: u64) -> Self {
        JobReport {
            duration: Duration::ZERO,
            nodes: Vec::new(),
            channels: Vec::new(),
            max_batches_in_flight: 0,
            tasks: 0,
            restarts: 0,
            restored_from: Vec::new(),
            final_checkpoint: Some(final_checkpoint),
            already_finished: true,
            stopped: false,
            drained: false,
        }
    }

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
