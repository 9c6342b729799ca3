//! Kafka in a tenant's job: a node names one of the server's connections (never an address
//! of its own), the tenant must have been granted it, and its topics, consumer group and
//! transactional ids must start with the prefixes of that grant. Checked on the spec before
//! anything compiles or connects, every time a job is planned (creation, restart, resume at
//! server start, restore from a savepoint: all go through `JobManager::plan`); the
//! connection each node resolved to is then set into the plan, the one place it is kept.
//! The stored spec keeps the connection's name only, and no error names more than the
//! tenant's own grants.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::connectors::kafka::config::pattern_prefixes;
use crate::connectors::kafka::{ConnectionConfig, KafkaAccess};
use crate::connectors::{SinkConfig, SourceConfig, SourceKind};
use crate::plan::{JobSpec, NodeBody, NodeKind, NodeSpec, Plan};
use crate::server::error::{ServerError, ServerResult};
use crate::server::ids::printable;
use crate::server::tenants::{KafkaGrant, Tenant};

/// Keys of a node's config that carry an address or credentials of the spec's own.
const INLINE_KEYS: [&str; 4] = ["brokers", "bootstrap_servers", "bootstrap.servers", "security_protocol"];

/// What each Kafka node of a spec resolved to, by node id.
#[derive(Default)]
pub(super) struct KafkaResolved(BTreeMap<String, Arc<KafkaAccess>>);

impl KafkaResolved {
    /// Sets each Kafka node's access into `plan` (made from the spec these were checked on).
    pub(super) fn apply(self, plan: &mut Plan) {
        for node in &mut plan.nodes {
            let access = self.0.get(&node.id).cloned();
            match &mut node.body {
                NodeBody::Source(SourceConfig { kind: SourceKind::Kafka(c), .. }) => c.access = access,
                NodeBody::Sink(SinkConfig::Kafka(c)) => c.access = access,
                _ => {}
            }
        }
    }
}

/// Checks every Kafka node of `spec` against `tenant`'s grants and the server's
/// `connections`, and resolves each to its connection. A node whose config does not parse
/// is left to the planner, which refuses it with the same message it gives everywhere.
pub(super) fn resolve_kafka(
    tenant: &Tenant,
    spec: &JobSpec,
    connections: &BTreeMap<String, ConnectionConfig>,
) -> ServerResult<KafkaResolved> {
    let mut resolved = KafkaResolved::default();
    // The dead-letter destination is a sink like the others.
    let dead_letters = spec.dead_letter.as_ref().map(crate::plan::dead_letter_node);
    for node in spec.nodes.iter().chain(&dead_letters) {
        if node.connector.as_deref() != Some("kafka") {
            continue;
        }
        refuse_inline_settings(node)?;
        let Some(ask) = KafkaAsk::of(node)? else { continue };
        let Some(name) = &ask.connection else { continue };
        let access = check_grant(tenant, node, name, &ask, connections)?;
        resolved.0.insert(node.id.clone(), Arc::new(access));
    }
    Ok(resolved)
}

/// Refuses a Kafka node's config that names an address or credentials of its own.
fn refuse_inline_settings(node: &NodeSpec) -> ServerResult<()> {
    if let Some(map) = node.config.as_object()
        && let Some(key) = map
            .keys()
            .find(|k| INLINE_KEYS.contains(&k.as_str()) || k.starts_with("sasl_") || k.starts_with("ssl_"))
    {
        return Err(ServerError::BadRequest(format!(
            "node `{}`: `{}` is not accepted: name a connection; the server connects only to the connections \
             its admin configured (GET /api/v1/kafka/connections lists those the tenant may use)",
            node.id,
            printable(key)
        )));
    }
    Ok(())
}

/// What a Kafka node asks for on its connection.
struct KafkaAsk {
    /// The connection it names.
    connection: Option<String>,
    /// The topics it reads or writes.
    topics: Vec<String>,
    /// The pattern of the topics it reads.
    pattern: Option<String>,
    /// Its consumer group, or its transactional id prefix.
    groups: Vec<String>,
}

