//! Checkpoint types and the [`CheckpointStorage`] trait the engine codes against.

mod chunks;
pub(crate) mod live;
pub(crate) mod put;
pub(crate) mod storage;
pub(crate) mod summary;

use std::collections::BTreeMap;
use std::fmt;
use std::ops::ControlFlow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;

/// One entry of operator state. `value: None` is a tombstone (an explicit delete).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateEntry {
    /// The state's name (as declared by the operator).
    pub state: String,
    /// The entry's key (the record key for keyed state, empty for operator state).
    /// Serialised as bytes (MessagePack `bin`), not as a sequence of integers: state crosses
    /// the cluster's control session in these types (docs/benchmarks.md, *Beyond one machine*).
    #[serde(with = "serde_bytes")]
    pub key: Vec<u8>,
    /// The value, or `None` for a delete.
    #[serde(with = "serde_bytes")]
    pub value: Option<Vec<u8>>,
}

/// Scopes at or above this value hold a subtask's operator (non-keyed) state:
/// `OPERATOR_SCOPE_BASE + subtask`. Scopes below it are key groups.
pub const OPERATOR_SCOPE_BASE: u32 = 1 << 31;

/// The entries of one scope (a key group, or a subtask's operator state) in one write.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ScopeDelta {
    /// The key group, or `OPERATOR_SCOPE_BASE + subtask`.
    pub scope: u32,
    /// Puts and tombstones, applied in order.
    pub entries: Vec<StateEntry>,
}

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

/// A subtask's state after a write: its chains per scope (chunk ids, oldest first). The
/// engine passes `chains` as `previous` next time and puts the whole value into the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SubtaskState {
    /// Per scope, the chunk ids to apply in order. Scopes without state are absent.
    pub chains: BTreeMap<u32, Vec<u64>>,
    /// The opaque blob of the write. Manifests written before it was serialised as bytes
    /// (an array of integers) still decode.
    #[serde(with = "serde_bytes")]
    pub blob: Vec<u8>,
    /// The chunks of the write's channel state (see [`SubtaskWrite::channel_state`]), in
    /// order; read back with [`CheckpointStorage::read_chain`]`(job, &channel)`. Empty for an
    /// aligned checkpoint.
    ///
    /// Contract: `read_chain` returns the entries sorted by `(state, key)`, not in the order
    /// they were written, so the engine encodes keys whose byte order is the replay order
    /// (big-endian channel index `u32`, then big-endian sequence number `u64`).
    ///
    /// These chunks belong to this checkpoint alone: the engine must not pass them back as
    /// [`SubtaskWrite::previous`]; retention keeps them as long as the checkpoint's manifest
    /// and collects them with it. A savepoint cannot be copied from a manifest that has any
    /// ([`StoreError::UnalignedCheckpoint`]).
    #[serde(default)]
    pub channel: Vec<u64>,
    /// Chunk bytes written by this write (deltas plus compactions plus channel state).
    pub bytes_written: u64,
    /// Scopes compacted by this write.
    pub compactions: u32,
}

/// The manifest of a checkpoint: per operator, per subtask, its [`SubtaskState`].
pub type Manifest = BTreeMap<String, BTreeMap<u32, SubtaskState>>;

/// The life cycle of a checkpoint. Only `Completed` checkpoints are ever restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// Triggered, not yet complete.
    #[default]
    InProgress,
    /// Every subtask acknowledged; the manifest was stored durably.
    Completed,
    /// Aborted, timed out, or interrupted by a restart.
    Failed,
}

impl fmt::Display for CheckpointStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CheckpointStatus::InProgress => "in progress",
            CheckpointStatus::Completed => "completed",
            CheckpointStatus::Failed => "failed",
        })
    }
}

