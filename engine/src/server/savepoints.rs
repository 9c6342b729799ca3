//! Savepoints of a tenant: triggered on a job (a pinned checkpoint, or the final checkpoint
//! of a stop or drain, copied into the store's savepoint tables), listed, disposed of,
//! exported as one file and imported from one.
//!
//! A savepoint's life: `pending` while its checkpoint is taken and copied, then `completed`
//! (immutable from then on) or `failed` (with the reason). The record (`savepoints/record.rs`)
//! says who owns it and how it came to be; the store holds the copied state under the same
//! id. Retention never removes a savepoint; only `delete` does.

mod record;
mod take;
mod transfer;

use std::path::PathBuf;

use redb::{ReadableDatabase, ReadableTable};
use weir_store::{SavepointInfo, Store};

use super::error::{ServerError, ServerResult};
use super::ids::{check_hex_id, printable};
use super::jobs::JobManager;
use super::ledger::charge_row;
use super::state_pages::{StatePage, StateQuery, page};
use crate::clock::unix_ms;
use record::{decode, encode};

pub(crate) use record::SAVEPOINTS;
pub use record::{SavepointMode, SavepointRecord, SavepointStatus};
pub use take::SavepointTakeError;
pub use transfer::Export;

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

/// The savepoints of every tenant. Cheap to clone.
#[derive(Clone)]
pub struct Savepoints {
    store: Store,
    jobs: JobManager,
    /// Where uploads are spooled before they are imported.
    tmp: PathBuf,
}

impl std::fmt::Debug for Savepoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Savepoints").finish_non_exhaustive()
    }
}

impl Savepoints {
    /// The savepoints over `store` (creates the table). Savepoints left pending by a server
    /// that went down fail now ("interrupted"), and every pinned checkpoint is unpinned: no
    /// savepoint is in progress when the server starts, so every pin is left over (also one
    /// set just before a crash, when its savepoint had no record of it yet).
    /// Uploads are spooled to `tmp`.
    pub fn open(store: &Store, jobs: JobManager, tmp: PathBuf) -> ServerResult<Self> {
        let txn = store.database()?.begin_write().map_err(db_err)?;
        txn.open_table(SAVEPOINTS).map_err(db_err)?;
        txn.commit().map_err(db_err)?;
        let savepoints = Savepoints { store: store.clone(), jobs, tmp };
        for (job, checkpoint) in store.pinned()? {
            store.unpin(&job, checkpoint)?;
        }
        for record in savepoints.all()? {
            if record.status == SavepointStatus::Pending {
                // Data of a copy that never finished.
                savepoints.store.delete_savepoint(&record.id)?;
                savepoints.update(&record.tenant, &record.id, |r| {
                    r.status = SavepointStatus::Failed;
                    r.error = Some("interrupted: the server stopped before the savepoint completed".into());
                    r.completed_ms = Some(unix_ms());
                })?;
            }
        }
        Ok(savepoints)
    }

    /// Savepoint `id` of `tenant`.
    pub fn get(&self, tenant: &str, id: &str) -> ServerResult<SavepointRecord> {
        check_hex_id("savepoint", id, 32)?;
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
        match t.get((tenant, id)).map_err(db_err)? {
            Some(v) => decode(v.value()),
            None => Err(ServerError::NotFound(format!("no savepoint `{id}`"))),
        }
    }

    /// The completed savepoint `id` of `tenant`, as the store holds it.
    pub fn completed(&self, tenant: &str, id: &str) -> ServerResult<SavepointInfo> {
        let record = self.get(tenant, id)?;
        if record.status != SavepointStatus::Completed {
            return Err(ServerError::Conflict(format!(
                "savepoint `{id}` is {}, not completed",
                match record.status {
                    SavepointStatus::Pending => "pending",
                    _ => "failed",
                }
            )));
        }
        self.store
            .savepoint(id)?
            .ok_or_else(|| ServerError::internal(format!("the state of savepoint `{id}` is missing")))
    }

