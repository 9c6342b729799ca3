//! The rules a subtask's write follows, shared by [`CheckpointStorage::write_subtask`]
//! (`storage.rs`: chunks written here) and [`CheckpointStorage::record_subtask`] (`put.rs`:
//! chunks written elsewhere), so that both build the same chains.
//!
//! [`CheckpointStorage::write_subtask`]: crate::CheckpointStorage::write_subtask
//! [`CheckpointStorage::record_subtask`]: crate::CheckpointStorage::record_subtask

use std::collections::{BTreeMap, HashSet};

use redb::WriteTransaction;

use crate::checkpoint::SubtaskWrite;
use crate::checkpoint::chunks::ChunkTables;
use crate::checkpoint::history::read_meta;
use crate::checkpoint::live::LiveState;
use crate::codec::ChunkEncoder;
use crate::error::StoreError;
use crate::manifest::StateEntry;
use crate::meta::CheckpointStatus;
use crate::tables::CHECKPOINTS;

/// Encodes `entries` (only puts when `live_only`) into chunks of about `max_bytes`.
pub(super) fn encode_entries<'e>(
    entries: impl IntoIterator<Item = &'e StateEntry>,
    max_bytes: usize,
    live_only: bool,
) -> Vec<Vec<u8>> {
    let mut encoder = ChunkEncoder::new(max_bytes);
    for entry in entries {
        if live_only && entry.value.is_none() {
            continue;
        }
        encoder.push(&entry.state, &entry.key, entry.value.as_deref());
    }
    encoder.finish()
}

/// Encodes the live entries of `live` into chunks of about `max_bytes`.
pub(super) fn encode_live(live: &LiveState, max_bytes: usize) -> Vec<Vec<u8>> {
    let mut encoder = ChunkEncoder::new(max_bytes);
    for (state, keys) in live {
        for (key, value) in keys {
            encoder.push(state, key, Some(value));
        }
    }
    encoder.finish()
}

/// Fails unless checkpoint `id` of `job` may still take state: unknown or in progress.
pub(super) fn check_writable(txn: &WriteTransaction, job: &str, id: u64) -> Result<(), StoreError> {
    if let Some(meta) = read_meta(&txn.open_table(CHECKPOINTS)?, job, id)?
        && meta.status != CheckpointStatus::InProgress
    {
        return Err(StoreError::InvalidTransition {
            job: job.to_owned(),
            id,
            status: meta.status,
            action: "write state for",
        });
    }
    Ok(())
}

/// The chains a write builds on: none for a full write, else `previous`, each of whose
/// chunks must still be stored.
pub(super) fn base_chains(
    tables: &ChunkTables<'_>,
    job: &str,
    full: bool,
    previous: BTreeMap<u32, Vec<u64>>,
) -> Result<BTreeMap<u32, Vec<u64>>, StoreError> {
    if full {
        return Ok(BTreeMap::new());
    }
    for &chunk in previous.values().flatten() {
        tables.size(job, chunk)?;
    }
    Ok(previous)
}

/// Fails if two entries of `channel_state` share a (state, key): stored as chunks that are read
/// back through a map, the second would silently replace the first (a lost in-flight message).
pub(super) fn check_channel_state(write: &SubtaskWrite) -> Result<(), StoreError> {
    let mut seen = HashSet::with_capacity(write.channel_state.len());
    for entry in &write.channel_state {
        if !seen.insert((entry.state.as_str(), entry.key.as_slice())) {
            return Err(StoreError::InvalidMeta {
                job: write.job.clone(),
                id: write.checkpoint,
                reason: format!(
                    "the channel state of subtask {} of operator `{}` holds state `{}` key {:02x?} \
                     twice; each in-flight message needs its own key",
                    write.subtask, write.operator, entry.state, entry.key
                ),
            });
        }
    }
    Ok(())
}

/// Whether a chain `increments` long with this checkpoint's delta, whose base starts with
/// chunk `base`, is compacted now: when it passes a threshold between `⌊max_chain / 2⌋ + 1`
/// and `max_chain`, drawn afresh for every base from its first chunk id. Every key group of a
/// busy job gains an increment per checkpoint; with `max_chain` as the one threshold they
/// would all compact — rewrite the whole state — at the same checkpoint, every `max_chain`
/// checkpoints. With a threshold per base their compactions fall on different checkpoints
/// and stay apart (a fixed threshold per key group would realign them at common multiples
/// of their periods). Chains never pass `max_chain`; short chains are never compacted.
pub(crate) fn compacts(base: u64, increments: usize, max_chain: usize) -> bool {
    let max_chain = max_chain.max(1);
    // splitmix64 of the chunk id: consecutive ids give unrelated thresholds.
    let mut h = base.wrapping_add(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    let spread = (max_chain - max_chain / 2) as u64;
    increments > max_chain - (h % spread) as usize
}
