//! A job as the server stores it: its status, its record, and the table that holds the
//! records (one row per job, keyed by tenant and id).

use redb::TableDefinition;
use serde::{Deserialize, Serialize};

use crate::plan::JobSpec;
use crate::savepoint::RestoreReport;
use crate::server::codec::{decode_record, encode_record};
use crate::server::error::ServerResult;

/// (tenant, job id) → job record (JSON).
pub(crate) const JOBS: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("weir.jobs");

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

impl JobStatus {
    /// The job runs (or is about to).
    pub fn is_active(self) -> bool {
        matches!(self, JobStatus::Running | JobStatus::Restarting | JobStatus::Stopping)
    }

    /// Its name in the API (`running`, `stopped`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Restarting => "restarting",
            JobStatus::Stopping => "stopping",
            JobStatus::Stopped => "stopped",
            JobStatus::Finished => "finished",
            JobStatus::Canceled => "canceled",
            JobStatus::Failed => "failed",
        }
    }

    /// The job counts against the tenant's job and subtask quotas.
    pub fn holds_quota(self) -> bool {
        self.is_active() || self == JobStatus::Stopped
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Its id (32 hex digits).
    pub id: String,
    /// The owning tenant.
    #[serde(skip)]
    pub tenant: String,
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
    /// The savepoint the job started from, and how its state was mapped.
    #[serde(default)]
    pub restored_from: Option<RestoreReport>,
    /// Server starts that resumed the job since it last showed progress (a completed
    /// checkpoint, or a minute of running); see `jobs/resume.rs`. Internal: not in the API.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unconfirmed_resumes: u32,
}

#[derive(Serialize, Deserialize)]
struct StoredJob {
    tenant: String,
    #[serde(flatten)]
    record: JobRecord,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A job record from its stored row.
pub(super) fn decode_job(bytes: &[u8]) -> ServerResult<JobRecord> {
    let stored: StoredJob = decode_record(bytes)?;
    let mut record = stored.record;
    record.tenant = stored.tenant;
    Ok(record)
}

/// The stored row of `record`, a job of `tenant`.
pub(super) fn encode_job(tenant: &str, record: &JobRecord) -> ServerResult<Vec<u8>> {
    encode_record(&StoredJob { tenant: tenant.to_string(), record: record.clone() })
}
