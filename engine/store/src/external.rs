//! Chunk bytes kept outside the redb file: object storage, for a cluster whose workers
//! write checkpoint chunks where every worker can read them (docs/design.md §13).
//!
//! With [`Store::set_external_chunks`](crate::Store::set_external_chunks) set, chunks the
//! store writes go to the [`ExternalChunks`] (put before the transaction that records them
//! commits) instead of its piece table; the chunk index, the owners and the storage ledger
//! stay in redb, and `EXTERNAL_CHUNKS` records which chunks are external and their size, so
//! a tenant's quota counts them exactly as stored pieces. Chunks are read from the piece table
//! first and from the external store when they have no pieces, so a store that switched keeps
//! reading its older chunks. Deletions of external chunks happen after the transaction that
//! drops them from the index commits; a crash in between leaves objects that no index row
//! names, which [`CheckpointStorage::recover`](crate::CheckpointStorage::recover) deletes when
//! the job next starts (as it deletes objects put for a transaction that never committed).
//!
//! Savepoints follow the same rule: with an external store set, the chunks of a savepoint's
//! scopes are objects too (numbered per savepoint, sized in `SAVEPOINT_OBJECTS`); its
//! info, scope index and subtask blobs stay in redb, as a checkpoint's manifest and blobs
//! do. A savepoint is deleted in redb first and its objects after; objects of a savepoint
//! that no info row names are collected by
//! [`Store::sweep_savepoint_objects`](crate::Store::sweep_savepoint_objects).
//!
//! Sweeps follow the store's [`SweepPolicy`] ([`ExternalChunks::sweep_policy`]): an object
//! that no row names is deleted only once it is older than the grace period, and a dry run
//! only logs. The redb file may be an older backup that never knew of newer objects.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::StoreError;

/// How sweeps treat objects that no row of the store names (`chunk_store_sweep` in
/// `weir serve`'s config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SweepPolicy {
    /// Only objects last modified at least this long ago are deleted (default one hour,
    /// longer than any upload; 0 sweeps everything unnamed, for tests). A redb file restored
    /// from an older backup does not name what a newer one wrote since: the grace period
    /// keeps those objects through the sweeps at start.
    pub grace_ms: u64,
    /// Only log what would be deleted; delete nothing.
    pub dry_run: bool,
}

impl Default for SweepPolicy {
    fn default() -> Self {
        SweepPolicy { grace_ms: 60 * 60 * 1000, dry_run: false }
    }
}

impl SweepPolicy {
    /// Whether an unnamed object last modified at `modified` may be swept now.
    pub fn past_grace(&self, modified: SystemTime) -> bool {
        self.grace_ms == 0
            || SystemTime::now()
                .duration_since(modified)
                .is_ok_and(|age| age >= Duration::from_millis(self.grace_ms))
    }
}

/// Where a store keeps chunk bytes outside its file. Calls block (the store's callers are
/// on blocking threads).
pub trait ExternalChunks: Send + Sync + std::fmt::Debug {
    /// Stores chunk `id` of `job`, create-only: a retry of the same bytes succeeds, other
    /// bytes under a written id fail.
    fn put(&self, job: &str, id: u64, bytes: &[u8]) -> Result<(), StoreError>;
    /// Appends chunk `id` of `job` to `out`; `false` when there is none.
    fn get(&self, job: &str, id: u64, out: &mut Vec<u8>) -> Result<bool, StoreError>;
    /// Deletes chunks of `job` (those already gone are no error).
    fn delete(&self, job: &str, ids: &[u64]) -> Result<(), StoreError>;
    /// Every chunk id stored for `job`.
    fn list(&self, job: &str) -> Result<Vec<u64>, StoreError>;
    /// Stores chunk `n` of savepoint `savepoint`, create-only like [`ExternalChunks::put`].
    fn put_savepoint(&self, savepoint: &str, n: u64, bytes: &[u8]) -> Result<(), StoreError>;
    /// Appends chunk `n` of savepoint `savepoint` to `out`; `false` when there is none.
    fn get_savepoint(&self, savepoint: &str, n: u64, out: &mut Vec<u8>) -> Result<bool, StoreError>;
    /// Deletes every chunk of savepoint `savepoint` (none is no error).
    fn delete_savepoint(&self, savepoint: &str) -> Result<(), StoreError>;
    /// The savepoints that have chunks stored, each with the last modification of its
    /// newest object.
    fn list_savepoints(&self) -> Result<Vec<(String, SystemTime)>, StoreError>;
    /// How sweeps treat objects no row names (the default policy unless overridden).
    fn sweep_policy(&self) -> SweepPolicy {
        SweepPolicy::default()
    }
}
