//! [`CheckpointStorage`] for [`Store`]: chunk writing, chains, compaction, retention and GC.

use std::collections::{BTreeMap, HashSet};
use std::ops::ControlFlow;

use redb::{Durability, ReadableTable, WriteTransaction};

use crate::checkpoint::chunks::{ChunkTables, ChunkWriter};
use crate::checkpoint::history::{Changes, bump_last_id, decode_meta, now_ms, put_meta, read_meta};
use crate::checkpoint::live::{ChainReader, LiveState, apply_chain, apply_entry};
use crate::checkpoint::put::PutSubtaskWrite;
use crate::checkpoint::summary;
use crate::checkpoint::write::{
    base_chains, check_channel_state, check_writable, compacts, encode_entries, encode_live,
};
use crate::checkpoint::{CheckpointStorage, EntryVisitor, GcReport, SubtaskWrite};
use crate::codec::{ChunkEncoder, decode_manifest, encode_manifest};
use crate::error::StoreError;
use crate::manifest::{Manifest, StateEntry, SubtaskState};
use crate::meta::{CheckpointMeta, CheckpointStatus};
use crate::store::Store;
use crate::tables::{
    CHECKPOINTS, CHUNK_INDEX, CHUNKS, COUNTERS, IN_PROGRESS, JOB_LAST_ID, MANIFESTS, NEXT_CHUNK_ID,
};
use crate::usage::{Meter, Subject, charge};

fn decode_stored_manifest(job: &str, id: u64, bytes: &[u8]) -> Result<Manifest, StoreError> {
    decode_manifest(bytes)
        .map_err(|detail| StoreError::corrupt(format!("manifest of checkpoint {id} of job `{job}`"), detail))
}

/// Every chunk `manifest` references: the chains of every subtask and its channel state (a
/// checkpoint's channel chunks are retained and collected with it like its chains).
fn manifest_chunks(manifest: &Manifest) -> impl Iterator<Item = u64> + '_ {
    manifest.values().flat_map(|subtasks| subtasks.values()).flat_map(state_chunks)
}

/// The chunks of one subtask's state: its chains, then its channel state.
fn state_chunks(state: &SubtaskState) -> impl Iterator<Item = u64> + '_ {
    state.chains.values().flatten().chain(&state.channel).copied()
}

/// Every chunk referenced by a kept manifest of `job`.
fn kept_chunks(
    manifests: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    job: &str,
) -> Result<HashSet<u64>, StoreError> {
    let mut keep = HashSet::new();
    for item in manifests.range((job, 0)..=(job, u64::MAX))? {
        let (key, bytes) = item?;
        let manifest = decode_stored_manifest(job, key.value().1, bytes.value())?;
        keep.extend(manifest_chunks(&manifest));
    }
    Ok(keep)
}

/// Marks an in-progress checkpoint Failed (if it has a meta row) and drops it from the index.
fn fail_in_progress(
    txn: &WriteTransaction,
    job: &str,
    id: u64,
    reason: &str,
    (meter, changes): (&mut Meter, &mut Changes),
) -> Result<(), StoreError> {
    if txn.open_table(IN_PROGRESS)?.remove((job, id))?.is_some() {
        meter.remove(job.len() + 8, 0);
    }
    let mut checkpoints = txn.open_table(CHECKPOINTS)?;
    if let Some(mut meta) = read_meta(&checkpoints, job, id)?
        && meta.status == CheckpointStatus::InProgress
    {
        meta.status = CheckpointStatus::Failed;
        meta.failure = Some(reason.to_owned());
        meta.retained = false;
        let end = now_ms();
        meta.end_time_ms = Some(end);
        meta.duration_ms = Some(end.saturating_sub(meta.trigger_time_ms) as f64);
        put_meta(&mut checkpoints, &meta, (meter, changes))?;
    }
    Ok(())
}

fn in_progress_ids(
    txn: &WriteTransaction,
    job: &str,
    ids_in: std::ops::RangeInclusive<u64>,
) -> Result<Vec<u64>, StoreError> {
    let table = txn.open_table(IN_PROGRESS)?;
    let mut ids = Vec::new();
    for item in table.range((job, *ids_in.start())..=(job, *ids_in.end()))? {
        ids.push(item?.0.value().1);
    }
    Ok(ids)
}

