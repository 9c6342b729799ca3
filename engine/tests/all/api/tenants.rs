//! Tenant isolation and authentication, over every operation of the OpenAPI document.
//!
//! The operations come from `weir::api::openapi()`, the same list the router serves, so a
//! route added later is covered without touching this file: its path parameters are filled
//! with tenant A's real ids (a parameter the test does not know fails it), every request
//! without a valid token must answer 401, admin routes refuse tenant tokens and tenant routes
//! the admin token (403), and tenant B must find nothing of A's (404 for A's ids, none of A's
//! items in its lists) and change nothing of A's.

use crate::common;
use crate::server;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::{Value, json};
use server::{ADMIN, Api, TestServer, wait_for};

const LONG: Duration = Duration::from_secs(120);

/// One documented operation.
#[derive(Debug, Clone)]
struct Operation {
    method: Method,
    /// The path template, `/api/v1/jobs/{job_id}`.
    path: String,
    /// Documented without a security requirement.
    public: bool,
    /// Documented with a request body.
    has_body: bool,
}

impl Operation {
    fn key(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The admin's routes: tenants and their tokens, workers, the server's Kafka connections.
    fn is_admin(&self) -> bool {
        ["/api/v1/tenants", "/api/v1/workers", "/api/v1/kafka/server-connections"]
            .contains(&self.path.as_str())
            || self.path.starts_with("/api/v1/tenants/")
    }

    fn params(&self) -> Vec<&str> {
        self.path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}')).collect()
    }
}

/// Every operation of the document, in path order.
fn operations() -> Vec<Operation> {
    let doc = serde_json::to_value(weir::api::openapi()).expect("document serialises");
    let global = doc.get("security").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("the document has paths") {
        for (method, op) in item.as_object().expect("a path item is an object") {
            let method = match method.as_str() {
                "get" => Method::GET,
                "put" => Method::PUT,
                "post" => Method::POST,
                "delete" => Method::DELETE,
                "patch" => Method::PATCH,
                "head" => Method::HEAD,
                "options" => Method::OPTIONS,
                "trace" => Method::TRACE,
                _ => continue,
            };
            // An empty requirement object means "no authentication".
            let security = op.get("security").unwrap_or(&global);
            let public = security
                .as_array()
                .is_none_or(|s| s.iter().any(|r| r.as_object().is_some_and(|o| o.is_empty())));
            out.push(Operation {
                method,
                path: path.clone(),
                public,
                has_body: op.get("requestBody").is_some(),
            });
        }
    }
    out
}

