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
    /// Bytes the channels of its jobs may hold together (each job's channels ×
    /// `channel_capacity_bytes`): the host memory its data in flight may take.
    pub max_buffered_bytes: u64,
    /// Bytes of operator log lines kept per job (the oldest go first); counted in its
    /// storage.
    pub max_log_bytes_per_job: u64,
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
            max_buffered_bytes,
            max_log_bytes_per_job,
        } = q;
        Quotas {
            max_jobs,
            max_subtasks,
            max_memory_mb,
            max_cpu_ms,
            max_module_bytes,
            max_storage_bytes,
            max_buffered_bytes,
            max_log_bytes_per_job,
        }
    }
}

impl From<Quotas> for server::tenants::Quotas {
    fn from(q: Quotas) -> Self {
        let Quotas {
            max_jobs,
            max_subtasks,
            max_memory_mb,
            max_cpu_ms,
            max_module_bytes,
            max_storage_bytes,
            max_buffered_bytes,
            max_log_bytes_per_job,
        } = q;
        server::tenants::Quotas {
            max_jobs,
            max_subtasks,
            max_memory_mb,
            max_cpu_ms,
            max_module_bytes,
            max_storage_bytes,
            max_buffered_bytes,
            max_log_bytes_per_job,
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
    /// When the admin disabled it, unix ms; `null` while it is enabled. A disabled
    /// tenant's requests answer 403, its jobs are stopped and its data kept.
    pub disabled_ms: Option<u64>,
    /// Jobs that were running when it was disabled; enabling resumes them.
    pub suspended_jobs: Vec<String>,
    /// The server's Kafka connections its jobs may use, and what through each (none: no
    /// Kafka). Set by the admin (`PUT /api/v1/tenants/{tenant_id}/kafka`).
    pub kafka: Vec<KafkaGrant>,
    /// The tenant may issue and revoke its own tokens (`/api/v1/tenant/tokens`). Set by the
    /// admin (`PUT /api/v1/tenants/{tenant_id}/settings`).
    #[serde(default)]
    pub manage_own_tokens: bool,
}

/// What the admin lets a tenant do itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantSettings {
    /// The tenant may issue and revoke its own tokens.
    pub manage_own_tokens: bool,
}

/// A tenant's Kafka grants, as the admin sets them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KafkaGrants {
    /// The grants, at most one per connection (`[]`: no Kafka).
    pub grants: Vec<KafkaGrant>,
}

/// What a tenant may do through one of the server's Kafka connections (names and prefixes
/// only: a connection's addresses and credentials never leave the server).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KafkaGrant {
    /// The connection's name (a key of the server's `kafka_connections`).
    pub connection: String,
    /// Topics the tenant's jobs may read and write: those starting with one of these
    /// (`""`: every topic; none: no topic).
    #[serde(default)]
    pub topic_prefixes: Vec<String>,
    /// Consumer group ids and transactional ids its jobs may use: those starting with one
    /// of these (`""`: any).
    #[serde(default)]
    pub group_prefixes: Vec<String>,
}

impl From<server::tenants::KafkaGrant> for KafkaGrant {
    fn from(g: server::tenants::KafkaGrant) -> Self {
        let server::tenants::KafkaGrant { connection, topic_prefixes, group_prefixes } = g;
        KafkaGrant { connection, topic_prefixes, group_prefixes }
    }
}

impl From<KafkaGrant> for server::tenants::KafkaGrant {
    fn from(g: KafkaGrant) -> Self {
        let KafkaGrant { connection, topic_prefixes, group_prefixes } = g;
        server::tenants::KafkaGrant { connection, topic_prefixes, group_prefixes }
    }
}

impl From<server::tenants::Tenant> for Tenant {
    fn from(t: server::tenants::Tenant) -> Self {
        Tenant {
            id: t.id,
            name: t.name,
            created_ms: t.created_ms,
            quotas: t.quotas.into(),
            disabled_ms: t.disabled_ms,
            suspended_jobs: t.suspended_jobs,
            kafka: t.kafka.into_iter().map(Into::into).collect(),
            manage_own_tokens: t.manage_own_tokens,
        }
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

/// A new token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokenBody {
    /// A bearer token. It is shown only now; the server keeps only its hash.
    pub token: String,
    /// Its id (16 hex digits), to list and revoke it.
    pub id: String,
    /// What it is for.
    pub label: Option<String>,
    /// When it was issued, unix ms.
    pub created_ms: u64,
}

impl TokenBody {
    /// The body of a new `token` described by `info`.
    pub fn new(info: server::tenants::TokenInfo, token: String) -> Self {
        TokenBody { token, id: info.id, label: info.label, created_ms: info.created_ms }
    }
}

/// A token as listed: its id, label and creation time, never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokenInfo {
    /// Its id (16 hex digits).
    pub id: String,
    /// What it is for.
    pub label: Option<String>,
    /// When it was issued, unix ms (a token from before token ids: its tenant's creation).
    pub created_ms: u64,
}

impl From<server::tenants::TokenInfo> for TokenInfo {
    fn from(t: server::tenants::TokenInfo) -> Self {
        TokenInfo { id: t.id, label: t.label, created_ms: t.created_ms }
    }
}

/// A token to issue (the body may be empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// What it is for: 1 to 128 bytes of text (`ci`, `grafana`, ...).
    #[serde(default)]
    pub label: Option<String>,
}

/// A rotation (the body may be empty: every token of the tenant is replaced by one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateTokens {
    /// Replace only this token (its label passes to the new one); default: all of them.
    #[serde(default)]
    pub token_id: Option<String>,
    /// The new token's label.
    #[serde(default)]
    pub label: Option<String>,
}

/// The result of a rotation: the new token and the revoked ones (they answer 401 now).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Rotated {
    /// The new token, shown only now.
    #[serde(flatten)]
    pub token: TokenBody,
    /// The tokens revoked.
    pub revoked: Vec<TokenInfo>,
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
    /// Bytes their channels may hold.
    pub buffered_bytes: u64,
}

impl From<server::Usage> for Usage {
    fn from(u: server::Usage) -> Self {
        Usage {
            jobs: u.jobs,
            subtasks: u.subtasks,
            storage_bytes: u.storage_bytes,
            buffered_bytes: u.buffered_bytes,
        }
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

/// One of the server's Kafka connections, as the admin sees it (no secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ServerKafkaConnection {
    /// Its name (tenants' grants and jobs' `connection` name it).
    pub name: String,
    /// `host:port` of its brokers.
    pub bootstrap_servers: Vec<String>,
    /// `plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl`.
    pub security_protocol: String,
    /// The SASL mechanism, for the `sasl_*` protocols.
    pub sasl_mechanism: Option<String>,
    /// The SASL user (never the password).
    pub sasl_username: Option<String>,
    /// A CA or client certificate file is set (their paths and the key are not shown).
    pub tls_files: bool,
    /// The names of the tenants granted it, in name order.
    pub granted_to: Vec<String>,
}
