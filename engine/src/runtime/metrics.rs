//! Live counters of a running job, shared between its tasks and whoever reports on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use super::channel::ChannelStats;
use crate::record::Batch;

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
    /// Bytes of keys and values received.
    pub bytes_in: AtomicU64,
    /// Bytes of keys and values emitted.
    pub bytes_out: AtomicU64,
    /// Time spent on records: a source reading them, an operator's guest calls on them, a
    /// sink writing them.
    pub busy_ns: AtomicU64,
    /// The worker that runs the subtask (0: this process).
    pub worker: AtomicU64,
    /// Time the subtask waited for room downstream, as its worker reports it (a subtask
    /// here counts it on its channels instead).
    pub reported_blocked_ns: AtomicU64,
    /// The watermark the subtask last sent downstream (valid once `has_watermark`).
    pub watermark: AtomicI64,
    /// The subtask sent a watermark.
    pub has_watermark: AtomicBool,
    /// The subtask's output is marked idle (every input idle, or a source without data).
    pub idle: AtomicBool,
    /// A Kafka source's lag per partition: (topic, partition, records behind its end).
    pub lag: std::sync::Mutex<Vec<(String, i32, i64)>>,
    /// An operator's own counters (the guest's `metrics.counter-add`), the first
    /// [`GUEST_COUNTERS`] names, as of the last copy.
    pub guest_counters: std::sync::Mutex<Vec<(String, u64)>>,
}

/// Most of an operator instance's counters that are exported (by name order).
pub const GUEST_COUNTERS: usize = 32;

impl SubtaskMetrics {
    pub(crate) fn add_in(&self, batch: &Batch) {
        self.records_in.fetch_add(batch.len() as u64, Ordering::Relaxed);
        self.bytes_in.fetch_add(batch.byte_len() as u64, Ordering::Relaxed);
        self.batches_in.fetch_add(1, Ordering::Relaxed);
    }

    /// The subtask spent `since`'s time until now on records.
    pub(crate) fn add_busy(&self, since: std::time::Instant) {
        self.busy_ns.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// The subtask sent watermark `w` downstream.
    pub(crate) fn set_watermark(&self, w: i64) {
        self.watermark.store(w, Ordering::Relaxed);
        self.has_watermark.store(true, Ordering::Relaxed);
    }

    /// The subtask's output went idle, or active again.
    pub(crate) fn set_idle(&self, idle: bool) {
        self.idle.store(idle, Ordering::Relaxed);
    }

    /// The watermark it last sent, if any.
    pub fn watermark(&self) -> Option<i64> {
        self.has_watermark.load(Ordering::Relaxed).then(|| self.watermark.load(Ordering::Relaxed))
    }

    /// What its worker reports of it: its watermark, whether it is idle, a Kafka source's
    /// lag and the operator's own counters (at most [`GUEST_COUNTERS`] of them).
    pub(crate) fn report_event_time(
        &self,
        watermark: Option<i64>,
        idle: bool,
        mut lag: Vec<(String, i32, i64)>,
        mut counters: Vec<(String, u64)>,
    ) {
        if let Some(w) = watermark {
            self.set_watermark(w);
        }
        self.set_idle(idle);
        // A worker holds the cluster token, but its lists stay bounded here all the same.
        lag.truncate(4096);
        counters.truncate(GUEST_COUNTERS);
        if let Ok(mut l) = self.lag.lock() {
            *l = lag;
        }
        if let Ok(mut c) = self.guest_counters.lock() {
            *c = counters;
        }
    }

    pub(crate) fn add_out(&self, batch: &Batch) {
        if !batch.is_empty() {
            self.records_out.fetch_add(batch.len() as u64, Ordering::Relaxed);
            self.bytes_out.fetch_add(batch.byte_len() as u64, Ordering::Relaxed);
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