    /// The savepoints of `tenant` (of job `job` only, if given), oldest first.
    pub fn list(&self, tenant: &str, job: Option<&str>) -> ServerResult<Vec<SavepointRecord>> {
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
        let mut out = Vec::new();
        for row in t.range((tenant, "")..).map_err(db_err)? {
            let (k, v) = row.map_err(db_err)?;
            if k.value().0 != tenant {
                break;
            }
            let record = decode(v.value())?;
            if job.is_none_or(|j| j == record.job) {
                out.push(record);
            }
        }
        out.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        Ok(out)
    }

    fn all(&self) -> ServerResult<Vec<SavepointRecord>> {
        let txn = self.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(db_err)? {
            out.push(decode(row.map_err(db_err)?.1.value())?);
        }
        Ok(out)
    }

    fn put(&self, record: &SavepointRecord) -> ServerResult<()> {
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        {
            let mut t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
            let value = encode(&record.tenant, record)?;
            let key = (record.tenant.as_str(), record.id.as_str());
            let old = t.insert(key, value.as_slice()).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, key.0, key.0.len() + key.1.len(), (old, Some(value.len())), 0, false)?;
        }
        txn.commit().map_err(db_err)
    }

    fn update(
        &self,
        tenant: &str,
        id: &str,
        change: impl FnOnce(&mut SavepointRecord),
    ) -> ServerResult<SavepointRecord> {
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        let record;
        {
            let mut t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
            let mut r = match t.get((tenant, id)).map_err(db_err)? {
                Some(v) => decode(v.value())?,
                None => return Err(ServerError::NotFound(format!("no savepoint `{id}`"))),
            };
            change(&mut r);
            let value = encode(tenant, &r)?;
            let old = t.insert((tenant, id), value.as_slice()).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, tenant, tenant.len() + id.len(), (old, Some(value.len())), 0, false)?;
            record = r;
        }
        txn.commit().map_err(db_err)?;
        Ok(record)
    }

    /// Disposes of savepoint `id` of `tenant`: its state and its record. A pending one
    /// cannot be.
    pub async fn delete(&self, tenant: &str, id: &str) -> ServerResult<()> {
        let (this, tenant, id) = (self.clone(), tenant.to_string(), id.to_string());
        tokio::task::spawn_blocking(move || this.delete_blocking(&tenant, &id)).await?
    }

    fn delete_blocking(&self, tenant: &str, id: &str) -> ServerResult<()> {
        let record = self.get(tenant, id)?;
        if record.status == SavepointStatus::Pending {
            return Err(ServerError::Conflict(format!(
                "savepoint `{id}` is pending; delete it once it ended"
            )));
        }
        self.store.delete_savepoint(id)?;
        let txn = self.store.database()?.begin_write().map_err(db_err)?;
        {
            let mut t = txn.open_table(SAVEPOINTS).map_err(db_err)?;
            let old = t.remove((tenant, id)).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, tenant, tenant.len() + id.len(), (old, None), 0, false)?;
        }
        txn.commit().map_err(db_err)?;
        tracing::info!(tenant = %tenant, savepoint = %id, "savepoint deleted");
        Ok(())
    }

    /// A page of the state of `operator` in completed savepoint `id` of `tenant`.
    pub async fn state(
        &self,
        tenant: &str,
        id: &str,
        operator: &str,
        query: StateQuery,
    ) -> ServerResult<StatePage> {
        let info = self.completed(tenant, id)?;
        let (store, operator) = (self.store.clone(), operator.to_string());
        tokio::task::spawn_blocking(move || {
            if !store.savepoint_operators(&info.id)?.contains(&operator)
                && !described_node(&info.description, &operator)
            {
                return Err(ServerError::NotFound(format!(
                    "savepoint `{}` has no operator `{}`",
                    info.id,
                    printable(&operator)
                )));
            }
            let scopes = store.savepoint_scopes(&info.id, &operator)?;
            page(operator.clone(), &scopes, &query, |scope| {
                store.read_savepoint_scope(&info.id, &operator, scope)
            })
        })
        .await?
    }
}

/// Whether a savepoint's description names node `operator` (a node without state has no
/// rows, yet is part of the savepoint).
fn described_node(description: &serde_json::Value, operator: &str) -> bool {
    description
        .get("nodes")
        .and_then(|n| n.as_array())
        .is_some_and(|nodes| nodes.iter().any(|n| n.get("id").and_then(|i| i.as_str()) == Some(operator)))
}
