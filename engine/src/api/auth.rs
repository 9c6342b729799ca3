//! Bearer-token authentication: [`Caller`] is the tenant of a request, [`Admin`] the admin.
//! [`limit_requests`] holds each tenant to `max_requests_per_tenant` requests at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use futures::StreamExt as _;
use tokio::sync::Semaphore;

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

/// The tenant a request acts for: an enabled tenant holding the request's token. Invariant
/// T1: every lookup a handler makes is keyed by this tenant, so another tenant's ids answer 404.
#[derive(Debug, Clone)]
pub struct Caller(pub Tenant);

impl FromRequestParts<Arc<Server>> for Caller {
    type Rejection = ServerError;

    async fn from_request_parts(parts: &mut Parts, server: &Arc<Server>) -> Result<Self, Self::Rejection> {
        let known = parts.extensions.remove::<Authenticated>().map(|a| a.0);
        let token = bearer(parts)?;
        if server.is_admin(token) {
            return Err(ServerError::Forbidden(
                "the admin token manages tenants; use a tenant's token for its modules, jobs and streams"
                    .into(),
            ));
        }
        // Read from the store on every request (no cache): a revoked token is a 401 and a
        // disabled tenant a 403 from the next request on. `limit_requests` has read it for
        // this request already when the token was valid.
        let tenant = match known {
            Some(tenant) => Some(tenant),
            None => server.tenants.authenticate(token)?,
        };
        match tenant {
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

/// The tenant `limit_requests` authenticated, handed to [`Caller`] so that a request reads
/// its token from the store once.
#[derive(Debug, Clone)]
struct Authenticated(Tenant);

/// Requests in progress per tenant: a semaphore of `max_requests_per_tenant` permits each,
/// and one of the KiB of request bodies in progress (`max_request_body_bytes_per_tenant`).
#[derive(Debug, Default)]
pub struct TenantRequests {
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
    body_kib: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl TenantRequests {
    fn semaphore(&self, tenant: &str, max: u32) -> Arc<Semaphore> {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.entry(tenant.to_string()).or_insert_with(|| Arc::new(Semaphore::new(max as usize))).clone()
    }

    fn body_semaphore(&self, tenant: &str, kib: u32) -> Arc<Semaphore> {
        let mut slots = self.body_kib.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.entry(tenant.to_string()).or_insert_with(|| Arc::new(Semaphore::new(kib as usize))).clone()
    }
}

/// The KiB of body a request claims: its `Content-Length` (at most `max_request_bytes`, which
/// the body limit enforces), or `max_request_bytes` for a body of unknown length.
fn claimed_body_kib(parts: &axum::http::request::Parts, max_request_bytes: usize) -> u32 {
    let length = match parts.headers.get(header::CONTENT_LENGTH) {
        Some(v) => v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(u64::MAX),
        None if parts.headers.contains_key(header::TRANSFER_ENCODING) => u64::MAX,
        None => 0,
    };
    let bytes = length.min(max_request_bytes as u64);
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// Middleware: a request made with a tenant's token holds one of the tenant's
/// `max_requests_per_tenant` permits until its response is produced, or, for a streamed
/// body, until the body ends or the client goes; without a free one it
/// answers 429 at once, with `Retry-After`. Requests without a tenant's token (the admin,
/// the anonymous routes, bad tokens) pass through: their routes check the token.
pub async fn limit_requests(
    State((server, requests)): State<(Arc<Server>, Arc<TenantRequests>)>,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let tenant = match bearer(&parts) {
        Ok(token) if !server.is_admin(token) => server.tenants.authenticate(token).ok().flatten(),
        _ => None,
    };
    if let Some(tenant) = &tenant {
        parts.extensions.insert(Authenticated(tenant.clone()));
    }
    let claimed = claimed_body_kib(&parts, server.config.max_request_bytes);
    let request = Request::from_parts(parts, body);
    let Some(tenant) = tenant else { return next.run(request).await };
    let max = server.config.max_requests_per_tenant.max(1);
    let Ok(permit) = requests.semaphore(&tenant.id, max).try_acquire_owned() else {
        let mut response = ServerError::Quota {
            limit: "max_requests_per_tenant",
            message: format!(
                "the tenant has {max} requests in progress, the server's limit; retry when one has finished"
            ),
        }
        .into_response();
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    };
    // Bodies in progress, in KiB: a single largest body always fits.
    let budget = server.config.max_request_body_bytes_per_tenant.max(server.config.max_request_bytes);
    let budget_kib = u32::try_from(budget.div_ceil(1024)).unwrap_or(u32::MAX);
    let body_permit = if claimed == 0 {
        None
    } else {
        match requests.body_semaphore(&tenant.id, budget_kib).try_acquire_many_owned(claimed.min(budget_kib))
        {
            Ok(permit) => Some(permit),
            Err(_) => {
                let mut response = ServerError::Quota {
                    limit: "max_request_body_bytes_per_tenant",
                    message: format!(
                        "the tenant's request bodies in progress would pass {budget} bytes, the server's \
                         limit; retry when one has finished"
                    ),
                }
                .into_response();
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return response;
            }
        }
    };
    let response = next.run(request).await;
    drop(body_permit);
    if http_body::Body::size_hint(response.body()).exact().is_some() {
        return response;
    }
    // A streamed body (a savepoint export) holds the permit until it ends or the client goes.
    response.map(|body| {
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _held = &permit;
            chunk
        }))
    })
}
