//! [`Store`]: the handle on the redb file, its tables and shared helpers.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redb::{
    Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition,
    TransactionError, WriteTransaction,
};

use crate::checkpoint::CheckpointMeta;
use crate::disk::{DiskFloor, DiskSpace};
use crate::error::StoreError;

/// Chunks are split so that no stored value is much larger than this.
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 4 << 20;

/// Named counters: [`NEXT_CHUNK_ID`], [`NEXT_BODY_ID`].
pub(crate) const COUNTERS: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.counters");
/// The next chunk id to allocate (ids start at 1 and are never reused).
pub(crate) const NEXT_CHUNK_ID: &str = "next_chunk_id";
/// The next id of a stream chunk body ([`BODIES`]; from 1, never reused).
pub(crate) const NEXT_BODY_ID: &str = "next_log_body_id";
/// job → the largest checkpoint id ever used.
pub(crate) const JOB_LAST_ID: TableDefinition<'_, &str, u64> =
    TableDefinition::new("weir.job_last_checkpoint");
/// (job, checkpoint id) → checkpoint meta (MessagePack with field names). Kept forever.
pub(crate) const CHECKPOINTS: TableDefinition<'_, (&str, u64), &[u8]> =
    TableDefinition::new("weir.checkpoints");
/// (job, checkpoint id) of every in-progress checkpoint.
pub(crate) const IN_PROGRESS: TableDefinition<'_, (&str, u64), ()> =
    TableDefinition::new("weir.checkpoints_in_progress");
/// (job, checkpoint id) → manifest, for completed checkpoints that retention keeps.
pub(crate) const MANIFESTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("weir.manifests");
/// (job, chunk id, piece) → up to [`CHUNK_PIECE_BYTES`] of an encoded chunk, pieces in order.
///
/// A chunk is stored in pieces that fit a 4 KiB B-tree page each: redb gives a value larger
/// than a page a page of its own whose size is rounded up to a power of two, which wasted up
/// to half of every chunk (1.64x the changed bytes on disk at 76 KiB chunks, measured).
pub(crate) const CHUNKS: TableDefinition<'_, (&str, u64, u32), &[u8]> =
    TableDefinition::new("weir.chunk_pieces");

/// Bytes of one stored chunk piece: a 4 KiB leaf page less room for the page header, the
/// key (job ids are at most a few dozen bytes) and the entry offsets.
pub(crate) const CHUNK_PIECE_BYTES: usize = 4096 - 256;
/// (job, chunk id) → (owning checkpoint id, size in bytes).
pub(crate) const CHUNK_INDEX: TableDefinition<'_, (&str, u64), (u64, u64)> =
    TableDefinition::new("weir.chunk_index");
/// (job, owning checkpoint id, chunk id) → size in bytes.
pub(crate) const CHUNK_OWNERS: TableDefinition<'_, (&str, u64, u64), u64> =
    TableDefinition::new("weir.chunk_owners");
/// stream name → partition count.
pub(crate) const STREAMS: TableDefinition<'_, &str, u32> = TableDefinition::new("weir.streams");
/// (stream, partition, first offset) → a chunk of consecutive records, or a reference to one
/// in [`BODIES`] (`stream::chunk`).
pub(crate) const LOG: TableDefinition<'_, (&str, u32, u64), &[u8]> = TableDefinition::new("weir.log_chunks");
/// (stream, body id) → a chunk that exactly one log or staged reference points to: staged
/// chunks are written here once and committed by moving their reference.
pub(crate) const BODIES: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("weir.log_bodies");
/// (stream, partition) → next offset.
pub(crate) const LOG_ENDS: TableDefinition<'_, (&str, u32), u64> = TableDefinition::new("weir.log_ends");
/// (stream, writer, epoch, sequence, partition) → a chunk of records of that partition, or a
/// reference to one in [`BODIES`].
pub(crate) const STAGED: TableDefinition<'_, (&str, &str, u64, u64, u32), &[u8]> =
    TableDefinition::new("weir.log_staged_chunks");

/// savepoint id → [`SavepointInfo`](crate::SavepointInfo) (MessagePack with field names).
pub(crate) const SAVEPOINTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("weir.savepoints");
/// (owner, savepoint id) of every savepoint, so that listing an owner's savepoints does not
/// scan the others.
pub(crate) const SAVEPOINT_OWNERS: TableDefinition<'_, (&str, &str), ()> =
    TableDefinition::new("weir.savepoint_owners");
/// (savepoint id, operator, scope) → (chunks, live entries) of every scope that holds entries.
pub(crate) const SAVEPOINT_SCOPES: TableDefinition<'_, (&str, &str, u32), (u32, u64)> =
    TableDefinition::new("weir.savepoint_scopes");
