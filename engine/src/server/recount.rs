//! The storage ledger's registration and recount (see `super::ledger` for what is charged
//! where): at open, every tenant's limit and owners are registered, and a ledger written
//! before it was complete is recounted from the data. It reads every writer's table, so it
//! sits above them; the writers charge through the `ledger` leaf.

use std::collections::BTreeMap;

use redb::{ReadableDatabase, ReadableTable};
use weir_store::{Store, entry_bytes};

use super::codec::decode_record;
use super::error::{ServerError, ServerResult};
use super::jobs::{JOBS, JobManager};
use super::ledger::{job_owner, stream_namespace};
use super::registry::{MODULES, Module};
use super::savepoints::SAVEPOINTS;
use super::tenants::Tenants;

/// Registers every tenant's limit and stream namespace and every job's owner, then, for a
/// store whose ledger is not complete (written by an older version), recounts it.
pub(crate) fn prepare(store: &Store, tenants: &Tenants, jobs: &JobManager) -> ServerResult<()> {
    let mut owners = Vec::new();
    for tenant in tenants.list()? {
        owners.push((stream_namespace(&tenant.id), tenant.id.clone()));
        for job in jobs.list(&tenant.id)? {
            owners.push((job_owner(&job.id), tenant.id.clone()));
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

/// Bytes of the server's own rows per tenant, counted as `ledger::charge_row` charges them.
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
    for (tenant, bytes) in super::jobs::exception_rows(&txn)? {
        *out.entry(tenant).or_default() += bytes;
    }
    for (tenant, bytes) in super::jobs::log_rows(&txn)? {
        *out.entry(tenant).or_default() += bytes;
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
