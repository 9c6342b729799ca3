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
    /// The version of the spec it runs (1 at creation; each upgrade adds one).
    #[serde(default = "first_version")]
    pub version: u32,
    /// Its versions, oldest first (the latest [`MAX_VERSIONS`]; empty for a job stored
    /// before versions were kept, whose spec is version 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<JobVersion>,
    /// The upgrade in progress, stored at each step so that a server that goes down in the
    /// middle of one finishes it (or rolls it back) when it starts.
    #[serde(default)]
    pub upgrade: Option<Upgrade>,
}

fn first_version() -> u32 {
    1
}

/// Versions a job keeps in its history (older ones are dropped; their numbers are not reused).
pub const MAX_VERSIONS: usize = 20;

/// One version of a job: the spec it ran and the modules its operators ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobVersion {
    /// Its number (1, 2, ...).
    pub version: u32,
    /// When it was submitted, unix ms.
    pub created_ms: u64,
    /// The spec, with module references pinned to module ids.
    pub spec: JobSpec,
    /// Per operator: the module it runs (its id is the SHA-256 digest of its bytes).
    pub modules: Vec<VersionModule>,
    /// The savepoint it started from (an upgrade's; none for the first version).
    pub savepoint: Option<String>,
    /// What became of it.
    pub outcome: VersionOutcome,
    /// Why it was refused, rolled back or abandoned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The module of one operator in a version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VersionModule {
    /// The operator's node id.
    pub node: String,
    /// The module id: the hex SHA-256 digest of its bytes.
    pub digest: String,
    /// The name it was uploaded under (when it was known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What became of a version of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VersionOutcome {
    /// The job runs it (or ran it last).
    Current,
    /// An upgrade to it is in progress.
    Upgrading,
    /// A later version replaced it.
    Replaced,
    /// It failed to restore or failed on probation; the job went back to the version before.
    RolledBack,
    /// The upgrade stopped before anything switched (its savepoint failed, or the server
    /// went down before it stopped the old version); the old version runs on.
    Abandoned,
}

/// Where an upgrade is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpgradePhase {
    /// The old version is stopping at its savepoint.
    Stopping,
    /// The new version's state is being written from the savepoint and it is starting.
    Restoring,
    /// The new version runs on probation (no checkpoint until the grace period ends).
    Probation,
    /// The new version failed: the old one is being restored from the same savepoint.
    RollingBack,
}

/// An upgrade in progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Upgrade {
    /// The version it upgrades from.
    pub from_version: u32,
    /// The version it upgrades to.
    pub to_version: u32,
    /// Where it is.
    pub phase: UpgradePhase,
    /// The savepoint the old version stops at (once taken; both versions start from it).
    pub savepoint: Option<String>,
    /// The probation after the new version started, ms.
    pub grace_period_ms: u64,
    /// When the probation ends (unix ms), once it began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probation_until_ms: Option<u64>,
    /// Whether state without a place in the new version is dropped.
    pub allow_non_restored_state: bool,
    /// When it began, unix ms.
    pub started_ms: u64,
    /// Why it is rolling back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_reason: Option<String>,
    /// The checkpoint the new version started from (written from the savepoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_checkpoint: Option<u64>,
}

impl JobRecord {
    /// Its versions, with version 1 made up from the spec for a job stored before versions
    /// were kept.
    pub fn history(&self) -> Vec<JobVersion> {
        if !self.versions.is_empty() {
            return self.versions.clone();
        }
        vec![JobVersion {
            version: self.version,
            created_ms: self.created_ms,
            spec: self.spec.clone(),
            modules: Vec::new(),
            savepoint: self.restored_from.as_ref().map(|r| r.savepoint.clone()),
            outcome: VersionOutcome::Current,
            reason: None,
        }]
    }

    /// The spec of version `version`, if the history still holds it.
    pub fn version_spec(&self, version: u32) -> Option<&JobSpec> {
        if self.versions.is_empty() && version == self.version {
            return Some(&self.spec);
        }
        self.versions.iter().find(|v| v.version == version).map(|v| &v.spec)
    }

    /// Sets the outcome (and reason) of version `version` in the history.
    pub fn set_outcome(&mut self, version: u32, outcome: VersionOutcome, reason: Option<String>) {
        if self.versions.is_empty() {
            self.versions = self.history();
        }
        if let Some(v) = self.versions.iter_mut().find(|v| v.version == version) {
            v.outcome = outcome;
            if reason.is_some() {
                v.reason = reason;
            }
        }
    }

    /// Adds `version` to the history, dropping the oldest beyond [`MAX_VERSIONS`] (never the
    /// current one).
    pub fn push_version(&mut self, version: JobVersion) {
        if self.versions.is_empty() {
            self.versions = self.history();
        }
        self.versions.push(version);
        while self.versions.len() > MAX_VERSIONS {
            let current = self.version;
            match self.versions.iter().position(|v| v.version != current) {
                Some(i) => {
                    self.versions.remove(i);
                }
                None => break,
            }
        }
    }
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
