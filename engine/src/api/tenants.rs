//! `/api/v1/tenants` (admin) and `/api/v1/tenant` (the caller's own).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Admin, Caller, Data, ErrorBody, parse_json};
use crate::server::tenants::{Quotas, Tenant, check_hex_id};
use crate::server::{Server, ServerError};

/// A new tenant.
#[derive(Debug, Deserialize, ToSchema)]
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
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantWithToken {
    /// The tenant.
    pub tenant: Tenant,
    /// A bearer token for it. It is shown only now; the server keeps only its hash.
    pub token: String,
}

/// A token.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenBody {
    /// A bearer token. It is shown only now; the server keeps only its hash.
    pub token: String,
}

/// What a tenant uses of its quotas.
#[derive(Debug, Serialize, ToSchema)]
pub struct Usage {
    /// Jobs that count against `max_jobs`.
    pub jobs: u32,
    /// Their subtasks.
    pub subtasks: u32,
    /// Bytes stored.
    pub storage_bytes: u64,
}

/// The caller's tenant, its quotas and usage.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantView {
    /// The tenant.
    #[serde(flatten)]
    pub tenant: Tenant,
    /// Its usage.
    pub usage: Usage,
}

/// Creates a tenant and its first token.
#[utoipa::path(post, path = "/api/v1/tenants", tag = "tenants", request_body = NewTenant,
    responses(
        (status = 201, description = "Created", body = TenantWithToken),
        (status = 400, description = "Bad name or body", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody)))]
pub async fn create_tenant(
    _: Admin,
    State(server): State<Arc<Server>>,
    body: Bytes,
) -> Result<(StatusCode, Json<TenantWithToken>), ServerError> {
    let new: NewTenant = parse_json(&body)?;
    let quotas = new.quotas.unwrap_or_else(|| server.config.default_quotas.clone());
    let (tenant, token) = server.tenants.create(&new.name, quotas)?;
    tracing::info!(tenant = %tenant.id, name = %tenant.name, "tenant created");
    Ok((StatusCode::CREATED, Json(TenantWithToken { tenant, token })))
}

/// Lists the tenants.
#[utoipa::path(get, path = "/api/v1/tenants", tag = "tenants",
    responses(
        (status = 200, description = "The tenants", body = Data<Tenant>),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody)))]
pub async fn list_tenants(
    _: Admin,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<Tenant>>, ServerError> {
    Ok(Json(Data { data: server.tenants.list()? }))
}

/// One tenant.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}", tag = "tenants",
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tenant", body = Tenant),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn get_tenant(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
) -> Result<Json<Tenant>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    Ok(Json(server.tenants.get(&tenant_id)?))
}

/// Replaces a tenant's quotas.
#[utoipa::path(put, path = "/api/v1/tenants/{tenant_id}/quotas", tag = "tenants", request_body = Quotas,
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tenant", body = Tenant),
        (status = 400, description = "Bad body", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn set_quotas(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
    body: Bytes,
) -> Result<Json<Tenant>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let quotas: Quotas = parse_json(&body)?;
    Ok(Json(server.tenants.set_quotas(&tenant_id, quotas)?))
}

/// Issues another token for a tenant.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/tokens", tag = "tenants",
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 201, description = "The token", body = TokenBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn issue_token(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
) -> Result<(StatusCode, Json<TokenBody>), ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let token = server.tenants.issue_token(&tenant_id)?;
    Ok((StatusCode::CREATED, Json(TokenBody { token })))
}

/// The caller's tenant: quotas and usage.
#[utoipa::path(get, path = "/api/v1/tenant", tag = "tenants",
    responses(
        (status = 200, description = "The caller's tenant", body = TenantView),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
pub async fn whoami(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Json<TenantView>, ServerError> {
    let holding: Vec<_> =
        server.jobs.list(&tenant.id)?.into_iter().filter(|j| j.status.holds_quota()).collect();
    let usage = Usage {
        jobs: holding.len() as u32,
        subtasks: holding.iter().map(|j| j.subtasks).sum(),
        storage_bytes: server.storage_usage(&tenant.id)?,
    };
    Ok(Json(TenantView { tenant, usage }))
}
