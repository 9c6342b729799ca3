//! Keyed state kept by the host on local disk (the WIT import `keyed-state`): one embedded
//! LSM store ([fjall]) per operator instance, so a subtask's state is bounded by the disk
//! and its tenant's storage quota rather than by the guest's memory (Flink's RocksDB
//! backend).
//!
//! The local store is a working copy, never the state of record: checkpoints are. At every
//! barrier the instance hands its writer the keys changed since the last snapshot together
//! with an MVCC snapshot of the store ([`LocalStore::checkpoint`], O(1) on the task); the
//! writer reads their values off the task ([`LocalChanges::into_scopes`]) and stores them in
//! the normal chains as entries of the state `@host/<name>`, key `len ‖ record key ‖ field`,
//! in the scope of the record key's key group. So retention, savepoints, rescale by key
//! group, export/import and inspection treat them as any keyed state; a restore puts them
//! back into a fresh local store ([`LocalRestorer`]) before `open`. A store left behind by a
//! process that died is deleted when the job runs again ([`remove_job_dirs`]).
//!
//! Local key layout: `key group (u32 BE) ‖ state id (u8) ‖ key length (u16 BE) ‖ key ‖
//! field`, so one key's fields are contiguous and ordered (a scan is a range read).

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fjall::config::{PartitioningPolicy, PinningPolicy};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, OwnedWriteBatch, Readable};
use weir_store::{ScopeDelta, StateEntry, Store};

use crate::key_groups::key_group;

mod restore;
#[cfg(test)]
mod tests;

pub use restore::LocalRestorer;

/// State names of host state in checkpoints start with this (`@host/counts`).
pub const HOST_STATE_PREFIX: &str = "@host/";
/// Most states one instance may open.
pub const MAX_STATES: usize = 16;
/// Longest state name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Longest record key, in bytes.
pub const MAX_KEY_BYTES: usize = 4096;
/// Longest field, in bytes.
pub const MAX_FIELD_BYTES: usize = 4096;
/// Largest value, in bytes.
pub const MAX_VALUE_BYTES: usize = 16 << 20;
/// Most field and value bytes one `scan` answer holds.
pub const MAX_SCAN_BYTES: usize = 4 << 20;
/// The block cache of one instance's store: the bounded in-memory part of the state.
pub const CACHE_BYTES: u64 = 64 << 20;
/// The store's disk use is checked against the quota every this many written bytes, and
/// reserved from it in steps of this size.
const QUOTA_STEP: u64 = 16 << 20;

/// One field of a key and its value, as a scan returns them.
pub type FieldValue = (Vec<u8>, Vec<u8>);

/// Whether `state` names host state in a checkpoint.
pub fn is_host_state(state: &str) -> bool {
    state.starts_with(HOST_STATE_PREFIX)
}

/// The checkpoint key of `field` of `key`: `len (u16 BE) ‖ key ‖ field`.
pub fn chain_key(key: &[u8], field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + key.len() + field.len());
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(field);
    out
}

/// Splits a checkpoint key of host state into (record key, field).
pub fn split_chain_key(k: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u16::from_be_bytes(k.get(..2)?.try_into().ok()?) as usize;
    let key = k.get(2..2 + len)?;
    Some((key, &k[2 + len..]))
}

/// The record key whose key group the checkpoint entry (`state`, `key`) belongs to: the
/// key itself for guest state, the record key inside it for host state (the whole key when
/// it does not parse, so a damaged entry is caught by the key-group checks).
pub fn record_key<'a>(state: &str, key: &'a [u8]) -> &'a [u8] {
    if is_host_state(state) { split_chain_key(key).map_or(key, |(k, _)| k) } else { key }
}

/// Why a request on host state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalStateError {
    /// A name, key, field, value or the number of states is past its limit.
    #[error("{0}")]
    Limit(String),
    /// The key belongs to a key group the instance does not own.
    #[error("the key belongs to key group {group}, which is not one of this subtask's ({start}..{end})")]
    ForeignKey {
        /// The key's group.
        group: u32,
        /// The subtask's first group.
        start: u32,
        /// One past its last group.
        end: u32,
    },
    /// The tenant's storage quota or the disk's free-space floor.
    #[error("{0}")]
    Quota(String),
    /// The local store failed (I/O).
    #[error("the local state store failed: {0}")]
    Store(String),
}

