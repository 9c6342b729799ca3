//! Where one instance's store goes and which key groups it owns ([`LocalPlace`]).

use std::ops::Range;

use super::config::LocalStateConfig;
use super::error::LocalStateError;
use super::store::LocalStore;

/// Where one instance's store goes and which key groups it owns: opens it on demand.
#[derive(Debug, Clone)]
pub struct LocalPlace {
    /// The job's folder and quota.
    pub config: LocalStateConfig,
    /// The operator's node id.
    pub operator: String,
    /// The subtask index.
    pub subtask: u32,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// The key groups of the subtask.
    pub owned: Range<u32>,
}

impl LocalPlace {
    /// Opens a new, empty store here.
    pub fn open(&self) -> Result<LocalStore, LocalStateError> {
        LocalStore::open(&self.config, &self.operator, self.subtask, self.max_parallelism, self.owned.clone())
    }
}
