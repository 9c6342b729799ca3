//! Prometheus metrics of the server (`/metrics`): records in and out per operator, and per
//! job the checkpoint durations, sizes, alignment, in-flight data persisted by unaligned
//! checkpoints (and how many were unaligned, or switched to it), failures and restarts. Each scrape adds
//! figures read at that moment, present from the server's first scrape on: the process
//! (`process_*`, see [`process`]), `weir_build_info`, `weir_uptime_seconds`, and per tenant
//! its usage and limit of each quota (`weir_tenant_usage` / `weir_tenant_quota`, label
//! `quota`: a fixed list, so the series are tenants × quotas) and `weir_tenant_disabled`.
//!
//! The recorder belongs to the server (it is not installed globally), so several servers
//! in one process keep their own figures.

pub mod process;
mod scrape;

use std::time::Instant;

use metrics::{Counter, Histogram, Key, Label, Metadata, Recorder as _};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

const META: Metadata<'static> = Metadata::new("weir", metrics::Level::INFO, Some("weir::server"));

/// The server's metrics.
pub struct Telemetry {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    started: Instant,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

impl Default for Telemetry {
    fn default() -> Self {
        Self::new()
    }
}

impl Telemetry {
    /// Empty metrics.
    pub fn new() -> Self {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Suffix("seconds".into()),
                &[0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0],
            )
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Suffix("bytes".into()),
                    &[1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10],
                )
            })
            .expect("non-empty buckets")
            .build_recorder();
        let handle = recorder.handle();
        Telemetry { recorder, handle, started: Instant::now() }
    }

    fn counter(&self, name: &'static str, labels: Vec<Label>) -> Counter {
        self.recorder.register_counter(&Key::from_parts(name, labels), &META)
    }

    fn histogram(&self, name: &'static str, labels: Vec<Label>) -> Histogram {
        self.recorder.register_histogram(&Key::from_parts(name, labels), &META)
    }

    /// Records and bytes a node received and emitted since the last call.
    pub fn records(&self, tenant: &str, job: &str, node: &str, records: (u64, u64), bytes: (u64, u64)) {
        let labels = || {
            vec![
                Label::new("tenant", tenant.to_string()),
                Label::new("job", job.to_string()),
                Label::new("node", node.to_string()),
            ]
        };
        self.counter("weir_records_in_total", labels()).increment(records.0);
        self.counter("weir_records_out_total", labels()).increment(records.1);
        self.counter("weir_bytes_in_total", labels()).increment(bytes.0);
        self.counter("weir_bytes_out_total", labels()).increment(bytes.1);
    }

    /// A subtask's share of the last sampling interval spent on records (`busy`) and
    /// waiting for room downstream (`backpressured`), each 0 to 1.
    pub fn subtask_time(
        &self,
        tenant: &str,
        job: &str,
        node: &str,
        subtask: u32,
        busy: f64,
        backpressured: f64,
    ) {
        let mut labels = Self::job_labels(tenant, job);
        labels.push(Label::new("node", node.to_string()));
        labels.push(Label::new("subtask", subtask.to_string()));
        for (name, share) in
            [("weir_subtask_busy_ratio", busy), ("weir_subtask_backpressured_ratio", backpressured)]
        {
            self.recorder.register_gauge(&Key::from_parts(name, labels.clone()), &META).set(share);
        }
    }

    fn job_labels(tenant: &str, job: &str) -> Vec<Label> {
        vec![Label::new("tenant", tenant.to_string()), Label::new("job", job.to_string())]
    }

    /// A checkpoint completed.
    pub fn checkpoint_completed(&self, tenant: &str, job: &str, meta: &weir_store::CheckpointMeta) {
        let l = || Self::job_labels(tenant, job);
        self.counter("weir_checkpoints_completed_total", l()).increment(1);
        self.histogram("weir_checkpoint_duration_seconds", l())
            .record(meta.duration_ms.unwrap_or_default() / 1e3);
        self.histogram("weir_checkpoint_size_bytes", l()).record(meta.state_size as f64);
        self.histogram("weir_checkpoint_full_size_bytes", l()).record(meta.full_size as f64);
        let alignment = meta.subtasks.iter().map(|s| s.alignment_ms).fold(0.0, f64::max);
        self.histogram("weir_checkpoint_alignment_seconds", l()).record(alignment / 1e3);
        let bytes: u64 = meta.subtasks.iter().map(|s| s.alignment_bytes).sum();
        self.counter("weir_checkpoint_alignment_bytes_total", l()).increment(bytes);
        let persisted: u64 = meta.subtasks.iter().map(|s| s.persisted_in_flight_bytes).sum();
        self.histogram("weir_checkpoint_persisted_in_flight_bytes", l()).record(persisted as f64);
        self.counter("weir_checkpoint_persisted_in_flight_bytes_total", l()).increment(persisted);
        // Counted with 0 too, so that a job's series exist before its first unaligned one.
        let switched = meta.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some());
        let unaligned = switched || meta.subtasks.iter().any(|s| s.unaligned);
        self.counter("weir_checkpoints_unaligned_total", l()).increment(u64::from(unaligned));
        self.counter("weir_checkpoints_switched_to_unaligned_total", l()).increment(u64::from(switched));
    }

    /// A checkpoint failed.
    pub fn checkpoint_failed(&self, tenant: &str, job: &str) {
        self.counter("weir_checkpoints_failed_total", Self::job_labels(tenant, job)).increment(1);
    }

    /// A job restarted after a failure.
    /// Counted per failure class (`user_code`, `bad_data`, `external`, `platform`,
    /// `unknown`); the delay it waits is the job's `weir_job_restart_delay_seconds`.
    pub fn restarted(&self, tenant: &str, job: &str, class: &str, delay_ms: u64) {
        let mut labels = Self::job_labels(tenant, job);
        labels.push(Label::new("class", class.to_string()));
        self.counter("weir_job_restarts_total", labels).increment(1);
        self.recorder
            .register_gauge(
                &Key::from_parts("weir_job_restart_delay_seconds", Self::job_labels(tenant, job)),
                &META,
            )
            .set(delay_ms as f64 / 1e3);
    }

    /// Records a node took out of the stream: `action` `dead_letter`, `drop` or `skip`;
    /// `reason` as the dead letters give it (`bad_json`, `guest_trap`, ...).
    pub fn taken_out(&self, tenant: &str, job: &str, node: &str, reason: &str, action: &str, n: u64) {
        let mut labels = Self::job_labels(tenant, job);
        labels.push(Label::new("node", node.to_string()));
        labels.push(Label::new("reason", reason.to_string()));
        let name =
            if action == "dead_letter" { "weir_dead_letters_total" } else { "weir_dropped_records_total" };
        if action != "dead_letter" {
            labels.push(Label::new("action", action.to_string()));
        }
        self.counter(name, labels).increment(n);
    }

    /// A subtask's event time: the watermark it last sent (ms) and how far it is behind
    /// the clock (s), while it has one.
    pub fn event_time(
        &self,
        tenant: &str,
        job: &str,
        node: &str,
        subtask: u32,
        watermark_ms: Option<i64>,
        lag_ms: Option<i64>,
    ) {
        let labels = || {
            let mut l = Self::job_labels(tenant, job);
            l.push(Label::new("node", node.to_string()));
            l.push(Label::new("subtask", subtask.to_string()));
            l
        };
        if let Some(w) = watermark_ms.filter(|w| *w < i64::MAX) {
            self.recorder
                .register_gauge(&Key::from_parts("weir_watermark_milliseconds", labels()), &META)
                .set(w as f64);
        }
        if let Some(lag) = lag_ms {
            self.recorder
                .register_gauge(&Key::from_parts("weir_event_time_lag_seconds", labels()), &META)
                .set(lag as f64 / 1e3);
        }
    }

    /// An operator's own counter (the guest's `metrics.counter-add`), summed over its
    /// subtasks: `name` is the guest's (at most 128 bytes, 32 names per instance).
    pub fn guest_counter(&self, tenant: &str, job: &str, node: &str, name: &str, delta: u64) {
        let mut labels = Self::job_labels(tenant, job);
        labels.push(Label::new("node", node.to_string()));
        labels.push(Label::new("name", name.to_string()));
        self.counter("weir_operator_counter_total", labels).increment(delta);
    }

    /// `n` of an operator's log lines kept in the job's log at `level`, or (`None`) dropped:
    /// over an instance's rate, or over the lines held before they were written or shipped.
    pub fn log_lines(&self, tenant: &str, job: &str, node: &str, level: Option<&str>, n: u64) {
        let mut labels = Self::job_labels(tenant, job);
        labels.push(Label::new("node", node.to_string()));
        let name = match level {
            Some(level) => {
                labels.push(Label::new("level", level.to_string()));
                "weir_operator_log_lines_total"
            }
            None => "weir_operator_log_lines_dropped_total",
        };
        self.counter(name, labels).increment(n);
    }

    /// A Kafka source's lag on one partition: records between its position and the end.
    pub fn kafka_lag(&self, tenant: &str, job: &str, node: &str, topic: &str, partition: i32, lag: i64) {
        let mut labels = Self::job_labels(tenant, job);
        labels.push(Label::new("node", node.to_string()));
        labels.push(Label::new("topic", topic.to_string()));
        labels.push(Label::new("partition", partition.to_string()));
        self.recorder
            .register_gauge(&Key::from_parts("weir_kafka_consumer_lag_records", labels), &META)
            .set(lag as f64);
    }

    /// The Prometheus text exposition of the recorded metrics.
    pub fn render(&self) -> String {
        self.handle.run_upkeep();
        self.handle.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the series `name{tenant="t",job="j"}` in `text`.
    fn value(text: &str, name: &str) -> f64 {
        let prefix = format!("{name}{{tenant=\"t\",job=\"j\"}} ");
        let line = text.lines().find_map(|l| l.strip_prefix(prefix.as_str()));
        line.unwrap_or_else(|| panic!("no {prefix} in\n{text}")).parse().expect("a number")
    }

    #[test]
    fn unaligned_checkpoints_and_their_persisted_in_flight_bytes_are_counted() {
        use weir_store::{CheckpointMeta, SubtaskStats};
        let t = Telemetry::new();
        let sub = |persisted, unaligned, switched| SubtaskStats {
            unaligned,
            persisted_in_flight_bytes: persisted,
            switched_to_unaligned_ms: switched,
            ..SubtaskStats::default()
        };
        let meta = |subtasks| CheckpointMeta { subtasks, ..CheckpointMeta::new("j", 1, 1) };
        t.checkpoint_completed("t", "j", &meta(vec![sub(0, false, None), sub(0, false, None)]));
        let text = t.render();
        assert_eq!(value(&text, "weir_checkpoints_unaligned_total"), 0.0, "{text}");
        assert_eq!(value(&text, "weir_checkpoints_switched_to_unaligned_total"), 0.0, "{text}");
        t.checkpoint_completed("t", "j", &meta(vec![sub(1500, true, None), sub(500, true, None)]));
        t.checkpoint_completed("t", "j", &meta(vec![sub(0, false, None), sub(300, true, Some(9))]));
        let text = t.render();
        assert_eq!(value(&text, "weir_checkpoints_completed_total"), 3.0, "{text}");
        assert_eq!(value(&text, "weir_checkpoints_unaligned_total"), 2.0, "{text}");
        assert_eq!(value(&text, "weir_checkpoints_switched_to_unaligned_total"), 1.0, "{text}");
        assert_eq!(value(&text, "weir_checkpoint_persisted_in_flight_bytes_total"), 2300.0, "{text}");
        assert_eq!(value(&text, "weir_checkpoint_persisted_in_flight_bytes_sum"), 2300.0, "{text}");
        assert_eq!(value(&text, "weir_checkpoint_persisted_in_flight_bytes_count"), 3.0, "{text}");
    }
}
