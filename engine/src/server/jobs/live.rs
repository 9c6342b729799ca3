//! The live figures of running jobs: each job's sampled counters (rates, backpressure,
//! telemetry) and what the running subtasks do on each worker.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use super::JobManager;
use crate::plan::Plan;
use crate::runtime::{JobMetrics, RunEnv};
use crate::server::worker_load::WorkerLoad;

/// Live figures of one subtask.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SubtaskLive {
    /// Subtask index.
    pub subtask: u32,
    /// Records received in this run.
    pub records_in: u64,
    /// Records emitted in this run.
    pub records_out: u64,
    /// Records received per second (last second).
    pub records_in_per_second: f64,
    /// Records emitted per second (last second).
    pub records_out_per_second: f64,
    /// Share of the last second spent waiting for room downstream (0 to 1).
    pub backpressure: f64,
    /// Share of the last second spent on records (0 to 1): a source reading them, an
    /// operator's guest calls on them, a sink writing them.
    pub busy: f64,
    /// The worker that runs it (`None`: the server's own process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<u64>,
    /// The event-time watermark it last sent downstream, ms (`None`: none yet; a source
    /// without event time sends none until its input ends).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watermark_ms: Option<i64>,
    /// How far event time is behind the clock: now − watermark, ms (`None` without a
    /// watermark, or once the input ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_time_lag_ms: Option<i64>,
    /// Its output is idle: every input idle (a source: no data for its idle timeout).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
    /// A Kafka source's lag per partition it reads: records between its position and the
    /// partition's end as last fetched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kafka_lag: Vec<PartitionLag>,
}

/// How far a Kafka source subtask is behind one partition's end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct PartitionLag {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// Records between the subtask's position and the partition's end.
    pub lag: i64,
}

/// The latest sample of a running job's counters.
#[derive(Default)]
pub(super) struct Sample {
    at: Option<Instant>,
    metrics: Option<Arc<JobMetrics>>,
    /// (node index, subtask) → its totals at `at`.
    counters: HashMap<(usize, u32), Totals>,
    live: Vec<Vec<SubtaskLive>>,
    /// (node, reason, action) → records taken out, as last exported.
    taken_out: BTreeMap<(String, String, &'static str), u64>,
    /// (node index, subtask, name) → the guest's counter as last exported.
    guest_counters: HashMap<(usize, u32, String), u64>,
}

/// A subtask's counters as sampled.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    records_in: u64,
    records_out: u64,
    bytes_in: u64,
    bytes_out: u64,
    blocked_ns: u64,
    busy_ns: u64,
}

impl Totals {
    /// What grew since `earlier` (a counter that went back counts from 0).
    fn since(self, earlier: Totals) -> Totals {
        Totals {
            records_in: self.records_in.saturating_sub(earlier.records_in),
            records_out: self.records_out.saturating_sub(earlier.records_out),
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
            bytes_out: self.bytes_out.saturating_sub(earlier.bytes_out),
            blocked_ns: self.blocked_ns.saturating_sub(earlier.blocked_ns),
            busy_ns: self.busy_ns.saturating_sub(earlier.busy_ns),
        }
    }
}

