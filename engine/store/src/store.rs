//! [`Store`]: the handle on the redb file, its tables and shared helpers.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use redb::{
    Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};

use crate::checkpoint::CheckpointMeta;
use crate::error::StoreError;

/// Chunks are split so that no stored value is much larger than this.
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 4 << 20;

/// Named counters: [`NEXT_CHUNK_ID`].
pub(crate) const COUNTERS: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.counters");
/// The next chunk id to allocate (ids start at 1 and are never reused).
pub(crate) const NEXT_CHUNK_ID: &str = "next_chunk_id";
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
/// (stream, partition, offset) → encoded record.
pub(crate) const LOG: TableDefinition<'_, (&str, u32, u64), &[u8]> = TableDefinition::new("weir.log");
/// (stream, partition) → next offset.
pub(crate) const LOG_ENDS: TableDefinition<'_, (&str, u32), u64> = TableDefinition::new("weir.log_ends");
/// (stream, writer, epoch, sequence) → partition (varint) + encoded record.
pub(crate) const STAGED: TableDefinition<'_, (&str, &str, u64, u64), &[u8]> =
    TableDefinition::new("weir.log_staged");

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
/// chunks and the stream log. Cheap to clone; every clone shares the database.
///
/// Methods block (redb does I/O and serialises write transactions): call them from
/// `spawn_blocking` or a dedicated thread in async code.
#[derive(Clone)]
pub struct Store {
    pub(crate) db: Arc<Database>,
    pub(crate) path: Arc<PathBuf>,
    pub(crate) max_chunk_bytes: usize,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("max_chunk_bytes", &self.max_chunk_bytes)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store file at `path`, creating it and its tables if needed. A file can be open
    /// only once per process: clone the `Store` to share it.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let db =
            Database::create(path).map_err(|source| StoreError::Open { path: path.to_owned(), source })?;
        let txn = db.begin_write()?;
        txn.open_table(COUNTERS)?;
        txn.open_table(JOB_LAST_ID)?;
        txn.open_table(CHECKPOINTS)?;
        txn.open_table(IN_PROGRESS)?;
        txn.open_table(MANIFESTS)?;
        txn.open_table(CHUNKS)?;
        txn.open_table(CHUNK_INDEX)?;
        txn.open_table(CHUNK_OWNERS)?;
        txn.open_table(STREAMS)?;
        txn.open_table(LOG)?;
        txn.open_table(LOG_ENDS)?;
        txn.open_table(STAGED)?;
        txn.open_table(SAVEPOINTS)?;
        txn.open_table(SAVEPOINT_OWNERS)?;
        txn.open_table(SAVEPOINT_SCOPES)?;
        txn.open_table(SAVEPOINT_PIECES)?;
        txn.open_table(SAVEPOINT_BLOBS)?;
        crate::usage::open_tables(&txn)?;
        txn.open_table(crate::checkpoint::summary::SUMMARIES)?;
        txn.commit()?;
        Ok(Store {
            db: Arc::new(db),
            path: Arc::new(path.to_owned()),
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
        })
    }

    /// The same store, splitting state chunks at about `bytes` (default
    /// [`DEFAULT_MAX_CHUNK_BYTES`]); small values are for tests.
    pub fn with_max_chunk_bytes(mut self, bytes: usize) -> Store {
        self.max_chunk_bytes = bytes.max(1);
        self
    }

    /// The underlying redb database (for tables of other subsystems).
    pub fn database(&self) -> &Database {
        &self.db
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

    pub(crate) fn read_txn(&self) -> Result<ReadTransaction, StoreError> {
        Ok(self.db.begin_read()?)
    }

    pub(crate) fn write_txn(&self, durability: Durability) -> Result<WriteTransaction, StoreError> {
        let mut txn = self.db.begin_write()?;
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
