//! The HTTP API (`/api/v1`), served by axum over a [`Server`] ([`serve`]). Flink's nouns,
//! collections as `{ "data": [...] }`, every error as `{ "error": "..." }` with its status
//! ([`error`]), snake_case fields. The bodies are the types of [`model`]; the OpenAPI
//! document (`/api/v1/openapi.json`) is generated from them and from the same route list
//! that serves the requests. Handlers parse the request, call the service
//! ([`crate::server`]) and convert what it returns; the service never sees HTTP.

// utoipa's expansion of `#[utoipa::path]` over `Query<T>` arguments trips this lint.
#![allow(unused_qualifications)]

mod auth;
mod checkpoints;
pub mod error;
mod jobs;
mod kafka;
mod logs;
pub mod model;
mod modules;
mod own_tokens;
mod savepoints;
mod serve;
mod streams;
mod tenants;
pub mod ui;
mod upgrades;
mod workers;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use auth::{Admin, Caller};
pub use serve::serve;

use model::{ErrorBody, Health};

use crate::server::ids::printable;
use crate::server::{Server, ServerError};

/// Parses a JSON request body with an error that names the problem. Every body of the API
/// is a JSON object: other JSON is refused (serde would otherwise take an array for a
/// struct, `[]` for default quotas).
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ServerError> {
    let invalid = |e: serde_json::Error| ServerError::BadRequest(format!("invalid JSON body: {e}"));
    let Some(first) = body.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Err(ServerError::BadRequest("the request needs a JSON body".into()));
    };
    if *first != b'{' {
        serde_json::from_slice::<serde::de::IgnoredAny>(body).map_err(invalid)?;
        let kind = match first {
            b'[' => "an array",
            b'"' => "a string",
            b't' | b'f' => "a boolean",
            b'n' => "null",
            _ => "a number",
        };
        return Err(ServerError::BadRequest(format!("the request body must be a JSON object, not {kind}")));
    }
    serde_json::from_slice(body).map_err(invalid)
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Weir API",
        description = "Tenants, operator modules, jobs, checkpoints and streams of a Weir server. \
                       Every route but /healthz, /metrics and this document needs `Authorization: Bearer <token>`. \
                       A tenant's requests beyond the server's max_requests_per_tenant in progress, or whose bodies \
                       would pass its max_request_body_bytes_per_tenant in progress, answer 429 with `Retry-After`.",
        version = "0.1.0"
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags(
        (name = "tenants", description = "Tenants and their tokens (admin token)"),
        (name = "modules", description = "Operator modules (Wasm components)"),
        (name = "jobs", description = "Jobs"),
        (name = "checkpoints", description = "Checkpoints of a job"),
        (name = "savepoints", description = "Savepoints: the user's own, portable snapshots of a job's state"),
        (name = "streams", description = "The built-in partitioned log"),
        (name = "kafka", description = "The server's Kafka connections a tenant may use"),
        (name = "workers", description = "Workers registered with this server (admin token)"),
        (name = "service", description = "Health, metrics and this document")
    )
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The routes and their OpenAPI document.
pub fn routes() -> OpenApiRouter<Arc<Server>> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(health))
        .routes(routes!(tenants::create_tenant, tenants::list_tenants))
        .routes(routes!(tenants::get_tenant))
        .routes(routes!(tenants::set_quotas))
        .routes(routes!(kafka::set_kafka_grants))
        .routes(routes!(kafka::list_kafka_connections))
        .routes(routes!(kafka::list_server_kafka_connections))
        .routes(routes!(tenants::issue_token, tenants::list_tokens))
        .routes(routes!(tenants::revoke_token))
        .routes(routes!(tenants::rotate_tokens))
        .routes(routes!(tenants::disable_tenant))
        .routes(routes!(tenants::enable_tenant))
        .routes(routes!(tenants::whoami))
        .routes(routes!(own_tokens::set_settings))
        .routes(routes!(own_tokens::list_own_tokens, own_tokens::issue_own_token))
        .routes(routes!(own_tokens::revoke_own_token))
        .routes(routes!(modules::upload_module, modules::list_modules))
        .routes(routes!(modules::get_module, modules::delete_module))
        .routes(routes!(jobs::create_job, jobs::list_jobs))
        .routes(routes!(jobs::get_job))
        .routes(routes!(jobs::list_job_exceptions))
        .routes(routes!(logs::get_job_logs))
        .routes(routes!(tenant_metrics))
        .routes(routes!(jobs::stop_job))
        .routes(routes!(jobs::cancel_job))
        .routes(routes!(jobs::restart_job))
        .routes(routes!(upgrades::upgrade_job))
        .routes(routes!(upgrades::list_job_versions))
        .routes(routes!(checkpoints::list_checkpoints, checkpoints::trigger_checkpoint))
        .routes(routes!(checkpoints::get_checkpoint))
        .routes(routes!(checkpoints::checkpoint_state))
        .routes(routes!(savepoints::trigger_savepoint, savepoints::list_job_savepoints))
        .routes(routes!(savepoints::list_savepoints, savepoints::import_savepoint))
        .routes(routes!(savepoints::get_savepoint, savepoints::delete_savepoint))
        .routes(routes!(savepoints::export_savepoint))
        .routes(routes!(savepoints::savepoint_state))
        .routes(routes!(streams::create_stream, streams::list_streams))
        .routes(routes!(streams::get_stream))
        .routes(routes!(streams::append_records, streams::read_records))
        .routes(routes!(workers::list_workers))
}

