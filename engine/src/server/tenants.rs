//! Tenants, their tokens and quotas. Tokens are random and stored only as SHA-256 hashes;
//! a request's bearer token is hashed and looked up in the store on every request (no
//! cache: a revoked token or a disabled tenant is refused from the next request on).
//! A disabled tenant keeps its data; its token is refused with 403 until it is enabled.

mod tokens;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use weir_store::Store;

use super::codec::{decode_record, encode_record};
use super::error::{ServerError, ServerResult};
use super::ids::{check_name, new_id, printable, token_hash};
use crate::clock::unix_ms;

pub use tokens::TokenInfo;

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
    /// Bytes the channels of those jobs may hold together (each job's channels ×
    /// `channel_capacity_bytes`): the host memory its data in flight may take.
    #[serde(default = "default_max_buffered_bytes")]
    pub max_buffered_bytes: u64,
    /// Bytes of operator log lines kept per job (the oldest go first); counted in the
    /// tenant's storage.
    #[serde(default = "default_max_log_bytes_per_job")]
    pub max_log_bytes_per_job: u64,
}

fn default_max_buffered_bytes() -> u64 {
    2 << 30
}

/// Bytes of operator log a job keeps unless its tenant's quota says otherwise: 1 MiB.
pub const DEFAULT_LOG_BYTES: u64 = 1 << 20;

fn default_max_log_bytes_per_job() -> u64 {
    DEFAULT_LOG_BYTES
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
            max_buffered_bytes: default_max_buffered_bytes(),
            max_log_bytes_per_job: default_max_log_bytes_per_job(),
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
    /// When the admin disabled it, unix ms; `None` while it is enabled.
    #[serde(default)]
    pub disabled_ms: Option<u64>,
    /// Jobs that were running when it was disabled (stopped then); enabling resumes them.
    #[serde(default)]
    pub suspended_jobs: Vec<String>,
    /// The Kafka connections its jobs may use, and what through them (none: no Kafka).
    #[serde(default)]
    pub kafka: Vec<KafkaGrant>,
    /// The admin lets the tenant issue and revoke its own tokens.
    #[serde(default)]
    pub manage_own_tokens: bool,
}

/// Most Kafka grants of one tenant, and most prefixes of one grant.
pub const MAX_KAFKA_GRANTS: usize = 64;

/// What a tenant may do through one of the server's Kafka connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaGrant {
    /// The connection's name (a key of the server's `kafka_connections`).
    pub connection: String,
    /// Topics its jobs may read and write: those within one of these prefixes (`acme.` the
    /// names starting with it; `acme` itself and the names continuing it after `.`, `-` or
    /// `_`; `*` all — see [`within_prefix`](crate::connectors::kafka::within_prefix)).
    #[serde(default)]
    pub topic_prefixes: Vec<String>,
    /// Consumer group ids and transactional ids its jobs may use: those within one of these
    /// prefixes, as for topics.
    #[serde(default)]
    pub group_prefixes: Vec<String>,
}

/// Checks grants the admin sets: known connections, each once, bounded prefixes.
pub fn check_kafka_grants(grants: &[KafkaGrant], known: &[&str]) -> ServerResult<()> {
    let bad = |m: String| Err(ServerError::BadRequest(m));
    if grants.len() > MAX_KAFKA_GRANTS {
        return bad(format!("at most {MAX_KAFKA_GRANTS} Kafka grants per tenant, got {}", grants.len()));
    }
    let mut seen = std::collections::BTreeSet::new();
    for g in grants {
        if !known.contains(&g.connection.as_str()) {
            return bad(format!(
                "the server has no Kafka connection `{}` (its kafka_connections: {})",
                printable(&g.connection),
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ));
        }
        if !seen.insert(g.connection.as_str()) {
            return bad(format!(
                "connection `{}` is granted twice: give one grant per connection",
                g.connection
            ));
        }
        for (what, prefixes) in [("topic_prefixes", &g.topic_prefixes), ("group_prefixes", &g.group_prefixes)]
        {
            if prefixes.len() > MAX_KAFKA_GRANTS {
                return bad(format!(
                    "{what} of `{}`: at most {MAX_KAFKA_GRANTS}, got {}",
                    g.connection,
                    prefixes.len()
                ));
            }
            if prefixes.iter().any(String::is_empty) {
                return bad(format!(
                    "{what} of `{}`: an empty prefix is refused (it would grant names by accident); \
                     grant every name with `*`",
                    g.connection
                ));
            }
            if let Some(p) = prefixes.iter().find(|p| p.len() > 255 || p.chars().any(char::is_control)) {
                return bad(format!(
                    "{what} of `{}`: `{}` must be at most 255 bytes without control characters",
                    g.connection,
                    printable(p)
                ));
            }
        }
    }
    Ok(())
}

impl Tenant {
    /// Refuses a disabled tenant: its requests answer 403 with this message.
    pub fn check_enabled(&self) -> ServerResult<()> {
        match self.disabled_ms {
            None => Ok(()),
            Some(_) => Err(ServerError::Forbidden(format!(
                "tenant `{}` is disabled: its jobs are stopped and its data kept; ask the server's admin to enable it",
                self.name
            ))),
        }
    }
}

/// The tenant registry, over the store's database.
#[derive(Debug, Clone)]
pub struct Tenants {
    store: Store,
}

impl Tenants {
    /// The registry in `store` (creates its tables).
    pub fn open(store: &Store) -> ServerResult<Self> {
        let txn = store.database()?.begin_write().map_err(ServerError::internal)?;
        txn.open_table(TENANTS).map_err(ServerError::internal)?;
        txn.open_table(TOKENS).map_err(ServerError::internal)?;
        tokens::migrate(&txn)?;
        txn.commit().map_err(ServerError::internal)?;
        Ok(Tenants { store: store.clone() })
    }

