//! Chunks written elsewhere: a worker encodes its subtask's snapshot into chunks
//! ([`encode_subtask`], exactly as [`CheckpointStorage::write_subtask`] would), puts them in
//! the external chunk store itself under ids the controller leased it
//! ([`Store::lease_chunk_ids`]), and the controller records them
//! ([`CheckpointStorage::record_subtask`]): the index, the owners, the ledger and the chains
//! change as a `write_subtask` of the same entries would change them, compaction included
//! (its new base read and put before the record, `upload.rs`), so what is restored does not
//! depend on who wrote the chunks.
//!
//! [`CheckpointStorage::write_subtask`]: crate::CheckpointStorage::write_subtask
//! [`CheckpointStorage::record_subtask`]: crate::CheckpointStorage::record_subtask

use std::collections::BTreeMap;

use redb::{Durability, ReadableTable as _};
use serde::{Deserialize, Serialize};

use crate::checkpoint::SubtaskWrite;
use crate::checkpoint::chunks::{ChunkTables, ChunkWriter};
use crate::checkpoint::history::bump_last_id;
use crate::checkpoint::live::{LiveState, apply_chain};
use crate::checkpoint::write::{base_chains, check_channel_state, check_writable, compacts, encode_live};
use crate::codec::ChunkEncoder;
use crate::error::StoreError;
use crate::manifest::{StateEntry, SubtaskState};
use crate::store::Store;
use crate::tables::{COUNTERS, NEXT_CHUNK_ID};
use crate::usage::{Subject, charge};

/// A chunk put in the external chunk store by whoever holds its leased id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutChunk {
    /// The chunk's id (leased).
    pub id: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// A [`SubtaskWrite`] whose chunks are already in the external chunk store: what
/// [`encode_subtask`] made of it, each chunk put under its own leased id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutSubtaskWrite {
    /// The job.
    pub job: String,
    /// The checkpoint (it owns the chunks).
    pub checkpoint: u64,
    /// The operator (node) id.
    pub operator: String,
    /// The subtask index.
    pub subtask: u32,
    /// As [`SubtaskWrite::full`].
    pub full: bool,
    /// Per scope, the chunks of its delta (or of its new base, when `full`), in order.
    pub scopes: BTreeMap<u32, Vec<PutChunk>>,
    /// As [`SubtaskWrite::previous`].
    pub previous: BTreeMap<u32, Vec<u64>>,
    /// As [`SubtaskWrite::blob`].
    #[serde(with = "serde_bytes")]
    pub blob: Vec<u8>,
    /// The chunks of the channel state, in order.
    pub channel: Vec<PutChunk>,
    /// As [`SubtaskWrite::max_chain_length`].
    pub max_chain_length: u64,
}

impl PutSubtaskWrite {
    /// Every chunk of the write.
    pub fn chunks(&self) -> impl Iterator<Item = &PutChunk> {
        self.scopes.values().flatten().chain(&self.channel)
    }
}

/// A [`SubtaskWrite`] encoded as the chunks `write_subtask` would write.
#[derive(Debug, Default)]
pub struct EncodedSubtask {
    /// Per scope, the chunks of its delta (or of its base, for a full write); scopes
    /// without any are absent.
    pub scopes: BTreeMap<u32, Vec<Vec<u8>>>,
    /// The channel state's chunks, in order.
    pub channel: Vec<Vec<u8>>,
}

impl EncodedSubtask {
    /// How many chunks it holds.
    pub fn count(&self) -> usize {
        self.scopes.values().map(Vec::len).sum::<usize>() + self.channel.len()
    }

