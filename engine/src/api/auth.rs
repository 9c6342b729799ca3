//! Bearer-token authentication: [`Caller`] is the tenant of a request, [`Admin`] the admin.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

use crate::server::tenants::Tenant;
use crate::server::{Server, ServerError};

fn bearer(parts: &Parts) -> Result<&str, ServerError> {
    let value = parts.headers.get(header::AUTHORIZATION).ok_or_else(|| {
        ServerError::Unauthorized("this route needs a token: send `Authorization: Bearer <token>`".into())
    })?;
    let value = value
        .to_str()
        .map_err(|_| ServerError::Unauthorized("the Authorization header is not valid text".into()))?;
    let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")).ok_or_else(|| {
        ServerError::Unauthorized("the Authorization header must be `Bearer <token>`".into())
    })?;
    Ok(token.trim())
}

/// The tenant a request acts for: an enabled tenant holding the request's token.
#[derive(Debug, Clone)]
pub struct Caller(pub Tenant);

impl FromRequestParts<Arc<Server>> for Caller {
    type Rejection = ServerError;

    async fn from_request_parts(parts: &mut Parts, server: &Arc<Server>) -> Result<Self, Self::Rejection> {
        let token = bearer(parts)?;
        if server.is_admin(token) {
            return Err(ServerError::Forbidden(
                "the admin token manages tenants; use a tenant's token for its modules, jobs and streams"
                    .into(),
            ));
        }
        // Read from the store on every request (no cache): a revoked token is a 401 and a
        // disabled tenant a 403 from the next request on.
        match server.tenants.authenticate(token)? {
            Some(tenant) => tenant.check_enabled().map(|()| Caller(tenant)),
            None => {
                Err(ServerError::Unauthorized("the token is not valid (revoked, or never issued)".into()))
            }
        }
    }
}

/// A request made with the admin token.
#[derive(Debug, Clone, Copy)]
pub struct Admin;

impl FromRequestParts<Arc<Server>> for Admin {
    type Rejection = ServerError;

    async fn from_request_parts(parts: &mut Parts, server: &Arc<Server>) -> Result<Self, Self::Rejection> {
        let token = bearer(parts)?;
        if server.is_admin(token) {
            Ok(Admin)
        } else if server.tenants.authenticate(token)?.is_some() {
            Err(ServerError::Forbidden("this route needs the admin token".into()))
        } else {
            Err(ServerError::Unauthorized("the token is not valid".into()))
        }
    }
}