impl JobManager {
    /// Samples the live counters of a running job: rates, backpressure and telemetry.
    pub(super) fn sample(&self, tenant: &str, id: &str, env: &RunEnv, plan: &Plan, sample: &Mutex<Sample>) {
        let Ok(mut s) = sample.lock() else { return };
        // Records taken out (dropped, skipped, dead-lettered): counted over the job's run.
        for (key, count) in env.dead_letters.counts() {
            let previous = s.taken_out.insert(key.clone(), count).unwrap_or(0);
            let (node, reason, action) = &key;
            self.inner.telemetry.taken_out(tenant, id, node, reason, action, count.saturating_sub(previous));
        }
        let Some(metrics) = env.live_metrics() else { return };
        let now = Instant::now();
        if !s.metrics.as_ref().is_some_and(|m| Arc::ptr_eq(m, &metrics)) {
            // A new attempt: its counters start from zero.
            s.counters.clear();
            s.guest_counters.clear();
            s.at = None;
        }
        let elapsed = s.at.map(|t| now.duration_since(t).as_secs_f64().max(1e-3));
        let mut blocked: HashMap<(&str, u32), u64> = HashMap::new();
        for c in &metrics.channels {
            *blocked.entry((c.from.0.as_str(), c.from.1)).or_default() +=
                c.blocked_ns.load(Ordering::Relaxed);
        }
        let rate = |x: u64| elapsed.map(|e| x as f64 / e).unwrap_or(0.0);
        let share = |ns: u64| elapsed.map(|e| (ns as f64 / 1e9 / e).clamp(0.0, 1.0)).unwrap_or(0.0);
        let mut live = Vec::with_capacity(plan.nodes.len());
        for (i, node) in plan.nodes.iter().enumerate() {
            let mut subtasks = Vec::new();
            let mut node_delta = Totals::default();
            for (k, m) in metrics.subtasks.get(i).into_iter().flatten().enumerate() {
                let k = k as u32;
                let current = Totals {
                    records_in: m.records_in.load(Ordering::Relaxed),
                    records_out: m.records_out.load(Ordering::Relaxed),
                    bytes_in: m.bytes_in.load(Ordering::Relaxed),
                    bytes_out: m.bytes_out.load(Ordering::Relaxed),
                    blocked_ns: blocked.get(&(node.id.as_str(), k)).copied().unwrap_or(0)
                        + m.reported_blocked_ns.load(Ordering::Relaxed),
                    busy_ns: m.busy_ns.load(Ordering::Relaxed),
                };
                let d = current.since(s.counters.insert((i, k), current).unwrap_or_default());
                node_delta.records_in += d.records_in;
                node_delta.records_out += d.records_out;
                node_delta.bytes_in += d.bytes_in;
                node_delta.bytes_out += d.bytes_out;
                subtasks.push(SubtaskLive {
                    subtask: k,
                    records_in: current.records_in,
                    records_out: current.records_out,
                    records_in_per_second: rate(d.records_in),
                    records_out_per_second: rate(d.records_out),
                    backpressure: share(d.blocked_ns),
                    busy: share(d.busy_ns),
                    worker: Some(m.worker.load(Ordering::Relaxed)).filter(|w| *w != 0),
                    watermark_ms: m.watermark().filter(|w| *w > i64::MIN),
                    event_time_lag_ms: m
                        .watermark()
                        .filter(|w| *w > i64::MIN && *w < i64::MAX)
                        .map(|w| (crate::clock::unix_ms() as i64).saturating_sub(w)),
                    idle: m.idle.load(Ordering::Relaxed),
                    kafka_lag: m
                        .lag
                        .lock()
                        .map(|l| {
                            l.iter()
                                .map(|(topic, partition, lag)| PartitionLag {
                                    topic: topic.clone(),
                                    partition: *partition,
                                    lag: *lag,
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                });
            }
            let records = (node_delta.records_in, node_delta.records_out);
            self.inner.telemetry.records(
                tenant,
                id,
                &node.id,
                records,
                (node_delta.bytes_in, node_delta.bytes_out),
            );
            // The guests' own counters, summed per node; a restarted instance counts from 0.
            let mut added: BTreeMap<String, u64> = BTreeMap::new();
            for (k, m) in metrics.subtasks.get(i).into_iter().flatten().enumerate() {
                let Ok(counters) = m.guest_counters.lock() else { continue };
                for (name, value) in counters.iter() {
                    let previous = s.guest_counters.insert((i, k as u32, name.clone()), *value).unwrap_or(0);
                    let delta = if *value >= previous { value - previous } else { *value };
                    *added.entry(name.clone()).or_default() += delta;
                }
            }
            for (name, delta) in added {
                self.inner.telemetry.guest_counter(tenant, id, &node.id, &name, delta);
            }
            for sub in &subtasks {
                if elapsed.is_some() {
                    self.inner.telemetry.subtask_time(
                        tenant,
                        id,
                        &node.id,
                        sub.subtask,
                        sub.busy,
                        sub.backpressure,
                    );
                }
                self.inner.telemetry.event_time(
                    tenant,
                    id,
                    &node.id,
                    sub.subtask,
                    sub.watermark_ms,
                    sub.event_time_lag_ms,
                );
                for l in &sub.kafka_lag {
                    self.inner.telemetry.kafka_lag(tenant, id, &node.id, &l.topic, l.partition, l.lag);
                }
            }
            live.push(subtasks);
        }
        s.live = live;
        s.at = Some(now);
        s.metrics = Some(metrics);
    }

    /// Live figures of a running job, per node (spec order) and subtask; `None` when it is
    /// not running.
    pub fn live(&self, id: &str) -> Option<Vec<Vec<SubtaskLive>>> {
        let running = self.inner.running.lock().ok()?;
        let r = running.get(id)?;
        let s = r.sample.lock().ok()?;
        Some(s.live.clone())
    }

    /// What the running jobs' subtasks do on each worker, from their latest samples (keyed
    /// by worker id; subtasks in this process are not counted).
    pub fn worker_loads(&self) -> BTreeMap<u64, WorkerLoad> {
        let mut loads: BTreeMap<u64, WorkerLoad> = BTreeMap::new();
        let Ok(running) = self.inner.running.lock() else { return loads };
        for r in running.values() {
            let Ok(s) = r.sample.lock() else { continue };
            for sub in s.live.iter().flatten() {
                let Some(worker) = sub.worker else { continue };
                loads.entry(worker).or_default().add(
                    sub.records_in_per_second,
                    sub.records_out_per_second,
                    sub.backpressure,
                );
            }
        }
        loads
    }
}
