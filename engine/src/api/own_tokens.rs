//! A tenant's own tokens (issue 43): it lists them (ids, labels, times — never the tokens),
//! and, when the admin lets it (`PUT /api/v1/tenants/{tenant_id}/settings`,
//! `manage_own_tokens`), issues and revokes them itself. The bound is the admin's: at most 64
//! tokens per tenant.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::model::{Data, ErrorBody, NewToken, Tenant, TenantSettings, TokenBody, TokenInfo};
use super::tenants::optional_json;
use super::{Admin, Caller, parse_json};
use crate::server::ids::check_hex_id;
use crate::server::tenants::Tenant as TenantRecord;
use crate::server::{Server, ServerError};

/// Sets what the admin lets a tenant do itself.
#[utoipa::path(put, path = "/api/v1/tenants/{tenant_id}/settings", tag = "tenants", request_body = TenantSettings,
    params(("tenant_id" = String, Path, description = "Tenant id")),
    responses(
        (status = 200, description = "The tenant", body = Tenant),
        (status = 400, description = "Bad body", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such tenant", body = ErrorBody)))]
pub async fn set_settings(
    _: Admin,
    State(server): State<Arc<Server>>,
    Path(tenant_id): Path<String>,
    body: Bytes,
) -> Result<Json<Tenant>, ServerError> {
    check_hex_id("tenant", &tenant_id, 16)?;
    let settings: TenantSettings = parse_json(&body)?;
    let tenant = server.tenants.set_manage_own_tokens(&tenant_id, settings.manage_own_tokens).await?;
    tracing::info!(tenant = %tenant_id, manage_own_tokens = settings.manage_own_tokens, "tenant settings set");
    Ok(Json(tenant.into()))
}

/// The caller's tokens: ids, labels and creation times, never the tokens.
#[utoipa::path(get, path = "/api/v1/tenant/tokens", tag = "tenants",
    responses(
        (status = 200, description = "The tokens, oldest first", body = Data<TokenInfo>),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
pub async fn list_own_tokens(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Json<Data<TokenInfo>>, ServerError> {
    Ok(Json(Data::of(server.tenants.tokens(&tenant.id)?)))
}

/// Refuses unless the admin lets `tenant` manage its own tokens.
fn allowed(tenant: &TenantRecord) -> Result<(), ServerError> {
    if tenant.manage_own_tokens {
        Ok(())
    } else {
        Err(ServerError::Forbidden(
            "this tenant may not manage its own tokens: ask the admin (PUT /api/v1/tenants/{tenant_id}/settings)"
                .to_string(),
        ))
    }
}

/// Issues another token of the caller (at most 64 per tenant), when the admin allows it;
/// the token is shown only in this answer.
#[utoipa::path(post, path = "/api/v1/tenant/tokens", tag = "tenants",
    request_body(content = Option<NewToken>, description = "Optional: the token's label"),
    responses(
        (status = 201, description = "The token", body = TokenBody),
        (status = 400, description = "Bad body or label", body = ErrorBody),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "The admin does not let this tenant manage its tokens", body = ErrorBody),
        (status = 409, description = "The tenant holds the most tokens it may", body = ErrorBody)))]
pub async fn issue_own_token(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    body: Bytes,
) -> Result<(StatusCode, Json<TokenBody>), ServerError> {
    allowed(&tenant)?;
    let new: NewToken = optional_json(&body)?;
    let (info, token) = server.tenants.issue_token(&tenant.id, new.label).await?;
    tracing::info!(tenant = %tenant.id, token = %info.id, "token issued by its tenant");
    Ok((StatusCode::CREATED, Json(TokenBody::new(info, token))))
}

/// Revokes one of the caller's tokens, when the admin allows it: from the next request on it
/// answers 401 (the token of this request too).
#[utoipa::path(delete, path = "/api/v1/tenant/tokens/{token_id}", tag = "tenants",
    params(("token_id" = String, Path, description = "Token id")),
    responses(
        (status = 200, description = "The revoked token", body = TokenInfo),
        (status = 401, description = "No or bad token", body = ErrorBody),
        (status = 403, description = "The admin does not let this tenant manage its tokens", body = ErrorBody),
        (status = 404, description = "No such token of this tenant", body = ErrorBody)))]
pub async fn revoke_own_token(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
    Path(token_id): Path<String>,
) -> Result<Json<TokenInfo>, ServerError> {
    // Another tenant's token, or none: not found, whatever the setting.
    check_hex_id("token", &token_id, 16)?;
    if !server.tenants.tokens(&tenant.id)?.iter().any(|t| t.id == token_id) {
        return Err(ServerError::NotFound(format!("no token `{token_id}` of this tenant")));
    }
    allowed(&tenant)?;
    let info = server.tenants.revoke_token(&tenant.id, &token_id).await?;
    tracing::info!(tenant = %tenant.id, token = %info.id, "token revoked by its tenant");
    Ok(Json(info.into()))
}