fn store_error(e: impl std::fmt::Display) -> LocalStateError {
    LocalStateError::Store(e.to_string())
}

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

/// Deletes every local store of job `job` under `base` (left by a process that died: they
/// are working copies, the checkpoints hold the state).
pub fn remove_job_dirs(base: &Path, job: &str) {
    let _ = std::fs::remove_dir_all(base.join(job));
}

/// The storage quota the store's disk use is reserved from.
#[derive(Clone, Debug)]
pub struct LocalQuota(Arc<dyn QuotaLedger>);

impl LocalQuota {
    /// `owner`'s quota in `store`, with the floor of `store`'s disk.
    pub fn of_owner(store: &Store, owner: &str) -> Self {
        LocalQuota(Arc::new(OwnerQuota { store: store.clone(), owner: owner.to_string() }))
    }

    /// The quota `ledger` keeps.
    pub fn new(ledger: Arc<dyn QuotaLedger>) -> Self {
        LocalQuota(ledger)
    }
}

/// Where a local store's disk use is checked and reserved: the job owner's quota in the
/// controller's store ([`LocalQuota::of_owner`]), or, on a cluster worker, the controller's
/// answer over the session and the worker's own disk floor.
pub trait QuotaLedger: Send + Sync + std::fmt::Debug {
    /// Fails when writing `bytes` more would pass the local disk's free-space floor.
    fn check_disk(&self, bytes: u64) -> Result<(), weir_store::StoreError>;
    /// Reserves `bytes` of the owner's quota; fails with the quota's error.
    fn reserve(&self, bytes: u64) -> Result<(), weir_store::StoreError>;
    /// Gives back `bytes` reserved before.
    fn release(&self, bytes: u64);
}

/// The owner's quota in a store (on the machine that holds the store).
struct OwnerQuota {
    store: Store,
    owner: String,
}

impl std::fmt::Debug for OwnerQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerQuota").field("owner", &self.owner).finish_non_exhaustive()
    }
}

impl QuotaLedger for OwnerQuota {
    fn check_disk(&self, bytes: u64) -> Result<(), weir_store::StoreError> {
        self.store.check_disk(bytes)
    }

    fn reserve(&self, bytes: u64) -> Result<(), weir_store::StoreError> {
        self.store.reserve(&self.owner, bytes)
    }

    fn release(&self, bytes: u64) {
        let _ = self.store.release(&self.owner, bytes);
    }
}

/// Makes instance folders unique within the process (instances of one subtask overlap
/// while an attempt is torn down).
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// One instance's local store.
pub struct LocalStore {
    db: Database,
    data: Keyspace,
    /// Change marks spilled from `dirty`: `epoch u64 BE ‖ local key` → empty.
    marks: Keyspace,
    /// The epoch of the changes since the last checkpoint (one per checkpoint).
    epoch: u64,
    /// Keys spilled to `marks` in this epoch.
    spilled: usize,
    dir: PathBuf,
    names: Vec<String>,
    /// Local keys written or deleted since the last checkpoint and not yet spilled.
    dirty: HashSet<Vec<u8>>,
    /// Bytes of the keys in `dirty`.
    dirty_bytes: usize,
    max_parallelism: u32,
    owned: Range<u32>,
    quota: Option<LocalQuota>,
    /// Bytes reserved from the quota.
    reserved: u64,
    /// Bytes written since the last quota check.
    unchecked: u64,
}

