//! The counters of a part's subtasks, as the part reports them to the controller (every
//! [`METRICS_EVERY`], and once more before `Ended`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::cluster::protocol::{AttemptId, SubtaskCounters, ToController};
use crate::plan::Plan;
use crate::runtime::attempt::Layout;
use crate::runtime::{JobMetrics, SubtaskMetrics};

/// How often a part reports its subtasks' counters.
const METRICS_EVERY: Duration = Duration::from_secs(1);

/// A task here: its index, its counters, and the (node, subtask) its channels name as their
/// sender.
type CountedTask = (u64, Arc<SubtaskMetrics>, (String, u32));

/// The counters of a part's subtasks, by task index.
#[derive(Clone)]
pub(super) struct Counters {
    tasks: Arc<Vec<CountedTask>>,
    metrics: Arc<JobMetrics>,
}

impl Counters {
    pub(super) fn new(plan: &Plan, layout: &Layout, metrics: Arc<JobMetrics>) -> Self {
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

    pub(super) fn now(&self) -> Vec<SubtaskCounters> {
        let relaxed = Ordering::Relaxed;
        self.tasks
            .iter()
            .map(|(task, m, sender)| SubtaskCounters {
                task: *task,
                records_in: m.records_in.load(relaxed),
                records_out: m.records_out.load(relaxed),
                batches_in: m.batches_in.load(relaxed),
                batches_out: m.batches_out.load(relaxed),
                bytes_in: m.bytes_in.load(relaxed),
                bytes_out: m.bytes_out.load(relaxed),
                busy_ns: m.busy_ns.load(relaxed),
                blocked_ns: self
                    .metrics
                    .channels
                    .iter()
                    .filter(|c| &c.from == sender)
                    .map(|c| c.blocked_ns.load(relaxed))
                    .sum(),
                watermark: m.watermark(),
                idle: m.idle.load(relaxed),
                kafka_lag: m.lag.lock().map(|l| l.clone()).unwrap_or_default(),
                guest_counters: m.guest_counters.lock().map(|c| c.clone()).unwrap_or_default(),
            })
            .collect()
    }

    /// Sends the counters to the controller every [`METRICS_EVERY`] until the session
    /// ends (or the task is aborted, when the part ends).
    pub(super) async fn report(self, outbox: mpsc::Sender<ToController>, attempt: AttemptId) {
        let mut every = tokio::time::interval(METRICS_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let message = ToController::Metrics { attempt: attempt.clone(), counters: self.now() };
            if outbox.send(message).await.is_err() {
                return;
            }
        }
    }
}