/// Fills the path parameters of `template` from `ids`; a parameter without a value fails
/// the test (a new kind of resource needs a value here).
fn fill(template: &str, ids: &BTreeMap<&str, String>) -> String {
    template
        .split('/')
        .map(|segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => ids.get(name).cloned().unwrap_or_else(|| {
                panic!(
                    "{template}: the tenant matrix does not know how to fill the path parameter `{name}`; \
                     give it one of tenant A's real ids in `ids`"
                )
            }),
            None => segment.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A request body.
#[derive(Debug, Clone)]
enum Body {
    Json(Value),
    /// A raw module upload (`?name=`).
    Wasm {
        name: String,
        bytes: Vec<u8>,
    },
    /// A raw file (`application/octet-stream`): a savepoint import.
    Octets(Vec<u8>),
}

/// Tenant A with a module, a running job with a completed checkpoint and a stream with
/// records, and tenant B with nothing.
struct World {
    server: TestServer,
    a_id: String,
    a: Api,
    b_id: String,
    b: Api,
    module: String,
    module_name: String,
    module_bytes: Vec<u8>,
    job: String,
    checkpoint: u64,
    stream: String,
    savepoint: String,
    savepoint_file: Vec<u8>,
    /// The id of A's token.
    token_id: String,
}

impl World {
    async fn new() -> World {
        let server = TestServer::start(|_| {}).await;
        let (a_id, a) = server.tenant("tenant-a").await;
        let (b_id, b) = server.tenant("tenant-b").await;
        let (status, tokens) = server.client(ADMIN).get(&format!("/api/v1/tenants/{a_id}/tokens")).await;
        assert_eq!(status, 200, "{tokens}");
        let token_id = tokens["data"][0]["id"].as_str().unwrap().to_string();
        let module_name = "a-tokenizer".to_string();
        let module_bytes = std::fs::read(common::guest_path("tokenizer")).expect("guest built");
        let (status, m) = a.upload(&module_name, module_bytes.clone()).await;
        assert_eq!(status, 201, "{m}");
        let module = m["id"].as_str().unwrap().to_string();
        let stream = "a-lines".to_string();
        let (status, v) = a.post("/api/v1/streams", &json!({ "name": stream, "partitions": 2 })).await;
        assert_eq!(status, 201, "{v}");
        let records: Vec<Value> =
            (0..10).map(|i| json!({ "key": i, "value": format!("secret line {i}") })).collect();
        let (status, v) =
            a.post(&format!("/api/v1/streams/{stream}/records"), &json!({ "records": records })).await;
        assert_eq!(status, 201, "{v}");
        // Runs until cancelled; checkpoints only on demand, so A's history stays as it is.
        let job = a
            .create_job(&json!({
                "name": "a-job",
                "nodes": [
                    { "id": "in", "kind": "source", "connector": "stream", "config": { "stream": stream, "follow": true } },
                    { "id": "split", "kind": "operator", "module": module },
                    { "id": "out", "kind": "sink", "connector": "blackhole" }
                ],
                "edges": [ { "from": "in", "to": "split" }, { "from": "split", "to": "out" } ],
                "settings": { "checkpoint": { "interval_ms": null } }
            }))
            .await;
        a.wait_job(&job, LONG, |j| j["vertices"][1]["records_in"].as_u64() == Some(10)).await;
        let (status, t) = a.post_empty(&format!("/api/v1/jobs/{job}/checkpoints")).await;
        assert_eq!(status, 202, "{t}");
        let checkpoint = t["id"].as_u64().unwrap();
        let path = format!("/api/v1/jobs/{job}/checkpoints/{checkpoint}");
        wait_for("A's checkpoint completes", LONG, || async {
            let (status, cp) = a.get(&path).await;
            status == 200 && cp["status"] == "completed"
        })
        .await;
        // A savepoint of the running job (it keeps running), and its export file.
        let (status, sp) = a.post(&format!("/api/v1/jobs/{job}/savepoints"), &json!({})).await;
        assert_eq!(status, 202, "{sp}");
        let savepoint = sp["id"].as_str().unwrap().to_string();
        let path = format!("/api/v1/savepoints/{savepoint}");
        wait_for("A's savepoint completes", LONG, || async {
            let (status, s) = a.get(&path).await;
            status == 200 && s["status"] == "completed"
        })
        .await;
        let response = a.request(Method::GET, &format!("{path}/file")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let savepoint_file = response.bytes().await.unwrap().to_vec();
        World {
            server,
            a_id,
            a,
            b_id,
            b,
            module,
            module_name,
            module_bytes,
            job,
            checkpoint,
            stream,
            savepoint,
            savepoint_file,
            token_id,
        }
    }

    /// Tenant A's ids for every path parameter.
    fn ids(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("tenant_id", self.a_id.clone()),
            ("module_id", self.module.clone()),
            ("job_id", self.job.clone()),
            ("checkpoint_id", self.checkpoint.to_string()),
            ("name", self.stream.clone()),
            ("savepoint_id", self.savepoint.clone()),
            ("operator", "split".to_string()),
            ("token_id", self.token_id.clone()),
        ])
    }

    /// Ids of the same shapes that name nothing.
    fn missing_ids(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("tenant_id", "0123456789abcdef".to_string()),
            ("module_id", "ab".repeat(32)),
            ("job_id", "cd".repeat(16)),
            ("checkpoint_id", "987654".to_string()),
            ("name", "no-such-stream".to_string()),
            ("savepoint_id", "ef".repeat(16)),
            ("operator", "no-such-operator".to_string()),
            ("token_id", "fedcba9876543210".to_string()),
        ])
    }

    /// A request body that would be valid for `op` if the caller were allowed.
    fn body(&self, op: &Operation) -> Option<Body> {
        if !op.has_body {
            return None;
        }
        Some(match (op.method.as_str(), op.path.as_str()) {
            ("POST", "/api/v1/tenants") => Body::Json(json!({ "name": "intruder" })),
            ("PUT", "/api/v1/tenants/{tenant_id}/quotas") => {
                Body::Json(json!({ "max_jobs": 1000, "max_subtasks": 1000 }))
            }
            ("PUT", "/api/v1/tenants/{tenant_id}/kafka") => Body::Json(json!({ "grants": [] })),
            ("POST", "/api/v1/tenants/{tenant_id}/tokens") => Body::Json(json!({ "label": "intruder" })),
            ("POST", "/api/v1/tenants/{tenant_id}/tokens/rotate") => Body::Json(json!({})),
            ("PUT", "/api/v1/tenants/{tenant_id}/settings") => {
                Body::Json(json!({ "manage_own_tokens": true }))
            }
            ("POST", "/api/v1/tenant/tokens") => Body::Json(json!({ "label": "mine" })),
            ("POST", "/api/v1/modules") => {
                Body::Wasm { name: "intruder".into(), bytes: self.module_bytes.clone() }
            }
            ("POST", "/api/v1/jobs") => Body::Json(json!({
                "name": "intruder",
                "nodes": [
                    { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 10 } },
                    { "id": "out", "kind": "sink", "connector": "blackhole" }
                ],
                "edges": [ { "from": "in", "to": "out" } ]
            })),
            ("POST", "/api/v1/streams") => Body::Json(json!({ "name": "intruder", "partitions": 1 })),
            ("POST", "/api/v1/streams/{name}/records") => {
                Body::Json(json!({ "records": [ { "value": "intrusion" } ] }))
            }
            ("POST", "/api/v1/jobs/{job_id}/savepoints") => Body::Json(json!({ "mode": "cancel" })),
            ("POST", "/api/v1/jobs/{job_id}/upgrade") => {
                Body::Json(json!({ "parallelism": { "out": 1 }, "grace_period_ms": 0 }))
            }
            ("POST", "/api/v1/savepoints") => Body::Octets(self.savepoint_file.clone()),
            _ => panic!(
                "{}: the tenant matrix has no request body for this operation; add a valid one in `World::body`",
                op.key()
            ),
        })
    }

    /// Everything of tenant A's that the API shows, but for live figures.
    async fn snapshot_a(&self) -> Value {
        let admin = self.server.client(ADMIN);
        let get = |api: &Api, path: String| {
            let api = api.clone();
            async move {
                let (status, v) = api.get(&path).await;
                assert_eq!(status, 200, "GET {path}: {v}");
                v
            }
        };
        let job = get(&self.a, format!("/api/v1/jobs/{}", self.job)).await;
        let checkpoint =
            get(&self.a, format!("/api/v1/jobs/{}/checkpoints/{}", self.job, self.checkpoint)).await;
        // The job list without its live figures (rates and backpressure move while the job
        // runs: a CI run once saw the sink's rate go from 0 to 30 records/s in between).
        let mut jobs = get(&self.a, "/api/v1/jobs".into()).await;
        for item in jobs["data"].as_array_mut().into_iter().flatten() {
            if let Some(item) = item.as_object_mut() {
                for live in ["backpressure", "source_records_per_second", "sink_records_per_second"] {
                    item.remove(live);
                }
            }
        }
        json!({
            "tenant": get(&admin, format!("/api/v1/tenants/{}", self.a_id)).await,
            "whoami": get(&self.a, "/api/v1/tenant".into()).await["quotas"],
            "module": get(&self.a, format!("/api/v1/modules/{}", self.module)).await,
            "modules": get(&self.a, "/api/v1/modules".into()).await,
            "job": [&job["id"], &job["name"], &job["status"], &job["error"], &job["restarts"], &job["created_ms"],
                    &job["start_ms"], &job["end_ms"], &job["subtasks"], &job["spec"]],
            "jobs": jobs,
            "checkpoint": [&checkpoint["status"], &checkpoint["trigger_time_ms"], &checkpoint["state_size"]],
            "stream": get(&self.a, format!("/api/v1/streams/{}", self.stream)).await,
            "streams": get(&self.a, "/api/v1/streams".into()).await,
            "records": format!("{:?}", self.a.read_all(&self.stream).await),
            "savepoints": get(&self.a, "/api/v1/savepoints".into()).await,
            "module_file": self.server.data_dir.join("modules").join(format!("{}.wasm", self.module)).exists(),
        })
    }
}

