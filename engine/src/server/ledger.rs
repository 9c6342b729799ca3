//! The server's side of the storage ledger (kept by `weir_store`, see its `usage` module):
//! every byte a tenant makes the server keep is charged to the tenant in the write
//! transaction that stores it, and checked there against `max_storage_bytes`.
//!
//! - The store charges what it keeps itself: stream records (appended over the API or
//!   written by jobs), checkpoints (chunks of every retained one, manifests, history rows)
//!   and savepoints. It knows the owner of a job (`job/<id>`, registered when the job is
//!   created) and of a stream (the tenant's namespace `stream/<tenant>.`, registered with the
//!   tenant).
//! - The server charges its own rows with [`charge_row`]: job records, module records (plus
//!   the module file's bytes) and savepoint records (names, descriptions).
//! - Uploads in flight (a savepoint import's spooled file) hold a reservation
//!   (`Store::reserve`) as they grow.
//! - A data directory written before the ledger existed is recounted once at open
//!   ([`prepare`]).

use std::collections::BTreeMap;

use redb::{ReadableDatabase, ReadableTable, WriteTransaction};
use weir_store::{Store, charge_owner, entry_bytes};

use super::codec::decode_record;
use super::error::{ServerError, ServerResult};
use super::jobs::{JOBS, JobManager};
use super::registry::{MODULES, Module};
use super::savepoints::SAVEPOINTS;
use super::tenants::Tenants;

/// Charges `tenant` in `txn` for a row of a server table whose key is `key_len` bytes: its
/// value went from `old` to `new` bytes (`None`: no row), plus `extra` bytes kept outside the
/// store (positive when stored, negative when removed). With `check`, growth past the
/// tenant's limit fails with a quota error.
pub(crate) fn charge_row(
    txn: &WriteTransaction,
    tenant: &str,
    key_len: usize,
    (old, new): (Option<usize>, Option<usize>),
    extra: i64,
    check: bool,
) -> ServerResult<()> {
    let size = |v: Option<usize>| v.map_or(0, |v| entry_bytes(key_len, v));
    Ok(charge_owner(txn, tenant, size(new) - size(old) + extra, check)?)
}

/// The stream namespace of `tenant` in the store's owner registry.
pub(crate) fn stream_namespace(tenant: &str) -> String {
    format!("stream/{tenant}.")
}

/// Registers every tenant's limit and stream namespace and every job's owner, then, for a
/// store whose ledger is not complete (written by an older version), recounts it.
pub(crate) fn prepare(store: &Store, tenants: &Tenants, jobs: &JobManager) -> ServerResult<()> {
    let mut owners = Vec::new();
    for tenant in tenants.list()? {
        owners.push((stream_namespace(&tenant.id), tenant.id.clone()));
        for job in jobs.list(&tenant.id)? {
            owners.push((format!("job/{}", job.id), tenant.id.clone()));
        }
        store.set_limit(&tenant.id, Some(tenant.quotas.max_storage_bytes))?;
    }
    store.set_owners(&owners)?;
    if !store.usage_ledger_ready()? {
        store.rebuild_usage(&server_rows(store)?)?;
        tracing::info!("counted every tenant's storage for the usage ledger");
    }
    Ok(())
}

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

/// Bytes of the server's own rows per tenant, counted as [`charge_row`] charges them.
pub fn server_rows(store: &Store) -> ServerResult<BTreeMap<String, u64>> {
    let txn = store.database()?.begin_read().map_err(db_err)?;
    let mut out: BTreeMap<String, i64> = BTreeMap::new();
    for row in txn.open_table(JOBS).map_err(db_err)?.iter().map_err(db_err)? {
        let (k, v) = row.map_err(db_err)?;
        let (tenant, id) = k.value();
        *out.entry(tenant.to_string()).or_default() += entry_bytes(tenant.len() + id.len(), v.value().len());
    }
    for row in txn.open_table(MODULES).map_err(db_err)?.iter().map_err(db_err)? {
        let (k, v) = row.map_err(db_err)?;
        let (tenant, id) = k.value();
        let module: Module = decode_record(v.value())?;
        *out.entry(tenant.to_string()).or_default() +=
            entry_bytes(tenant.len() + id.len(), v.value().len()) + module.size as i64;
    }
    for row in txn.open_table(SAVEPOINTS).map_err(db_err)?.iter().map_err(db_err)? {
        let (k, v) = row.map_err(db_err)?;
        let (tenant, id) = k.value();
        *out.entry(tenant.to_string()).or_default() += entry_bytes(tenant.len() + id.len(), v.value().len());
    }
    Ok(out.into_iter().map(|(tenant, bytes)| (tenant, bytes.max(0) as u64)).collect())
}

/// Recounts every tenant's storage from the data (the store's tables and the server's rows),
/// reading everything: what the ledger should say. For checks and tests.
pub fn recount(store: &Store) -> ServerResult<BTreeMap<String, u64>> {
    let mut counted = store.scan_usage()?;
    for (tenant, bytes) in server_rows(store)? {
        *counted.entry(tenant).or_default() += bytes;
    }
    Ok(counted)
}
