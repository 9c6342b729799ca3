//! A subtask's write when chunks go to an external store (`chunk_store`): no object-store
//! request runs inside the redb write transaction, which is the whole file's one writer
//! (one slow S3 PUT there stalled every tenant's commits).
//!
//! [`Store::write_subtask_external`] puts the write's chunks one at a time under ids leased
//! in short transactions ([`Uploader`]), then records them as a worker's put chunks are
//! recorded ([`Store::record_put_subtask`]). Compactions are prepared before that record
//! ([`Store::prepare_compactions`]): which scopes compact is read in a short read
//! transaction, and the chain is read and the new base put outside any; the record then
//! only writes rows. Should the record fail, the chunks put are deleted (and whatever a
//! crash leaves is an orphan that a sweep deletes once past its grace period).

use std::collections::BTreeMap;
use std::sync::Arc;

use redb::TableError;

use crate::checkpoint::SubtaskWrite;
use crate::checkpoint::live::{LiveState, append_chunk};
use crate::checkpoint::put::{Part, PutChunk, PutSubtaskWrite, encode_chunks};
use crate::checkpoint::write::{check_channel_state, compacts, encode_live};
use crate::codec::decode_chunk;
use crate::error::StoreError;
use crate::external::ExternalChunks;
use crate::manifest::SubtaskState;
use crate::store::Store;
use crate::tables::{CHUNK_INDEX, CHUNKS};

/// Ids leased per short transaction: a lease is one durable commit; ids a write does not
/// use are skipped, never reused.
const LEASE: u64 = 64;

/// Puts chunks in the external store under ids it leases as it goes.
pub(super) struct Uploader<'a> {
    store: &'a Store,
    external: &'a dyn ExternalChunks,
    job: &'a str,
    ids: std::ops::Range<u64>,
    /// Every id put so far (deleted again should the write fail).
    put: Vec<u64>,
}

impl<'a> Uploader<'a> {
    pub(super) fn new(store: &'a Store, external: &'a dyn ExternalChunks, job: &'a str) -> Self {
        Uploader { store, external, job, ids: 0..0, put: Vec::new() }
    }

    /// Puts `bytes` as a new chunk.
    pub(super) fn put(&mut self, bytes: Vec<u8>) -> Result<PutChunk, StoreError> {
        if self.ids.is_empty() {
            self.ids = self.store.lease_chunk_ids(LEASE)?;
        }
        let id = self.ids.next().expect("a leased id");
        self.external.put(self.job, id, &bytes)?;
        self.put.push(id);
        Ok(PutChunk { id, size: bytes.len() as u64 })
    }

    fn put_all(&mut self, chunks: Vec<Vec<u8>>) -> Result<Vec<PutChunk>, StoreError> {
        chunks.into_iter().map(|bytes| self.put(bytes)).collect()
    }

    /// Deletes what was put (best effort: what is left is an orphan for the sweep).
    fn abandon(self) {
        if !self.put.is_empty() {
            let _ = self.external.delete(self.job, &self.put);
        }
    }
}

