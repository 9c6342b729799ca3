//! Tenants, their tokens and quotas. Tokens are random and stored only as SHA-256 hashes;
//! a request's bearer token is hashed and looked up.

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use weir_store::Store;

use super::codec::{decode_record, encode_record};
use super::error::{ServerError, ServerResult};
use super::ids::{check_name, new_id, new_token, printable, token_hash};
use crate::clock::unix_ms;

/// tenant id → tenant record (JSON).
const TENANTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("weir.tenants");
/// SHA-256 (hex) of a token → tenant id.
const TOKENS: TableDefinition<'_, &str, &str> = TableDefinition::new("weir.tokens");

/// What one tenant may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quotas {
    /// Jobs not yet ended (running, restarting, stopping, stopped).
    pub max_jobs: u32,
    /// Subtasks of those jobs together.
    pub max_subtasks: u32,
    /// Linear memory of one operator instance, in MiB (a job's `memory_limit_mb`).
    pub max_memory_mb: u64,
    /// CPU time of one guest call, in milliseconds (a job's `cpu_limit_ms`).
    pub max_cpu_ms: u64,
    /// Size of one uploaded module, in bytes.
    pub max_module_bytes: u64,
    /// Bytes stored for the tenant: modules, stream records and checkpointed state.
    pub max_storage_bytes: u64,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            max_jobs: 16,
            max_subtasks: 64,
            max_memory_mb: 512,
            max_cpu_ms: 10_000,
            max_module_bytes: 32 << 20,
            max_storage_bytes: 4 << 30,
        }
    }
}

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    /// Its id (16 hex digits).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Creation time, unix ms.
    pub created_ms: u64,
    /// Its quotas.
    pub quotas: Quotas,
}

/// The tenant registry, over the store's database.
#[derive(Debug, Clone)]
pub struct Tenants {
    store: Store,
}

impl Tenants {
    /// The registry in `store` (creates its tables).
    pub fn open(store: &Store) -> ServerResult<Self> {
        let txn = store.database().begin_write().map_err(ServerError::internal)?;
        txn.open_table(TENANTS).map_err(ServerError::internal)?;
        txn.open_table(TOKENS).map_err(ServerError::internal)?;
        txn.commit().map_err(ServerError::internal)?;
        Ok(Tenants { store: store.clone() })
    }

    /// Creates a tenant; returns it with its first token (shown once, stored as a hash).
    pub async fn create(&self, name: &str, quotas: Quotas) -> ServerResult<(Tenant, String)> {
        let (this, name) = (self.clone(), name.to_string());
        tokio::task::spawn_blocking(move || this.create_blocking(&name, quotas)).await?
    }

    fn create_blocking(&self, name: &str, quotas: Quotas) -> ServerResult<(Tenant, String)> {
        check_name("tenant", name)?;
        let tenant = Tenant { id: new_id(8), name: name.to_string(), created_ms: unix_ms(), quotas };
        let token = new_token();
        let db = self.store.database();
        let txn = db.begin_write().map_err(ServerError::internal)?;
        {
            let mut tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
            for row in tenants.iter().map_err(ServerError::internal)? {
                let (_, v) = row.map_err(ServerError::internal)?;
                let t: Tenant = decode_record(v.value())?;
                if t.name == name {
                    return Err(ServerError::Conflict(format!(
                        "a tenant named `{name}` exists (id {})",
                        t.id
                    )));
                }
            }
            tenants
                .insert(tenant.id.as_str(), encode_record(&tenant)?.as_slice())
                .map_err(ServerError::internal)?;
            let mut tokens = txn.open_table(TOKENS).map_err(ServerError::internal)?;
            tokens.insert(token_hash(&token).as_str(), tenant.id.as_str()).map_err(ServerError::internal)?;
            // The tenant's streams and storage limit, for the storage ledger.
            weir_store::set_owner_in(&txn, &super::ledger::stream_namespace(&tenant.id), &tenant.id)?;
            weir_store::set_limit_in(&txn, &tenant.id, Some(tenant.quotas.max_storage_bytes))?;
        }
        txn.commit().map_err(ServerError::internal)?;
        Ok((tenant, token))
    }

    /// Issues another token for tenant `id`.
    pub async fn issue_token(&self, id: &str) -> ServerResult<String> {
        let (this, id) = (self.clone(), id.to_string());
        tokio::task::spawn_blocking(move || this.issue_token_blocking(&id)).await?
    }

    fn issue_token_blocking(&self, id: &str) -> ServerResult<String> {
        self.get(id)?;
        let token = new_token();
        let txn = self.store.database().begin_write().map_err(ServerError::internal)?;
        {
            let mut tokens = txn.open_table(TOKENS).map_err(ServerError::internal)?;
            tokens.insert(token_hash(&token).as_str(), id).map_err(ServerError::internal)?;
        }
        txn.commit().map_err(ServerError::internal)?;
        Ok(token)
    }

    /// Replaces the quotas of tenant `id`.
    pub async fn set_quotas(&self, id: &str, quotas: Quotas) -> ServerResult<Tenant> {
        let (this, id) = (self.clone(), id.to_string());
        tokio::task::spawn_blocking(move || this.set_quotas_blocking(&id, quotas)).await?
    }

    fn set_quotas_blocking(&self, id: &str, quotas: Quotas) -> ServerResult<Tenant> {
        let mut tenant = self.get(id)?;
        tenant.quotas = quotas;
        let txn = self.store.database().begin_write().map_err(ServerError::internal)?;
        {
            let mut tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
            tenants.insert(id, encode_record(&tenant)?.as_slice()).map_err(ServerError::internal)?;
            weir_store::set_limit_in(&txn, id, Some(tenant.quotas.max_storage_bytes))?;
        }
        txn.commit().map_err(ServerError::internal)?;
        Ok(tenant)
    }

    /// Tenant `id`.
    pub fn get(&self, id: &str) -> ServerResult<Tenant> {
        let not_found = || ServerError::NotFound(format!("no tenant `{}`", printable(id)));
        let txn = self.store.database().begin_read().map_err(ServerError::internal)?;
        let tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
        let row = tenants.get(id).map_err(ServerError::internal)?.ok_or_else(not_found)?;
        decode_record(row.value())
    }

    /// Every tenant, by id.
    pub fn list(&self) -> ServerResult<Vec<Tenant>> {
        let txn = self.store.database().begin_read().map_err(ServerError::internal)?;
        let tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
        let mut out = Vec::new();
        for row in tenants.iter().map_err(ServerError::internal)? {
            let (_, v) = row.map_err(ServerError::internal)?;
            out.push(decode_record(v.value())?);
        }
        Ok(out)
    }

    /// The tenant holding `token`, if any.
    pub fn authenticate(&self, token: &str) -> ServerResult<Option<Tenant>> {
        let txn = self.store.database().begin_read().map_err(ServerError::internal)?;
        let tokens = txn.open_table(TOKENS).map_err(ServerError::internal)?;
        let Some(id) = tokens.get(token_hash(token).as_str()).map_err(ServerError::internal)? else {
            return Ok(None);
        };
        let id = id.value().to_string();
        drop(tokens);
        drop(txn);
        self.get(&id).map(Some)
    }
}
