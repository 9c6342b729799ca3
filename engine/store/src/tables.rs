//! Every redb table of the store, and the key sizes the storage ledger counts for them: the
//! crate's lowest layer, which imports nothing of the crate, so that any feature can name any
//! table (the ledger's recount reads them all) without importing the feature that writes it.

use redb::{TableDefinition, WriteTransaction};

// Counters.

/// Named counters: [`NEXT_CHUNK_ID`], [`NEXT_BODY_ID`].
pub(crate) const COUNTERS: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.counters");
/// The next chunk id to allocate (ids start at 1 and are never reused).
pub(crate) const NEXT_CHUNK_ID: &str = "next_chunk_id";
/// The next id of a stream chunk body ([`BODIES`]; from 1, never reused).
pub(crate) const NEXT_BODY_ID: &str = "next_log_body_id";

// Checkpoints (`checkpoint/`).

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
/// job → [`HistorySummary`](crate::HistorySummary) (MessagePack with field names).
pub(crate) const SUMMARIES: TableDefinition<'_, &str, &[u8]> =
    TableDefinition::new("weir.checkpoint_summaries");
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
/// (job, chunk id) → size in bytes, for every chunk whose bytes are external.
pub(crate) const EXTERNAL_CHUNKS: TableDefinition<'_, (&str, u64), u64> =
    TableDefinition::new("weir.external_chunks");

// The stream log (`stream/`).

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

/// Key bytes a log chunk counts for (name, partition, first offset).
pub(crate) fn log_key_len(name: &str) -> usize {
    name.len() + 12
}

/// Key bytes a chunk body counts for (name, body id).
pub(crate) fn body_key_len(name: &str) -> usize {
    name.len() + 8
}

/// Key bytes a staged chunk counts for (name, writer, epoch, sequence, partition).
pub(crate) fn staged_key_len(name: &str, writer: &str) -> usize {
    name.len() + writer.len() + 20
}

// Savepoints (`savepoint.rs`).

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
/// (savepoint id, operator, scope, chunk) → (object number, size in bytes), for every
/// savepoint chunk whose bytes are external.
pub(crate) const SAVEPOINT_OBJECTS: TableDefinition<'_, (&str, &str, u32, u32), (u64, u64)> =
    TableDefinition::new("weir.savepoint_objects");

// The outbox (`outbox.rs`).

/// (writer, epoch, sequence) → one staged record, as the sink encoded it.
pub(crate) const OUTBOX: TableDefinition<'_, (&str, u64, u64), &[u8]> = TableDefinition::new("weir.outbox");
/// (writer, epoch) → the number of records staged (the next sequence number).
pub(crate) const OUTBOX_EPOCHS: TableDefinition<'_, (&str, u64), u64> =
    TableDefinition::new("weir.outbox_epochs");
/// (writer, epoch) → the epoch's note.
pub(crate) const OUTBOX_NOTES: TableDefinition<'_, (&str, u64), &[u8]> =
    TableDefinition::new("weir.outbox_notes");

/// Key bytes of an [`OUTBOX`] entry (besides the writer's name).
pub(crate) const RECORD_KEY: usize = 16;
/// Key bytes of an [`OUTBOX_EPOCHS`] or [`OUTBOX_NOTES`] entry (besides the writer's name).
pub(crate) const EPOCH_KEY: usize = 8;
/// The job a writer belongs to: its name up to the first `/` (job ids contain none).
pub(crate) fn job_of(writer: &str) -> &str {
    writer.split_once('/').map_or(writer, |(job, _)| job)
}

// The storage ledger (`usage.rs`).

/// subject (`job/<id>`, `stream/<name>`, `stream/<prefix>.`) → owner.
pub(crate) const OWNERS: TableDefinition<'_, &str, &str> = TableDefinition::new("weir.usage_owners");
/// owner → bytes stored for it.
pub(crate) const USAGE: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.usage");
/// owner → the most bytes it may store (no row: no limit).
pub(crate) const LIMITS: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.usage_limits");
/// owner → bytes reserved for uploads in flight (cleared at open).
pub(crate) const RESERVED: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.usage_reserved");
/// The [`COUNTERS`] row that says the ledger is complete (older stores lack it).
pub(crate) const LEDGER_VERSION: &str = "usage_ledger_version";

/// Opens (creating when missing) every table above, so that readers never meet a missing one.
pub(crate) fn create_all(txn: &WriteTransaction) -> Result<(), redb::TableError> {
    txn.open_table(COUNTERS)?;
    txn.open_table(JOB_LAST_ID)?;
    txn.open_table(CHECKPOINTS)?;
    txn.open_table(IN_PROGRESS)?;
    txn.open_table(MANIFESTS)?;
    txn.open_table(SUMMARIES)?;
    txn.open_table(CHUNKS)?;
    txn.open_table(CHUNK_INDEX)?;
    txn.open_table(CHUNK_OWNERS)?;
    txn.open_table(EXTERNAL_CHUNKS)?;
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
    txn.open_table(SAVEPOINT_OBJECTS)?;
    txn.open_table(OUTBOX)?;
    txn.open_table(OUTBOX_EPOCHS)?;
    txn.open_table(OUTBOX_NOTES)?;
    txn.open_table(OWNERS)?;
    txn.open_table(USAGE)?;
    txn.open_table(LIMITS)?;
    txn.open_table(RESERVED)?;
    Ok(())
}