fn request(api: &Api, method: &Method, path: &str, body: &Option<Body>) -> reqwest::RequestBuilder {
    match body {
        None => api.request(method.clone(), path),
        Some(Body::Json(v)) => api.request(method.clone(), path).json(v),
        Some(Body::Wasm { name, bytes }) => api
            .request(method.clone(), &format!("{path}?name={name}"))
            .header(CONTENT_TYPE, "application/wasm")
            .body(bytes.clone()),
        Some(Body::Octets(bytes)) => api
            .request(method.clone(), path)
            .header(CONTENT_TYPE, "application/octet-stream")
            .body(bytes.clone()),
    }
}

/// Asserts a JSON error body.
fn assert_error(what: &str, status: u16, v: &Value) {
    assert!(
        v["error"].as_str().is_some_and(|e| !e.trim().is_empty()),
        "{what}: status {status} without a JSON `error`: {v}"
    );
}

/// Authorization headers that must not get anyone in (None: no header).
fn bad_authorizations(a_token: &str) -> Vec<(&'static str, Option<Vec<u8>>)> {
    vec![
        ("no Authorization header", None),
        ("an empty Authorization header", Some(b"".to_vec())),
        ("Basic credentials", Some(b"Basic dGVuYW50LWE6c2VjcmV0".to_vec())),
        ("`Bearer` without a token", Some(b"Bearer".to_vec())),
        ("`Bearer` and spaces", Some(b"Bearer    ".to_vec())),
        ("a valid token without the Bearer scheme", Some(a_token.as_bytes().to_vec())),
        ("another scheme with a valid token", Some(format!("Token {a_token}").into_bytes())),
        ("bytes that are not text", Some(b"Bearer \xff\xfe\x80".to_vec())),
        ("an unknown token", Some(format!("Bearer weir_{}", "0".repeat(64)).into_bytes())),
        ("a valid token with a suffix", Some(format!("Bearer {a_token}x").into_bytes())),
        ("a prefix of a valid token", Some(format!("Bearer {}", &a_token[..a_token.len() - 1]).into_bytes())),
        ("the admin token in upper case", Some(format!("Bearer {}", ADMIN.to_uppercase()).into_bytes())),
    ]
}