    /// The registry in `store`, whose tables [`Tenants::open`] created already.
    pub(crate) fn over(store: &Store) -> Self {
        Tenants { store: store.clone() }
    }

    /// Creates a tenant; returns it with its first token (shown once, stored as a hash).
    pub async fn create(&self, name: &str, quotas: Quotas) -> ServerResult<(Tenant, String)> {
        let (this, name) = (self.clone(), name.to_string());
        tokio::task::spawn_blocking(move || this.create_blocking(&name, quotas)).await?
    }

    fn create_blocking(&self, name: &str, quotas: Quotas) -> ServerResult<(Tenant, String)> {
        check_name("tenant", name)?;
        let tenant = Tenant {
            id: new_id(8),
            name: name.to_string(),
            created_ms: unix_ms(),
            quotas,
            disabled_ms: None,
            suspended_jobs: Vec::new(),
            kafka: Vec::new(),
            manage_own_tokens: false,
        };
        let db = self.store.database()?;
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
            // The tenant's streams and storage limit, for the storage ledger.
            weir_store::set_owner_in(&txn, &super::ledger::stream_namespace(&tenant.id), &tenant.id)?;
            weir_store::set_limit_in(&txn, &tenant.id, Some(tenant.quotas.max_storage_bytes))?;
        }
        let (_, token) = tokens::insert(&txn, &tenant.id, Some("initial".into()))?;
        txn.commit().map_err(ServerError::internal)?;
        Ok((tenant, token))
    }

    /// Replaces the quotas of tenant `id`.
    pub async fn set_quotas(&self, id: &str, quotas: Quotas) -> ServerResult<Tenant> {
        let (this, id) = (self.clone(), id.to_string());
        tokio::task::spawn_blocking(move || this.set_quotas_blocking(&id, quotas)).await?
    }

    fn set_quotas_blocking(&self, id: &str, quotas: Quotas) -> ServerResult<Tenant> {
        self.change(id, |t| t.quotas = quotas)
    }

    /// Lets tenant `id` issue and revoke its own tokens, or not.
    pub async fn set_manage_own_tokens(&self, id: &str, allowed: bool) -> ServerResult<Tenant> {
        let (this, id) = (self.clone(), id.to_string());
        tokio::task::spawn_blocking(move || this.change(&id, |t| t.manage_own_tokens = allowed)).await?
    }

    /// Replaces the Kafka grants of tenant `id` (checked by [`check_kafka_grants`]).
    pub async fn set_kafka(&self, id: &str, grants: Vec<KafkaGrant>) -> ServerResult<Tenant> {
        let (this, id) = (self.clone(), id.to_string());
        tokio::task::spawn_blocking(move || this.change(&id, |t| t.kafka = grants)).await?
    }

    /// Records tenant `id` as disabled since `since_ms` with its `suspended` jobs, or (with
    /// `None`) as enabled.
    pub async fn set_disabled(&self, id: &str, disabled: Option<(u64, Vec<String>)>) -> ServerResult<Tenant> {
        let (this, id) = (self.clone(), id.to_string());
        tokio::task::spawn_blocking(move || {
            this.change(&id, |t| {
                let (since, jobs) = disabled.map_or((None, Vec::new()), |(s, j)| (Some(s), j));
                t.disabled_ms = since;
                t.suspended_jobs = jobs;
            })
        })
        .await?
    }

    /// Changes tenant `id`'s record in one transaction; returns the new record.
    fn change(&self, id: &str, change: impl FnOnce(&mut Tenant)) -> ServerResult<Tenant> {
        let not_found = || ServerError::NotFound(format!("no tenant `{}`", printable(id)));
        let txn = self.store.database()?.begin_write().map_err(ServerError::internal)?;
        let mut tenant: Tenant;
        {
            let mut tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
            let row = tenants.get(id).map_err(ServerError::internal)?.ok_or_else(not_found)?;
            tenant = decode_record(row.value())?;
            drop(row);
            change(&mut tenant);
            tenants.insert(id, encode_record(&tenant)?.as_slice()).map_err(ServerError::internal)?;
            weir_store::set_limit_in(&txn, id, Some(tenant.quotas.max_storage_bytes))?;
        }
        txn.commit().map_err(ServerError::internal)?;
        Ok(tenant)
    }

    /// Tenant `id`.
    pub fn get(&self, id: &str) -> ServerResult<Tenant> {
        let not_found = || ServerError::NotFound(format!("no tenant `{}`", printable(id)));
        let txn = self.store.database()?.begin_read().map_err(ServerError::internal)?;
        let tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
        let row = tenants.get(id).map_err(ServerError::internal)?.ok_or_else(not_found)?;
        decode_record(row.value())
    }

    /// Every tenant, by id.
    pub fn list(&self) -> ServerResult<Vec<Tenant>> {
        let txn = self.store.database()?.begin_read().map_err(ServerError::internal)?;
        let tenants = txn.open_table(TENANTS).map_err(ServerError::internal)?;
        let mut out = Vec::new();
        for row in tenants.iter().map_err(ServerError::internal)? {
            let (_, v) = row.map_err(ServerError::internal)?;
            out.push(decode_record(v.value())?);
        }
        Ok(out)
    }

    /// The tenant holding `token`, if any (a disabled one too: see [`Tenant::check_enabled`]).
    pub fn authenticate(&self, token: &str) -> ServerResult<Option<Tenant>> {
        let txn = self.store.database()?.begin_read().map_err(ServerError::internal)?;
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
