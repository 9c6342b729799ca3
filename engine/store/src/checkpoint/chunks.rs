//! The chunk tables of a write transaction: writing chunks (into the piece table, or an
//! external store), their index and owners, and deleting them (external ones once the
//! transaction committed).

use std::collections::HashSet;
use std::sync::Arc;

use redb::{ReadableTable, Table, WriteTransaction};

use crate::checkpoint::GcReport;
use crate::error::StoreError;
use crate::external::ExternalChunks;
use crate::store::Store;
use crate::tables::{CHUNK_INDEX, CHUNK_OWNERS, CHUNK_PIECE_BYTES, CHUNKS, EXTERNAL_CHUNKS};
use crate::usage::{Meter, external_chunk_bytes};

/// The chunk tables of one write transaction.
pub(super) struct ChunkTables<'txn> {
    pub(super) chunks: Table<'txn, (&'static str, u64, u32), &'static [u8]>,
    pub(super) index: Table<'txn, (&'static str, u64), (u64, u64)>,
    pub(super) owners: Table<'txn, (&'static str, u64, u64), u64>,
    /// Sizes of the chunks whose bytes are external.
    pub(super) external_sizes: Table<'txn, (&'static str, u64), u64>,
    /// Where new chunks' bytes go, if not to `chunks`.
    pub(super) external: Option<Arc<dyn ExternalChunks>>,
    /// External chunks dropped by this transaction: deleted once it commits
    /// ([`ChunkTables::finish`]).
    pub(super) dropped: Vec<u64>,
    /// Bytes added minus bytes removed through these tables.
    pub(super) meter: Meter,
}

impl<'txn> ChunkTables<'txn> {
    pub(super) fn open(txn: &'txn WriteTransaction, store: &Store) -> Result<Self, StoreError> {
        Ok(ChunkTables {
            chunks: txn.open_table(CHUNKS)?,
            index: txn.open_table(CHUNK_INDEX)?,
            owners: txn.open_table(CHUNK_OWNERS)?,
            external_sizes: txn.open_table(EXTERNAL_CHUNKS)?,
            external: store.external(),
            dropped: Vec::new(),
            meter: Meter::default(),
        })
    }

    /// What to do once the transaction committed: delete the dropped external chunks.
    pub(super) fn finish(self) -> Dropped {
        Dropped { external: self.external, ids: self.dropped }
    }

    pub(super) fn size(&self, job: &str, chunk: u64) -> Result<u64, StoreError> {
        match self.index.get((job, chunk))? {
            Some(entry) => Ok(entry.value().1),
            None => Err(StoreError::MissingChunk { job: job.to_owned(), chunk }),
        }
    }

    /// How many increments `chain` holds: runs of chunks written by one checkpoint (a base
    /// written by a compaction or a full snapshot is one, however many chunks it has).
    pub(super) fn increments(&self, job: &str, chain: &[u64]) -> Result<usize, StoreError> {
        increments(&self.index, job, chain)
    }

    fn delete(&mut self, job: &str, owner: u64, chunk: u64) -> Result<(), StoreError> {
        if let Some(size) = self.external_sizes.remove((job, chunk))? {
            self.meter.0 -= external_chunk_bytes(job.len(), size.value());
            self.dropped.push(chunk);
        }
        let mut pieces = Vec::new();
        for piece in self.chunks.range((job, chunk, 0)..=(job, chunk, u32::MAX))? {
            let (key, value) = piece?;
            pieces.push((key.value().2, value.value().len()));
        }
        for (piece, len) in pieces {
            self.chunks.remove((job, chunk, piece))?;
            self.meter.remove(job.len() + 12, len);
        }
        if self.index.remove((job, chunk))?.is_some() {
            self.meter.remove(job.len() + 8, 16);
        }
        if self.owners.remove((job, owner, chunk))?.is_some() {
            self.meter.remove(job.len() + 16, 8);
        }
        Ok(())
    }

