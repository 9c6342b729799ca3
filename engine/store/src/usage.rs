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

use std::collections::BTreeMap;

use redb::{Durability, ReadableTable, WriteTransaction};

use crate::error::StoreError;
use crate::store::Store;
use crate::tables::{COUNTERS, LEDGER_VERSION, LIMITS, OWNERS, RESERVED, USAGE};

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
/// (`engine/tests/all/hostile/storage_quota.rs`: within 10 % for stream records of 0.5 and 1 KiB,
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

pub(crate) fn owner_of(
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

/// Adds `delta` bytes to the ledger of `subject`'s owner inside `txn` (invariant T5: in the
/// write's own transaction). With `check`, a positive
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
/// (a server's records): see `charge`. Fails with [`StoreError::QuotaExceeded`] when `check`
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
}
