//! Jobs: their records, graphs and live figures.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::CheckpointView;
use crate::plan::{JobSpec, NodeKind, Partitioning};
use crate::savepoint::RestoreReport;
use crate::server;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Running (restored from its latest checkpoint if it had one).
    Running,
    /// Failed and waiting to restart from its latest checkpoint.
    Restarting,
    /// Asked to stop: taking its final checkpoint.
    Stopping,
    /// Stopped at a final checkpoint (or at once: its tenant was disabled); `restart` resumes it.
    Stopped,
    /// Its input ended and every output is committed.
    Finished,
    /// Cancelled; `restart` resumes it from its latest checkpoint.
    Canceled,
    /// Failed for good (restarts used up, or it cannot run); `error` says why.
    Failed,
}

impl From<server::jobs::JobStatus> for JobStatus {
    fn from(s: server::jobs::JobStatus) -> Self {
        use server::jobs::JobStatus as S;
        match s {
            S::Running => JobStatus::Running,
            S::Restarting => JobStatus::Restarting,
            S::Stopping => JobStatus::Stopping,
            S::Stopped => JobStatus::Stopped,
            S::Finished => JobStatus::Finished,
            S::Canceled => JobStatus::Canceled,
            S::Failed => JobStatus::Failed,
        }
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobRecord {
    /// Its id (32 hex digits).
    pub id: String,
    /// The spec's name.
    pub name: String,
    /// Current status.
    pub status: JobStatus,
    /// Why it failed (or the last failure it restarted after).
    pub error: Option<String>,
    /// Creation time, unix ms.
    pub created_ms: u64,
    /// When the current run started, unix ms.
    pub start_ms: Option<u64>,
    /// When it last ended, unix ms.
    pub end_ms: Option<u64>,
    /// Restarts after failures, over every run.
    pub restarts: u32,
    /// Total subtasks.
    pub subtasks: u32,
    /// The spec as submitted, with module references pinned to module ids.
    pub spec: JobSpec,
    /// The savepoint the job started from, and how its state was mapped (after an
    /// upgrade: the upgrade's savepoint, for the version that runs).
    #[serde(default)]
    pub restored_from: Option<RestoreReport>,
    /// The version of the spec it runs (see `GET /jobs/{id}/versions`).
    pub version: u32,
    /// The upgrade in progress.
    #[serde(default)]
    pub upgrade: Option<server::jobs::Upgrade>,
}

/// The answer to an upgrade: what the check before it found, and the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpgradeAnswer {
    /// Only the check was made.
    pub dry_run: bool,
    /// What the check found.
    pub check: server::jobs::UpgradeCheck,
    /// The job (on probation in its new version, or rolled back already).
    pub job: JobDetail,
}

impl From<server::jobs::JobRecord> for JobRecord {
    fn from(j: server::jobs::JobRecord) -> Self {
        JobRecord {
            id: j.id,
            name: j.name,
            status: j.status.into(),
            error: j.error,
            created_ms: j.created_ms,
            start_ms: j.start_ms,
            end_ms: j.end_ms,
            restarts: j.restarts,
            subtasks: j.subtasks,
            spec: j.spec,
            restored_from: j.restored_from,
            version: j.version,
            upgrade: j.upgrade,
        }
    }
}

/// Live figures of one subtask.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
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
    #[serde(default)]
    pub busy: f64,
    /// The worker that runs it (its id in `/api/v1/workers`); absent when it runs in the
    /// server's own process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<u64>,
    /// The event-time watermark it last sent downstream, unix ms; absent before the first
    /// (a source without event time sends none until its input ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_ms: Option<i64>,
    /// How far its event time is behind the clock (now − watermark), ms; absent without a
    /// watermark or once its input ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time_lag_ms: Option<i64>,
    /// Its output is idle (every input idle; a source: no data for its idle timeout).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
    /// A Kafka source's lag per partition it reads (records behind the partition's end).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kafka_lag: Vec<server::jobs::PartitionLag>,
}

impl From<server::jobs::SubtaskLive> for SubtaskLive {
    fn from(s: server::jobs::SubtaskLive) -> Self {
        SubtaskLive {
            subtask: s.subtask,
            records_in: s.records_in,
            records_out: s.records_out,
            records_in_per_second: s.records_in_per_second,
            records_out_per_second: s.records_out_per_second,
            backpressure: s.backpressure,
            busy: s.busy,
            worker: s.worker,
            watermark_ms: s.watermark_ms,
            event_time_lag_ms: s.event_time_lag_ms,
            idle: s.idle,
            kafka_lag: s.kafka_lag,
        }
    }
}

/// A node of the job's graph with its live figures (zero when the job is not running).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Vertex {
    /// Node id.
    pub id: String,
    /// Source, operator or sink.
    pub kind: NodeKind,
    /// Parallelism.
    pub parallelism: u32,
    /// Operators: the module id (or builtin name).
    pub module: Option<String>,
    /// Sources and sinks: the connector.
    pub connector: Option<String>,
    /// Records received in the current run.
    pub records_in: u64,
    /// Records emitted in the current run.
    pub records_out: u64,
    /// Records received per second.
    pub records_in_per_second: f64,
    /// Records emitted per second.
    pub records_out_per_second: f64,
    /// The largest share of the last second a subtask waited for room downstream (0 to 1).
    pub backpressure: f64,
    /// Per subtask.
    pub subtasks: Vec<SubtaskLive>,
}

/// An edge of the job's graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Edge {
    /// Upstream node id.
    pub from: String,
    /// Downstream node id.
    pub to: String,
    /// Partitioning.
    pub partitioning: Partitioning,
}

/// A job with its graph and live figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobDetail {
    /// The job.
    #[serde(flatten)]
    pub job: JobRecord,
    /// Its nodes.
    pub vertices: Vec<Vertex>,
    /// Its edges.
    pub edges: Vec<Edge>,
    /// Its latest completed checkpoint.
    pub latest_checkpoint: Option<CheckpointView>,
}

/// A job in the list, with its live throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobSummary {
    /// The job.
    #[serde(flatten)]
    pub job: JobRecord,
    /// Records its sources emitted per second, last second (0 when not running).
    pub source_records_per_second: f64,
    /// Records its sinks received per second, last second.
    pub sink_records_per_second: f64,
    /// The largest backpressure of any subtask (0 to 1).
    pub backpressure: f64,
}

/// Where a new job's state comes from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CreateQuery {
    /// Start from this savepoint of the caller: its state is mapped onto the job by node id
    /// (keyed state redistributed by key group when a parallelism changed; a changed module
    /// migrates it or is refused).
    pub from_savepoint: Option<String>,
    /// With `from_savepoint`: start even if some of the savepoint's state has no place in
    /// the job (it is dropped).
    pub allow_non_restored_state: Option<bool>,
}
