//! The one error type of the store.

use std::path::PathBuf;

use crate::meta::CheckpointStatus;

/// Everything that can go wrong in the store. Messages name what was missing or wrong (job,
/// checkpoint id, chunk id, stream name).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file could not be created or opened.
    #[error("cannot open the store file {path}: {source}")]
    Open {
        /// The file that was asked for.
        path: PathBuf,
        /// What redb reported.
        #[source]
        source: redb::DatabaseError,
    },
    /// redb failed (I/O error, full disk, corrupted file, ...).
    #[error("storage error: {0}")]
    Storage(#[from] redb::Error),
    /// A write would take an owner past its storage limit ([`Store::set_limit`](crate::Store::set_limit));
    /// nothing of it was stored.
    #[error(
        "storage quota exceeded: the tenant stores {used} bytes, this write adds {adding}, and the \
         limit is {limit}; delete savepoints or modules, keep fewer checkpoints (`retained`), or ask \
         for a larger quota"
    )]
    QuotaExceeded {
        /// The owner (tenant).
        owner: String,
        /// Bytes stored and reserved before the write.
        used: u64,
        /// Bytes the write adds.
        adding: u64,
        /// The owner's limit.
        limit: u64,
    },
    /// A chain references a chunk that is no longer stored.
    #[error(
        "chunk {chunk} of job `{job}` is missing: it was deleted by retention or by an abort, \
         so the chain that references it cannot be restored"
    )]
    MissingChunk {
        /// The job the chunk belonged to.
        job: String,
        /// The chunk id.
        chunk: u64,
    },
    /// The external chunk store (object storage) failed.
    #[error("the chunk store failed: {0}")]
    External(String),
    /// A call to the store across the network (a cluster worker's, to its controller's) failed;
    /// the text says why (the controller's own error, or that it did not answer).
    #[error("{0}")]
    Remote(String),
    /// Stored bytes do not decode (checksum mismatch, truncated data, unknown version, ...).
    #[error("corrupt data in the store: {what}: {detail}")]
    Corrupt {
        /// What was being read, e.g. "chunk 7 of job `wc`".
        what: String,
        /// What was wrong with it.
        detail: String,
    },
    /// The checkpoint is not in a state that allows the operation (e.g. completing an aborted
    /// checkpoint, aborting a completed one, writing state for a failed one).
    #[error("checkpoint {id} of job `{job}` is {status}; cannot {action} it")]
    InvalidTransition {
        /// The job.
        job: String,
        /// The checkpoint id.
        id: u64,
        /// Its recorded status.
        status: CheckpointStatus,
        /// What was attempted ("complete", "abort", "write state for", "begin").
        action: &'static str,
    },
    /// A checkpoint id that is not newer than one already used or completed.
    #[error(
        "checkpoint {id} of job `{job}` is stale: checkpoint {latest} was already {what}; \
         checkpoint ids must increase"
    )]
    StaleCheckpoint {
        /// The job.
        job: String,
        /// The id that was passed.
        id: u64,
        /// The newer id already known.
        latest: u64,
        /// "used" or "completed".
        what: &'static str,
    },
    /// The metadata passed to `begin`/`complete`/`abort` does not fit the call.
    #[error("invalid metadata for checkpoint {id} of job `{job}`: {reason}")]
    InvalidMeta {
        /// The job.
        job: String,
        /// The checkpoint id.
        id: u64,
        /// What is wrong.
        reason: String,
    },
    /// No stream of that name exists.
    #[error("stream `{name}` does not exist; create it first")]
    UnknownStream {
        /// The stream name.
        name: String,
    },
    /// The stream name is not allowed.
    #[error(
        "invalid stream name `{name}`: {reason} (allowed: 1 to 128 characters of A-Z a-z 0-9 . _ -, \
         not starting with '.')"
    )]
    InvalidStreamName {
        /// The rejected name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// A partition count outside 1..=1024.
    #[error("stream `{name}`: {partitions} partitions is out of range (1 to 1024)")]
    InvalidPartitionCount {
        /// The stream name.
        name: String,
        /// The rejected count.
        partitions: u32,
    },
    /// `create_stream` for an existing stream with another partition count.
    #[error(
        "stream `{name}` already exists with {existing} partitions (asked for {requested}); \
         the partition count of a stream cannot change"
    )]
    StreamExists {
        /// The stream name.
        name: String,
        /// Its partition count.
        existing: u32,
        /// The count that was asked for.
        requested: u32,
    },
    /// A partition number that the stream does not have.
    #[error("stream `{name}` has {partitions} partitions; partition {partition} does not exist")]
    UnknownPartition {
        /// The stream name.
        name: String,
        /// The partition asked for.
        partition: u32,
        /// The stream's partition count.
        partitions: u32,
    },
    /// A value could not be encoded for storage.
    #[error("cannot encode {what}: {detail}")]
    Encode {
        /// What was being encoded.
        what: String,
        /// Why it failed.
        detail: String,
    },
    /// A savepoint with that id is already stored.
    #[error("savepoint `{id}` already exists")]
    SavepointExists {
        /// The id asked for.
        id: String,
    },
    /// No savepoint with that id is stored.
    #[error("savepoint `{id}` does not exist")]
    UnknownSavepoint {
        /// The id asked for.
        id: String,
    },
    /// A savepoint was asked of an unaligned checkpoint: its manifest holds channel state
    /// ([`SubtaskState::channel`](crate::SubtaskState::channel)), which a savepoint cannot
    /// carry; nothing was stored.
    #[error(
        "checkpoint {id} of job `{job}` is unaligned: it holds in-flight data, and a savepoint \
         must be taken from an aligned checkpoint; trigger a savepoint (it is always aligned)"
    )]
    UnalignedCheckpoint {
        /// The job.
        job: String,
        /// The checkpoint id.
        id: u64,
    },
    /// A file given to [`Store::import_savepoint`](crate::Store::import_savepoint) is not a
    /// valid savepoint file (see `docs/savepoint-format.md`); nothing was stored.
    #[error("invalid savepoint file: {0}")]
    BadSavepointFile(String),
    /// Reading or writing a savepoint file failed (the stream, not the store).
    #[error("cannot {what}: {source}")]
    Io {
        /// What was being done, e.g. "write the export of savepoint `sp1`".
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The write would leave less than the reserve free on the store's disk
    /// ([`Store::set_min_free_bytes`](crate::Store::set_min_free_bytes)); nothing was written.
    #[error(
        "the server's disk is nearly full: {free} bytes free, {reserved} reserved, and this write needs \
         {needed}; try later or ask the operator to free space"
    )]
    DiskFull {
        /// Bytes free on the filesystem.
        free: u64,
        /// Bytes kept free.
        reserved: u64,
        /// The write's size.
        needed: u64,
    },
    /// The store is being reopened after an I/O error ([`Store::reopen`](crate::Store::reopen));
    /// nothing was read or written.
    #[error("the store is being reopened after an I/O error (a full disk?); retry in a moment")]
    Reopening,
    /// A failure injected by [`FaultyStorage`](crate::FaultyStorage) (tests only).
    #[error("injected failure: {0}")]
    Injected(String),
}

macro_rules! from_redb {
    ($($ty:ty),*) => {
        $(impl From<$ty> for StoreError {
            fn from(error: $ty) -> Self {
                StoreError::Storage(error.into())
            }
        })*
    };
}

from_redb!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

impl StoreError {
    /// The store cannot serve until it is reopened (redb met an I/O error, or the
    /// database is closed or being reopened); see [`Store::reopen`](crate::Store::reopen).
    pub fn is_io_failure(&self) -> bool {
        matches!(
            self,
            StoreError::Reopening
                | StoreError::Storage(
                    redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::DatabaseClosed
                )
        )
    }

    /// A write met a full disk (`ENOSPC`), or was refused by the free-space floor.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StoreError::DiskFull { .. } => true,
            StoreError::Storage(redb::Error::Io(e)) | StoreError::Io { source: e, .. } => {
                e.kind() == std::io::ErrorKind::StorageFull
            }
            _ => false,
        }
    }

    pub(crate) fn corrupt(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        StoreError::Corrupt { what: what.into(), detail: detail.to_string() }
    }
}
