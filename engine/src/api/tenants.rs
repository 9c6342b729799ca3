//! `/api/v1/tenants` (admin) and `/api/v1/tenant` (the caller's own).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::model::{Data, ErrorBody, NewTenant, Quotas, Tenant, TenantView, TenantWithToken, TokenBody};
use super::{Admin, Caller, parse_json};
use crate::server::ids::check_hex_id;
use crate::server::{Server, ServerError};

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
    let quotas = new.quotas.map_or_else(|| server.config.default_quotas.clone(), Into::into);
    let (tenant, token) = server.tenants.create(&new.name, quotas).await?;
    tracing::info!(tenant = %tenant.id, name = %tenant.name, "tenant created");
    Ok((StatusCode::CREATED, Json(TenantWithToken { tenant: tenant.into(), token })))
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
    Ok(Json(Data::of(server.tenants.list()?)))
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
    Ok(Json(server.tenants.get(&tenant_id)?.into()))
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
    Ok(Json(server.tenants.set_quotas(&tenant_id, quotas.into()).await?.into()))
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
    let token = server.tenants.issue_token(&tenant_id).await?;
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
    let usage = server.usage(&tenant.id)?;
    Ok(Json(TenantView { tenant: tenant.into(), usage: usage.into() }))
}
