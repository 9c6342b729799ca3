//! A job's exception history (issue 41): its last [`KEPT`] failures, durable across server
//! restarts, each with its time, the restart it led to, its class, where it happened and
//! what Weir did. One row per failure in `weir.job_exceptions`, keyed by (tenant, job,
//! sequence number), counted against the tenant's storage like its job rows.

use redb::{ReadableDatabase as _, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::runtime::{FailureClass, FailureInfo};
use crate::server::codec::{decode_record, encode_record};
use crate::server::error::{ServerError, ServerResult};
use crate::server::ledger::charge_row;

/// (tenant, job id, sequence number) → exception (JSON).
pub(crate) const EXCEPTIONS: TableDefinition<'_, (&str, &str, u64), &[u8]> =
    TableDefinition::new("weir.job_exceptions");

/// Failures kept per job: older ones are dropped as new ones come.
pub const KEPT: u64 = 100;

/// The longest error text kept (a chain of causes can be long; the rest is cut).
const MAX_ERROR_BYTES: usize = 4096;

/// What Weir did about a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExceptionAction {
    /// The job restarted from its latest checkpoint after `delay_ms`.
    Restarted,
    /// The restart strategy allowed no more restarts (or the failure cannot pass): the job
    /// failed.
    Failed,
    /// The record that broke an operator was found and sent to the dead letters; the job
    /// went on from its checkpoint without it.
    DeadLettered,
    /// The record that broke an operator was found and skipped; the job went on from its
    /// checkpoint without it.
    Skipped,
    /// An upgraded version failed to restore or failed on probation: the job went back to
    /// the version before, from the upgrade's savepoint.
    RolledBack,
}

/// One failure of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobException {
    /// Its number in the job's history (1 for the first failure ever).
    pub seq: u64,
    /// When it happened, unix ms.
    pub time_ms: u64,
    /// The restart it led to (1 for the first), or the restarts made before the job failed.
    pub attempt: u32,
    /// Whose failure it was; the platform's use up none of the restart strategy's attempts.
    pub class: Option<FailureClass>,
    /// The node whose subtask failed, when one did.
    pub node: Option<String>,
    /// That subtask.
    pub subtask: Option<u32>,
    /// The worker it ran on, when it ran on one.
    pub worker: Option<u64>,
    /// The error and its causes (at most 4 KiB).
    pub error: String,
    /// What Weir did.
    pub action: ExceptionAction,
    /// The pause before the restart (`restarted` only).
    pub delay_ms: Option<u64>,
}

impl JobException {
    /// A failure at `time_ms` described by `info` and `error`.
    pub fn new(time_ms: u64, attempt: u32, info: &FailureInfo, error: &str, action: ExceptionAction) -> Self {
        let mut error = error.to_string();
        if error.len() > MAX_ERROR_BYTES {
            let mut cut = MAX_ERROR_BYTES;
            while !error.is_char_boundary(cut) {
                cut -= 1;
            }
            error.truncate(cut);
            error.push('…');
        }
        JobException {
            seq: 0,
            time_ms,
            attempt,
            class: info.class,
            node: info.node.clone(),
            subtask: info.subtask,
            worker: info.worker,
            error,
            action,
            delay_ms: None,
        }
    }
}

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

/// Appends `exception` to the history of job `job` of `tenant` (numbering it) and drops what
/// passes [`KEPT`]; charged to the tenant.
pub(crate) fn record(
    store: &weir_store::Store,
    tenant: &str,
    job: &str,
    mut exception: JobException,
) -> ServerResult<()> {
    let txn = store.database()?.begin_write().map_err(db_err)?;
    {
        let mut t = txn.open_table(EXCEPTIONS).map_err(db_err)?;
        let last = t
            .range((tenant, job, 0)..=(tenant, job, u64::MAX))
            .map_err(db_err)?
            .next_back()
            .transpose()
            .map_err(db_err)?
            .map_or(0, |(k, _)| k.value().2);
        exception.seq = last + 1;
        let key_len = tenant.len() + job.len() + 8;
        let value = encode_record(&exception)?;
        t.insert((tenant, job, exception.seq), value.as_slice()).map_err(db_err)?;
        charge_row(&txn, tenant, key_len, (None, Some(value.len())), 0, false)?;
        let mut old = Vec::new();
        for row in
            t.range((tenant, job, 0)..=(tenant, job, exception.seq.saturating_sub(KEPT))).map_err(db_err)?
        {
            let (k, v) = row.map_err(db_err)?;
            old.push((k.value().2, v.value().len()));
        }
        for (seq, len) in old {
            t.remove((tenant, job, seq)).map_err(db_err)?;
            charge_row(&txn, tenant, key_len, (Some(len), None), 0, false)?;
        }
    }
    txn.commit().map_err(db_err)
}

/// The history of job `job` of `tenant`, newest first.
pub(crate) fn list(store: &weir_store::Store, tenant: &str, job: &str) -> ServerResult<Vec<JobException>> {
    let txn = store.database()?.begin_read().map_err(db_err)?;
    let t = match txn.open_table(EXCEPTIONS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(db_err(e)),
    };
    let mut out = Vec::new();
    for row in t.range((tenant, job, 0)..=(tenant, job, u64::MAX)).map_err(db_err)?.rev() {
        let (_, v) = row.map_err(db_err)?;
        out.push(decode_record(v.value())?);
    }
    Ok(out)
}

/// Bytes of every tenant's exception rows, as [`record`] charges them (for the recount).
pub(crate) fn rows_per_tenant(
    txn: &redb::ReadTransaction,
) -> ServerResult<std::collections::BTreeMap<String, i64>> {
    rows_per_tenant_of(txn, EXCEPTIONS)
}

/// Bytes of every tenant's rows of a (tenant, job, seq) table, as its rows are charged.
pub(super) fn rows_per_tenant_of(
    txn: &redb::ReadTransaction,
    table: TableDefinition<'_, (&str, &str, u64), &[u8]>,
) -> ServerResult<std::collections::BTreeMap<String, i64>> {
    let mut out = std::collections::BTreeMap::new();
    let t = match txn.open_table(table) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(out),
        Err(e) => return Err(db_err(e)),
    };
    for row in t.iter().map_err(db_err)? {
        let (k, v) = row.map_err(db_err)?;
        let (tenant, job, _) = k.value();
        *out.entry(tenant.to_string()).or_default() +=
            weir_store::entry_bytes(tenant.len() + job.len() + 8, v.value().len());
    }
    Ok(out)
}
