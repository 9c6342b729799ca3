//! The OpenAPI document: the served one is `weir::api::openapi()`, it is well-formed
//! OpenAPI 3.1, the router serves every documented operation (and no other method on a
//! documented path), every operation but /healthz requires the bearer token, and the web
//! UI's copy (`web-ui/src/api/openapi.json`, which its TypeScript types are generated from)
//! is this document.

use crate::server;

use std::collections::BTreeSet;
use std::path::PathBuf;

use reqwest::Method;
use serde_json::{Value, json};
use server::TestServer;

fn document() -> Value {
    serde_json::to_value(weir::api::openapi()).expect("the document serialises")
}

/// The document as the web UI keeps it: keys sorted at every level (whatever order utoipa
/// and serde_json keep), two-space indentation, a final newline.
fn committed_form(doc: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(m) => {
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let mut text = serde_json::to_string_pretty(&sorted(doc)).expect("the document serialises");
    text.push('\n');
    text
}

/// `web-ui/src/api/openapi.json`.
fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../web-ui/src/api/openapi.json")
}

const METHODS: [&str; 8] = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

/// (method, path template, operation) of every documented operation.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("a path item") {
            if METHODS.contains(&method.as_str()) {
                out.push((method.clone(), path.clone(), op.clone()));
            }
        }
    }
    out
}

/// The path with each parameter replaced by a well-formed value.
fn sample_path(path: &str) -> String {
    path.split('/')
        .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some("tenant_id") => "0123456789abcdef".to_string(),
            Some("module_id") => "ab".repeat(32),
            Some("job_id") => "cd".repeat(16),
            Some("checkpoint_id") => "1".to_string(),
            Some(_) => "sample".to_string(),
            None => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every `$ref` in `value`.
fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_is_the_generated_one() {
    let server = TestServer::start(|_| {}).await;
    let response = reqwest::get(format!("{}/api/v1/openapi.json", server.url)).await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(content_type.starts_with("application/json"), "{content_type}");
    let served: Value = response.json().await.expect("the document is JSON");
    assert_eq!(served, document());
}

#[test]
fn the_document_is_well_formed_openapi_3_1() {
    let doc = document();
    let version = doc["openapi"].as_str().expect("an `openapi` version");
    assert!(version.starts_with("3.1."), "OpenAPI {version}");
    assert!(doc["info"]["title"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(doc["info"]["version"].as_str().is_some_and(|t| !t.is_empty()));
    let ops = operations(&doc);
    assert!(ops.len() >= 20, "{} operations", ops.len());
    let tags: BTreeSet<&str> =
        doc["tags"].as_array().expect("tags").iter().map(|t| t["name"].as_str().unwrap()).collect();

    let mut operation_ids = BTreeSet::new();
    for (method, path, op) in &ops {
        let what = format!("{method} {path}");
        assert!(path.starts_with('/'), "{what}");
        if let Some(id) = op["operationId"].as_str() {
            assert!(operation_ids.insert(id.to_string()), "{what}: operationId `{id}` is used twice");
        }
        for tag in op["tags"].as_array().into_iter().flatten() {
            assert!(tags.contains(tag.as_str().unwrap()), "{what}: undeclared tag {tag}");
        }
        let responses = op["responses"].as_object().unwrap_or_else(|| panic!("{what}: no responses"));
        assert!(!responses.is_empty(), "{what}: no responses");
        for (status, response) in responses {
            assert!(
                status == "default" || (status.len() == 3 && status.bytes().all(|b| b.is_ascii_digit())),
                "{what}: response key `{status}`"
            );
            assert!(response["description"].is_string(), "{what} {status}: no description");
        }
        // Path parameters: each one in the template is declared, required, and the other
        // way round.
        let in_template: BTreeSet<&str> =
            path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}')).collect();
        let declared: BTreeSet<&str> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "path")
            .map(|p| {
                assert_eq!(p["required"], true, "{what}: path parameter {p} is not required");
                assert!(p["schema"].is_object(), "{what}: path parameter {p} has no schema");
                p["name"].as_str().unwrap()
            })
            .collect();
        assert_eq!(in_template, declared, "{what}: path parameters");
        for p in op["parameters"].as_array().into_iter().flatten() {
            let place = p["in"].as_str().unwrap_or("");
            assert!(["path", "query", "header", "cookie"].contains(&place), "{what}: parameter {p}");
        }
        if let Some(body) = op.get("requestBody") {
            let content =
                body["content"].as_object().unwrap_or_else(|| panic!("{what}: body without content"));
            assert!(!content.is_empty(), "{what}: body without content");
        }
    }

    // Every reference resolves.
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("external reference {r}"));
        assert!(doc.pointer(pointer).is_some(), "unresolved reference {r}");
    }
}