/// About the bytes `write` stores (keys, values, channel state and the blob), for the
/// free-space floor.
fn write_size(write: &SubtaskWrite) -> u64 {
    let entries: usize = write
        .scopes
        .iter()
        .flat_map(|s| &s.entries)
        .chain(&write.channel_state)
        .map(|e| e.state.len() + e.key.len() + e.value.as_ref().map_or(0, Vec::len))
        .sum();
    (entries + write.blob.len()) as u64
}

/// Writes the live entries of `channel_state` in order as chunks of the writer's checkpoint,
/// encoding one chunk at a time (channel state may be many MiB); returns their ids in order.
fn write_channel_state(
    writer: &mut ChunkWriter<'_, '_>,
    channel_state: &[StateEntry],
    max_bytes: usize,
) -> Result<Vec<u64>, StoreError> {
    let mut encoder = ChunkEncoder::new(max_bytes);
    let mut ids = Vec::new();
    for entry in channel_state {
        let Some(value) = &entry.value else { continue };
        encoder.push(&entry.state, &entry.key, Some(value));
        ids.extend(writer.write(encoder.take_done())?);
    }
    ids.extend(writer.write(encoder.finish())?);
    Ok(ids)
}

/// Fails unless checkpoint `id` of `job` may complete: in progress (or unrecorded), and newer
/// than every completed one.
fn check_completable(txn: &WriteTransaction, job: &str, id: u64) -> Result<(), StoreError> {
    if let Some(existing) = read_meta(&txn.open_table(CHECKPOINTS)?, job, id)?
        && existing.status != CheckpointStatus::InProgress
    {
        return Err(StoreError::InvalidTransition {
            job: job.to_owned(),
            id,
            status: existing.status,
            action: "complete",
        });
    }
    let manifests = txn.open_table(MANIFESTS)?;
    if let Some(last) = manifests.range((job, 0)..=(job, u64::MAX))?.next_back() {
        let latest = last?.0.value().1;
        if latest >= id {
            return Err(StoreError::StaleCheckpoint { job: job.to_owned(), id, latest, what: "completed" });
        }
    }
    Ok(())
}

/// The meta to store for a completed checkpoint: retained, with its sizes computed from the
/// chunk index (which also checks that every chunk `manifest` references exists).
fn sized_meta(
    tables: &ChunkTables<'_>,
    meta: &CheckpointMeta,
    manifest: &Manifest,
) -> Result<CheckpointMeta, StoreError> {
    let job = meta.job.as_str();
    let mut stored = meta.clone();
    stored.retained = true;
    stored.failure = None;
    let mut seen = HashSet::new();
    stored.full_size = 0;
    for chunk in manifest_chunks(manifest) {
        let size = tables.size(job, chunk)?;
        if seen.insert(chunk) {
            stored.full_size += size;
        }
    }
    for stats in &mut stored.subtasks {
        let mut bytes = 0;
        if let Some(state) = manifest.get(&stats.operator).and_then(|subtasks| subtasks.get(&stats.subtask)) {
            for chunk in state_chunks(state) {
                bytes += tables.size(job, chunk)?;
            }
        }
        stats.full_state_bytes = bytes;
    }
    Ok(stored)
}

/// Stores the completed checkpoint's meta `stored` and its manifest, and drops it from the
/// in-progress index.
fn store_completed(
    txn: &WriteTransaction,
    stored: &CheckpointMeta,
    manifest: &Manifest,
    (meter, changes): (&mut Meter, &mut Changes),
) -> Result<(), StoreError> {
    let (job, id) = (stored.job.as_str(), stored.id);
    put_meta(&mut txn.open_table(CHECKPOINTS)?, stored, (&mut *meter, changes))?;
    let encoded = encode_manifest(manifest);
    let old = txn.open_table(MANIFESTS)?.insert((job, id), encoded.as_slice())?.map(|v| v.value().len());
    meter.put(job.len() + 8, encoded.len(), old);
    if txn.open_table(IN_PROGRESS)?.remove((job, id))?.is_some() {
        meter.remove(job.len() + 8, 0);
    }
    Ok(())
}