    /// Gives the chunks the ids `ids` (at least [`count`](Self::count) of them), in order:
    /// the record of `write` to send once they are put, and the chunks to put.
    pub fn assign(
        self,
        write: SubtaskWrite,
        mut ids: std::ops::Range<u64>,
    ) -> (PutSubtaskWrite, Vec<(u64, Vec<u8>)>) {
        let mut puts = Vec::with_capacity(self.count());
        let mut put = |bytes: Vec<u8>| {
            let id = ids.next().expect("an id per chunk");
            let chunk = PutChunk { id, size: bytes.len() as u64 };
            puts.push((id, bytes));
            chunk
        };
        let scopes = self
            .scopes
            .into_iter()
            .map(|(scope, chunks)| (scope, chunks.into_iter().map(&mut put).collect()))
            .collect();
        let channel = self.channel.into_iter().map(&mut put).collect();
        (PutSubtaskWrite::of(write, scopes, channel), puts)
    }
}

impl PutSubtaskWrite {
    /// The record of `write` whose chunks were put as `scopes` and `channel`.
    pub(super) fn of(
        write: SubtaskWrite,
        scopes: BTreeMap<u32, Vec<PutChunk>>,
        channel: Vec<PutChunk>,
    ) -> Self {
        PutSubtaskWrite {
            job: write.job,
            checkpoint: write.checkpoint,
            operator: write.operator,
            subtask: write.subtask,
            full: write.full,
            scopes,
            previous: write.previous,
            blob: write.blob,
            channel,
            max_chain_length: write.max_chain_length as u64,
        }
    }
}

/// Where a chunk of a subtask's write belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// A scope's delta (or its base, for a full write).
    Scope(u32),
    /// The channel state.
    Channel,
}

