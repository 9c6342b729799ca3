//! Live counters of a running job, shared between its tasks and whoever reports on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::channel::ChannelStats;

/// Counters of one subtask.
#[derive(Debug, Default)]
pub struct SubtaskMetrics {
    /// Records received.
    pub records_in: AtomicU64,
    /// Records emitted.
    pub records_out: AtomicU64,
    /// Batches received.
    pub batches_in: AtomicU64,
    /// Batches emitted.
    pub batches_out: AtomicU64,
    /// The worker that runs the subtask (0: this process).
    pub worker: AtomicU64,
    /// Time the subtask waited for room downstream, as its worker reports it (a subtask
    /// here counts it on its channels instead).
    pub reported_blocked_ns: AtomicU64,
}

impl SubtaskMetrics {
    pub(crate) fn add_in(&self, records: usize) {
        self.records_in.fetch_add(records as u64, Ordering::Relaxed);
        self.batches_in.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_out(&self, records: usize) {
        if records > 0 {
            self.records_out.fetch_add(records as u64, Ordering::Relaxed);
            self.batches_out.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Counters of a whole job.
#[derive(Debug, Default)]
pub struct JobMetrics {
    /// Per node (spec order), per subtask.
    pub subtasks: Vec<Vec<Arc<SubtaskMetrics>>>,
    /// Every channel.
    pub channels: Vec<Arc<ChannelStats>>,
    /// Batches produced by all sources.
    pub source_batches: AtomicU64,
    /// Batches received by all sinks.
    pub sink_batches: AtomicU64,
    /// Largest difference ever seen by a sink between the two above: the batches in flight.
    pub max_batches_in_flight: AtomicU64,
}

impl JobMetrics {
    pub(crate) fn sink_received(&self) {
        let sunk = self.sink_batches.fetch_add(1, Ordering::Relaxed) + 1;
        let produced = self.source_batches.load(Ordering::Relaxed);
        self.max_batches_in_flight.fetch_max(produced.saturating_sub(sunk), Ordering::Relaxed);
    }
}