    /// Deletes the chunks of `job` owned by checkpoints in `owners` that `keep` does not list.
    pub(super) fn collect(
        &mut self,
        job: &str,
        owners: std::ops::RangeInclusive<u64>,
        keep: &HashSet<u64>,
        report: &mut GcReport,
    ) -> Result<(), StoreError> {
        let mut doomed = Vec::new();
        for item in self.owners.range((job, *owners.start(), 0)..=(job, *owners.end(), u64::MAX))? {
            let (key, size) = item?;
            let (_, owner, chunk) = key.value();
            if !keep.contains(&chunk) {
                doomed.push((owner, chunk, size.value()));
            }
        }
        for (owner, chunk, size) in doomed {
            self.delete(job, owner, chunk)?;
            report.removed_chunks += 1;
            report.removed_bytes += size;
        }
        Ok(())
    }
}

/// How many increments `chain` holds, read from the chunk index `index`
/// ([`ChunkTables::increments`]).
pub(super) fn increments(
    index: &impl ReadableTable<(&'static str, u64), (u64, u64)>,
    job: &str,
    chain: &[u64],
) -> Result<usize, StoreError> {
    let mut n = 0;
    let mut last = None;
    for &chunk in chain {
        let owner = match index.get((job, chunk))? {
            Some(entry) => entry.value().0,
            None => return Err(StoreError::MissingChunk { job: job.to_owned(), chunk }),
        };
        if last != Some(owner) {
            n += 1;
            last = Some(owner);
        }
    }
    Ok(n)
}

/// External chunks a committed transaction dropped from the index.
pub(super) struct Dropped {
    external: Option<Arc<dyn ExternalChunks>>,
    ids: Vec<u64>,
}

impl Dropped {
    /// Deletes them (call after the commit). A failure leaves orphans for `recover`.
    pub(super) fn delete(self, job: &str) {
        if let (Some(external), false) = (self.external, self.ids.is_empty()) {
            let _ = external.delete(job, &self.ids);
        }
    }
}

/// Writes chunks for one write transaction, allocating ids from the store counter.
pub(super) struct ChunkWriter<'a, 'txn> {
    pub(super) tables: &'a mut ChunkTables<'txn>,
    pub(super) job: &'a str,
    pub(super) owner: u64,
    pub(super) next_id: u64,
    pub(super) bytes_written: u64,
}

impl ChunkWriter<'_, '_> {
    pub(super) fn write(&mut self, encoded: Vec<Vec<u8>>) -> Result<Vec<u64>, StoreError> {
        let mut ids = Vec::with_capacity(encoded.len());
        for bytes in encoded {
            let id = self.next_id;
            self.next_id += 1;
            let size = bytes.len() as u64;
            match &self.tables.external {
                // Put before the transaction commits: should it not, the object is an orphan
                // that `recover` deletes.
                Some(external) => external.put(self.job, id, &bytes)?,
                None => {
                    for (piece, part) in bytes.chunks(CHUNK_PIECE_BYTES).enumerate() {
                        let old = self
                            .tables
                            .chunks
                            .insert((self.job, id, piece as u32), part)?
                            .map(|v| v.value().len());
                        self.tables.meter.put(self.job.len() + 12, part.len(), old);
                    }
                }
            }
            self.record(id, size)?;
            ids.push(id);
        }
        Ok(ids)
    }

    /// Records chunk `id` of `size` bytes, owned by `self.owner`: its index and owner rows,
    /// and, when its bytes are external, its size row (its bytes were put already).
    pub(super) fn record(&mut self, id: u64, size: u64) -> Result<(), StoreError> {
        let job_len = self.job.len();
        if self.tables.external.is_some() {
            if let Some(old) = self.tables.external_sizes.insert((self.job, id), size)? {
                self.tables.meter.0 -= external_chunk_bytes(job_len, old.value());
            }
            self.tables.meter.0 += external_chunk_bytes(job_len, size);
        }
        let old = self.tables.index.insert((self.job, id), (self.owner, size))?.map(|_| 16);
        self.tables.meter.put(job_len + 8, 16, old);
        let old = self.tables.owners.insert((self.job, self.owner, id), size)?.map(|_| 8);
        self.tables.meter.put(job_len + 16, 8, old);
        self.bytes_written += size;
        Ok(())
    }
}