impl std::fmt::Debug for LocalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStore")
            .field("dir", &self.dir)
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl LocalStore {
    /// Opens a new, empty store for subtask `subtask` of `operator`, owning the key groups
    /// `owned` of `max_parallelism`. The folder goes when the store is dropped.
    pub fn open(
        config: &LocalStateConfig,
        operator: &str,
        subtask: u32,
        max_parallelism: u32,
        owned: Range<u32>,
    ) -> Result<Self, LocalStateError> {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let dir = config.base.join(&config.job).join(format!("{operator}-{subtask}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(store_error)?;
        if let Some(q) = &config.quota {
            q.0.check_disk(QUOTA_STEP).map_err(|e| LocalStateError::Quota(e.to_string()))?;
        }
        let db = Database::builder(&dir)
            .cache_size(CACHE_BYTES)
            .manual_journal_persist(true)
            .worker_threads(1)
            .temporary(true)
            .open()
            .map_err(store_error)?;
        // Filter and index blocks pinned at every level: with fjall's default (L0 only) a
        // large table's filter block (several MB past ~10 M keys) is larger than a block-cache
        // shard admits and was re-read on every lookup (docs/benchmarks.md, "State larger than
        // memory"). Pinned blocks live outside the cache: ~1.3 bytes a key of filter.
        let data = db
            .keyspace("state", || {
                KeyspaceCreateOptions::default()
                    .filter_block_pinning_policy(PinningPolicy::all(true))
                    .index_block_pinning_policy(PinningPolicy::all(true))
                    // Partitioned from L1 on: tables a restore ingests are never pinned
                    // (fjall places them in L1 unpinned), and a partitioned filter or index
                    // is read a small partition at a time through the cache.
                    .filter_block_partitioning_policy(PartitioningPolicy::new([false, true]))
                    .index_block_partitioning_policy(PartitioningPolicy::new([false, true]))
            })
            .map_err(store_error)?;
        let marks = db.keyspace("changed", KeyspaceCreateOptions::default).map_err(store_error)?;
        Ok(LocalStore {
            db,
            data,
            marks,
            epoch: 0,
            spilled: 0,
            dir,
            names: Vec::new(),
            dirty: HashSet::new(),
            dirty_bytes: 0,
            max_parallelism,
            owned,
            quota: config.quota.clone(),
            reserved: 0,
            unchecked: 0,
        })
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The id of state `name`, opened (created) if new.
    pub fn state_id(&mut self, name: &str) -> Result<u8, LocalStateError> {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            return Ok(i as u8);
        }
        if name.is_empty() || name.len() > MAX_NAME_BYTES {
            return Err(LocalStateError::Limit(format!(
                "a host state name is 1 to {MAX_NAME_BYTES} bytes; got {} bytes",
                name.len()
            )));
        }
        if self.names.len() >= MAX_STATES {
            return Err(LocalStateError::Limit(format!(
                "an instance may open at most {MAX_STATES} host states; opening `{name}` would be one more"
            )));
        }
        self.names.push(name.to_string());
        Ok((self.names.len() - 1) as u8)
    }

    /// The names of the states, by id.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    fn check_state(&self, state: u32) -> Result<u8, LocalStateError> {
        if (state as usize) < self.names.len() {
            Ok(state as u8)
        } else {
            Err(LocalStateError::Limit(format!(
                "host state handle {state} was never opened (this instance opened {})",
                self.names.len()
            )))
        }
    }

    /// The local key of `field` of `key` in state `state`, after the limit and ownership
    /// checks.
    fn local_key(&self, state: u32, key: &[u8], field: &[u8]) -> Result<Vec<u8>, LocalStateError> {
        let sid = self.check_state(state)?;
        let mut out = self.key_prefix(sid, key)?;
        Self::check_field(field)?;
        out.extend_from_slice(field);
        Ok(out)
    }

    fn key_prefix(&self, sid: u8, key: &[u8]) -> Result<Vec<u8>, LocalStateError> {
        let group = self.owned_group(key)?;
        let mut out = Vec::with_capacity(7 + key.len() + 16);
        Self::write_key(&mut out, group, sid, key, &[]);
        Ok(out)
    }

    /// The key group of record key `key`, after the limit and ownership checks.
    fn owned_group(&self, key: &[u8]) -> Result<u32, LocalStateError> {
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Err(LocalStateError::Limit(format!(
                "host state needs a record key of 1 to {MAX_KEY_BYTES} bytes; got {} bytes",
                key.len()
            )));
        }
        let group = key_group(key, self.max_parallelism);
        if !self.owned.contains(&group) {
            return Err(LocalStateError::ForeignKey { group, start: self.owned.start, end: self.owned.end });
        }
        Ok(group)
    }

    /// Appends the local key of (`sid`, `key`, `field`) in key group `group` to `out`.
    fn write_key(out: &mut Vec<u8>, group: u32, sid: u8, key: &[u8], field: &[u8]) {
        out.extend_from_slice(&group.to_be_bytes());
        out.push(sid);
        out.extend_from_slice(&(key.len() as u16).to_be_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(field);
    }

    fn check_field(field: &[u8]) -> Result<(), LocalStateError> {
        if field.len() > MAX_FIELD_BYTES {
            return Err(LocalStateError::Limit(format!(
                "a host state field is at most {MAX_FIELD_BYTES} bytes; got {}",
                field.len()
            )));
        }
        Ok(())
    }

    fn check_value(value: &[u8]) -> Result<(), LocalStateError> {
        if value.len() > MAX_VALUE_BYTES {
            return Err(LocalStateError::Limit(format!(
                "a host state value is at most {MAX_VALUE_BYTES} bytes; got {}",
                value.len()
            )));
        }
        Ok(())
    }

    /// The value of `field` of `key`.
    pub fn get(&self, state: u32, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, LocalStateError> {
        let k = self.local_key(state, key, field)?;
        Ok(self.data.get(&k).map_err(store_error)?.map(|v| v.to_vec()))
    }

    /// The values of many (key, field) lookups, in order.
    pub fn multi_get<'a>(
        &self,
        state: u32,
        lookups: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<Vec<Option<Vec<u8>>>, LocalStateError> {
        lookups.into_iter().map(|(key, field)| self.get(state, key, field)).collect()
    }

    fn mark(&mut self, k: &[u8]) {
        if !self.dirty.contains(k) {
            // The key and what a hash set entry costs besides it.
            self.dirty_bytes += k.len() + 48;
            self.dirty.insert(k.to_vec());
        }
    }

    /// Applies changes `(key, field, value or delete)` in order, as one write batch.
    pub fn apply<'a>(
        &mut self,
        state: u32,
        changes: impl IntoIterator<Item = (&'a [u8], &'a [u8], Option<&'a [u8]>)>,
    ) -> Result<(), LocalStateError> {
        let mut batch = self.db.batch();
        let mut written = 0u64;
        let mut keys = Vec::new();
        for (key, field, value) in changes {
            let k = self.local_key(state, key, field)?;
            match value {
                Some(v) => {
                    Self::check_value(v)?;
                    written += (k.len() + v.len()) as u64;
                    batch.insert(&self.data, k.as_slice(), v);
                }
                None => {
                    written += k.len() as u64;
                    batch.remove(&self.data, k.as_slice());
                }
            }
            keys.push(k);
        }
        self.commit(batch, written)?;
        for k in &keys {
            self.mark(k);
        }
        Ok(())
    }

    fn commit(&mut self, batch: OwnedWriteBatch, written: u64) -> Result<(), LocalStateError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.before_write(written)?;
        batch.commit().map_err(store_error)
    }

    /// Sets `field` of `key` to `value`.
    pub fn put(&mut self, state: u32, key: &[u8], field: &[u8], value: &[u8]) -> Result<(), LocalStateError> {
        self.apply(state, [(key, field, Some(value))])
    }

    /// Deletes `field` of `key`.
    pub fn delete(&mut self, state: u32, key: &[u8], field: &[u8]) -> Result<(), LocalStateError> {
        self.apply(state, [(key, field, None)])
    }

    /// Deletes every field of `key`.
    pub fn clear(&mut self, state: u32, key: &[u8]) -> Result<(), LocalStateError> {
        let sid = self.check_state(state)?;
        let prefix = self.key_prefix(sid, key)?;
        let mut batch = self.db.batch();
        let mut keys = Vec::new();
        for guard in self.data.prefix(&prefix) {
            let k = guard.key().map_err(store_error)?;
            batch.remove(&self.data, k.clone());
            keys.push(k.to_vec());
        }
        let written = keys.iter().map(|k| k.len() as u64).sum();
        self.commit(batch, written)?;
        for k in &keys {
            self.mark(k);
        }
        Ok(())
    }

    /// The fields of `key` from `start` on (inclusive), in byte order: at most `limit`, and
    /// at most [`MAX_SCAN_BYTES`] of fields and values (at least one field).
    pub fn scan(
        &self,
        state: u32,
        key: &[u8],
        start: Option<&[u8]>,
        limit: u32,
    ) -> Result<Vec<FieldValue>, LocalStateError> {
        let sid = self.check_state(state)?;
        let prefix = self.key_prefix(sid, key)?;
        let mut from = prefix.clone();
        if let Some(start) = start {
            Self::check_field(start)?;
            from.extend_from_slice(start);
        }
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for guard in self.data.range(from..) {
            if out.len() >= limit as usize {
                break;
            }
            let (k, v) = guard.into_inner().map_err(store_error)?;
            let Some(field) = k.strip_prefix(prefix.as_slice()) else { break };
            bytes += field.len() + v.len();
            if bytes > MAX_SCAN_BYTES && !out.is_empty() {
                break;
            }
            out.push((field.to_vec(), v.to_vec()));
        }
        Ok(out)
    }

    /// Bytes of the changed keys held in memory (host memory the guest's writes hold until
    /// the next barrier or [`LocalStore::spill`]).
    pub fn dirty_bytes(&self) -> usize {
        self.dirty_bytes
    }

    /// Moves the changed keys held in memory to the store's change marks (on disk, read back
    /// by the checkpoint's [`LocalChanges::into_scopes`]): host memory per instance stays
    /// bounded however many keys change between two barriers, say while a long checkpoint
    /// is written.
    pub fn spill(&mut self) -> Result<(), LocalStateError> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        let mut batch = self.db.batch();
        let mut written = 0u64;
        let prefix = self.epoch.to_be_bytes();
        for k in self.dirty.drain() {
            let mut mark = Vec::with_capacity(8 + k.len());
            mark.extend_from_slice(&prefix);
            mark.extend_from_slice(&k);
            written += mark.len() as u64;
            batch.insert(&self.marks, mark, []);
            self.spilled += 1;
        }
        self.dirty_bytes = 0;
        self.commit(batch, written)
    }

    /// Bytes the store takes on disk (tables and journal) and in its write buffer.
    pub fn disk_bytes(&self) -> u64 {
        self.db.disk_space().unwrap_or(0).saturating_add(self.db.write_buffer_size())
    }

    /// Checks the quota and the disk floor every [`QUOTA_STEP`] written bytes: the store's
    /// use (plus a step ahead) is held as a reservation of the owner's quota.
    fn before_write(&mut self, written: u64) -> Result<(), LocalStateError> {
        self.unchecked += written;
        let Some(quota) = &self.quota else { return Ok(()) };
        if self.unchecked < QUOTA_STEP && self.reserved > 0 {
            return Ok(());
        }
        self.unchecked = 0;
        let need = self.disk_bytes().saturating_add(QUOTA_STEP);
        if need > self.reserved {
            let more = need - self.reserved;
            let refused = |e: weir_store::StoreError| {
                LocalStateError::Quota(format!(
                    "host state of this instance takes {} bytes on local disk: {e}",
                    need - QUOTA_STEP
                ))
            };
            quota.0.check_disk(more).map_err(refused)?;
            quota.0.reserve(more).map_err(refused)?;
            self.reserved = need;
        }
        Ok(())
    }

    /// The sync part of a checkpoint: the keys changed since the last one and a consistent
    /// snapshot of the store to read their values from (`None` when nothing changed). O(1):
    /// the values are read by the snapshot writer, off the task.
    pub fn checkpoint(&mut self) -> Option<LocalChanges> {
        if self.dirty.is_empty() && self.spilled == 0 {
            return None;
        }
        self.dirty_bytes = 0;
        let spilled = (self.spilled > 0).then_some((self.epoch, self.spilled));
        self.epoch += 1;
        self.spilled = 0;
        Some(LocalChanges {
            snapshot: self.db.snapshot(),
            db: self.db.clone(),
            data: self.data.clone(),
            marks: self.marks.clone(),
            spilled,
            names: self.names.clone(),
            keys: std::mem::take(&mut self.dirty),
        })
    }

    /// A restorer that fills this store from checkpoint entries.
    pub fn restorer(self) -> LocalRestorer {
        LocalRestorer::new(self)
    }

    /// Every live entry as checkpoint entries by scope (tests, inspection of a live store).
    pub fn all_entries(&self) -> Result<BTreeMap<u32, Vec<StateEntry>>, LocalStateError> {
        let mut out: BTreeMap<u32, Vec<StateEntry>> = BTreeMap::new();
        for guard in self.data.iter() {
            let (k, v) = guard.into_inner().map_err(store_error)?;
            let (group, entry) = entry_of(&self.names, &k, Some(v.to_vec()))?;
            out.entry(group).or_default().push(entry);
        }
        Ok(out)
    }
}

