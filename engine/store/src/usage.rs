//! Storage accounting: a per-owner ledger of the bytes the store keeps, updated in the same
//! write transaction as the data it counts (so it cannot drift), and checked there against the
//! owner's limit (so concurrent writers cannot overshoot it).
//!
//! - Data belongs to an *owner* (a tenant) through its *subject*: a job (its checkpoints,
//!   chunks, manifests and history rows, and its sinks' outbox), a stream (its records and
//!   staged records) or a savepoint (named by its owner). [`Store::set_owners`] registers
//!   `job/<id>` or `stream/<name>`; a stream name that starts with a registered namespace
//!   `stream/<prefix>.` belongs to that namespace's owner. Data of a subject without an owner
//!   is not counted.
//! - An entry counts for the share of B-tree pages it takes ([`entry_bytes`]: its key and
//!   value bytes plus [`ENTRY_OVERHEAD`], rounded to the share of a leaf page it fills, a page
//!   or more for large entries), so the ledger tracks the pages redb really allocates.
//! - A write that adds bytes fails with [`StoreError::QuotaExceeded`] when the owner's ledger
//!   plus its reservations would pass its limit ([`Store::set_limit`]); a write that removes
//!   bytes, and the completion of already counted work (committing staged records, marking a
//!   checkpoint failed), is never refused.
//! - Reservations ([`Store::reserve`]) hold room for uploads in flight; they live only as long
//!   as the process: [`Store::open`] clears them.
//! - An older store without a ledger is counted by rescanning once ([`Store::rebuild_usage`]);
//!   [`Store::scan_usage`] recounts from the data, to check that the ledger did not drift.

use std::collections::{BTreeMap, HashMap};

use redb::{Durability, ReadableTable, TableDefinition, WriteTransaction};

use crate::error::StoreError;
use crate::outbox::{self, OUTBOX, OUTBOX_EPOCHS, OUTBOX_NOTES, job_of};
use crate::savepoint::SavepointInfo;
use crate::store::{
    BODIES, CHECKPOINTS, CHUNK_INDEX, CHUNK_OWNERS, CHUNKS, COUNTERS, IN_PROGRESS, LOG, LOG_ENDS, MANIFESTS,
    SAVEPOINT_BLOBS, SAVEPOINT_OWNERS, SAVEPOINT_PIECES, SAVEPOINT_SCOPES, SAVEPOINTS, STAGED, Store,
};
use crate::stream;

/// subject (`job/<id>`, `stream/<name>`, `stream/<prefix>.`) → owner.
pub(crate) const OWNERS: TableDefinition<'_, &str, &str> = TableDefinition::new("weir.usage_owners");
/// owner → bytes stored for it.
pub(crate) const USAGE: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.usage");
/// owner → the most bytes it may store (no row: no limit).
pub(crate) const LIMITS: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.usage_limits");
/// owner → bytes reserved for uploads in flight (cleared at open).
pub(crate) const RESERVED: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.usage_reserved");
/// The [`COUNTERS`] row that says the ledger is complete (older stores lack it).
const LEDGER_VERSION: &str = "usage_ledger_version";

/// Bytes counted per stored entry on top of its key and value: redb's two 4-byte offsets per
/// entry and the length prefixes of tuple keys.
pub const ENTRY_OVERHEAD: u64 = 16;

/// redb's page size.
pub const PAGE_BYTES: u64 = 4096;

