//! The [`CheckpointStorage`] trait the engine codes against, what it writes and reports
//! ([`SubtaskWrite`], [`GcReport`]), and its implementation for [`Store`](crate::Store).
//!
//! Inside, files import one way: `storage` (the trait's implementation) → `put` (chunks
//! written elsewhere) → `write` (the rules both follow) → `chunks`, `live`, `history`;
//! `summary` → `history`.

mod chunks;
mod history;
pub(crate) mod live;
pub(crate) mod put;
mod storage;
pub(crate) mod summary;
mod upload;
mod write;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::manifest::{Manifest, ScopeDelta, StateEntry, SubtaskState};
use crate::meta::CheckpointMeta;

/// What one subtask writes for one checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubtaskWrite {
    /// The job.
    pub job: String,
    /// The checkpoint this write belongs to (it owns the chunks written).
    pub checkpoint: u64,
    /// The operator (node) id.
    pub operator: String,
    /// The subtask index.
    pub subtask: u32,
    /// `true`: `scopes` holds every live entry of this subtask (a new base for each scope;
    /// scopes of `previous` not listed become empty).
    /// `false`: `scopes` holds only changes since the previous snapshot (puts and tombstones),
    /// applied on top of `previous`.
    pub full: bool,
    /// The entries, per scope. A scope listed twice is treated as one, in order.
    /// Shared so that a caller can keep the deltas (to write them again after an abort)
    /// without copying them.
    pub scopes: Arc<Vec<ScopeDelta>>,
    /// The subtask's chains after its previous snapshot (empty for the first one or after a
    /// full one). Every chunk must still be stored (see [`StoreError::MissingChunk`]).
    pub previous: BTreeMap<u32, Vec<u64>>,
    /// Opaque per-subtask state (source position, timers, watermarks, sink transactions):
    /// stored as-is in the manifest.
    pub blob: Vec<u8>,
    /// Channel state of an unaligned checkpoint: the in-flight messages the subtask must
    /// replay before anything new on restore, as entries with unique `(state, key)` (the
    /// engine encodes the channel and the sequence number in the key; a duplicate fails the
    /// write with [`StoreError::InvalidMeta`], a tombstone is skipped). Written in the given
    /// order as chunks owned by this checkpoint, listed in [`SubtaskState::channel`]; never
    /// part of a chain, never compacted and never carried to a later checkpoint. Read back
    /// sorted by `(state, key)`: see [`SubtaskState::channel`]. Empty for an aligned
    /// checkpoint.
    pub channel_state: Vec<StateEntry>,
    /// Compact a scope's chain into one new base when it would pass a threshold between
    /// `⌊max_chain_length / 2⌋ + 1` and this many increments (checkpoints that added to it),
    /// drawn for each base from its first chunk id (values below 1 count as 1).
    pub max_chain_length: usize,
}

/// What garbage collection removed when a checkpoint completed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GcReport {
    /// Checkpoints whose manifests retention removed.
    pub removed_checkpoints: Vec<u64>,
    /// Chunks deleted.
    pub removed_chunks: u64,
    /// Bytes of the chunks deleted.
    pub removed_bytes: u64,
}

/// What [`CheckpointStorage::visit_chains`] hands each live entry to: `(state, key, value)`;
/// `Break` stops the visit.
pub type EntryVisitor<'v> = dyn FnMut(&str, &[u8], &[u8]) -> ControlFlow<()> + 'v;