/// Statistics of one subtask's part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubtaskStats {
    /// The operator (node) id.
    pub operator: String,
    /// The subtask index.
    pub subtask: u32,
    /// When the acknowledgement arrived (unix ms).
    pub ack_time_ms: u64,
    /// Time spent in the synchronous part of the snapshot.
    pub sync_ms: f64,
    /// Time spent writing the snapshot.
    pub async_ms: f64,
    /// Time spent aligning barriers.
    pub alignment_ms: f64,
    /// Bytes buffered during alignment.
    pub alignment_bytes: u64,
    /// Time between the trigger and the first barrier reaching the subtask.
    pub start_delay_ms: f64,
    /// Bytes written by this subtask for this checkpoint.
    pub state_bytes: u64,
    /// Total size of the chunks of the subtask's chains and of its channel state
    /// ([`CheckpointStorage::complete`] fills it in), so that the subtasks' figures add up to
    /// [`CheckpointMeta::full_size`].
    pub full_state_bytes: u64,
    /// The subtask took this checkpoint unaligned: its barrier overtook in-flight records,
    /// which were persisted with the checkpoint as channel state.
    #[serde(default)]
    pub unaligned: bool,
    /// Bytes of in-flight records (and watermarks) persisted as channel state.
    #[serde(default)]
    pub persisted_in_flight_bytes: u64,
    /// When the subtask switched this checkpoint from aligned to unaligned (its alignment
    /// waited longer than `aligned_timeout_ms`), unix ms; `None` when it did not switch (an
    /// aligned checkpoint, or one unaligned from its start).
    #[serde(default)]
    pub switched_to_unaligned_ms: Option<u64>,
}

/// The history row of a checkpoint (kept forever, also after retention removed its manifest).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// The job.
    pub job: String,
    /// The checkpoint id (increasing per job, never reused).
    pub id: u64,
    /// Where the checkpoint is in its life cycle.
    pub status: CheckpointStatus,
    /// The checkpoint taken at the end of the input.
    pub is_final: bool,
    /// The final checkpoint was taken because the job was stopped, not because its input
    /// ended: the job resumes from it when started again.
    #[serde(default)]
    pub stopped: bool,
    /// Taken for a savepoint: retention keeps its manifest (and chunks) until
    /// [`Store::unpin`](crate::Store::unpin).
    #[serde(default)]
    pub pinned: bool,
    /// This checkpoint holds a savepoint's state, written when the job was started from
    /// savepoint `savepoint` (it is the job's first).
    #[serde(default)]
    pub savepoint: Option<String>,
    /// When it was triggered (unix ms).
    pub trigger_time_ms: u64,
    /// Completion or failure time (unix ms).
    pub end_time_ms: Option<u64>,
    /// End minus trigger time.
    pub duration_ms: Option<f64>,
    /// Bytes written by this checkpoint (its incremental size; the engine sums
    /// [`SubtaskState::bytes_written`], which includes channel state).
    pub state_size: u64,
    /// Total bytes of every chunk the manifest references, channel state included: it
    /// belongs to the checkpoint ([`CheckpointStorage::complete`] fills it in).
    pub full_size: u64,
    /// Why it failed.
    pub failure: Option<String>,
    /// Per-subtask statistics.
    pub subtasks: Vec<SubtaskStats>,
    /// Whether its manifest is still kept (false once retention removed it, and for
    /// checkpoints that never completed).
    pub retained: bool,
}

impl CheckpointMeta {
    /// A new in-progress checkpoint.
    pub fn new(job: impl Into<String>, id: u64, trigger_time_ms: u64) -> Self {
        CheckpointMeta { job: job.into(), id, trigger_time_ms, ..CheckpointMeta::default() }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_as_bytes_and_older_integer_arrays_still_decode() {
        let entry = StateEntry { state: "s".into(), key: vec![1, 2, 3], value: Some(vec![200; 64]) };
        let encoded = rmp_serde::to_vec_named(&entry).expect("encodes");
        // 64 bytes of value as MessagePack `bin` (2-byte header), not 64 two-byte integers;
        // the key too; plus the state and the three field names.
        assert!(encoded.len() <= 64 + 2 + 5 + 2 + 17, "{} bytes", encoded.len());
        assert_eq!(rmp_serde::from_slice::<StateEntry>(&encoded).expect("decodes"), entry);

        // A manifest entry written before: the blob as an array of integers.
        #[derive(Serialize)]
        struct Old {
            chains: BTreeMap<u32, Vec<u64>>,
            blob: Vec<u8>,
            bytes_written: u64,
            compactions: u32,
        }
        let old = rmp_serde::to_vec_named(&Old {
            chains: BTreeMap::from([(0, vec![7])]),
            blob: vec![9, 255],
            bytes_written: 5,
            compactions: 0,
        })
        .expect("encodes");
        let state: SubtaskState = rmp_serde::from_slice(&old).expect("an older manifest decodes");
        assert_eq!((state.blob, state.chains[&0].clone()), (vec![9, 255], vec![7]));
    }
}
