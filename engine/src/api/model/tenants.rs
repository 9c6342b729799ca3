//! Tenants, their quotas, usage and tokens.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::server;

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
        server::tenants::Quotas::default().into()
    }
}

impl From<server::tenants::Quotas> for Quotas {
    fn from(q: server::tenants::Quotas) -> Self {
        let server::tenants::Quotas {
            max_jobs,
            max_subtasks,
            max_memory_mb,
            max_cpu_ms,
            max_module_bytes,
            max_storage_bytes,
        } = q;
        Quotas { max_jobs, max_subtasks, max_memory_mb, max_cpu_ms, max_module_bytes, max_storage_bytes }
    }
}

impl From<Quotas> for server::tenants::Quotas {
    fn from(q: Quotas) -> Self {
        let Quotas { max_jobs, max_subtasks, max_memory_mb, max_cpu_ms, max_module_bytes, max_storage_bytes } =
            q;
        server::tenants::Quotas {
            max_jobs,
            max_subtasks,
            max_memory_mb,
            max_cpu_ms,
            max_module_bytes,
            max_storage_bytes,
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

impl From<server::tenants::Tenant> for Tenant {
    fn from(t: server::tenants::Tenant) -> Self {
        Tenant { id: t.id, name: t.name, created_ms: t.created_ms, quotas: t.quotas.into() }
    }
}

/// A new tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTenant {
    /// Its name: 1 to 128 characters of A-Z a-z 0-9 . _ -, not starting with `.`.
    #[schema(pattern = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$", min_length = 1, max_length = 128)]
    pub name: String,
    /// Its quotas (default: the server's `default_quotas`).
    #[serde(default)]
    pub quotas: Option<Quotas>,
}

/// A tenant with a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TenantWithToken {
    /// The tenant.
    pub tenant: Tenant,
    /// A bearer token for it. It is shown only now; the server keeps only its hash.
    pub token: String,
}

/// A token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokenBody {
    /// A bearer token. It is shown only now; the server keeps only its hash.
    pub token: String,
}

/// What a tenant uses of its quotas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    /// Jobs that count against `max_jobs`.
    pub jobs: u32,
    /// Their subtasks.
    pub subtasks: u32,
    /// Bytes stored.
    pub storage_bytes: u64,
}

impl From<server::Usage> for Usage {
    fn from(u: server::Usage) -> Self {
        Usage { jobs: u.jobs, subtasks: u.subtasks, storage_bytes: u.storage_bytes }
    }
}

/// The caller's tenant, its quotas and usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TenantView {
    /// The tenant.
    #[serde(flatten)]
    pub tenant: Tenant,
    /// Its usage.
    pub usage: Usage,
}