/// Retention: removes the manifests of `job` but the newest `retain` (at least 1) and the
/// pinned ones, marking their metas no longer retained.
fn retain_newest(
    txn: &WriteTransaction,
    job: &str,
    retain: usize,
    report: &mut GcReport,
    (meter, changes): (&mut Meter, &mut Changes),
) -> Result<(), StoreError> {
    let mut manifests = txn.open_table(MANIFESTS)?;
    let mut ids = Vec::new();
    for item in manifests.range((job, 0)..=(job, u64::MAX))? {
        ids.push(item?.0.value().1);
    }
    let keep_from = ids.len().saturating_sub(retain.max(1));
    let mut checkpoints = txn.open_table(CHECKPOINTS)?;
    for &old in &ids[..keep_from] {
        let old_meta = read_meta(&checkpoints, job, old)?;
        if old_meta.as_ref().is_some_and(|meta| meta.pinned) {
            continue;
        }
        if let Some(removed) = manifests.remove((job, old))? {
            meter.remove(job.len() + 8, removed.value().len());
        }
        if let Some(mut old_meta) = old_meta {
            old_meta.retained = false;
            put_meta(&mut checkpoints, &old_meta, (&mut *meter, &mut *changes))?;
        }
        report.removed_checkpoints.push(old);
    }
    Ok(())
}

impl CheckpointStorage for Store {
    fn begin(&self, meta: &CheckpointMeta) -> Result<(), StoreError> {
        let job = meta.job.as_str();
        if meta.status != CheckpointStatus::InProgress {
            return Err(StoreError::InvalidMeta {
                job: job.to_owned(),
                id: meta.id,
                reason: format!("begin needs status in progress, not {}", meta.status),
            });
        }
        self.check_disk(0)?;
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        let mut changes = Changes::new();
        {
            let last = txn.open_table(JOB_LAST_ID)?.get(job)?.map_or(0, |v| v.value());
            if meta.id < last {
                return Err(StoreError::StaleCheckpoint {
                    job: job.to_owned(),
                    id: meta.id,
                    latest: last,
                    what: "used",
                });
            }
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            if let Some(existing) = read_meta(&checkpoints, job, meta.id)? {
                return Err(StoreError::InvalidTransition {
                    job: job.to_owned(),
                    id: meta.id,
                    status: existing.status,
                    action: "begin",
                });
            }
            let mut stored = meta.clone();
            stored.retained = false;
            put_meta(&mut checkpoints, &stored, (&mut meter, &mut changes))?;
            let old = txn.open_table(IN_PROGRESS)?.insert((job, meta.id), ())?.map(|_| 0);
            meter.put(job.len() + 8, 0, old);
        }
        summary::update(&txn, job, &changes)?;
        charge(&txn, Subject::Job(job), meter.0, true)?;
        bump_last_id(&txn, job, meta.id)?;
        txn.commit()?;
        Ok(())
    }

    fn write_subtask(&self, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
        if let Some(external) = self.external() {
            return self.write_subtask_external(external, write);
        }
        let job = write.job.as_str();
        let max_chain = write.max_chain_length.max(1);
        check_channel_state(&write)?;
        self.check_disk(write_size(&write))?;
        let txn = self.write_txn(Durability::None)?;
        let state = {
            check_writable(&txn, job, write.checkpoint)?;
            let mut tables = ChunkTables::open(&txn, self)?;
            let mut chains = base_chains(&tables, job, write.full, write.previous)?;
            // One entry list per scope, in the order given.
            let mut scopes: BTreeMap<u32, Vec<&StateEntry>> = BTreeMap::new();
            for delta in write.scopes.iter() {
                scopes.entry(delta.scope).or_default().extend(delta.entries.iter());
            }
            let mut counters = txn.open_table(COUNTERS)?;
            let next_id = counters.get(NEXT_CHUNK_ID)?.map_or(1, |v| v.value());
            let mut writer =
                ChunkWriter { tables: &mut tables, job, owner: write.checkpoint, next_id, bytes_written: 0 };
            let mut compactions = 0;
            for (scope, entries) in scopes {
                if write.full {
                    let ids =
                        writer.write(encode_entries(entries.iter().copied(), self.max_chunk_bytes, true))?;
                    if !ids.is_empty() {
                        chains.insert(scope, ids);
                    }
                    continue;
                }
                if entries.is_empty() {
                    continue;
                }
                let chain = chains.entry(scope).or_default();
                let delta = encode_entries(entries.iter().copied(), self.max_chunk_bytes, false);
                // The chain's length is counted in increments (one per checkpoint that added
                // to it, the base one), not chunks: a large state's base spans many chunks,
                // and counting those would compact — rewrite the whole scope — at every
                // checkpoint once the base passed `max_chain` chunks.
                let increments = writer.tables.increments(job, chain)? + 1;
                let mut compacted = false;
                if compacts(chain.first().copied().unwrap_or(0), increments, max_chain) {
                    let mut live = LiveState::new();
                    apply_chain(
                        &writer.tables.chunks,
                        writer.tables.external.as_deref(),
                        job,
                        chain,
                        &mut live,
                    )?;
                    for entry in &entries {
                        apply_entry(&mut live, &entry.state, &entry.key, entry.value.as_deref());
                    }
                    let base = encode_live(&live, self.max_chunk_bytes);
                    *chain = writer.write(base)?;
                    compactions += 1;
                    compacted = true;
                }
                if !compacted {
                    let ids = writer.write(delta)?;
                    chain.extend(ids);
                }
                if chain.is_empty() {
                    chains.remove(&scope);
                }
            }
            // Channel state: chunks of this checkpoint only, never in a chain (nothing compacts
            // them and no later write receives them as `previous`).
            let channel = write_channel_state(&mut writer, &write.channel_state, self.max_chunk_bytes)?;
            counters.insert(NEXT_CHUNK_ID, writer.next_id)?;
            let bytes_written = writer.bytes_written;
            charge(&txn, Subject::Job(job), tables.meter.0, true)?;
            SubtaskState { chains, blob: write.blob, bytes_written, compactions, channel }
        };
        bump_last_id(&txn, job, write.checkpoint)?;
        txn.commit()?;
        Ok(state)
    }

