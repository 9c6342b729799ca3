//! `/api/v1/tenants/{tenant_id}/kafka` (admin: a tenant's Kafka grants),
//! `/api/v1/kafka/connections` (a tenant: the connections it may use) and
//! `/api/v1/kafka/server-connections` (admin: the server's connections, without secrets).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};

use super::model::{Data, ErrorBody, KafkaGrant, KafkaGrants, ServerKafkaConnection, Tenant};
use super::{Admin, Caller, parse_json};
use crate::server::ids::check_hex_id;
use crate::server::tenants::check_kafka_grants;
use crate::server::{Server, ServerError};

/// Replaces a tenant's Kafka grants: which of the server's `kafka_connections` its jobs may
/// use, and the topic and group prefixes they are held to there. An empty list takes Kafka
/// away (running jobs keep running until they are next planned: restarted or resumed).
#[utoipa::path(put, path = "/api/v1/tenants/{tenant_id}/kafka", tag = "tenants", request_body = KafkaGrants,
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tenant", body = Tenant),
        (status = 400, description = "Bad body, or a connection the server does not have", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn set_kafka_grants(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
    body: Bytes,
) -> Result<Json<Tenant>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let KafkaGrants { grants } = parse_json(&body)?;
    let grants: Vec<_> = grants.into_iter().map(Into::into).collect();
    let known: Vec<&str> = server.config.kafka_connections.keys().map(String::as_str).collect();
    check_kafka_grants(&grants, &known)?;
    let tenant = server.tenants.set_kafka(&tenant_id, grants).await?;
    tracing::info!(tenant = %tenant_id, grants = tenant.kafka.len(), "kafka grants set");
    Ok(Json(tenant.into()))
}

/// The Kafka connections the caller's jobs may use: names and prefixes, never addresses or
/// credentials. A job's Kafka node names one in `connection`.
#[utoipa::path(get, path = "/api/v1/kafka/connections", tag = "kafka",
    responses(
        (status = 200, description = "The connections granted to the caller", body = Data<KafkaGrant>),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
pub async fn list_kafka_connections(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<KafkaGrant>>, ServerError> {
    // A grant whose connection the admin has since removed from the config is not usable.
    let granted =
        tenant.kafka.into_iter().filter(|g| server.config.kafka_connections.contains_key(&g.connection));
    Ok(Json(Data::of(granted.collect::<Vec<_>>())))
}

/// The server's Kafka connections (its `kafka_connections`), for the admin: addresses, the
/// security protocol, the SASL mechanism and user, whether TLS files are set, and the tenants
/// granted each — never a password or a key.
#[utoipa::path(get, path = "/api/v1/kafka/server-connections", tag = "kafka",
    responses(
        (status = 200, description = "The server's connections", body = Data<ServerKafkaConnection>),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody)))]
pub async fn list_server_kafka_connections(
    _: Admin,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<ServerKafkaConnection>>, ServerError> {
    let tenants = server.tenants.list()?;
    let data = server
        .config
        .kafka_connections
        .iter()
        .map(|(name, c)| ServerKafkaConnection {
            name: name.clone(),
            bootstrap_servers: c.bootstrap_servers.clone(),
            security_protocol: serde_json::to_value(c.security_protocol)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            sasl_mechanism: c
                .sasl_mechanism
                .and_then(|m| serde_json::to_value(m).ok())
                .and_then(|v| v.as_str().map(str::to_string)),
            sasl_username: c.sasl_username.clone(),
            tls_files: c.ssl_ca_location.is_some() || c.ssl_certificate_location.is_some(),
            granted_to: {
                let mut names: Vec<String> = tenants
                    .iter()
                    .filter(|t| t.kafka.iter().any(|g| &g.connection == name))
                    .map(|t| t.name.clone())
                    .collect();
                names.sort();
                names
            },
        })
        .collect::<Vec<_>>();
    Ok(Json(Data::of(data)))
}
