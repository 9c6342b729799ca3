//! Weir's embedded storage: one redb file (`<data-dir>/weir.redb`) holds checkpoints
//! (metadata and history), incremental state chunks, savepoints and the built-in stream log.
//!
//! - [`Store`] opens the file; it implements [`CheckpointStorage`], the seam the engine's
//!   checkpoint coordinator uses, and the stream log ([`Store::append`], [`Store::read`],
//!   [`Store::stage`], [`Store::commit_staged`], ...).
//! - The outbox ([`Store::outbox_stage`], [`Store::outbox_read`], [`Store::outbox_drop`], ...)
//!   durably stages a sink's opaque records per checkpoint until it delivered them elsewhere.
//! - State is stored per *scope* (a key group, or a subtask's operator state at
//!   [`OPERATOR_SCOPE_BASE`]` + subtask`) as a *chain* of chunks: a base followed by increments,
//!   applied in order (a tombstone deletes). A chain that would grow past
//!   [`SubtaskWrite::max_chain_length`] is compacted into a new base.
//! - A checkpoint is recoverable only once [`CheckpointStorage::complete`] stored its manifest
//!   and the Completed status in one durable transaction. Everything else (`begin`,
//!   `write_subtask`, `abort`, `stage`) commits without fsync and becomes durable with the next
//!   durable commit; losing it in a crash never makes an incomplete checkpoint recoverable.
//! - A *savepoint* ([`Store::create_savepoint`]) is a tenant's immutable, self-contained copy
//!   of a completed checkpoint: the live entries of every operator and scope plus each
//!   subtask's blob. It never references checkpoint chunks, so retention and GC ignore it.
//!   [`Store::export_savepoint`] writes one as a portable file (`docs/savepoint-format.md`)
//!   that [`Store::import_savepoint`] reads into another store. A checkpoint taken for a
//!   savepoint is [`pinned`](CheckpointMeta::pinned): retention keeps it until
//!   [`Store::unpin`].
//! - [`FaultyStorage`] wraps any storage and fails writes at random, for chaos tests.
//!
//! ```no_run
//! use weir_store::{CheckpointStorage, Store};
//! # fn main() -> Result<(), weir_store::StoreError> {
//! let store = Store::open(std::path::Path::new("data/weir.redb"))?;
//! if let Some((meta, manifest)) = store.latest_completed("wordcount")? {
//!     for (operator, subtasks) in &manifest {
//!         for (subtask, state) in subtasks {
//!             for (scope, chain) in &state.chains {
//!                 let entries = store.read_chain("wordcount", chain)?;
//!                 println!("{operator}/{subtask} scope {scope}: {} entries (checkpoint {})",
//!                     entries.len(), meta.id);
//!             }
//!         }
//!     }
//! }
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

// The crate's map, lowest layer first; a file imports only from layers below its own.
// 0. `tables` (every redb table), `manifest` (what a checkpoint restores), `meta` (its
//    history row): import nothing of the crate.
// 1. `error` (the one error enum), `codec` (chunk and manifest encodings, `CodecError`).
// 2. `disk` (free-space floor), `external` (chunk bytes outside the file).
// 3. `store` (the `Store` handle and its transactions), then `usage` (the ledger every
//    write charges).
// 4. Features, each an `impl Store`: `checkpoint/`, `stream/`, `outbox`, then `savepoint`
//    (reads checkpoint chains), `savefile` (its portable file), `faulty` (wraps storage).
// 5. `recount` (reads every table for the ledger's recount) and `open` (opens every table and
//    migrates older formats).

mod checkpoint;
mod codec;
mod disk;
mod error;
mod external;
mod faulty;
mod manifest;
mod meta;
mod open;
mod outbox;
mod recount;
mod savefile;
mod savepoint;
mod store;
pub mod stream;
mod tables;
mod usage;

pub use checkpoint::live::ExternalChains;
pub use checkpoint::put::{EncodedSubtask, PutChunk, PutSubtaskWrite, encode_subtask};
pub use checkpoint::summary::{HistorySummary, Stat};
pub use checkpoint::{CheckpointStorage, EntryVisitor, GcReport, SubtaskWrite};
pub use disk::{DiskFloor, DiskSpace};
pub use error::StoreError;
pub use external::{ExternalChunks, SweepPolicy};
pub use faulty::FaultyStorage;
pub use manifest::{Manifest, OPERATOR_SCOPE_BASE, ScopeDelta, StateEntry, SubtaskState};
pub use meta::{CheckpointMeta, CheckpointStatus, SubtaskStats};
pub use outbox::Outbox;
pub use savepoint::SavepointInfo;
pub use store::{DEFAULT_MAX_CHUNK_BYTES, Store};
pub use stream::{ChunkBuffer, LogRecord};
pub use usage::{ENTRY_OVERHEAD, PAGE_BYTES, charge_owner, entry_bytes, set_limit_in, set_owner_in};
