//! The recount of the storage ledger: reads every table of the store and counts its entries
//! per owner as the write paths charge them ([`Store::scan_usage`], [`Store::rebuild_usage`]).
//! It reads tables only, so it sits above every feature and no feature calls it.

use std::collections::{BTreeMap, HashMap};

use redb::{Durability, ReadableTable, Table, WriteTransaction};

use crate::error::StoreError;
use crate::savepoint::SavepointInfo;
use crate::store::Store;
use crate::tables::{
    BODIES, CHECKPOINTS, CHUNK_INDEX, CHUNK_OWNERS, CHUNKS, COUNTERS, EPOCH_KEY, EXTERNAL_CHUNKS,
    IN_PROGRESS, LEDGER_VERSION, LOG, LOG_ENDS, MANIFESTS, OUTBOX, OUTBOX_EPOCHS, OUTBOX_NOTES, OWNERS,
    RECORD_KEY, SAVEPOINT_BLOBS, SAVEPOINT_OBJECTS, SAVEPOINT_OWNERS, SAVEPOINT_PIECES, SAVEPOINT_SCOPES,
    SAVEPOINTS, STAGED, USAGE, body_key_len, job_of, log_key_len, staged_key_len,
};
use crate::usage::{Subject, entry_bytes, external_chunk_bytes, external_savepoint_bytes, owner_of};

impl Store {
    /// Replaces the ledger by a recount of the store's data ([`Store::scan_usage`]) plus
    /// `extra` (bytes of tables kept outside the store, per owner), in one durable
    /// transaction, and marks it complete.
    pub fn rebuild_usage(&self, extra: &BTreeMap<String, u64>) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut counted = scan(&txn)?;
        for (owner, bytes) in extra {
            *counted.entry(owner.clone()).or_default() += *bytes;
        }
        {
            let mut usage = txn.open_table(USAGE)?;
            usage.retain(|_, _| false)?;
            for (owner, bytes) in &counted {
                usage.insert(owner.as_str(), *bytes)?;
            }
            txn.open_table(COUNTERS)?.insert(LEDGER_VERSION, 1)?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Recounts the bytes of the store's own tables per owner, reading everything (for
    /// checks and the one-time rebuild; the ledger is what normal operation reads).
    pub fn scan_usage(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let txn = self.write_txn(Durability::None)?;
        let counted = scan(&txn)?;
        txn.abort()?;
        Ok(counted)
    }
}

/// Counts every table of the store per owner, as the write paths charge it.
fn scan(txn: &WriteTransaction) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut tally =
        Tally { owners: txn.open_table(OWNERS)?, cache: HashMap::new(), counted: BTreeMap::new() };
    count_checkpoints(txn, &mut tally)?;
    count_streams(txn, &mut tally)?;
    count_outbox(txn, &mut tally)?;
    count_savepoints(txn, &mut tally)?;
    Ok(tally.counted.into_iter().map(|(owner, bytes)| (owner, bytes.max(0) as u64)).collect())
}

/// Bytes counted so far per owner, and the owner of each subject met (looked up once).
struct Tally<'t> {
    owners: Table<'t, &'static str, &'static str>,
    cache: HashMap<String, Option<String>>,
    counted: BTreeMap<String, i64>,
}

impl Tally<'_> {
    /// Counts `bytes` for the owner of `subject` (nothing when it has none).
    fn add_bytes(&mut self, subject: Subject<'_>, bytes: i64) -> Result<(), StoreError> {
        let name = match subject {
            Subject::Job(j) => format!("j{j}"),
            Subject::Stream(s) => format!("s{s}"),
            Subject::Owner(o) => format!("o{o}"),
        };
        if !self.cache.contains_key(&name) {
            self.cache.insert(name.clone(), owner_of(&self.owners, subject)?);
        }
        if let Some(Some(owner)) = self.cache.get(&name) {
            *self.counted.entry(owner.clone()).or_default() += bytes;
        }
        Ok(())
    }

    /// Counts a stored entry of `key` + `value` bytes ([`entry_bytes`]).
    fn add(&mut self, subject: Subject<'_>, key: usize, value: usize) -> Result<(), StoreError> {
        self.add_bytes(subject, entry_bytes(key, value))
    }
}

/// A job's checkpoints: history rows, in-progress marks, manifests and chunks (stored in
/// pieces or external).
fn count_checkpoints(txn: &WriteTransaction, tally: &mut Tally<'_>) -> Result<(), StoreError> {
    for item in txn.open_table(EXTERNAL_CHUNKS)?.iter()? {
        let (key, size) = item?;
        let (job, _) = key.value();
        tally.add_bytes(Subject::Job(job), external_chunk_bytes(job.len(), size.value()))?;
    }
    for item in txn.open_table(CHECKPOINTS)?.iter()? {
        let (k, v) = item?;
        let (job, _) = k.value();
        tally.add(Subject::Job(job), job.len() + 8, v.value().len())?;
    }
    for item in txn.open_table(IN_PROGRESS)?.iter()? {
        let (key, _) = item?;
        let (job, _) = key.value();
        tally.add(Subject::Job(job), job.len() + 8, 0)?;
    }
    for item in txn.open_table(MANIFESTS)?.iter()? {
        let (k, v) = item?;
        let (job, _) = k.value();
        tally.add(Subject::Job(job), job.len() + 8, v.value().len())?;
    }
    for item in txn.open_table(CHUNKS)?.iter()? {
        let (k, v) = item?;
        let (job, _, _) = k.value();
        tally.add(Subject::Job(job), job.len() + 12, v.value().len())?;
    }
    for item in txn.open_table(CHUNK_INDEX)?.iter()? {
        let (key, _) = item?;
        let (job, _) = key.value();
        tally.add(Subject::Job(job), job.len() + 8, 16)?;
    }
    for item in txn.open_table(CHUNK_OWNERS)?.iter()? {
        let (key, _) = item?;
        let (job, _, _) = key.value();
        tally.add(Subject::Job(job), job.len() + 16, 8)?;
    }
    Ok(())
}

