//! What a completed checkpoint restores: its [`Manifest`] (per operator and subtask, the
//! [`SubtaskState`]: chains of chunk ids per scope, channel state and a blob) and the
//! [`StateEntry`] records its chunks hold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
    ///
    /// [`SubtaskWrite::channel_state`]: crate::SubtaskWrite::channel_state
    /// [`CheckpointStorage::read_chain`]: crate::CheckpointStorage::read_chain
    /// [`SubtaskWrite::previous`]: crate::SubtaskWrite::previous
    /// [`StoreError::UnalignedCheckpoint`]: crate::StoreError::UnalignedCheckpoint
    #[serde(default)]
    pub channel: Vec<u64>,
    /// Chunk bytes written by this write (deltas plus compactions plus channel state).
    pub bytes_written: u64,
    /// Scopes compacted by this write.
    pub compactions: u32,
}

/// The manifest of a checkpoint: per operator, per subtask, its [`SubtaskState`].
pub type Manifest = BTreeMap<String, BTreeMap<u32, SubtaskState>>;

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