    fn complete(
        &self,
        meta: &CheckpointMeta,
        manifest: &Manifest,
        retain: usize,
    ) -> Result<GcReport, StoreError> {
        let job = meta.job.as_str();
        let id = meta.id;
        if meta.status != CheckpointStatus::Completed {
            return Err(StoreError::InvalidMeta {
                job: job.to_owned(),
                id,
                reason: format!("complete needs status completed, not {}", meta.status),
            });
        }
        let mut report = GcReport::default();
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        let mut changes = Changes::new();
        let dropped = {
            check_completable(&txn, job, id)?;
            let mut tables = ChunkTables::open(&txn, self)?;
            let stored = sized_meta(&tables, meta, manifest)?;
            store_completed(&txn, &stored, manifest, (&mut meter, &mut changes))?;
            // Older checkpoints still in progress can no longer complete.
            if let Some(below) = id.checked_sub(1) {
                for older in in_progress_ids(&txn, job, 0..=below)? {
                    let reason = format!("subsumed by completed checkpoint {id}");
                    fail_in_progress(&txn, job, older, &reason, (&mut meter, &mut changes))?;
                }
            }
            retain_newest(&txn, job, retain, &mut report, (&mut meter, &mut changes))?;
            // GC: chunks owned by checkpoints up to this one that no kept manifest references.
            let keep = kept_chunks(&txn.open_table(MANIFESTS)?, job)?;
            tables.collect(job, 0..=id, &keep, &mut report)?;
            meter.0 += tables.meter.0;
            tables.finish()
        };
        // Retention's deletions count against what the completion adds.
        summary::update(&txn, job, &changes)?;
        charge(&txn, Subject::Job(job), meter.0, true)?;
        bump_last_id(&txn, job, id)?;
        txn.commit()?;
        dropped.delete(job);
        Ok(report)
    }

    fn abort(&self, meta: &CheckpointMeta) -> Result<(), StoreError> {
        let job = meta.job.as_str();
        let id = meta.id;
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        let mut changes = Changes::new();
        let dropped = {
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            if let Some(existing) = read_meta(&checkpoints, job, id)?
                && existing.status == CheckpointStatus::Completed
            {
                return Err(StoreError::InvalidTransition {
                    job: job.to_owned(),
                    id,
                    status: existing.status,
                    action: "abort",
                });
            }
            let mut stored = meta.clone();
            stored.status = CheckpointStatus::Failed;
            stored.retained = false;
            if stored.failure.is_none() {
                stored.failure = Some("aborted".to_owned());
            }
            if stored.end_time_ms.is_none() {
                let end = now_ms();
                stored.end_time_ms = Some(end);
                stored.duration_ms = Some(end.saturating_sub(stored.trigger_time_ms) as f64);
            }
            put_meta(&mut checkpoints, &stored, (&mut meter, &mut changes))?;
            if txn.open_table(IN_PROGRESS)?.remove((job, id))?.is_some() {
                meter.remove(job.len() + 8, 0);
            }
            let keep = kept_chunks(&txn.open_table(MANIFESTS)?, job)?;
            let mut tables = ChunkTables::open(&txn, self)?;
            tables.collect(job, id..=id, &keep, &mut GcReport::default())?;
            meter.0 += tables.meter.0;
            tables.finish()
        };
        // An abort is never refused: it must be able to record a quota failure.
        summary::update(&txn, job, &changes)?;
        charge(&txn, Subject::Job(job), meter.0, false)?;
        bump_last_id(&txn, job, id)?;
        txn.commit()?;
        dropped.delete(job);
        Ok(())
    }

