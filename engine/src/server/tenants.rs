//! Tenants, their tokens and quotas. Tokens are random and stored only as SHA-256 hashes;
//! a request's bearer token is hashed and looked up.

use rand::RngCore as _;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;
use weir_store::Store;

use super::error::{ServerError, ServerResult};

/// tenant id → tenant record (JSON).
const TENANTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("weir.tenants");
/// SHA-256 (hex) of a token → tenant id.
const TOKENS: TableDefinition<'_, &str, &str> = TableDefinition::new("weir.tokens");

/// What one tenant may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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

/// A fresh random token: `weir_` and 64 hex digits.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("weir_{}", hex::encode(bytes))
}

/// A fresh random id of `bytes` bytes, in hex.
pub fn new_id(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// The stored form of a token.
fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Checks an id of `len` lowercase hex digits (ids from URLs are checked before use).
pub fn check_hex_id(what: &str, id: &str, len: usize) -> ServerResult<()> {
    if id.len() == len && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(ServerError::NotFound(format!(
            "no {what} `{}` (a {what} id is {len} lowercase hex digits)",
            printable(id)
        )))
    }
}

/// A user-supplied string, shortened and with control characters escaped, for messages.
pub fn printable(s: &str) -> String {
    let short: String = s.chars().take(80).collect();
    let mut out = short.escape_debug().to_string();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Checks a name (tenant, module): 1 to 128 characters of `A-Z a-z 0-9 . _ -`, not
/// starting with `.`.
pub fn check_name(what: &str, name: &str) -> ServerResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(ServerError::BadRequest(format!(
            "invalid {what} name `{}` (allowed: 1 to 128 characters of A-Z a-z 0-9 . _ -, not starting with '.')",
            printable(name)
        )))
    }
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
    pub fn create(&self, name: &str, quotas: Quotas) -> ServerResult<(Tenant, String)> {
        check_name("tenant", name)?;
        let tenant = Tenant { id: new_id(8), name: name.to_string(), created_ms: weir_now_ms(), quotas };
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
        }
        txn.commit().map_err(ServerError::internal)?;
        Ok((tenant, token))
    }

    /// Issues another token for tenant `id`.
    pub fn issue_token(&self, id: &str) -> ServerResult<String> {
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
    pub fn set_quotas(&self, id: &str, quotas: Quotas) -> ServerResult<Tenant> {
        let mut tenant = self.get(id)?;
        tenant.quotas = quotas;
        let txn = self.store.database().begin_write().map_err(ServerError::internal)?;
        {
            let mut tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
            tenants.insert(id, encode_record(&tenant)?.as_slice()).map_err(ServerError::internal)?;
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

pub(crate) fn encode_record<T: Serialize>(value: &T) -> ServerResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(ServerError::internal)
}

pub(crate) fn decode_record<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> ServerResult<T> {
    serde_json::from_slice(bytes).map_err(|e| ServerError::Internal(format!("corrupt server record: {e}")))
}

/// Now, in unix milliseconds.
pub fn weir_now_ms() -> u64 {
    crate::clock::unix_ms()
}