/// (savepoint id, operator, scope, chunk, piece) → up to [`CHUNK_PIECE_BYTES`] of an encoded
/// chunk of the scope's live entries (sorted by state and key); chunks and pieces count from 0.
pub(crate) const SAVEPOINT_PIECES: TableDefinition<'_, (&str, &str, u32, u32, u32), &[u8]> =
    TableDefinition::new("weir.savepoint_pieces");
/// (savepoint id, operator, subtask) → the subtask's opaque blob.
pub(crate) const SAVEPOINT_BLOBS: TableDefinition<'_, (&str, &str, u32), &[u8]> =
    TableDefinition::new("weir.savepoint_blobs");

/// The store: one redb file holding checkpoints (metadata and history), incremental state
/// chunks and the stream log. Cheap to clone; every clone shares the database, and
/// [`Store::reopen`] swaps it for all of them.
///
/// Methods block (redb does I/O and serialises write transactions): call them from
/// `spawn_blocking` or a dedicated thread in async code.
#[derive(Clone)]
pub struct Store {
    pub(crate) handle: Arc<Handle>,
    pub(crate) path: Arc<PathBuf>,
    pub(crate) max_chunk_bytes: usize,
    /// Set by [`Store::for_this_open`]: the only generation of the database this clone may use.
    pinned: Option<u64>,
}

/// What every clone of a [`Store`] shares.
pub(crate) struct Handle {
    /// The open database and its generation (counting opens from 0); `None` from the moment
    /// a reopen closes it until the file opens again (every call then fails with
    /// [`StoreError::Reopening`]).
    db: RwLock<Option<(u64, Arc<Database>)>>,
    /// The generation the next open gets.
    next_generation: std::sync::atomic::AtomicU64,
    /// Held for the whole of a reopen: one at a time.
    reopening: Mutex<()>,
    /// The free-space floor of the file's filesystem.
    floor: DiskFloor,
    /// Where chunk bytes go instead of the piece table ([`Store::set_external_chunks`]).
    external: RwLock<Option<Arc<dyn crate::ExternalChunks>>>,
}

/// How long a reopen waits for the callers still holding the old database to let it go
/// (they hold it only to begin a transaction) before it closes it anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("max_chunk_bytes", &self.max_chunk_bytes)
            .finish_non_exhaustive()
    }
}

/// Opens the database at `path` (creating it if `create`) and its tables, migrating a stream
/// log of the one-record-per-key format (`stream::migrate`).
fn open_database(path: &Path, create: bool) -> Result<Database, StoreError> {
    let db = if create { Database::create(path) } else { Database::open(path) };
    let db = db.map_err(|source| StoreError::Open { path: path.to_owned(), source })?;
    let txn = db.begin_write()?;
    txn.open_table(COUNTERS)?;
    txn.open_table(JOB_LAST_ID)?;
    txn.open_table(CHECKPOINTS)?;
    txn.open_table(IN_PROGRESS)?;
    txn.open_table(MANIFESTS)?;
    txn.open_table(CHUNKS)?;
    txn.open_table(CHUNK_INDEX)?;
    txn.open_table(CHUNK_OWNERS)?;
    txn.open_table(crate::external::EXTERNAL_CHUNKS)?;
    txn.open_table(crate::external::SAVEPOINT_OBJECTS)?;
    txn.open_table(STREAMS)?;
    txn.open_table(LOG)?;
    txn.open_table(LOG_ENDS)?;
    txn.open_table(STAGED)?;
    txn.open_table(BODIES)?;
    txn.open_table(SAVEPOINTS)?;
    txn.open_table(SAVEPOINT_OWNERS)?;
    txn.open_table(SAVEPOINT_SCOPES)?;
    txn.open_table(SAVEPOINT_PIECES)?;
    txn.open_table(SAVEPOINT_BLOBS)?;
    crate::usage::open_tables(&txn)?;
    crate::outbox::open_tables(&txn)?;
    txn.open_table(crate::checkpoint::summary::SUMMARIES)?;
    crate::stream::migrate(&txn)?;
    txn.commit()?;
    Ok(db)
}