/// Encodes `write` into chunks of at most `max_chunk_bytes` as `write_subtask` would,
/// handing each to `emit` as it fills: every scope's in scope order (one entry list per
/// scope, in the order given; a delta keeps its tombstones, a full write only live
/// entries), then the channel state's live entries.
pub(super) fn encode_chunks(
    write: &SubtaskWrite,
    max_chunk_bytes: usize,
    mut emit: impl FnMut(Part, Vec<u8>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let max_chunk_bytes = max_chunk_bytes.max(1);
    let mut scopes: BTreeMap<u32, Vec<&StateEntry>> = BTreeMap::new();
    for delta in write.scopes.iter() {
        scopes.entry(delta.scope).or_default().extend(delta.entries.iter());
    }
    let live = |e: &&StateEntry| e.value.is_some();
    let parts = scopes
        .into_iter()
        .map(|(scope, entries)| (Part::Scope(scope), entries, write.full))
        .chain(std::iter::once((Part::Channel, write.channel_state.iter().collect(), true)));
    for (part, entries, live_only) in parts {
        let mut encoder = ChunkEncoder::new(max_chunk_bytes);
        for entry in entries.iter().filter(|e| !live_only || live(e)) {
            encoder.push(&entry.state, &entry.key, entry.value.as_deref());
            for chunk in encoder.take_done() {
                emit(part, chunk)?;
            }
        }
        for chunk in encoder.finish() {
            emit(part, chunk)?;
        }
    }
    Ok(())
}

/// Encodes `write` into chunks of at most `max_chunk_bytes` (a store's
/// [`Store::max_chunk_bytes`]), as [`CheckpointStorage::write_subtask`] would: a delta keeps
/// its tombstones, a full write only live entries. Fails as it would if the channel state
/// repeats a (state, key).
///
/// [`CheckpointStorage::write_subtask`]: crate::CheckpointStorage::write_subtask
pub fn encode_subtask(write: &SubtaskWrite, max_chunk_bytes: usize) -> Result<EncodedSubtask, StoreError> {
    check_channel_state(write)?;
    let mut encoded = EncodedSubtask::default();
    encode_chunks(write, max_chunk_bytes, |part, chunk| {
        match part {
            Part::Scope(scope) => encoded.scopes.entry(scope).or_default().push(chunk),
            Part::Channel => encoded.channel.push(chunk),
        }
        Ok(())
    })?;
    Ok(encoded)
}

impl Store {
    /// Records `write`, whose chunks are put, with `bases` the new bases of the scopes that
    /// compact, put too ([`Store::prepare_compactions`]; a scope that compacts without one
    /// is compacted here, reading and putting inside the transaction).
    pub(crate) fn record_put_subtask(
        &self,
        write: PutSubtaskWrite,
        mut bases: BTreeMap<u32, Vec<PutChunk>>,
    ) -> Result<SubtaskState, StoreError> {
        let job = write.job.as_str();
        let Some(external) = self.external() else {
            return Err(StoreError::External(
                "chunks written elsewhere need an external chunk store (`chunk_store`)".into(),
            ));
        };
        let max_chain = usize::try_from(write.max_chain_length).unwrap_or(usize::MAX).max(1);
        self.check_disk(write.blob.len() as u64 + 64 * write.chunks().count() as u64)?;
        let txn = self.write_txn(Durability::None)?;
        let state = {
            check_writable(&txn, job, write.checkpoint)?;
            let mut tables = ChunkTables::open(&txn, self)?;
            // An id recorded before is not this write's: it would take over another chunk's row.
            for chunk in write.chunks().chain(bases.values().flatten()) {
                if tables.index.get((job, chunk.id))?.is_some() {
                    return Err(StoreError::InvalidMeta {
                        job: job.to_owned(),
                        id: write.checkpoint,
                        reason: format!("chunk {} is recorded already; a put chunk's id is new", chunk.id),
                    });
                }
            }
            let mut chains = base_chains(&tables, job, write.full, write.previous.clone())?;
            let mut counters = txn.open_table(COUNTERS)?;
            let next_id = counters.get(NEXT_CHUNK_ID)?.map_or(1, |v| v.value());
            let mut writer =
                ChunkWriter { tables: &mut tables, job, owner: write.checkpoint, next_id, bytes_written: 0 };
            for chunk in write.chunks().chain(bases.values().flatten()) {
                writer.record(chunk.id, chunk.size)?;
            }
            let mut compactions = 0;
            for (&scope, put) in &write.scopes {
                let ids: Vec<u64> = put.iter().map(|c| c.id).collect();
                if write.full {
                    if !ids.is_empty() {
                        chains.insert(scope, ids);
                    }
                    continue;
                }
                if ids.is_empty() {
                    continue;
                }
                let chain = chains.entry(scope).or_default();
                // Counted as `write_subtask` counts: in increments, this write one more.
                let increments = writer.tables.increments(job, chain)? + 1;
                if compacts(chain.first().copied().unwrap_or(0), increments, max_chain) {
                    // The put delta stays recorded, owned by this checkpoint and in no chain,
                    // so its completion collects it.
                    compactions += 1;
                    if let Some(base) = bases.remove(&scope) {
                        *chain = base.iter().map(|c| c.id).collect();
                    } else {
                        // Not prepared: the new base is written here.
                        let mut live = LiveState::new();
                        for part in [&chain[..], &ids[..]] {
                            apply_chain(&writer.tables.chunks, Some(&*external), job, part, &mut live)?;
                        }
                        *chain = writer.write(encode_live(&live, self.max_chunk_bytes))?;
                    }
                } else {
                    chain.extend(ids);
                }
                if chain.is_empty() {
                    chains.remove(&scope);
                }
            }
            // A prepared base no scope took (its chain changed since) stays recorded, owned by
            // this checkpoint and in no chain, like a compacted delta.
            counters.insert(NEXT_CHUNK_ID, writer.next_id)?;
            let bytes_written = writer.bytes_written;
            charge(&txn, Subject::Job(job), tables.meter.0, true)?;
            let channel = write.channel.iter().map(|c| c.id).collect();
            SubtaskState { chains, blob: write.blob, bytes_written, compactions, channel }
        };
        bump_last_id(&txn, job, write.checkpoint)?;
        txn.commit()?;
        Ok(state)
    }
}
