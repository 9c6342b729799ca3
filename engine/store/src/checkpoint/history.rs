//! History rows: [`CheckpointMeta`] as stored in [`CHECKPOINTS`] (MessagePack with field
//! names), the job's last checkpoint id, and importing history.

use std::time::{SystemTime, UNIX_EPOCH};

use redb::{Durability, ReadableTable, Table, WriteTransaction};

use crate::error::StoreError;
use crate::meta::CheckpointMeta;
use crate::store::Store;
use crate::tables::{CHECKPOINTS, JOB_LAST_ID, SUMMARIES};
use crate::usage::Meter;

/// Now, in unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) fn encode_meta(meta: &CheckpointMeta) -> Result<Vec<u8>, StoreError> {
    rmp_serde::to_vec_named(meta).map_err(|error| StoreError::Encode {
        what: format!("checkpoint {} of job `{}`", meta.id, meta.job),
        detail: error.to_string(),
    })
}

pub(crate) fn decode_meta(job: &str, id: u64, bytes: &[u8]) -> Result<CheckpointMeta, StoreError> {
    rmp_serde::from_slice(bytes).map_err(|error| {
        StoreError::corrupt(format!("metadata of checkpoint {id} of job `{job}`"), error.to_string())
    })
}

/// Reads the meta of checkpoint `(job, id)` from a checkpoints table.
pub(crate) fn read_meta(
    table: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    job: &str,
    id: u64,
) -> Result<Option<CheckpointMeta>, StoreError> {
    match table.get((job, id))? {
        Some(bytes) => decode_meta(job, id, bytes.value()).map(Some),
        None => Ok(None),
    }
}

/// History-row changes `(old, new)` of one transaction, for the job's summary.
pub(super) type Changes = Vec<(Option<CheckpointMeta>, CheckpointMeta)>;

pub(super) fn put_meta(
    table: &mut Table<'_, (&'static str, u64), &'static [u8]>,
    meta: &CheckpointMeta,
    (meter, changes): (&mut Meter, &mut Changes),
) -> Result<(), StoreError> {
    let bytes = encode_meta(meta)?;
    let old = table.insert((meta.job.as_str(), meta.id), bytes.as_slice())?;
    let old = old.map(|v| (v.value().len(), decode_meta(&meta.job, meta.id, v.value()).ok()));
    meter.put(meta.job.len() + 8, bytes.len(), old.as_ref().map(|(len, _)| *len));
    changes.push((old.and_then(|(_, meta)| meta), meta.clone()));
    Ok(())
}

pub(super) fn bump_last_id(txn: &WriteTransaction, job: &str, id: u64) -> Result<(), StoreError> {
    let mut table = txn.open_table(JOB_LAST_ID)?;
    let last = table.get(job)?.map_or(0, |last| last.value());
    if id > last {
        table.insert(job, id)?;
    }
    Ok(())
}

impl Store {
    /// Writes history rows as given, in one durable transaction, and raises each job's last
    /// checkpoint id to cover them. Only the history: no manifest, so none of them can be
    /// restored. For tools and benchmarks (a long history without running a job for hours).
    pub fn import_history(&self, metas: &[CheckpointMeta]) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        {
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            let mut last = txn.open_table(JOB_LAST_ID)?;
            let mut summaries = txn.open_table(SUMMARIES)?;
            for meta in metas {
                checkpoints.insert((meta.job.as_str(), meta.id), encode_meta(meta)?.as_slice())?;
                // Recounted when next read.
                summaries.remove(meta.job.as_str())?;
                let current = last.get(meta.job.as_str())?.map_or(0, |v| v.value());
                if meta.id > current {
                    last.insert(meta.job.as_str(), meta.id)?;
                }
            }
        }
        txn.commit()?;
        Ok(())
    }
}
