//! Bad input over HTTP: malformed and oversized uploads, files that are not operator
//! components, bad JSON, bad job specs, unknown ids, path tricks (the shapes of Flink's
//! CVE-2020-17518 upload and CVE-2020-17519 traversal) and quota errors. Each answers a
//! precise 4xx with a JSON `{"error": ...}` that says what is wrong, never a 5xx, and
//! nothing is written. Bodies and uploads in `bodies`, job specs in `specs`, ids and paths
//! in `ids`, quotas in `quotas`; this module holds the checks they share.

use crate::server;

mod bodies;
mod ids;
mod quotas;
mod specs;

use serde_json::{Value, json};
use server::{ADMIN, Api, TestServer};

/// The server's request limit in these tests.
const MAX_REQUEST: usize = 2 << 20;

/// Asserts a precise error: `status`, and a JSON `error` that contains every one of
/// `words` (case-insensitive).
#[track_caller]
fn expect(what: &str, (status, body): (u16, Value), want: u16, words: &[&str]) {
    assert_eq!(status, want, "{what}: {body}");
    let error = body["error"].as_str().unwrap_or_else(|| panic!("{what}: no JSON `error`: {body}"));
    let lower = error.to_lowercase();
    for w in words {
        assert!(lower.contains(&w.to_lowercase()), "{what}: the error does not say `{w}`: {error}");
    }
}

/// Asserts a 4xx with a JSON error (for inputs whose exact answer may be 400 or 404).
#[track_caller]
fn expect_4xx(what: &str, (status, body): &(u16, Value)) {
    assert!((400..500).contains(status), "{what}: {status} {body}");
    assert!(
        body["error"].as_str().is_some_and(|e| !e.trim().is_empty()),
        "{what}: {status} without a JSON `error`: {body}"
    );
}

/// What the API and the data directory show of a server, to check that nothing was written.
async fn state(server: &TestServer, api: &Api) -> Value {
    let admin = server.client(ADMIN);
    let mut streams = Vec::new();
    let (_, list) = api.get("/api/v1/streams").await;
    for s in list["data"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        streams.push(json!([s, format!("{:?}", api.read_all(name).await)]));
    }
    // The compiled forms of the builtin modules are cached by the first spec that names
    // one, accepted or not: a bounded cache that no tenant's bytes go into.
    let builtins: Vec<String> = weir::builtin::names()
        .map(|n| {
            format!(
                "module-cache/{}-",
                hex::encode(<sha2::Sha256 as sha2::Digest>::digest(weir::builtin::get(n).unwrap()))
            )
        })
        .collect();
    let files: Vec<String> = server::files(&server.data_dir)
        .into_iter()
        .filter(|(p, _)| !builtins.iter().any(|b| p.to_string_lossy().starts_with(b.as_str())))
        // redb's file may be rewritten in place; its contents are read through the API.
        .map(|(p, size)| {
            if p.ends_with("weir.redb") { p.display().to_string() } else { format!("{} {size}", p.display()) }
        })
        .collect();
    json!({
        "tenants": admin.get("/api/v1/tenants").await.1,
        "tenant": api.get("/api/v1/tenant").await.1,
        "modules": api.get("/api/v1/modules").await.1,
        "jobs": api.get("/api/v1/jobs").await.1,
        "streams": streams,
        "files": files,
    })
}

/// A server with a 2 MiB request limit and a tenant (module limit above the request limit)
/// with a stream of 3 records.
async fn setup() -> (TestServer, Api) {
    let server = TestServer::start(|c| c.max_request_bytes = MAX_REQUEST).await;
    let (_, api) = server.tenant_with("acme", Some(json!({ "max_module_bytes": 64 << 20 }))).await;
    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "events", "partitions": 2 })).await;
    assert_eq!(status, 201, "{v}");
    let records = json!({ "records": [ { "value": "one" }, { "key": "k", "value": "two" }, { "key": [3], "value": "three" } ] });
    let (status, v) = api.post("/api/v1/streams/events/records", &records).await;
    assert_eq!(status, 201, "{v}");
    (server, api)
}