impl Drop for LocalStore {
    fn drop(&mut self) {
        if let Some(q) = &self.quota
            && self.reserved > 0
        {
            q.0.release(self.reserved);
        }
    }
}

/// A checkpoint entry of the local key `k` (and its key group).
fn entry_of(
    names: &[String],
    k: &[u8],
    value: Option<Vec<u8>>,
) -> Result<(u32, StateEntry), LocalStateError> {
    let bad = || LocalStateError::Store(format!("a malformed local key of {} bytes", k.len()));
    let group = u32::from_be_bytes(k.get(..4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
    let sid = *k.get(4).ok_or_else(bad)? as usize;
    let len = u16::from_be_bytes(k.get(5..7).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
    let key = k.get(7..7 + len).ok_or_else(bad)?;
    let field = &k[7 + len..];
    let name = names.get(sid).ok_or_else(bad)?;
    Ok((group, StateEntry { state: format!("{HOST_STATE_PREFIX}{name}"), key: chain_key(key, field), value }))
}

/// The changes of one checkpoint: changed keys and a snapshot to read their values from.
pub struct LocalChanges {
    snapshot: fjall::Snapshot,
    db: Database,
    data: Keyspace,
    marks: Keyspace,
    /// The epoch whose marks were spilled, and how many.
    spilled: Option<(u64, usize)>,
    names: Vec<String>,
    keys: HashSet<Vec<u8>>,
}

impl std::fmt::Debug for LocalChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalChanges").field("keys", &self.keys.len()).finish_non_exhaustive()
    }
}

impl LocalChanges {
    /// How many keys changed (at most: a key spilled and changed again counts twice).
    pub fn len(&self) -> usize {
        self.keys.len() + self.spilled.map_or(0, |(_, n)| n)
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The changes as checkpoint entries by key group: a put of the value each key has in
    /// the snapshot, or a delete. Blocking (reads the store).
    pub fn into_scopes(self) -> Result<Vec<ScopeDelta>, LocalStateError> {
        let mut keys: Vec<Vec<u8>> = self.keys.into_iter().collect();
        if let Some((epoch, _)) = self.spilled {
            // The spilled marks of the epoch, read from the snapshot, then deleted: the
            // changes they name are in the entries returned (and the writer keeps those until
            // a checkpoint holding them completes).
            let mut done = self.db.batch();
            for guard in self.snapshot.prefix(&self.marks, epoch.to_be_bytes()) {
                let mark = guard.key().map_err(store_error)?;
                keys.push(mark[8..].to_vec());
                done.remove(&self.marks, mark);
            }
            done.commit().map_err(store_error)?;
        }
        keys.sort_unstable();
        keys.dedup();
        let mut scopes: BTreeMap<u32, Vec<StateEntry>> = BTreeMap::new();
        for k in keys {
            let value = self.snapshot.get(&self.data, &k).map_err(store_error)?.map(|v| v.to_vec());
            let (group, entry) = entry_of(&self.names, &k, value)?;
            scopes.entry(group).or_default().push(entry);
        }
        Ok(scopes.into_iter().map(|(scope, entries)| ScopeDelta { scope, entries }).collect())
    }
}