    fn latest_completed(&self, job: &str) -> Result<Option<(CheckpointMeta, Manifest)>, StoreError> {
        let txn = self.read_txn()?;
        let manifests = txn.open_table(MANIFESTS)?;
        let Some(last) = manifests.range((job, 0)..=(job, u64::MAX))?.next_back() else {
            return Ok(None);
        };
        let (key, bytes) = last?;
        let id = key.value().1;
        let manifest = decode_stored_manifest(job, id, bytes.value())?;
        let meta = read_meta(&txn.open_table(CHECKPOINTS)?, job, id)?.ok_or_else(|| {
            StoreError::corrupt(
                format!("checkpoint {id} of job `{job}`"),
                "a manifest is stored but the checkpoint's metadata is missing",
            )
        })?;
        Ok(Some((meta, manifest)))
    }

    fn checkpoint(
        &self,
        job: &str,
        id: u64,
    ) -> Result<Option<(CheckpointMeta, Option<Manifest>)>, StoreError> {
        let txn = self.read_txn()?;
        let Some(meta) = read_meta(&txn.open_table(CHECKPOINTS)?, job, id)? else {
            return Ok(None);
        };
        let manifest = match txn.open_table(MANIFESTS)?.get((job, id))? {
            Some(bytes) => Some(decode_stored_manifest(job, id, bytes.value())?),
            None => None,
        };
        Ok(Some((meta, manifest)))
    }

    fn read_chain(&self, job: &str, chain: &[u64]) -> Result<Vec<StateEntry>, StoreError> {
        let txn = self.read_txn()?;
        let mut reader = ChainReader::default();
        reader.read(&txn.open_table(CHUNKS)?, self.external().as_deref(), job, chain)?;
        reader.entries(job, chain)
    }