/// Replaces ids by their parameter names, so that messages about different ids compare.
fn generic(message: &str, ids: &BTreeMap<&str, String>) -> String {
    let mut values: Vec<(&str, &String)> =
        ids.iter().map(|(k, v)| (*k, v)).filter(|(_, v)| v.len() >= 4).collect();
    values.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let mut out = message.to_string();
    for (k, v) in values {
        out = out.replace(v.as_str(), &format!("{{{k}}}"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tenant_reaches_another_and_no_route_is_open() {
    let w = World::new().await;
    let ops = operations();
    let public: Vec<String> = ops.iter().filter(|o| o.public).map(Operation::key).collect();
    assert_eq!(public, ["GET /healthz"], "only /healthz may be documented without a security requirement");
    let ids = w.ids();
    let missing = w.missing_ids();
    let a_token = w.a.token().unwrap().to_string();
    let admin = w.server.client(ADMIN);
    let before = w.snapshot_a().await;
    let mut creations = Vec::new();

    for op in &ops {
        let key = op.key();
        let path = fill(&op.path, &ids);
        let body = w.body(op);
        if op.public {
            let (status, v) =
                w.server.anonymous().send(request(&w.server.anonymous(), &op.method, &path, &body)).await;
            assert_eq!(status, 200, "{key} without a token: {v}");
            continue;
        }

        // Authentication: nothing but a valid token gets in, and no request tells whether
        // the resource exists.
        for (what, header) in bad_authorizations(&a_token) {
            let anonymous = w.server.anonymous();
            let mut r = request(&anonymous, &op.method, &path, &body);
            if let Some(h) = header {
                r = r.header(AUTHORIZATION, HeaderValue::from_bytes(&h).expect("a header value"));
            }
            let (status, v) = anonymous.send(r).await;
            assert_eq!(status, 401, "{key} ({path}) with {what}: {v}");
            assert_error(&format!("{key} with {what}"), status, &v);
        }

        if op.is_admin() {
            for (who, api) in [("tenant A", &w.a), ("tenant B", &w.b)] {
                let (status, v) = api.send(request(api, &op.method, &path, &body)).await;
                assert_eq!(status, 403, "admin route {key} ({path}) with {who}'s token: {v}");
                assert_error(&key, status, &v);
            }
            continue;
        }

        let (status, v) = admin.send(request(&admin, &op.method, &path, &body)).await;
        assert_eq!(status, 403, "tenant route {key} ({path}) with the admin token: {v}");
        assert_error(&key, status, &v);

        if !op.params().is_empty() {
            // B names A's resources: they do not exist for B, exactly like ids that name nothing.
            let (status, v) = w.b.send(request(&w.b, &op.method, &path, &body)).await;
            assert_eq!(status, 404, "{key} ({path}) by tenant B: {v}");
            assert_error(&key, status, &v);
            let other = fill(&op.path, &missing);
            let (other_status, other_v) = w.b.send(request(&w.b, &op.method, &other, &body)).await;
            assert_eq!(other_status, 404, "{key} ({other}) by tenant B: {other_v}");
            assert_eq!(
                generic(v["error"].as_str().unwrap(), &ids),
                generic(other_v["error"].as_str().unwrap(), &missing),
                "{key}: B's answer for A's ids differs from the one for ids that name nothing"
            );
            if op.method == Method::GET {
                // The ids are real: A reads them (a savepoint file is not JSON).
                let response = w.a.request(Method::GET, &path).send().await.unwrap();
                assert_eq!(response.status(), 200, "{key} ({path}) by tenant A");
            }
            continue;
        }

        match (op.method.as_str(), op.path.as_str()) {
            ("GET", "/api/v1/tenant") => {
                let (status, v) = w.b.get(&path).await;
                assert_eq!(status, 200, "{v}");
                assert_eq!(v["id"], w.b_id.as_str(), "{v}");
                assert_eq!(v["name"], "tenant-b", "{v}");
                assert_eq!(
                    v["usage"],
                    json!({ "jobs": 0, "subtasks": 0, "storage_bytes": 0, "buffered_bytes": 0 }),
                    "{v}"
                );
            }
            (
                "GET",
                "/api/v1/modules"
                | "/api/v1/jobs"
                | "/api/v1/streams"
                | "/api/v1/savepoints"
                | "/api/v1/kafka/connections",
            ) => {
                let (status, v) = w.b.get(&path).await;
                assert_eq!(status, 200, "{key} by tenant B: {v}");
                let text = v.to_string();
                for id in [&w.module, &w.module_name, &w.job, &w.stream, &w.a_id, &w.savepoint] {
                    assert!(!text.contains(id.as_str()), "{key} by tenant B shows A's `{id}`: {v}");
                }
                assert_eq!(v["data"], json!([]), "{key} by tenant B, who has nothing yet: {v}");
            }
            ("GET", "/api/v1/tenant/tokens") => {
                // B's own token only.
                let (status, v) = w.b.get(&path).await;
                assert_eq!(status, 200, "{key} by tenant B: {v}");
                assert_eq!(v["data"].as_array().map(Vec::len), Some(1), "{v}");
                assert!(!v.to_string().contains(&w.token_id), "{key} by tenant B shows A's token: {v}");
            }
            ("POST", "/api/v1/tenant/tokens") => {
                // The admin has not let B manage its tokens.
                let (status, v) = w.b.send(request(&w.b, &op.method, &path, &body)).await;
                assert_eq!(status, 403, "{key} by tenant B: {v}");
                assert_error(&key, status, &v);
            }
            ("GET", "/api/v1/metrics") => {
                // B's own series only: none of A's, whose job has run and counted.
                let (status, v) = w.b.get(&path).await;
                assert_eq!(status, 200, "{key} by tenant B: {v}");
                let text = v.as_str().unwrap_or_else(|| panic!("{key} answers text: {v}"));
                for id in [&w.module, &w.module_name, &w.job, &w.stream, &w.a_id, &w.savepoint] {
                    assert!(!text.contains(id.as_str()), "{key} by tenant B shows A's `{id}`:\n{text}");
                }
                assert!(text.contains(&format!("tenant=\"{}\"", w.b_id)), "B's own usage:\n{text}");
            }
            ("POST", "/api/v1/modules" | "/api/v1/jobs" | "/api/v1/streams" | "/api/v1/savepoints") => {
                creations.push(op.clone())
            }
            _ => panic!(
                "the tenant matrix does not know the operation {key}: say what tenant B may see or do with it"
            ),
        }
    }

    assert_eq!(w.snapshot_a().await, before, "tenant A's resources changed");
    let (_, tenants) = admin.get("/api/v1/tenants").await;
    let names: BTreeSet<&str> =
        tenants["data"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, BTreeSet::from(["tenant-a", "tenant-b"]), "{tenants}");

    // B creates its own things, naming A's: they stay B's, and A's stay A's.
    let creations: BTreeSet<String> = creations.iter().map(Operation::key).collect();
    assert_eq!(
        creations,
        BTreeSet::from([
            "POST /api/v1/jobs".to_string(),
            "POST /api/v1/modules".into(),
            "POST /api/v1/savepoints".into(),
            "POST /api/v1/streams".into()
        ]),
        "the creation routes changed: extend the checks below"
    );
    b_jobs_cannot_use_a_modules_or_streams(&w).await;
    b_uploads_a_module_of_the_same_bytes(&w).await;
    b_streams_of_the_same_name_are_b_own(&w).await;
    b_imports_a_savepoint_file_as_its_own(&w).await;

    let after = w.snapshot_a().await;
    assert_eq!(after, before, "tenant A's resources changed");
    let (_, job) = w.a.get(&format!("/api/v1/jobs/{}", w.job)).await;
    assert_eq!(job["status"], "running", "{job}");
}

async fn b_jobs_cannot_use_a_modules_or_streams(w: &World) {
    let spec = |module: &str, source: Value| {
        json!({
            "name": "b-job",
            "nodes": [
                source,
                { "id": "split", "kind": "operator", "module": module },
                { "id": "out", "kind": "sink", "connector": "blackhole" }
            ],
            "edges": [ { "from": "in", "to": "split" }, { "from": "split", "to": "out" } ]
        })
    };
    let generator = json!({ "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 10 } });
    let a_module_file = format!("../modules/{}.wasm", w.module);
    let a_stream_internal = format!("{}.{}", w.a_id, w.stream);
    for module in [w.module.as_str(), w.module_name.as_str(), a_module_file.as_str()] {
        let (status, v) = w.b.post("/api/v1/jobs", &spec(module, generator.clone())).await;
        assert_eq!(status, 400, "B's job with A's module `{module}`: {v}");
        let e = v["error"].as_str().unwrap();
        assert!(e.contains("unknown module"), "{v}");
    }
    for stream in [w.stream.as_str(), a_stream_internal.as_str()] {
        let source =
            json!({ "id": "in", "kind": "source", "connector": "stream", "config": { "stream": stream } });
        let (status, v) = w.b.post("/api/v1/jobs", &spec("builtin:tokenizer", source)).await;
        assert_eq!(status, 400, "B's job reading A's stream `{stream}`: {v}");
        assert!(v["error"].as_str().unwrap().contains("does not exist"), "{v}");
    }
    let (_, jobs) = w.b.get("/api/v1/jobs").await;
    assert_eq!(jobs["data"], json!([]), "{jobs}");
}

async fn b_uploads_a_module_of_the_same_bytes(w: &World) {
    // Modules are content-addressed: B gets a record of its own for the same bytes.
    let (status, m) = w.b.upload("b-copy", w.module_bytes.clone()).await;
    assert_eq!(status, 201, "{m}");
    assert_eq!(m["id"], w.module.as_str());
    assert_eq!(m["name"], "b-copy");
    let (_, mine) = w.a.get(&format!("/api/v1/modules/{}", w.module)).await;
    assert_eq!(mine["name"], w.module_name.as_str(), "B's upload renamed A's module: {mine}");
    // B deleting its record leaves A's module and its bytes.
    let (status, v) = w.b.delete(&format!("/api/v1/modules/{}", w.module)).await;
    assert_eq!(status, 204, "{v}");
    let (status, v) = w.b.get(&format!("/api/v1/modules/{}", w.module)).await;
    assert_eq!(status, 404, "{v}");
    let (status, v) = w.a.get(&format!("/api/v1/modules/{}", w.module)).await;
    assert_eq!(status, 200, "{v}");
    assert!(w.server.data_dir.join("modules").join(format!("{}.wasm", w.module)).exists());
}

async fn b_streams_of_the_same_name_are_b_own(w: &World) {
    let (status, s) = w.b.post("/api/v1/streams", &json!({ "name": w.stream, "partitions": 1 })).await;
    assert_eq!(status, 201, "{s}");
    assert_eq!(s["end_offsets"], json!([0]), "B's new stream shows A's records: {s}");
    let records = json!({ "records": [ { "value": "b one two" }, { "value": "b three" } ] });
    let (status, v) = w.b.post(&format!("/api/v1/streams/{}/records", w.stream), &records).await;
    assert_eq!(status, 201, "{v}");
    let read = w.b.read_all(&w.stream).await;
    let values: Vec<&Value> = read.iter().map(|(_, _, _, v)| v).collect();
    assert_eq!(values, [&json!("b one two"), &json!("b three")]);

    // A job of B's reads B's stream of that name, and writes a stream of B's.
    let job = w
        .b
        .create_job(&json!({
            "name": "b-words",
            "nodes": [
                { "id": "in", "kind": "source", "connector": "stream", "config": { "stream": w.stream } },
                { "id": "split", "kind": "operator", "module": "builtin:tokenizer" },
                { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": "b-words", "partitions": 1 } }
            ],
            "edges": [ { "from": "in", "to": "split" }, { "from": "split", "to": "out" } ]
        }))
        .await;
    w.b.wait_status(&job, "finished", LONG).await;
    let mut words: Vec<String> =
        w.b.read_all("b-words").await.into_iter().map(|(_, _, _, v)| v.to_string()).collect();
    words.sort();
    assert_eq!(words.len(), 5, "{words:?}");
    assert!(words.iter().all(|w| !w.contains("secret")), "B's job read A's records: {words:?}");
    let (status, v) = w.a.get("/api/v1/streams/b-words").await;
    assert_eq!(status, 404, "{v}");
}

async fn b_imports_a_savepoint_file_as_its_own(w: &World) {
    // Whoever holds an exported file may import it: it becomes a savepoint of B's, with an id
    // of its own; A's savepoint is untouched and still A's alone.
    let r =
        w.b.request(Method::POST, "/api/v1/savepoints")
            .header(CONTENT_TYPE, "application/octet-stream")
            .body(w.savepoint_file.clone());
    let (status, copy) = w.b.send(r).await;
    assert_eq!(status, 201, "{copy}");
    assert_ne!(copy["id"], w.savepoint.as_str());
    assert_eq!(copy["origin"], w.savepoint.as_str());
    let (_, mine) = w.b.get("/api/v1/savepoints").await;
    assert_eq!(mine["data"].as_array().unwrap().len(), 1, "{mine}");
    let (status, v) = w.b.get(&format!("/api/v1/savepoints/{}", w.savepoint)).await;
    assert_eq!(status, 404, "{v}");
    let (status, v) = w.b.delete(&format!("/api/v1/savepoints/{}", copy["id"].as_str().unwrap())).await;
    assert_eq!(status, 204, "{v}");
    let (status, v) = w.a.get(&format!("/api/v1/savepoints/{}", w.savepoint)).await;
    assert_eq!(status, 200, "{v}");
}
