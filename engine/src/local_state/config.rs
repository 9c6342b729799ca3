//! Where a job's local stores live and whose quota they use ([`LocalStateConfig`]), and the
//! clean-up of a job's folder.

use std::path::{Path, PathBuf};

use weir_store::Store;

use super::quota::LocalQuota;

/// Where an instance's store lives and what it may use.
#[derive(Debug, Clone)]
pub struct LocalStateConfig {
    /// The folder under which job folders are created (`<data-dir>/local-state`).
    pub base: PathBuf,
    /// The job id (a folder name: job ids are `[A-Za-z0-9_-]`).
    pub job: String,
    /// Whose storage quota the store's disk use is reserved from.
    pub quota: Option<LocalQuota>,
}

impl LocalStateConfig {
    /// Stores under the system's temporary folder, with no quota (runs without a data
    /// directory: benchmarks, plain tests).
    pub fn temporary(job: &str) -> Self {
        LocalStateConfig {
            base: std::env::temp_dir().join(format!("weir-local-state-{}", std::process::id())),
            job: job.to_string(),
            quota: None,
        }
    }

    /// Stores under `<folder of store's file>/local-state`, reserving the disk use from the
    /// quota of the job's owner (when the job has one).
    pub fn beside(store: &Store, job: &str) -> Self {
        let base = store.path().parent().unwrap_or(Path::new(".")).join("local-state");
        let owner = store.job_owner(job).ok().flatten();
        LocalStateConfig {
            base,
            job: job.to_string(),
            quota: owner.map(|owner| LocalQuota::of_owner(store, &owner)),
        }
    }
}

/// Deletes every local store of job `job` under `base` (left by a process that died: they
/// are working copies, the checkpoints hold the state).
pub fn remove_job_dirs(base: &Path, job: &str) {
    let _ = std::fs::remove_dir_all(base.join(job));
    // Folders of this process that could not be removed before may be gone now.
    super::quota::retry_parked();
}