    fn visit_chains(
        &self,
        job: &str,
        chains: &[Vec<u64>],
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        // One chain's chunks at a time, in a buffer reused from chain to chain.
        let mut reader = ChainReader::default();
        let external = self.external();
        for chain in chains {
            let txn = self.read_txn()?;
            reader.read(&txn.open_table(CHUNKS)?, external.as_deref(), job, chain)?;
            drop(txn);
            if reader.visit(job, chain, visit)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    fn history(&self, job: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        let txn = self.read_txn()?;
        let checkpoints = txn.open_table(CHECKPOINTS)?;
        let mut metas = Vec::new();
        for item in checkpoints.range((job, 0)..=(job, u64::MAX))? {
            let (key, bytes) = item?;
            metas.push(decode_meta(job, key.value().1, bytes.value())?);
        }
        Ok(metas)
    }

    fn last_checkpoint_id(&self, job: &str) -> Result<u64, StoreError> {
        let txn = self.read_txn()?;
        let last = txn.open_table(JOB_LAST_ID)?.get(job)?.map_or(0, |v| v.value());
        Ok(last)
    }

    fn recover(&self, job: &str) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        let mut changes = Changes::new();
        for id in in_progress_ids(&txn, job, 0..=u64::MAX)? {
            fail_in_progress(&txn, job, id, "interrupted: the job restarted", (&mut meter, &mut changes))?;
        }
        let dropped = {
            let keep = kept_chunks(&txn.open_table(MANIFESTS)?, job)?;
            let mut tables = ChunkTables::open(&txn, self)?;
            tables.collect(job, 0..=u64::MAX, &keep, &mut GcReport::default())?;
            meter.0 += tables.meter.0;
            tables.finish()
        };
        summary::update(&txn, job, &changes)?;
        charge(&txn, Subject::Job(job), meter.0, false)?;
        txn.commit()?;
        dropped.delete(job);
        // External chunks no index row names: put for a transaction that never committed,
        // or dropped by one whose deletions did not happen (a crash, a failed delete).
        self.sweep_orphans(job, &|_| false)?;
        Ok(())
    }

    fn lease_chunk_ids(&self, count: u64) -> Result<std::ops::Range<u64>, StoreError> {
        Store::lease_chunk_ids(self, count)
    }

    fn record_subtask(&self, write: PutSubtaskWrite) -> Result<SubtaskState, StoreError> {
        self.record_with_prepared_compactions(write)
    }

    fn chunk_usage(&self, job: &str) -> Result<(u64, u64), StoreError> {
        let txn = self.read_txn()?;
        let index = txn.open_table(CHUNK_INDEX)?;
        let (mut bytes, mut count) = (0, 0);
        for item in index.range((job, 0)..=(job, u64::MAX))? {
            bytes += item?.1.value().1;
            count += 1;
        }
        Ok((bytes, count))
    }
}

impl Store {
    /// Deletes the external chunks of `job` that no index row names and that may not be
    /// written still: put by a write that never committed (a crash, a dead or fenced
    /// worker), or dropped by a transaction whose deletions did not happen. Spared: ids
    /// `spare` names (leased to a writer that is still running) and ids from the chunk
    /// counter's value on entry on (a transaction of this store writing them may not have
    /// committed yet, or — the file restored from an older backup — a newer file wrote
    /// them: the counter never gave those ids to this one). Returns how many it deleted
    /// (none in a dry run of the [`crate::SweepPolicy`], which logs them). Without an
    /// external store, nothing.
    pub fn sweep_orphans(&self, job: &str, spare: &dyn Fn(u64) -> bool) -> Result<usize, StoreError> {
        let Some(external) = self.external() else {
            return Ok(0);
        };
        // Write transactions are serial and take their ids from the committed counter: an
        // id below its value now was either recorded or will never be.
        let floor = self.read_txn()?.open_table(COUNTERS)?.get(NEXT_CHUNK_ID)?.map_or(1, |v| v.value());
        let listed = external.list(job)?;
        let txn = self.read_txn()?;
        let index = txn.open_table(CHUNK_INDEX)?;
        let mut orphans = Vec::new();
        for id in listed {
            if id < floor && !spare(id) && index.get((job, id))?.is_none() {
                orphans.push(id);
            }
        }
        drop((index, txn));
        if orphans.is_empty() {
            return Ok(0);
        }
        let (first, last) = (orphans[0], orphans[orphans.len() - 1]);
        if external.sweep_policy().dry_run {
            tracing::warn!(
                job,
                count = orphans.len(),
                first,
                last,
                "object sweep (dry run): would delete chunk objects no index row names"
            );
            return Ok(0);
        }
        external.delete(job, &orphans)?;
        tracing::info!(
            job,
            count = orphans.len(),
            first,
            last,
            "object sweep: deleted chunk objects no index row names"
        );
        Ok(orphans.len())
    }

    /// Every pinned checkpoint that still has its manifest, as (job, id). A pin outlives its
    /// savepoint only if the process stopped in between: whoever pins clears these at start.
    pub fn pinned(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let txn = self.read_txn()?;
        let manifests = txn.open_table(MANIFESTS)?;
        let checkpoints = txn.open_table(CHECKPOINTS)?;
        let mut out = Vec::new();
        for item in manifests.iter()? {
            let (key, _) = item?;
            let (job, id) = key.value();
            if read_meta(&checkpoints, job, id)?.is_some_and(|meta| meta.pinned) {
                out.push((job.to_string(), id));
            }
        }
        Ok(out)
    }

    /// Clears the pin of checkpoint `id` of `job` ([`CheckpointMeta::pinned`]), durably. Its
    /// manifest stays until the next [`CheckpointStorage::complete`] of the job, whose
    /// retention removes it (and collects its chunks) unless it is among the newest `retain`.
    /// Nothing happens if the checkpoint is not pinned or not recorded.
    pub fn unpin(&self, job: &str, id: u64) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        let mut changes = Changes::new();
        {
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            match read_meta(&checkpoints, job, id)? {
                Some(mut meta) if meta.pinned => {
                    meta.pinned = false;
                    put_meta(&mut checkpoints, &meta, (&mut meter, &mut changes))?;
                }
                _ => return Ok(()),
            }
        }
        summary::update(&txn, job, &changes)?;
        charge(&txn, Subject::Job(job), meter.0, false)?;
        txn.commit()?;
        Ok(())
    }
}
