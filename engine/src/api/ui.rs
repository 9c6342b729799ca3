//! The browser UI (`web-ui/`, built by `engine/build.rs` with Vite) embedded in the binary
//! and served at `/`: `index.html` and the hashed files under `/assets/`. The UI routes with
//! the URL's fragment (`#/jobs/...`), so the server needs to know no page.

use axum::body::Body;
use axum::http::{HeaderValue, Method, Response, StatusCode, Uri, header};

/// The files of the built UI.
#[derive(rust_embed::Embed)]
#[folder = "$OUT_DIR/web-ui/"]
struct Files;

/// Only same-origin scripts, styles (and the inline styles the charts set), images and API
/// calls; no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// The UI file for a GET of `uri`, if it names one (`/` is `index.html`).
pub(super) fn file(method: &Method, uri: &Uri) -> Option<Response<Body>> {
    if method != Method::GET && method != Method::HEAD {
        return None;
    }
    let path = match uri.path() {
        "/" | "/index.html" => "index.html",
        other => other.strip_prefix('/')?,
    };
    // Only the top level and assets/: nothing else is part of the UI.
    if path.contains("..") || (path.contains('/') && !path.starts_with("assets/")) {
        return None;
    }
    let file = Files::get(path)?;
    let immutable = path.starts_with("assets/");
    let mut response = Response::new(Body::from(file.data.into_owned()));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(file.metadata.mimetype()) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if immutable { "public, max-age=31536000, immutable" } else { "no-cache" }),
    );
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    Some(response)
}

/// The names of the embedded files (for tests and the startup log).
pub fn files() -> Vec<String> {
    Files::iter().map(|f| f.to_string()).collect()
}
