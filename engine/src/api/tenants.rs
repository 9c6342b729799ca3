//! `/api/v1/tenants` (admin) and `/api/v1/tenant` (the caller's own).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::model::{
    Data, ErrorBody, NewTenant, NewToken, Quotas, RotateTokens, Rotated, Tenant, TenantView, TenantWithToken,
    TokenBody, TokenInfo,
};
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

/// One tenant, with its usage.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}", tag = "tenants",
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tenant, with its usage", body = TenantView),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn get_tenant(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
) -> Result<Json<TenantView>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let tenant = server.tenants.get(&tenant_id)?;
    let usage = server.usage(&tenant.id)?;
    Ok(Json(TenantView { tenant: tenant.into(), usage: usage.into() }))
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

/// A JSON body that may also be empty (then the type's default).
pub(super) fn optional_json<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, ServerError> {
    if body.iter().all(u8::is_ascii_whitespace) { Ok(T::default()) } else { parse_json(body) }
}

/// Issues another token for a tenant (a tenant holds at most 64); the token is shown only
/// in this answer.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/tokens", tag = "tenants",
    request_body(content = Option<NewToken>, description = "Optional: the token's label"),
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 201, description = "The token", body = TokenBody),
        (status = 400, description = "Bad body or label", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody),
        (status = 409, description = "The tenant holds the most tokens it may", body = ErrorBody)))]
pub async fn issue_token(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<TokenBody>), ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let new: NewToken = optional_json(&body)?;
    let (info, token) = server.tenants.issue_token(&tenant_id, new.label).await?;
    tracing::info!(tenant = %tenant_id, token = %info.id, "token issued");
    Ok((StatusCode::CREATED, Json(TokenBody::new(info, token))))
}

/// Lists a tenant's tokens: ids, labels and creation times, never the tokens.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/tokens", tag = "tenants",
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tokens, oldest first", body = Data<TokenInfo>),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn list_tokens(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
) -> Result<Json<Data<TokenInfo>>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    Ok(Json(Data::of(server.tenants.tokens(&tenant_id)?)))
}

/// Revokes one of a tenant's tokens: from the next request on it answers 401.
#[utoipa::path(delete, path = "/api/v1/tenants/{tenant_id}/tokens/{token_id}", tag = "tenants",
    params(("tenant_id" = String, Path, description = "Tenant id"),
           ("token_id" = String, Path, description = "Token id")),
    responses(
        (status = 200, description = "The revoked token", body = TokenInfo),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant or token", body = ErrorBody)))]
pub async fn revoke_token(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path((tenant_id, token_id)): Path<(String, String)>,
) -> Result<Json<TokenInfo>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let info = server.tenants.revoke_token(&tenant_id, &token_id).await?;
    tracing::info!(tenant = %tenant_id, token = %info.id, "token revoked");
    Ok(Json(info.into()))
}

/// Rotates a tenant's tokens in one step: issues a new token and revokes the old one(s)
/// (`token_id`: that one; default: all). For a rotation without a gap, issue a second
/// token instead, move the clients to it, then revoke the first.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/tokens/rotate", tag = "tenants",
    request_body(content = Option<RotateTokens>, description = "Optional: which token, and the new label"),
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 201, description = "The new token and the revoked ones", body = Rotated),
        (status = 400, description = "Bad body or label", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant or token", body = ErrorBody)))]
pub async fn rotate_tokens(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
    body: Bytes,
) -> Result<(StatusCode, Json<Rotated>), ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let rotate: RotateTokens = optional_json(&body)?;
    let (info, token, revoked) =
        server.tenants.rotate_tokens(&tenant_id, rotate.token_id, rotate.label).await?;
    tracing::info!(tenant = %tenant_id, token = %info.id, revoked = revoked.len(), "tokens rotated");
    let revoked = revoked.into_iter().map(Into::into).collect();
    Ok((StatusCode::CREATED, Json(Rotated { token: TokenBody::new(info, token), revoked })))
}

/// Disables a tenant: its requests answer 403, its running jobs stop at once (recorded
/// `stopped` with the reason, resumed by `enable`), its data stays. Survives a restart.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/disable", tag = "tenants",
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tenant, disabled", body = Tenant),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn disable_tenant(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
) -> Result<Json<Tenant>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    Ok(Json(server.jobs.disable_tenant(&server.tenants, &tenant_id).await?.into()))
}

/// Enables a disabled tenant: its tokens work again and the jobs that disabling stopped
/// resume from their latest checkpoints.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/enable", tag = "tenants",
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tenant, enabled", body = Tenant),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn enable_tenant(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
) -> Result<Json<Tenant>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    Ok(Json(server.jobs.enable_tenant(&server.tenants, &tenant_id).await?.into()))
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