#[test]
fn every_operation_but_healthz_requires_the_bearer_token() {
    let doc = document();
    let schemes = doc["components"]["securitySchemes"].as_object().expect("security schemes");
    assert_eq!(schemes["bearer"], json!({ "type": "http", "scheme": "bearer" }));
    let global = doc.get("security").cloned().unwrap_or(Value::Null);
    for (method, path, op) in operations(&doc) {
        let what = format!("{method} {path}");
        let security = op.get("security").unwrap_or(&global);
        let requirements = security.as_array().unwrap_or_else(|| panic!("{what}: no security requirement"));
        let open = requirements.is_empty()
            || requirements.iter().any(|r| r.as_object().is_some_and(|o| o.is_empty()));
        if (method.as_str(), path.as_str()) == ("get", "/healthz") {
            assert!(open, "{what} is public");
            continue;
        }
        assert!(!open, "{what} is documented without a security requirement: {security}");
        for requirement in requirements {
            for name in requirement.as_object().unwrap().keys() {
                assert!(schemes.contains_key(name), "{what}: unknown security scheme `{name}`");
            }
        }
    }
}

/// Whether the router answered "no such route" or "no such method".
fn unrouted(status: u16, body: &Value) -> bool {
    status == 405 || (status == 404 && body["error"].as_str().is_some_and(|e| e.starts_with("no route for")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_serves_every_documented_operation_and_no_other_method() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("openapi").await;
    let doc = document();
    let ops = operations(&doc);
    for (method, path, _) in &ops {
        let url = sample_path(path);
        let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let (status, body) = api.send(api.request(m, &url)).await;
        assert!(
            !unrouted(status, &body),
            "{method} {path} ({url}) is documented but not served: {status} {body}"
        );
    }
    // The control: an unknown path and an undocumented method are told apart.
    let (status, body) = api.get("/api/v1/no-such-thing").await;
    assert!(unrouted(status, &body), "{status} {body}");

    let paths: BTreeSet<&String> = ops.iter().map(|(_, p, _)| p).collect();
    for path in paths {
        let documented: BTreeSet<&str> =
            ops.iter().filter(|(_, p, _)| p == path).map(|(m, _, _)| m.as_str()).collect();
        for method in ["get", "put", "post", "delete", "patch"] {
            if documented.contains(method) {
                continue;
            }
            let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let (status, body) = api.send(api.request(m, &sample_path(path))).await;
            assert_eq!(status, 405, "{method} {path} is served but not documented: {body}");
            assert!(body["error"].is_string(), "{body}");
        }
    }
}

#[test]
fn the_document_serialises_the_same_every_time() {
    let first = committed_form(&document());
    for _ in 0..3 {
        assert!(first == committed_form(&document()), "two serialisations of the document differ");
    }
}

/// The web UI generates its API types from its copy of the document, so the copy must be
/// the document. `WEIR_BLESS=1` rewrites the copy (and the test then passes).
#[test]
fn the_web_ui_copy_is_the_document() {
    let current = committed_form(&document());
    let path = committed_path();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == current {
        return;
    }
    if std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &current).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        eprintln!("wrote {}; now run `npm run gen:api` in web-ui/", path.display());
        return;
    }
    let (old, new): (Vec<&str>, Vec<&str>) = (committed.lines().collect(), current.lines().collect());
    let last = old.len().max(new.len());
    let i = (0..last).find(|&i| old.get(i) != new.get(i)).unwrap_or(last);
    panic!(
        "web-ui/src/api/openapi.json is not the API's OpenAPI document (first difference at line \
         {}: committed {:?}, generated {:?}). Regenerate it with \
         `WEIR_BLESS=1 cargo nextest run --workspace -E 'test(/^api::openapi::/)'`, then the UI's types with \
         `cd web-ui && npm run gen:api`, and commit both.",
        i + 1,
        old.get(i).copied().unwrap_or("<end of file>"),
        new.get(i).copied().unwrap_or("<end of file>"),
    );
}