/// Opens `table` in `txn`, or `None` if no write created it yet.
fn open<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    table: redb::TableDefinition<'_, K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>, StoreError> {
    match txn.open_table(table) {
        Ok(table) => Ok(Some(table)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Store {
    /// [`CheckpointStorage::record_subtask`] for this store: compactions prepared outside the
    /// write transaction, then the record.
    ///
    /// [`CheckpointStorage::record_subtask`]: crate::CheckpointStorage::record_subtask
    pub(crate) fn record_with_prepared_compactions(
        &self,
        write: PutSubtaskWrite,
    ) -> Result<SubtaskState, StoreError> {
        let Some(external) = self.external() else {
            return Err(StoreError::External(
                "chunks written elsewhere need an external chunk store (`chunk_store`)".into(),
            ));
        };
        let job = write.job.clone();
        let mut uploader = Uploader::new(self, &*external, &job);
        let result = self
            .prepare_compactions(&mut uploader, &write)
            .and_then(|bases| self.record_put_subtask(write, bases));
        if result.is_err() {
            uploader.abandon();
        }
        result
    }

    /// [`CheckpointStorage::write_subtask`] for a store with an external chunk store.
    ///
    /// [`CheckpointStorage::write_subtask`]: crate::CheckpointStorage::write_subtask
    pub(super) fn write_subtask_external(
        &self,
        external: Arc<dyn ExternalChunks>,
        write: SubtaskWrite,
    ) -> Result<SubtaskState, StoreError> {
        check_channel_state(&write)?;
        let job = write.job.clone();
        let mut uploader = Uploader::new(self, &*external, &job);
        let result = self.upload_and_record(&mut uploader, write);
        if result.is_err() {
            uploader.abandon();
        }
        result
    }

    fn upload_and_record(
        &self,
        uploader: &mut Uploader<'_>,
        write: SubtaskWrite,
    ) -> Result<SubtaskState, StoreError> {
        // As `encode_subtask`, one chunk encoded (and put) at a time.
        let (mut scopes, mut channel) = (BTreeMap::<u32, Vec<PutChunk>>::new(), Vec::new());
        encode_chunks(&write, self.max_chunk_bytes, |part, bytes| {
            let chunk = uploader.put(bytes)?;
            match part {
                Part::Scope(scope) => scopes.entry(scope).or_default().push(chunk),
                Part::Channel => channel.push(chunk),
            }
            Ok(())
        })?;
        let record = PutSubtaskWrite::of(write, scopes, channel);
        let bases = self.prepare_compactions(uploader, &record)?;
        self.record_put_subtask(record, bases)
    }

    /// The new bases of the scopes of `write` that compact, put by `uploader`: per scope,
    /// its chain (`previous`) and its put delta applied in order, encoded afresh. Which
    /// scopes compact is decided as the record decides it; a scope the record then finds
    /// otherwise (its chain changed meanwhile) compacts inside the record as before.
    pub(super) fn prepare_compactions(
        &self,
        uploader: &mut Uploader<'_>,
        write: &PutSubtaskWrite,
    ) -> Result<BTreeMap<u32, Vec<PutChunk>>, StoreError> {
        let mut bases = BTreeMap::new();
        if write.full {
            return Ok(bases);
        }
        let job = write.job.as_str();
        let max_chain = usize::try_from(write.max_chain_length).unwrap_or(usize::MAX).max(1);
        // Which scopes compact: a short read transaction over the index only.
        let mut due = Vec::new();
        {
            let txn = self.read_txn()?;
            let Some(index) = open(&txn, CHUNK_INDEX)? else { return Ok(bases) };
            for (&scope, put) in &write.scopes {
                let Some(chain) = write.previous.get(&scope).filter(|c| !c.is_empty() && !put.is_empty())
                else {
                    continue;
                };
                let increments = super::chunks::increments(&index, job, chain)? + 1;
                if compacts(chain[0], increments, max_chain) {
                    due.push(scope);
                }
            }
        }
        for scope in due {
            let mut live = LiveState::new();
            for &chunk in write.previous[&scope].iter().chain(write.scopes[&scope].iter().map(|c| &c.id)) {
                let bytes = self.read_chunk_outside(uploader.external, job, chunk)?;
                decode_chunk(&bytes, |state, key, value| {
                    super::live::apply_entry(&mut live, state, key, value);
                })
                .map_err(|detail| StoreError::corrupt(format!("chunk {chunk} of job `{job}`"), detail))?;
            }
            bases.insert(scope, uploader.put_all(encode_live(&live, self.max_chunk_bytes))?);
        }
        Ok(bases)
    }

    /// Chunk `chunk` of `job`: its pieces in the file (read in a read transaction of its
    /// own), else its object in the external store (read outside any).
    fn read_chunk_outside(
        &self,
        external: &dyn ExternalChunks,
        job: &str,
        chunk: u64,
    ) -> Result<Vec<u8>, StoreError> {
        let mut bytes = Vec::new();
        let in_file = {
            let txn = self.read_txn()?;
            match open(&txn, CHUNKS)? {
                Some(chunks) => append_chunk(&chunks, None, job, chunk, &mut bytes)?,
                None => false,
            }
        };
        if in_file || external.get(job, chunk, &mut bytes)? {
            return Ok(bytes);
        }
        Err(StoreError::MissingChunk { job: job.to_owned(), chunk })
    }
}