/// A stream's log chunks, partition ends, staged chunks and chunk bodies.
fn count_streams(txn: &WriteTransaction, tally: &mut Tally<'_>) -> Result<(), StoreError> {
    for item in txn.open_table(LOG)?.iter()? {
        let (k, v) = item?;
        let (name, _, _) = k.value();
        tally.add(Subject::Stream(name), log_key_len(name), v.value().len())?;
    }
    for item in txn.open_table(LOG_ENDS)?.iter()? {
        let (key, _) = item?;
        let (name, _) = key.value();
        tally.add(Subject::Stream(name), name.len() + 4, 8)?;
    }
    for item in txn.open_table(STAGED)?.iter()? {
        let (k, v) = item?;
        let (name, writer, _, _, _) = k.value();
        tally.add(Subject::Stream(name), staged_key_len(name, writer), v.value().len())?;
    }
    for item in txn.open_table(BODIES)?.iter()? {
        let (k, v) = item?;
        let (name, _) = k.value();
        tally.add(Subject::Stream(name), body_key_len(name), v.value().len())?;
    }
    Ok(())
}

/// The outbox's records, epoch counts and notes, each charged to its writer's job.
fn count_outbox(txn: &WriteTransaction, tally: &mut Tally<'_>) -> Result<(), StoreError> {
    for item in txn.open_table(OUTBOX)?.iter()? {
        let (k, v) = item?;
        let (writer, _, _) = k.value();
        tally.add(Subject::Job(job_of(writer)), writer.len() + RECORD_KEY, v.value().len())?;
    }
    for item in txn.open_table(OUTBOX_EPOCHS)?.iter()? {
        let (key, _) = item?;
        let (writer, _) = key.value();
        tally.add(Subject::Job(job_of(writer)), writer.len() + EPOCH_KEY, 8)?;
    }
    for item in txn.open_table(OUTBOX_NOTES)?.iter()? {
        let (k, v) = item?;
        let (writer, _) = k.value();
        tally.add(Subject::Job(job_of(writer)), writer.len() + EPOCH_KEY, v.value().len())?;
    }
    Ok(())
}

/// Savepoints: their owner is in their info row, which the rows of their scopes, pieces,
/// blobs and objects are counted against (rows of a savepoint without one are not counted).
fn count_savepoints(txn: &WriteTransaction, tally: &mut Tally<'_>) -> Result<(), StoreError> {
    let mut savepoint_owner: HashMap<String, String> = HashMap::new();
    for item in txn.open_table(SAVEPOINTS)?.iter()? {
        let (k, v) = item?;
        let id = k.value();
        if let Ok(info) = rmp_serde::from_slice::<SavepointInfo>(v.value()) {
            tally.add(Subject::Owner(&info.owner), id.len(), v.value().len())?;
            savepoint_owner.insert(id.to_owned(), info.owner);
        }
    }
    for item in txn.open_table(SAVEPOINT_OWNERS)?.iter()? {
        let (key, _) = item?;
        let (owner, id) = key.value();
        tally.add(Subject::Owner(owner), owner.len() + id.len(), 0)?;
    }
    let mut by_savepoint = |id: &str, bytes: i64| -> Result<(), StoreError> {
        match savepoint_owner.get(id) {
            Some(owner) => tally.add_bytes(Subject::Owner(owner), bytes),
            None => Ok(()),
        }
    };
    for item in txn.open_table(SAVEPOINT_SCOPES)?.iter()? {
        let (key, _) = item?;
        let (id, operator, _) = key.value();
        by_savepoint(id, entry_bytes(id.len() + operator.len() + 4, 12))?;
    }
    for item in txn.open_table(SAVEPOINT_PIECES)?.iter()? {
        let (k, v) = item?;
        let (id, operator, _, _, _) = k.value();
        by_savepoint(id, entry_bytes(id.len() + operator.len() + 12, v.value().len()))?;
    }
    for item in txn.open_table(SAVEPOINT_BLOBS)?.iter()? {
        let (k, v) = item?;
        let (id, operator, _) = k.value();
        by_savepoint(id, entry_bytes(id.len() + operator.len() + 4, v.value().len()))?;
    }
    for item in txn.open_table(SAVEPOINT_OBJECTS)?.iter()? {
        let (k, v) = item?;
        let (id, operator, _, _) = k.value();
        by_savepoint(id, external_savepoint_bytes(id.len() + operator.len(), v.value().1))?;
    }
    Ok(())
}
