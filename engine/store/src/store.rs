//! [`Store`]: the handle on the redb file that every feature's methods hang off, and its
//! transactions. Opening the file (its tables and migrations) is in `open.rs`, above every
//! feature.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redb::{
    Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, TransactionError,
    WriteTransaction,
};

use crate::disk::{DiskFloor, DiskSpace};
use crate::error::StoreError;
use crate::external::ExternalChunks;
use crate::tables::{COUNTERS, NEXT_CHUNK_ID};

/// Chunks are split so that no stored value is much larger than this.
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 4 << 20;

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
    external: RwLock<Option<Arc<dyn ExternalChunks>>>,
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

impl Store {
    /// A store on the database `db`, just opened from `path` ([`Store::open`]).
    pub(crate) fn new(path: &Path, db: Database) -> Store {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        Store {
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
        }
    }

    /// Closes the database and installs the one `open` makes of the file, for every clone
    /// ([`Store::reopen`]): from the close on, calls fail with [`StoreError::Reopening`], and
    /// go on failing so when `open` fails.
    pub(crate) fn swap_database(
        &self,
        open: impl FnOnce(&Path) -> Result<Database, StoreError>,
    ) -> Result<(), StoreError> {
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
        let db = open(&self.path)?;
        let generation = self.handle.next_generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *self.handle.db.write().unwrap_or_else(PoisonError::into_inner) = Some((generation, Arc::new(db)));
        Ok(())
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

    /// Keeps the bytes of chunks written from now on in `external` (object storage) instead
    /// of the file, for every clone; chunks stored before stay readable where they are. See
    /// [`ExternalChunks`].
    pub fn set_external_chunks(&self, external: Arc<dyn ExternalChunks>) {
        *self.handle.external.write().unwrap_or_else(PoisonError::into_inner) = Some(external);
    }

    /// The external chunk store, if one is set.
    pub(crate) fn external(&self) -> Option<Arc<dyn ExternalChunks>> {
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