/// The OpenAPI document of the API.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().split_for_parts().1
}

/// The whole application: the API, `/metrics`, the OpenAPI document; every error as JSON.
pub fn router(server: Arc<Server>) -> Router {
    let (api, document) = routes().split_for_parts();
    let document = Arc::new(document);
    let limit = server.config.max_request_bytes;
    let app = api
        .route("/metrics", get(metrics))
        .route("/api/v1/openapi.json", get(move || async move { axum::Json(document.as_ref().clone()) }))
        .fallback(not_found);
    let requests = (server.clone(), Arc::new(auth::TenantRequests::default()));
    with_layers(app, limit)
        .layer(axum::middleware::from_fn_with_state(requests, auth::limit_requests))
        .with_state(server)
}

/// The layers every route runs under, innermost first: a handler that panics answers 500
/// with `{ "error": ... }` (the connection is not dropped, the server goes on), bodies are
/// capped at `limit` bytes, every error is JSON, requests are traced.
fn with_layers<S: Clone + Send + Sync + 'static>(router: Router<S>, limit: usize) -> Router<S> {
    router
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::map_response(json_errors))
        .layer(tower_http::trace::TraceLayer::new_for_http())
}

/// The answer to a request whose handler panicked (a bug in Weir): logged, and a 500 with
/// the API's error shape.
fn panicked(payload: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = %message, "a request handler panicked");
    ServerError::Internal("the request handler failed; the server goes on".into()).into_response()
}

/// Health: the store's state and the data directory's free space. 503 while the store
/// cannot serve (it is being reopened after an I/O error).
#[utoipa::path(get, path = "/healthz", tag = "service", security(()),
    responses(
        (status = 200, description = "The server serves", body = Health),
        (status = 503, description = "The store cannot serve: it is being reopened", body = Health)))]
async fn health(State(server): State<Arc<Server>>) -> Response {
    let health = Health::from(server.health());
    let status = if health.status == "ok" {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(health)).into_response()
}

/// Prometheus metrics; they name every tenant's jobs, so they need the admin token (a
/// scraper sends it as `authorization: { credentials: ... }`).
/// Each scrape reads the process and every tenant's usage afresh.
async fn metrics(_: Admin, State(server): State<Arc<Server>>) -> Result<impl IntoResponse, ServerError> {
    let text = tokio::task::spawn_blocking(move || {
        let mut tenants = Vec::new();
        for t in server.tenants.list()? {
            let usage = server.usage(&t.id)?;
            tenants.push((t, usage));
        }
        Ok::<_, ServerError>(server.telemetry.scrape(&tenants, &server.workers_with_loads()))
    })
    .await??;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text))
}

/// The caller's own metrics, in Prometheus' text format: every series with its tenant's
/// `tenant` label (its jobs' records, checkpoints, restarts, dead letters, its usage against
/// its quotas) and nothing of any other tenant, the process or the workers.
#[utoipa::path(get, path = "/api/v1/metrics", tag = "tenants",
    responses(
        (status = 200, description = "Prometheus text exposition (`text/plain; version=0.0.4`)", body = String),
        (status = 401, description = "No or bad token", body = ErrorBody)))]
async fn tenant_metrics(
    Caller(tenant): Caller,
    State(server): State<Arc<Server>>,
) -> Result<Response, ServerError> {
    let text = tokio::task::spawn_blocking(move || {
        let usage = server.usage(&tenant.id)?;
        Ok::<_, ServerError>(server.telemetry.scrape_tenant(&tenant, &usage))
    })
    .await??;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

/// The UI's files (`/`, `/assets/...`); anything else no route serves is a JSON 404.
async fn not_found(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    match ui::file(&method, &uri) {
        Some(file) => file,
        None => ServerError::NotFound(format!("no route for {}", printable(uri.path()))).into_response(),
    }
}

/// Turns every error response that is not JSON already (a rejected path, query or body, a
/// wrong method, a body over the limit) into `{ "error": ... }`.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 << 10).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_string();
    let error =
        if text.is_empty() { status.canonical_reason().unwrap_or("error").to_lowercase() } else { text };
    let body = serde_json::to_vec(&ErrorBody { error }).unwrap_or_default();
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod layer_tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt as _;

    use super::*;

    async fn boom() -> &'static str {
        let fail = std::hint::black_box(true);
        assert!(!fail, "boom");
        "unreachable"
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_in_the_error_shape() {
        let app: Router =
            with_layers(Router::new().route("/boom", get(boom)).route("/ok", get(|| async { "fine" })), 1024);
        let response = app.clone().oneshot(Request::get("/boom").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        let error: crate::api::model::ErrorBody = serde_json::from_slice(&body).unwrap();
        assert!(error.error.contains("the request handler failed"), "{}", error.error);
        // The router goes on serving.
        let response = app.oneshot(Request::get("/ok").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
}