/// The bytes one stored entry counts for: the share of a 4 KiB B-tree leaf it takes. Keys
/// grow in order in every table (offsets, checkpoint and chunk ids), so leaves fill up to
/// their capacity, except that a leaf that holds only 2 or 3 entries is split one entry short
/// (measured: 1 KiB records take 2 a page); an entry of more than a page takes a page of its
/// own rounded up to a power of two. Calibrated against redb's allocated pages
/// (`engine/tests/all/storage_quota.rs`: within 10 % for stream records of 0.5 and 1 KiB,
/// chunk pieces, manifests and history rows).
pub fn entry_bytes(key: usize, value: usize) -> i64 {
    let raw = (key + value) as u64 + ENTRY_OVERHEAD;
    let capacity = (PAGE_BYTES - LEAF_HEADER_BYTES) / raw;
    let bytes = match capacity {
        0 => raw.next_power_of_two().max(PAGE_BYTES),
        1 => PAGE_BYTES,
        2 | 3 => PAGE_BYTES / (capacity - 1),
        _ => PAGE_BYTES / capacity,
    };
    bytes as i64
}

/// The bytes an external chunk of `size` bytes of a job whose id is `job_len` bytes counts
/// for: its row in the external-chunk table plus its bytes, exactly (object storage keeps
/// them as they are).
pub(crate) fn external_chunk_bytes(job_len: usize, size: u64) -> i64 {
    entry_bytes(job_len + 12, 8) + size as i64
}

/// The bytes an external chunk of `size` bytes of a savepoint counts for: its row in the
/// savepoint-object table (`key_len`: the savepoint id's and operator's bytes) plus its bytes.
pub(crate) fn external_savepoint_bytes(key_len: usize, size: u64) -> i64 {
    entry_bytes(key_len + 8, 16) + size as i64
}

/// Bytes of a leaf page that hold no entries (header, room kept free).
const LEAF_HEADER_BYTES: u64 = 64;

/// Sums the byte changes of one write transaction.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Meter(pub(crate) i64);

impl Meter {
    /// An entry of `key` + `value` bytes was stored (`old`: the value it replaced).
    pub(crate) fn put(&mut self, key: usize, value: usize, old: Option<usize>) {
        match old {
            Some(old) => self.0 += entry_bytes(key, value) - entry_bytes(key, old),
            None => self.0 += entry_bytes(key, value),
        }
    }

    /// An entry of `key` + `value` bytes was removed.
    pub(crate) fn remove(&mut self, key: usize, value: usize) {
        self.0 -= entry_bytes(key, value);
    }
}