/// The seam the engine uses for checkpoint storage; [`Store`](crate::Store) implements it and
/// [`FaultyStorage`](crate::FaultyStorage) wraps it to inject failures.
///
/// Invariant: a checkpoint is recoverable only if its status is `Completed`, which only
/// [`complete`](Self::complete) writes, in one durable transaction together with the manifest.
/// Every other write may be lost in a crash without making anything wrongly recoverable.
pub trait CheckpointStorage: Send + Sync + 'static {
    /// Records that checkpoint `meta.id` was triggered (`meta.status` must be `InProgress`).
    /// Not durable on its own. Fails for an id older than one already used by the job or an id
    /// already recorded.
    fn begin(&self, meta: &CheckpointMeta) -> Result<(), StoreError>;

    /// Writes one subtask's chunks (and compactions, and its channel state) for checkpoint
    /// `write.checkpoint`, charged to the job in the same transaction; returns the subtask's
    /// new chains and channel chunks. Not durable on its own and never visible for recovery
    /// until `complete`. Fails if the checkpoint was already completed or failed, if a chunk
    /// of `previous` is gone, or if the channel state repeats a (state, key).
    fn write_subtask(&self, write: SubtaskWrite) -> Result<SubtaskState, StoreError>;

    /// In one durable transaction: stores `manifest`, marks `meta` Completed (`meta.status`
    /// must be `Completed`; `full_size` and each subtask's `full_state_bytes` are computed
    /// here from the manifest, channel state included; `retained` is set), then applies retention: only the newest
    /// `retain` (at least 1) completed checkpoints of the job keep their manifests, plus every
    /// checkpoint whose stored meta is [`pinned`](CheckpointMeta::pinned), and every chunk of
    /// the job owned by a checkpoint `<= meta.id` that no kept manifest references is deleted.
    /// Older checkpoints still in progress are subsumed (marked Failed).
    fn complete(
        &self,
        meta: &CheckpointMeta,
        manifest: &Manifest,
        retain: usize,
    ) -> Result<GcReport, StoreError>;

    /// Marks the checkpoint Failed (with `meta.failure`, or "aborted") and deletes the chunks it
    /// wrote that no kept manifest references. Fails for a completed checkpoint.
    fn abort(&self, meta: &CheckpointMeta) -> Result<(), StoreError>;

    /// The newest completed checkpoint of `job`, with its manifest.
    fn latest_completed(&self, job: &str) -> Result<Option<(CheckpointMeta, Manifest)>, StoreError>;

    /// The recorded checkpoint `id` of `job` (any status), with its manifest if it is completed
    /// and still retained.
    fn checkpoint(
        &self,
        job: &str,
        id: u64,
    ) -> Result<Option<(CheckpointMeta, Option<Manifest>)>, StoreError>;

    /// Applies a chain (oldest first; tombstones delete) and returns the live entries sorted by
    /// (state, key). Also reads channel state ([`SubtaskState::channel`]). Fails with
    /// [`StoreError::MissingChunk`] if a chunk is gone and [`StoreError::Corrupt`] if one is
    /// damaged.
    fn read_chain(&self, job: &str, chain: &[u64]) -> Result<Vec<StateEntry>, StoreError>;

    /// Hands every live entry of each chain of `chains` to `visit(state, key, value)` exactly
    /// once, in no particular order, until `visit` breaks (the result says whether it did):
    /// what [`read_chain`](Self::read_chain) returns for each, without a copy of each entry
    /// or a sort — the restore path. The same errors as `read_chain`; a damaged chunk fails
    /// before the first entry of its chain is visited. [`Store`](crate::Store) holds one
    /// chain's encoded chunks at a time (and an index of its entries), not a copy of its
    /// state.
    fn visit_chains(
        &self,
        job: &str,
        chains: &[Vec<u64>],
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        for chain in chains {
            for entry in self.read_chain(job, chain)? {
                if let Some(value) = &entry.value
                    && visit(&entry.state, &entry.key, value).is_break()
                {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Every checkpoint meta of `job` ever recorded, id ascending.
    fn history(&self, job: &str) -> Result<Vec<CheckpointMeta>, StoreError>;

    /// The largest checkpoint id ever used by `job` (0 if none).
    fn last_checkpoint_id(&self, job: &str) -> Result<u64, StoreError>;

    /// Called when a job (re)starts: every in-progress checkpoint becomes Failed ("interrupted:
    /// the job restarted") and every chunk of the job that no kept manifest references is
    /// deleted. Durable.
    fn recover(&self, job: &str) -> Result<(), StoreError>;

    /// Bytes of chunk data stored for `job` and the number of chunks.
    fn chunk_usage(&self, job: &str) -> Result<(u64, u64), StoreError>;

    /// `count` (at least 1) chunk ids nobody else is given, ever (durable): for a writer
    /// that puts chunks in the external store itself ([`record_subtask`](Self::record_subtask)).
    /// Storage that cannot record such chunks refuses.
    fn lease_chunk_ids(&self, _count: u64) -> Result<std::ops::Range<u64>, StoreError> {
        Err(StoreError::External("this storage records no chunks written elsewhere".into()))
    }

    /// As [`write_subtask`](Self::write_subtask), for chunks already put in the external
    /// chunk store under leased ids ([`put::encode_subtask`] made them from the write):
    /// records them (failing for an id recorded before) and compacts as `write_subtask`
    /// would. Storage without an external chunk store refuses.
    fn record_subtask(&self, _write: put::PutSubtaskWrite) -> Result<SubtaskState, StoreError> {
        Err(StoreError::External("this storage records no chunks written elsewhere".into()))
    }
}

/// Shared storage (e.g. `Arc<dyn CheckpointStorage>`) is storage too, so it can be wrapped in
/// a [`FaultyStorage`](crate::FaultyStorage).
impl<S: CheckpointStorage + ?Sized> CheckpointStorage for Arc<S> {
    fn begin(&self, meta: &CheckpointMeta) -> Result<(), StoreError> {
        (**self).begin(meta)
    }

    fn write_subtask(&self, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
        (**self).write_subtask(write)
    }

    fn complete(
        &self,
        meta: &CheckpointMeta,
        manifest: &Manifest,
        retain: usize,
    ) -> Result<GcReport, StoreError> {
        (**self).complete(meta, manifest, retain)
    }

    fn abort(&self, meta: &CheckpointMeta) -> Result<(), StoreError> {
        (**self).abort(meta)
    }

    fn latest_completed(&self, job: &str) -> Result<Option<(CheckpointMeta, Manifest)>, StoreError> {
        (**self).latest_completed(job)
    }

    fn checkpoint(
        &self,
        job: &str,
        id: u64,
    ) -> Result<Option<(CheckpointMeta, Option<Manifest>)>, StoreError> {
        (**self).checkpoint(job, id)
    }

    fn read_chain(&self, job: &str, chain: &[u64]) -> Result<Vec<StateEntry>, StoreError> {
        (**self).read_chain(job, chain)
    }

    fn visit_chains(
        &self,
        job: &str,
        chains: &[Vec<u64>],
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        (**self).visit_chains(job, chains, visit)
    }

    fn history(&self, job: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        (**self).history(job)
    }

    fn last_checkpoint_id(&self, job: &str) -> Result<u64, StoreError> {
        (**self).last_checkpoint_id(job)
    }

    fn recover(&self, job: &str) -> Result<(), StoreError> {
        (**self).recover(job)
    }

    fn lease_chunk_ids(&self, count: u64) -> Result<std::ops::Range<u64>, StoreError> {
        (**self).lease_chunk_ids(count)
    }

    fn record_subtask(&self, write: put::PutSubtaskWrite) -> Result<SubtaskState, StoreError> {
        (**self).record_subtask(write)
    }

    fn chunk_usage(&self, job: &str) -> Result<(u64, u64), StoreError> {
        (**self).chunk_usage(job)
    }
}
