//! Prometheus metrics of the server (`/metrics`): records in and out per operator, and per
//! job the checkpoint durations, sizes, alignment, failures and restarts.
//!
//! The recorder belongs to the server (it is not installed globally), so several servers
//! in one process keep their own figures.

use metrics::{Counter, Histogram, Key, Label, Metadata, Recorder as _};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

const META: Metadata<'static> = Metadata::new("weir", metrics::Level::INFO, Some("weir::server"));

/// The server's metrics.
pub struct Telemetry {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
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
        Telemetry { recorder, handle }
    }

    fn counter(&self, name: &'static str, labels: Vec<Label>) -> Counter {
        self.recorder.register_counter(&Key::from_parts(name, labels), &META)
    }

    fn histogram(&self, name: &'static str, labels: Vec<Label>) -> Histogram {
        self.recorder.register_histogram(&Key::from_parts(name, labels), &META)
    }

    /// Records processed by a node since the last call.
    pub fn records(&self, tenant: &str, job: &str, node: &str, records_in: u64, records_out: u64) {
        let labels = || {
            vec![
                Label::new("tenant", tenant.to_string()),
                Label::new("job", job.to_string()),
                Label::new("node", node.to_string()),
            ]
        };
        self.counter("weir_records_in_total", labels()).increment(records_in);
        self.counter("weir_records_out_total", labels()).increment(records_out);
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
    }

    /// A checkpoint failed.
    pub fn checkpoint_failed(&self, tenant: &str, job: &str) {
        self.counter("weir_checkpoints_failed_total", Self::job_labels(tenant, job)).increment(1);
    }

    /// A job restarted after a failure.
    pub fn restarted(&self, tenant: &str, job: &str) {
        self.counter("weir_job_restarts_total", Self::job_labels(tenant, job)).increment(1);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        self.handle.run_upkeep();
        self.handle.render()
    }
}