/// What stored data belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Subject<'a> {
    /// A job's checkpoints.
    Job(&'a str),
    /// A stream's records.
    Stream(&'a str),
    /// Data named by its owner directly (savepoints).
    Owner(&'a str),
}

fn owner_of(
    owners: &impl ReadableTable<&'static str, &'static str>,
    subject: Subject<'_>,
) -> Result<Option<String>, StoreError> {
    let lookup = |key: &str| -> Result<Option<String>, StoreError> {
        Ok(owners.get(key)?.map(|v| v.value().to_owned()))
    };
    match subject {
        Subject::Owner(owner) => Ok(Some(owner.to_owned())),
        Subject::Job(job) => lookup(&format!("job/{job}")),
        Subject::Stream(name) => {
            if let Some(owner) = lookup(&format!("stream/{name}"))? {
                return Ok(Some(owner));
            }
            match name.split_once('.') {
                Some((prefix, _)) => lookup(&format!("stream/{prefix}.")),
                None => Ok(None),
            }
        }
    }
}

fn quota_error(owner: &str, used: u64, adding: u64, limit: u64) -> StoreError {
    StoreError::QuotaExceeded { owner: owner.to_owned(), used, adding, limit }
}

/// Adds `delta` bytes to the ledger of `subject`'s owner inside `txn`. With `check`, a positive
/// delta that would take the owner past its limit fails (and the caller's transaction, dropped
/// uncommitted, stores nothing).
pub(crate) fn charge(
    txn: &WriteTransaction,
    subject: Subject<'_>,
    delta: i64,
    check: bool,
) -> Result<(), StoreError> {
    if delta == 0 {
        return Ok(());
    }
    let Some(owner) = owner_of(&txn.open_table(OWNERS)?, subject)? else {
        return Ok(());
    };
    charge_owner(txn, &owner, delta, check)
}

/// Adds `delta` bytes to `owner`'s ledger inside `txn`, for tables kept outside the store
/// (a server's records): see [`charge`]. Fails with [`StoreError::QuotaExceeded`] when `check`
/// is set and the owner would pass its limit.
pub fn charge_owner(txn: &WriteTransaction, owner: &str, delta: i64, check: bool) -> Result<(), StoreError> {
    if delta == 0 {
        return Ok(());
    }
    let mut usage = txn.open_table(USAGE)?;
    let used = usage.get(owner)?.map_or(0, |v| v.value());
    let now =
        if delta > 0 { used.saturating_add(delta as u64) } else { used.saturating_sub(delta.unsigned_abs()) };
    if check && delta > 0 {
        let limit = txn.open_table(LIMITS)?.get(owner)?.map(|v| v.value());
        let reserved = txn.open_table(RESERVED)?.get(owner)?.map_or(0, |v| v.value());
        if let Some(limit) = limit
            && now.saturating_add(reserved) > limit
        {
            return Err(quota_error(owner, used.saturating_add(reserved), delta as u64, limit));
        }
    }
    usage.insert(owner, now)?;
    Ok(())
}

/// Releases `bytes` of `owner`'s reservation inside `txn`.
pub(crate) fn release_in(txn: &WriteTransaction, owner: &str, bytes: u64) -> Result<(), StoreError> {
    if bytes == 0 {
        return Ok(());
    }
    let mut reserved = txn.open_table(RESERVED)?;
    let held = reserved.get(owner)?.map_or(0, |v| v.value());
    let left = held.saturating_sub(bytes);
    if left == 0 {
        reserved.remove(owner)?;
    } else {
        reserved.insert(owner, left)?;
    }
    Ok(())
}

/// [`Store::set_owners`] for one subject inside the caller's transaction `txn` (e.g. the one
/// that creates the owner).
pub fn set_owner_in(txn: &WriteTransaction, subject: &str, owner: &str) -> Result<(), StoreError> {
    txn.open_table(OWNERS)?.insert(subject, owner)?;
    Ok(())
}

/// [`Store::set_limit`] inside the caller's transaction `txn`. Existing data is kept even when
/// it is over a new, lower limit; only further writes are refused.
pub fn set_limit_in(txn: &WriteTransaction, owner: &str, limit: Option<u64>) -> Result<(), StoreError> {
    let mut limits = txn.open_table(LIMITS)?;
    match limit {
        Some(limit) => limits.insert(owner, limit)?,
        None => limits.remove(owner)?,
    };
    Ok(())
}

/// Opens the ledger's tables and clears the reservations of a previous process.
pub(crate) fn open_tables(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.open_table(OWNERS)?;
    txn.open_table(USAGE)?;
    txn.open_table(LIMITS)?;
    txn.open_table(RESERVED)?.retain(|_, _| false)?;
    Ok(())
}

impl Store {
    /// Registers owners of subjects (`(subject, owner)`: `job/<id>`, `stream/<name>`, or a
    /// stream namespace `stream/<prefix>.`), in one durable transaction. Data written before
    /// the registration is not counted until [`Store::rebuild_usage`].
    pub fn set_owners(&self, owners: &[(String, String)]) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        for (subject, owner) in owners {
            set_owner_in(&txn, subject, owner)?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Sets the most bytes `owner` may store (`None`: no limit), durably.
    pub fn set_limit(&self, owner: &str, limit: Option<u64>) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        set_limit_in(&txn, owner, limit)?;
        txn.commit()?;
        Ok(())
    }

    /// The owner of job `job`'s data (its tenant), if one is registered.
    pub fn job_owner(&self, job: &str) -> Result<Option<String>, StoreError> {
        let txn = self.read_txn()?;
        owner_of(&txn.open_table(OWNERS)?, Subject::Job(job))
    }

    /// Bytes stored for `owner` (the ledger) plus its reservations. One point read of each.
    pub fn usage(&self, owner: &str) -> Result<u64, StoreError> {
        let txn = self.read_txn()?;
        let used = txn.open_table(USAGE)?.get(owner)?.map_or(0, |v| v.value());
        let reserved = txn.open_table(RESERVED)?.get(owner)?.map_or(0, |v| v.value());
        Ok(used.saturating_add(reserved))
    }

    /// Reserves `bytes` of `owner`'s room (e.g. for an upload being spooled); fails with
    /// [`StoreError::QuotaExceeded`] when stored plus reserved bytes would pass its limit. Not
    /// durable: reservations end with the process.
    pub fn reserve(&self, owner: &str, bytes: u64) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::None)?;
        {
            let used = txn.open_table(USAGE)?.get(owner)?.map_or(0, |v| v.value());
            let mut reserved = txn.open_table(RESERVED)?;
            let held = reserved.get(owner)?.map_or(0, |v| v.value());
            let limit = txn.open_table(LIMITS)?.get(owner)?.map(|v| v.value());
            let total = used.saturating_add(held);
            if let Some(limit) = limit
                && total.saturating_add(bytes) > limit
            {
                return Err(quota_error(owner, total, bytes, limit));
            }
            reserved.insert(owner, held.saturating_add(bytes))?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Gives back `bytes` of `owner`'s reservation.
    pub fn release(&self, owner: &str, bytes: u64) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::None)?;
        release_in(&txn, owner, bytes)?;
        txn.commit()?;
        Ok(())
    }

    /// Whether the ledger is complete (false for a store written by an older version, until
    /// [`Store::rebuild_usage`]).
    pub fn usage_ledger_ready(&self) -> Result<bool, StoreError> {
        let txn = self.read_txn()?;
        Ok(txn.open_table(COUNTERS)?.get(LEDGER_VERSION)?.is_some())
    }

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

    /// The ledger as stored: owner → bytes (without reservations).
    pub fn usage_ledger(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let txn = self.read_txn()?;
        let mut out = BTreeMap::new();
        for item in txn.open_table(USAGE)?.iter()? {
            let (owner, bytes) = item?;
            out.insert(owner.value().to_owned(), bytes.value());
        }
        Ok(out)
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
    let owners = txn.open_table(OWNERS)?;
    let mut cache: HashMap<String, Option<String>> = HashMap::new();
    let mut counted: BTreeMap<String, i64> = BTreeMap::new();
    let mut add_bytes = |subject: Subject<'_>, bytes: i64| -> Result<(), StoreError> {
        let name = match subject {
            Subject::Job(j) => format!("j{j}"),
            Subject::Stream(s) => format!("s{s}"),
            Subject::Owner(o) => format!("o{o}"),
        };
        if !cache.contains_key(&name) {
            cache.insert(name.clone(), owner_of(&owners, subject)?);
        }
        if let Some(Some(owner)) = cache.get(&name) {
            *counted.entry(owner.clone()).or_default() += bytes;
        }
        Ok(())
    };
    for item in txn.open_table(crate::external::EXTERNAL_CHUNKS)?.iter()? {
        let (key, size) = item?;
        let (job, _) = key.value();
        add_bytes(Subject::Job(job), external_chunk_bytes(job.len(), size.value()))?;
    }
    let mut add =
        |subject: Subject<'_>, key: usize, value: usize| add_bytes(subject, entry_bytes(key, value));
    for item in txn.open_table(CHECKPOINTS)?.iter()? {
        let (k, v) = item?;
        let (job, _) = k.value();
        add(Subject::Job(job), job.len() + 8, v.value().len())?;
    }
    for item in txn.open_table(IN_PROGRESS)?.iter()? {
        let (key, _) = item?;
        let (job, _) = key.value();
        add(Subject::Job(job), job.len() + 8, 0)?;
    }
    for item in txn.open_table(MANIFESTS)?.iter()? {
        let (k, v) = item?;
        let (job, _) = k.value();
        add(Subject::Job(job), job.len() + 8, v.value().len())?;
    }
    for item in txn.open_table(CHUNKS)?.iter()? {
        let (k, v) = item?;
        let (job, _, _) = k.value();
        add(Subject::Job(job), job.len() + 12, v.value().len())?;
    }
    for item in txn.open_table(CHUNK_INDEX)?.iter()? {
        let (key, _) = item?;
        let (job, _) = key.value();
        add(Subject::Job(job), job.len() + 8, 16)?;
    }
    for item in txn.open_table(CHUNK_OWNERS)?.iter()? {
        let (key, _) = item?;
        let (job, _, _) = key.value();
        add(Subject::Job(job), job.len() + 16, 8)?;
    }
    for item in txn.open_table(LOG)?.iter()? {
        let (k, v) = item?;
        let (name, _, _) = k.value();
        add(Subject::Stream(name), stream::log_key_len(name), v.value().len())?;
    }
    for item in txn.open_table(LOG_ENDS)?.iter()? {
        let (key, _) = item?;
        let (name, _) = key.value();
        add(Subject::Stream(name), name.len() + 4, 8)?;
    }
    for item in txn.open_table(STAGED)?.iter()? {
        let (k, v) = item?;
        let (name, writer, _, _, _) = k.value();
        add(Subject::Stream(name), stream::staged_key_len(name, writer), v.value().len())?;
    }
    for item in txn.open_table(BODIES)?.iter()? {
        let (k, v) = item?;
        let (name, _) = k.value();
        add(Subject::Stream(name), stream::body_key_len(name), v.value().len())?;
    }
    for item in txn.open_table(OUTBOX)?.iter()? {
        let (k, v) = item?;
        let (writer, _, _) = k.value();
        add(Subject::Job(job_of(writer)), writer.len() + outbox::RECORD_KEY, v.value().len())?;
    }
    for item in txn.open_table(OUTBOX_EPOCHS)?.iter()? {
        let (key, _) = item?;
        let (writer, _) = key.value();
        add(Subject::Job(job_of(writer)), writer.len() + outbox::EPOCH_KEY, 8)?;
    }
    for item in txn.open_table(OUTBOX_NOTES)?.iter()? {
        let (k, v) = item?;
        let (writer, _) = k.value();
        add(Subject::Job(job_of(writer)), writer.len() + outbox::EPOCH_KEY, v.value().len())?;
    }
    // Savepoints: their owner is in their info row.
    let mut savepoint_owner: HashMap<String, String> = HashMap::new();
    for item in txn.open_table(SAVEPOINTS)?.iter()? {
        let (k, v) = item?;
        let id = k.value();
        if let Ok(info) = rmp_serde::from_slice::<SavepointInfo>(v.value()) {
            add(Subject::Owner(&info.owner), id.len(), v.value().len())?;
            savepoint_owner.insert(id.to_owned(), info.owner);
        }
    }
    for item in txn.open_table(SAVEPOINT_OWNERS)?.iter()? {
        let (key, _) = item?;
        let (owner, id) = key.value();
        add(Subject::Owner(owner), owner.len() + id.len(), 0)?;
    }
    let mut by_savepoint = |id: &str, bytes: i64| -> Result<(), StoreError> {
        match savepoint_owner.get(id) {
            Some(owner) => add_bytes(Subject::Owner(owner), bytes),
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
    for item in txn.open_table(crate::external::SAVEPOINT_OBJECTS)?.iter()? {
        let (k, v) = item?;
        let (id, operator, _, _) = k.value();
        by_savepoint(id, external_savepoint_bytes(id.len() + operator.len(), v.value().1))?;
    }
    Ok(counted.into_iter().map(|(owner, bytes)| (owner, bytes.max(0) as u64)).collect())
}