impl KafkaAsk {
    /// What `node` asks for; `None` when its config does not parse (the planner refuses it).
    fn of(node: &NodeSpec) -> ServerResult<Option<KafkaAsk>> {
        let ask = match node.kind {
            NodeKind::Source => match SourceConfig::parse("kafka", &node.config) {
                Ok(SourceConfig { kind: SourceKind::Kafka(c), .. }) => KafkaAsk {
                    connection: c.connection,
                    topics: c.topics,
                    pattern: c.topic_pattern,
                    groups: c.group_id.into_iter().collect(),
                },
                _ => return Ok(None),
            },
            NodeKind::Sink => match SinkConfig::parse("kafka", &node.config) {
                Ok(SinkConfig::Kafka(c)) => {
                    if c.delivery == crate::connectors::kafka::Delivery::Transactional
                        && c.transactional_id_prefix.is_none()
                    {
                        return Err(ServerError::BadRequest(format!(
                            "node `{}`: delivery transactional needs a `transactional_id_prefix` that starts \
                             with one of the tenant's group prefixes (GET /api/v1/kafka/connections)",
                            node.id
                        )));
                    }
                    KafkaAsk {
                        connection: c.connection,
                        topics: vec![c.topic],
                        pattern: None,
                        groups: c.transactional_id_prefix.into_iter().collect(),
                    }
                }
                _ => return Ok(None),
            },
            NodeKind::Operator => return Ok(None),
        };
        Ok(Some(ask))
    }
}

/// Checks what `node` asks for on connection `name` against `tenant`'s grant of it; returns
/// the access the node gets. Invariant T6: no connection without the admin's grant.
fn check_grant(
    tenant: &Tenant,
    node: &NodeSpec,
    name: &str,
    ask: &KafkaAsk,
    connections: &BTreeMap<String, ConnectionConfig>,
) -> ServerResult<KafkaAccess> {
    let refuse = |m: String| ServerError::BadRequest(format!("node `{}`: {m}", node.id));
    let forbid = |m: String| ServerError::Forbidden(format!("node `{}`: {m}", node.id));
    let grant = tenant.kafka.iter().find(|g| g.connection == name);
    let (connection, grant) = match (connections.get(name), grant) {
        (Some(c), Some(g)) => (c, g),
        (Some(_), None) => {
            return Err(forbid(format!(
                "the tenant may not use Kafka connection `{}`; ask the server's admin for a grant \
                 (the tenant may use: {})",
                printable(name),
                granted(tenant, connections)
            )));
        }
        (None, _) => {
            return Err(refuse(format!(
                "there is no Kafka connection `{}`; the tenant may use: {}",
                printable(name),
                granted(tenant, connections)
            )));
        }
    };
    let access = KafkaAccess {
        name: Some(name.to_string()),
        connection: connection.clone(),
        topic_prefixes: Some(grant.topic_prefixes.clone()),
        group_prefixes: Some(grant.group_prefixes.clone()),
    };
    let outside = |what: &str, value: &str, prefixes: &[String]| {
        forbid(format!(
            "{what} `{}` is outside what the tenant may use on connection `{name}` (it must be within \
             one of its grant prefixes, each ending at `.`, `-` or `_`: {})",
            printable(value),
            list(prefixes)
        ))
    };
    for topic in &ask.topics {
        if !access.topic_allowed(topic) {
            return Err(outside("topic", topic, &grant.topic_prefixes));
        }
    }
    if let Some(pattern) = &ask.pattern {
        let bounded = pattern_prefixes(pattern)
            .filter(|literals| literals.iter().all(|l| access.topics_starting_with_allowed(l)))
            .is_some();
        if !bounded {
            return Err(forbid(format!(
                "topic_pattern `{}` may match topics outside what the tenant may use on connection \
                 `{name}`: start it with one of: {}",
                printable(pattern),
                list(&grant.topic_prefixes)
            )));
        }
    }
    for id in &ask.groups {
        if !access.group_allowed(id) {
            let what = if node.kind == NodeKind::Source { "group_id" } else { "transactional_id_prefix" };
            return Err(outside(what, id, &grant.group_prefixes));
        }
    }
    Ok(access)
}

/// The connections `tenant` was granted that the server has, for a message.
fn granted(tenant: &Tenant, connections: &BTreeMap<String, ConnectionConfig>) -> String {
    let names: Vec<&str> = tenant
        .kafka
        .iter()
        .map(|g: &KafkaGrant| g.connection.as_str())
        .filter(|n| connections.contains_key(*n))
        .collect();
    if names.is_empty() { "none (ask the server's admin for a grant)".into() } else { names.join(", ") }
}

fn list(prefixes: &[String]) -> String {
    if prefixes.is_empty() {
        "none (the grant allows nothing here)".into()
    } else {
        prefixes.iter().map(|p| format!("`{}`", printable(p))).collect::<Vec<_>>().join(", ")
    }
}