impl Store {
    /// Opens the store file at `path`, creating it and its tables if needed. A file can be open
    /// only once per process: clone the `Store` to share it.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let db = open_database(path, true)?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        Ok(Store {
            handle: Arc::new(Handle {
                db: RwLock::new(Some((0, Arc::new(db)))),
                next_generation: std::sync::atomic::AtomicU64::new(1),
                reopening: Mutex::new(()),
                floor: DiskFloor::new(dir),
                external: RwLock::new(None),
            }),
            path: Arc::new(path.to_owned()),
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
            pinned: None,
        })
    }

    /// The largest chunk this store writes (see [`Store::with_max_chunk_bytes`]).
    pub fn max_chunk_bytes(&self) -> usize {
        self.max_chunk_bytes
    }

    /// The same store, splitting state chunks at about `bytes` (default
    /// [`DEFAULT_MAX_CHUNK_BYTES`]); small values are for tests.
    pub fn with_max_chunk_bytes(mut self, bytes: usize) -> Store {
        self.max_chunk_bytes = bytes.max(1);
        self
    }

    /// The underlying redb database (for tables of other subsystems). Hold it only to begin
    /// a transaction: a reopen waits for it. Fails with [`StoreError::Reopening`] while the
    /// store is being reopened.
    pub fn database(&self) -> Result<Arc<Database>, StoreError> {
        match &*self.handle.db.read().unwrap_or_else(PoisonError::into_inner) {
            Some((generation, db)) if self.pinned.is_none_or(|p| p == *generation) => Ok(db.clone()),
            _ => Err(StoreError::Reopening),
        }
    }

    /// This store, bound to the database open now: after a [`Store::reopen`] every call of
    /// the returned clone (and of its clones) fails with [`StoreError::Reopening`]. For a job's
    /// run, which a reopen ends: a write it had queued must not reach the reopened file,
    /// where a new run resumes from the latest checkpoint.
    pub fn for_this_open(&self) -> Store {
        let current = self.handle.db.read().unwrap_or_else(PoisonError::into_inner).as_ref().map(|(g, _)| *g);
        Store { pinned: Some(current.unwrap_or(u64::MAX)), ..self.clone() }
    }

    /// Checks that the database is usable: fails with the storage error when an I/O error
    /// latched redb (every later call fails the same way until [`Store::reopen`]), or with
    /// [`StoreError::Reopening`]. Cheap: no I/O, and it does not wait for a writer.
    pub fn probe(&self) -> Result<(), StoreError> {
        match self.database()?.try_begin_write() {
            Ok(txn) => Ok(txn.abort()?),
            Err(TransactionError::WouldBlock) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Closes the database and opens the file again, for every clone: the way out of an I/O
    /// error (a full disk), after which redb fails every call. The file recovers to its last
    /// durable commit, so nothing acknowledged is lost; transactions of the old database fail.
    /// From the close on, calls fail with [`StoreError::Reopening`]; when the open fails
    /// (the disk is still full, the file is missing: a new empty file is never made in its
    /// place) they go on failing so, and the next `reopen` tries again.
    pub fn reopen(&self) -> Result<(), StoreError> {
        let _one = self.handle.reopening.lock().unwrap_or_else(PoisonError::into_inner);
        let old = self.handle.db.write().unwrap_or_else(PoisonError::into_inner).take();
        if let Some((_, mut old)) = old {
            let deadline = Instant::now() + CLOSE_WAIT;
            loop {
                match Arc::try_unwrap(old) {
                    // A live write transaction defers the close to its end; the open below
                    // then fails until it is over, and the next reopen tries again.
                    Ok(db) => {
                        let _ = db.close();
                        break;
                    }
                    // The last holder closes it when it lets go.
                    Err(_) if Instant::now() >= deadline => break,
                    Err(shared) => {
                        old = shared;
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            }
        }
        // Never a new empty file in place of one that went missing.
        let db = open_database(&self.path, false)?;
        let generation = self.handle.next_generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *self.handle.db.write().unwrap_or_else(PoisonError::into_inner) = Some((generation, Arc::new(db)));
        Ok(())
    }

    /// Keeps `bytes` free on the store's filesystem (at most a tenth of its size): large
    /// writes that would leave less fail with [`StoreError::DiskFull`]. 0 (the default) keeps
    /// no reserve.
    pub fn set_min_free_bytes(&self, bytes: u64) {
        self.handle.floor.set_reserve(bytes);
    }

    /// Fails with [`StoreError::DiskFull`] when writing `bytes` would leave less than the
    /// reserve free on the store's filesystem. Cheap: the free space is measured at most
    /// every 100 ms. Call before a large write; deletes and small bookkeeping need not.
    pub fn check_disk(&self, bytes: u64) -> Result<(), StoreError> {
        self.handle.floor.check(bytes)
    }

    /// The free space of the store's filesystem and the reserve.
    pub fn disk_space(&self) -> std::io::Result<DiskSpace> {
        self.handle.floor.space()
    }

    /// The file the store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes history rows as given, in one durable transaction, and raises each job's last
    /// checkpoint id to cover them. Only the history: no manifest, so none of them can be
    /// restored. For tools and benchmarks (a long history without running a job for hours).
    pub fn import_history(&self, metas: &[CheckpointMeta]) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        {
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            let mut last = txn.open_table(JOB_LAST_ID)?;
            let mut summaries = txn.open_table(crate::checkpoint::summary::SUMMARIES)?;
            for meta in metas {
                checkpoints.insert((meta.job.as_str(), meta.id), encode_meta(meta)?.as_slice())?;
                // Recounted when next read.
                summaries.remove(meta.job.as_str())?;
                let current = last.get(meta.job.as_str())?.map_or(0, |v| v.value());
                if meta.id > current {
                    last.insert(meta.job.as_str(), meta.id)?;
                }
            }
        }
        txn.commit()?;
        Ok(())
    }

    /// Keeps the bytes of chunks written from now on in `external` (object storage) instead
    /// of the file, for every clone; chunks stored before stay readable where they are. See
    /// [`ExternalChunks`](crate::ExternalChunks).
    pub fn set_external_chunks(&self, external: Arc<dyn crate::ExternalChunks>) {
        *self.handle.external.write().unwrap_or_else(PoisonError::into_inner) = Some(external);
    }

    /// The external chunk store, if one is set.
    pub(crate) fn external(&self) -> Option<Arc<dyn crate::ExternalChunks>> {
        self.handle.external.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Reserves `count` (at least 1) chunk ids for a writer outside this store (a worker
    /// writing chunks to object storage), durably: they come from the same counter as the
    /// store's own chunks, so no id is ever handed out twice, across restarts too. Ids of a
    /// lease that are never used are gaps.
    pub fn lease_chunk_ids(&self, count: u64) -> Result<std::ops::Range<u64>, StoreError> {
        let count = count.max(1);
        let txn = self.write_txn(Durability::Immediate)?;
        let range = {
            let mut counters = txn.open_table(COUNTERS)?;
            let first = counters.get(NEXT_CHUNK_ID)?.map_or(1, |v| v.value());
            let end = first.checked_add(count).ok_or_else(|| {
                StoreError::corrupt("the chunk id counter".to_string(), "it would overflow".to_string())
            })?;
            counters.insert(NEXT_CHUNK_ID, end)?;
            first..end
        };
        txn.commit()?;
        Ok(range)
    }

    pub(crate) fn read_txn(&self) -> Result<ReadTransaction, StoreError> {
        Ok(self.database()?.begin_read()?)
    }

    pub(crate) fn write_txn(&self, durability: Durability) -> Result<WriteTransaction, StoreError> {
        let mut txn = self.database()?.begin_write()?;
        txn.set_durability(durability)?;
        Ok(txn)
    }
}

/// Now, in unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) fn encode_meta(meta: &CheckpointMeta) -> Result<Vec<u8>, StoreError> {
    rmp_serde::to_vec_named(meta).map_err(|error| StoreError::Encode {
        what: format!("checkpoint {} of job `{}`", meta.id, meta.job),
        detail: error.to_string(),
    })
}

pub(crate) fn decode_meta(job: &str, id: u64, bytes: &[u8]) -> Result<CheckpointMeta, StoreError> {
    rmp_serde::from_slice(bytes).map_err(|error| {
        StoreError::corrupt(format!("metadata of checkpoint {id} of job `{job}`"), error.to_string())
    })
}

/// Reads the meta of checkpoint `(job, id)` from a checkpoints table.
pub(crate) fn read_meta(
    table: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    job: &str,
    id: u64,
) -> Result<Option<CheckpointMeta>, StoreError> {
    match table.get((job, id))? {
        Some(bytes) => decode_meta(job, id, bytes.value()).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::LogRecord;

    #[test]
    fn a_reopen_swaps_the_database_of_every_clone_and_keeps_what_was_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        let clone = store.clone();
        let run = store.for_this_open();
        store.create_stream("s", 1).unwrap();
        let record = LogRecord { key: b"k".to_vec(), value: b"v".to_vec(), timestamp: 1 };
        store.append("s", 0, std::slice::from_ref(&record)).unwrap();
        store.probe().unwrap();

        // Someone holding the old database past the wait keeps the file open: the reopen
        // fails, calls meanwhile say the store is reopening, and the next reopen succeeds.
        let held = store.database().unwrap();
        let err = clone.reopen().unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err}");
        assert!(matches!(store.database(), Err(StoreError::Reopening)));
        assert!(matches!(store.end_offset("s", 0), Err(StoreError::Reopening)));
        assert!(store.probe().unwrap_err().is_io_failure());
        drop(held);
        clone.reopen().unwrap();

        assert_eq!(store.end_offset("s", 0).unwrap(), 1, "the committed append is kept");
        store.append("s", 0, &[record]).unwrap();
        assert_eq!(clone.end_offset("s", 0).unwrap(), 2, "every clone writes to the new database");
        store.probe().unwrap();
        assert!(matches!(run.end_offset("s", 0), Err(StoreError::Reopening)), "a pinned clone is over");
        assert_eq!(store.for_this_open().end_offset("s", 0).unwrap(), 2);
    }
}
