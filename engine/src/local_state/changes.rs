//! The changes of one checkpoint ([`LocalChanges`]): the keys a store changed since the last
//! checkpoint and an MVCC snapshot to read their values from, turned into checkpoint
//! entries by key group off the task.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use fjall::{Database, Keyspace, Readable};
use weir_store::{ScopeDelta, StateEntry};

use super::error::{LocalStateError, store_error};
use super::keys::entry_of;
use super::quota::HeldFolder;

/// The changes of one checkpoint: changed keys and a snapshot to read their values from.
pub struct LocalChanges {
    pub(super) snapshot: fjall::Snapshot,
    pub(super) db: Database,
    pub(super) data: Keyspace,
    pub(super) marks: Keyspace,
    /// The epoch whose marks were spilled, and how many.
    pub(super) spilled: Option<(u64, usize)>,
    pub(super) names: Vec<String>,
    pub(super) keys: HashSet<Vec<u8>>,
    /// The store's folder: while changes are unread the files stay, and so does their
    /// reservation. Last: it drops after the database handles above.
    pub(super) _folder: Arc<HeldFolder>,
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
