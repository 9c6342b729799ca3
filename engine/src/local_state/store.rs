//! One instance's local store ([`LocalStore`]): an embedded LSM store ([fjall]) holding the
//! instance's host state under local keys (see `keys`), the keys changed since the last
//! checkpoint, and the disk use reserved from the owner's quota.

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fjall::config::{PartitioningPolicy, PinningPolicy};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, OwnedWriteBatch};
use weir_store::StateEntry;

use super::changes::LocalChanges;
use super::config::LocalStateConfig;
use super::error::{LocalStateError, store_error};
use super::keys::{entry_of, write_local_key};
use super::limits::{
    CACHE_BYTES, MAX_KEY_BYTES, MAX_NAME_BYTES, MAX_SCAN_BYTES, MAX_STATES, check_field, check_value,
};
use super::quota::{HeldFolder, QUOTA_STEP, retry_parked};
use crate::key_groups::key_group;

/// One field of a key and its value, as a scan returns them.
pub type FieldValue = (Vec<u8>, Vec<u8>);

/// Makes instance folders unique within the process (instances of one subtask overlap
/// while an attempt is torn down).
static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// One instance's local store.
pub struct LocalStore {
    db: Database,
    pub(super) data: Keyspace,
    /// Change marks spilled from `dirty`: `epoch u64 BE ‖ local key` → empty.
    pub(super) marks: Keyspace,
    /// The epoch of the changes since the last checkpoint (one per checkpoint).
    epoch: u64,
    /// Keys spilled to `marks` in this epoch.
    spilled: usize,
    names: Vec<String>,
    /// Local keys written or deleted since the last checkpoint and not yet spilled.
    dirty: HashSet<Vec<u8>>,
    /// Bytes of the keys in `dirty`.
    dirty_bytes: usize,
    max_parallelism: u32,
    owned: Range<u32>,
    /// Bytes written since the last quota check.
    unchecked: u64,
    /// The folder and the quota reserved for it, given back once the folder is gone. Last:
    /// it drops after the database handles above.
    pub(super) folder: Arc<HeldFolder>,
}

impl std::fmt::Debug for LocalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStore")
            .field("dir", &self.folder.dir)
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
        // Folders an earlier store could not remove keep their reservations until they go.
        retry_parked();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(store_error)?;
        let folder = Arc::new(HeldFolder::new(dir.clone(), config.quota.clone()));
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
            names: Vec::new(),
            dirty: HashSet::new(),
            dirty_bytes: 0,
            max_parallelism,
            owned,
            unchecked: 0,
            folder,
        })
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.folder.dir
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
        check_field(field)?;
        out.extend_from_slice(field);
        Ok(out)
    }

    fn key_prefix(&self, sid: u8, key: &[u8]) -> Result<Vec<u8>, LocalStateError> {
        let group = self.owned_group(key)?;
        let mut out = Vec::with_capacity(7 + key.len() + 16);
        write_local_key(&mut out, group, sid, key, &[]);
        Ok(out)
    }

    /// The key group of record key `key`, after the limit and ownership checks.
    pub(super) fn owned_group(&self, key: &[u8]) -> Result<u32, LocalStateError> {
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
                    check_value(v)?;
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
            check_field(start)?;
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
    /// use (plus a step ahead) is held as a reservation of the owner's quota, given back
    /// once the store's folder is gone (not when the store is dropped: a checkpoint's
    /// changes may keep the files a while longer).
    pub(super) fn before_write(&mut self, written: u64) -> Result<(), LocalStateError> {
        self.unchecked += written;
        let Some(quota) = self.folder.quota() else { return Ok(()) };
        let reserved = self.folder.reserved();
        if self.unchecked < QUOTA_STEP && reserved > 0 {
            return Ok(());
        }
        self.unchecked = 0;
        let need = self.disk_bytes().saturating_add(QUOTA_STEP);
        if need > reserved {
            let more = need - reserved;
            let refused = |e: weir_store::StoreError| {
                LocalStateError::Quota(format!(
                    "host state of this instance takes {} bytes on local disk: {e}",
                    need - QUOTA_STEP
                ))
            };
            quota.0.check_disk(more).map_err(refused)?;
            quota.0.reserve(more).map_err(refused)?;
            self.folder.set_reserved(need);
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
            _folder: self.folder.clone(),
        })
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
