//! What a tenant's spec goes through before it runs: its module references resolved in the
//! tenant's registry, its connectors confined to the tenant, its per-instance limits held to
//! the tenant's quotas.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use weir_store::Store;

use crate::guest::OperatorModule;
use crate::plan::{JobSpec, LoadError, ModuleLoader, NodeKind, NodeSpec, Settings};
use crate::server::error::{ServerError, ServerResult};
use crate::server::registry::ModuleRegistry;
use crate::server::streams::internal_stream_name;
use crate::server::tenants::Quotas;

/// Resolves module references for one tenant and remembers what they resolved to.
pub(super) struct TenantModules<'a> {
    pub(super) registry: &'a ModuleRegistry,
    pub(super) tenant: &'a str,
    pub(super) resolved: Mutex<BTreeMap<String, String>>,
}

impl ModuleLoader for TenantModules<'_> {
    fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, LoadError> {
        let (module, id) = self.registry.resolve(self.tenant, reference)?;
        self.resolved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(reference.to_string(), id);
        Ok(module)
    }
}

/// Confines a spec to its tenant: stream names are the tenant's own, file connectors (paths
/// on the server's disk) are refused.
pub(super) fn scope_spec(tenant: &str, spec: &mut JobSpec, store: &Store) -> ServerResult<()> {
    for node in &mut spec.nodes {
        scope_node(tenant, node, store)?;
    }
    // The dead-letter destination is a sink like the others.
    if let Some(d) = &mut spec.dead_letter {
        let mut node = crate::plan::dead_letter_node(d);
        scope_node(tenant, &mut node, store)?;
        d.config = node.config;
    }
    Ok(())
}

/// Confines one node to its tenant (see [`scope_spec`]).
fn scope_node(tenant: &str, node: &mut NodeSpec, store: &Store) -> ServerResult<()> {
    let Some(connector) = node.connector.as_deref() else { return Ok(()) };
    match connector {
        "file" => {
            return Err(ServerError::BadRequest(format!(
                "node `{}`: the file connector reads and writes the server's disk and is not available to \
                 jobs submitted over the API; use a stream",
                node.id
            )));
        }
        "stream" => {
            let name = node.config.get("stream").and_then(|s| s.as_str()).ok_or_else(|| {
                ServerError::BadRequest(format!(
                    "node `{}`: the stream connector needs `stream` (a name)",
                    node.id
                ))
            })?;
            let internal = internal_stream_name(tenant, name)?;
            let partitions = node.config.get("partitions").and_then(|p| p.as_u64());
            match (store.stream_partitions(&internal), partitions) {
                (Ok(_), _) => {}
                // A sink that creates its stream: create it now, so that it can be read
                // as soon as the job exists.
                (Err(_), Some(p)) if node.kind == NodeKind::Sink => {
                    let p = u32::try_from(p).map_err(|_| {
                        ServerError::BadRequest(format!("node `{}`: partitions {p} is out of range", node.id))
                    })?;
                    store.create_stream(&internal, p).map_err(|e| {
                        ServerError::BadRequest(format!(
                            "node `{}`: {}",
                            node.id,
                            e.to_string().replace(&internal, name)
                        ))
                    })?;
                }
                (Err(_), _) => {
                    return Err(ServerError::BadRequest(format!(
                        "node `{}`: stream `{name}` does not exist; create it first (POST /api/v1/streams){}",
                        node.id,
                        if node.kind == NodeKind::Sink { " or give the sink `partitions`" } else { "" }
                    )));
                }
            }
            node.config["stream"] = serde_json::Value::String(internal);
        }
        _ => {}
    }
    Ok(())
}

/// Holds a job's per-instance limits to the tenant's quotas. A default setting above the
/// quota is lowered to it; one the spec asked for is refused (`strict`).
pub(super) fn apply_quota_settings(
    quotas: &Quotas,
    settings: &mut Settings,
    strict: bool,
) -> ServerResult<()> {
    let defaults = Settings::default();
    hold(
        &mut settings.memory_limit_mb,
        defaults.memory_limit_mb,
        quotas.max_memory_mb,
        strict,
        "max_memory_mb",
        |asked, max| {
            format!(
                "the job asks for {asked} MiB per operator instance (memory_limit_mb); the tenant may use {max}"
            )
        },
    )?;
    hold(
        &mut settings.cpu_limit_ms,
        defaults.cpu_limit_ms,
        quotas.max_cpu_ms,
        strict,
        "max_cpu_ms",
        |asked, max| {
            format!(
                "the job asks for {asked} ms of CPU per guest call (cpu_limit_ms); the tenant may use {max}"
            )
        },
    )
}

/// Holds one setting to its quota (see [`apply_quota_settings`]).
fn hold(
    value: &mut u64,
    default: u64,
    max: u64,
    strict: bool,
    limit: &'static str,
    message: impl FnOnce(u64, u64) -> String,
) -> ServerResult<()> {
    if *value <= max {
        Ok(())
    } else if *value == default || !strict {
        *value = max;
        Ok(())
    } else {
        Err(ServerError::Quota { limit, message: message(*value, max) })
    }
}
