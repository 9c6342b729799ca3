//! Bad input over HTTP: malformed and oversized uploads, files that are not operator
//! components, bad JSON, bad job specs, unknown ids, path tricks (the shapes of Flink's
//! CVE-2020-17518 upload and CVE-2020-17519 traversal) and quota errors. Each answers a
//! precise 4xx with a JSON `{"error": ...}` that says what is wrong, never a 5xx, and
//! nothing is written.

use crate::common;
use crate::server;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use server::{ADMIN, Api, TestServer};

const LONG: Duration = Duration::from_secs(120);

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

fn multipart(boundary: &str, parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file_name, data) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match file_name {
            Some(f) => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{f}\"\r\n").as_bytes(),
            ),
            None => body
                .extend_from_slice(format!("Content-Disposition: form-data; name=\"{name}\"\r\n").as_bytes()),
        }
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

/// A module upload on a connection of its own (the server may refuse it unread).
async fn upload_raw(api: &Api, content_type: &str, body: Vec<u8>) -> (u16, Value) {
    api.fresh().send_bytes(Method::POST, "/api/v1/modules", content_type, body).await
}

const FORM: &str = "multipart/form-data; boundary=XyZ";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_that_are_not_operator_components() {
    let (server, api) = setup().await;
    let before = state(&server, &api).await;
    let tokenizer = std::fs::read(common::guest_path("tokenizer")).unwrap();
    let other_world = std::fs::read(common::guest_path("other-world")).unwrap();
    let core = wat::parse_str("(module (func (export \"f\")))").unwrap();

    // Malformed multipart.
    expect(
        "no boundary",
        upload_raw(&api, "multipart/form-data", b"--x\r\n".to_vec()).await,
        400,
        &["multipart"],
    );
    expect("not multipart", upload_raw(&api, FORM, b"hello, world".to_vec()).await, 400, &["multipart"]);
    let mut truncated = multipart("XyZ", &[("file", Some("a.wasm"), &tokenizer)]);
    truncated.truncate(truncated.len() / 2);
    expect("truncated form", upload_raw(&api, FORM, truncated).await, 400, &["multipart"]);
    let bad_headers = b"--XyZ\r\nContent-Disposition: garbage\r\n\r\nxx\r\n--XyZ--\r\n".to_vec();
    expect_4xx("part without a name", &upload_raw(&api, FORM, bad_headers).await);
    let no_file = multipart("XyZ", &[("name", None, b"thing")]);
    expect("no file field", upload_raw(&api, FORM, no_file).await, 400, &["no `file` field"]);
    let extra = multipart("XyZ", &[("file", Some("a.wasm"), &tokenizer), ("evil", None, b"1")]);
    expect("unexpected field", upload_raw(&api, FORM, extra).await, 400, &["unexpected form field `evil`"]);
    let nameless = multipart("XyZ", &[("file", None, &tokenizer)]);
    expect("no name at all", upload_raw(&api, FORM, nameless).await, 400, &["needs a name"]);
    let empty = multipart("XyZ", &[("file", Some("empty.wasm"), b"")]);
    expect("empty file", upload_raw(&api, FORM, empty).await, 400, &["empty"]);
    expect(
        "empty raw upload",
        api.send_bytes(Method::POST, "/api/v1/modules?name=x", "application/wasm", Vec::<u8>::new()).await,
        400,
        &["empty"],
    );
    expect(
        "raw upload without a name",
        upload_raw(&api, "application/wasm", tokenizer.clone()).await,
        400,
        &["needs a name"],
    );

    // Not components of the operator world.
    expect(
        "a text file",
        api.upload("notes", b"these are not the bytes you are looking for\n".to_vec()).await,
        422,
        &["not a WebAssembly component", "magic bytes"],
    );
    expect(
        "a core module",
        api.upload("core", core).await,
        422,
        &["core WebAssembly module", "not a component"],
    );
    expect(
        "another world",
        api.upload("other", other_world).await,
        422,
        &["does not implement the weir:operator"],
    );
    let mut garbage = b"\0asm\x0d\x00\x01\x00".to_vec();
    garbage.extend_from_slice(&[0xff; 64]);
    expect("a broken component", api.upload("broken", garbage).await, 422, &["not a WebAssembly component"]);
    let mut cut = tokenizer.clone();
    cut.truncate(tokenizer.len() / 2);
    expect("half a component", api.upload("half", cut).await, 422, &["not a WebAssembly component"]);

    // Bad names, by form field, by file name and by query (CVE-2020-17518 wrote an upload
    // to the path of its file name).
    let long = "n".repeat(129);
    for name in [
        "../../../../tmp/weir-evil",
        "..",
        ".hidden",
        "a/b",
        "a\\b",
        "%2e%2e%2f",
        "..%252f",
        "a\0b",
        "ünïcödé",
        "名前",
        " ",
        "",
        long.as_str(),
    ] {
        let form =
            multipart("XyZ", &[("file", Some("ok.wasm"), &tokenizer), ("name", None, name.as_bytes())]);
        expect(
            &format!("module name {name:?}"),
            upload_raw(&api, FORM, form).await,
            400,
            &["invalid module name"],
        );
    }
    for file_name in ["..", "../..", "%2e%2e%2f..%2f.wasm", "..%252f..%252fx.wasm", ".wasm", "/", "ü.wasm"] {
        let form = multipart("XyZ", &[("file", Some(file_name), &tokenizer)]);
        expect(
            &format!("file name {file_name:?}"),
            upload_raw(&api, FORM, form).await,
            400,
            &["invalid module name"],
        );
    }
    for query in ["..%2f..%2fevil", "%2e%2e", "..%252fevil", "%00", "a%2fb", "%C3%BC", "%ff"] {
        let answer = api
            .fresh()
            .send_bytes(
                Method::POST,
                &format!("/api/v1/modules?name={query}"),
                "application/wasm",
                tokenizer.clone(),
            )
            .await;
        expect_4xx(&format!("?name={query}"), &answer);
    }

    assert_eq!(state(&server, &api).await, before, "a refused upload left something behind");

    // A file name with a path in it names the module after its last component; the bytes
    // are stored under their hash and nowhere else.
    let form =
        multipart("XyZ", &[("file", Some("../../../../../../tmp/weir-cve-2020-17518.wasm"), &tokenizer)]);
    let (status, m) = upload_raw(&api, FORM, form).await;
    assert_eq!(status, 201, "{m}");
    assert_eq!(m["name"], "weir-cve-2020-17518");
    assert!(!std::path::Path::new("/tmp/weir-cve-2020-17518.wasm").exists());
    let id = m["id"].as_str().unwrap();
    let modules: Vec<_> = server::files(&server.data_dir.join("modules")).into_keys().collect();
    assert_eq!(modules, [std::path::PathBuf::from(format!("{id}.wasm"))]);
    // Deleted, it leaves neither its bytes nor its compiled form.
    let (status, v) = api.delete(&format!("/api/v1/modules/{id}")).await;
    assert_eq!(status, 204, "{v}");
    let left: Vec<_> =
        server::files(&server.data_dir).into_keys().filter(|p| !p.ends_with("weir.redb")).collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_requests() {
    let (server, api) = setup().await;
    let tokenizer = std::fs::read(common::guest_path("tokenizer")).unwrap();
    let (_, small) = server.tenant_with("small", Some(json!({ "max_module_bytes": 1000 }))).await;
    // Every request on a connection of its own: the server closes one whose request body
    // it stopped reading.
    let fresh = Api::fresh;
    let before = state(&server, &fresh(&api)).await;
    let before_small = state(&server, &fresh(&small)).await;

    // Over the tenant's max_module_bytes: 413 naming the quota, multipart or raw.
    expect(
        "multipart over max_module_bytes",
        fresh(&small).upload("tok", tokenizer.clone()).await,
        413,
        &["max_module_bytes", "1000"],
    );
    expect(
        "raw over max_module_bytes",
        fresh(&small)
            .send_bytes(Method::POST, "/api/v1/modules?name=tok", "application/wasm", tokenizer.clone())
            .await,
        413,
        &["max_module_bytes"],
    );

    // Over the server's max_request_bytes (the tenant's module limit is higher).
    let big = vec![0u8; MAX_REQUEST + 1024];
    expect_too_large("multipart over max_request_bytes", fresh(&api).upload("big", big.clone()).await);
    expect_too_large(
        "raw over max_request_bytes",
        fresh(&api)
            .send_bytes(Method::POST, "/api/v1/modules?name=big", "application/wasm", big.clone())
            .await,
    );
    let records: Vec<Value> =
        (0..MAX_REQUEST / 40).map(|i| json!({ "value": format!("{i:0>40}") })).collect();
    expect_too_large(
        "records over max_request_bytes",
        fresh(&api).post("/api/v1/streams/events/records", &json!({ "records": records })).await,
    );
    let spec = json!({ "name": "x".repeat(MAX_REQUEST + 10), "nodes": [] });
    expect_too_large("a job spec over max_request_bytes", fresh(&api).post("/api/v1/jobs", &spec).await);
    expect_too_large(
        "a tenant over max_request_bytes",
        server.client(ADMIN).post("/api/v1/tenants", &json!({ "name": "y".repeat(MAX_REQUEST) })).await,
    );

    // Too many records in one append (under the byte limit).
    let many: Vec<Value> = (0..100_001).map(|_| json!({ "value": 0 })).collect();
    let body = serde_json::to_vec(&json!({ "records": many })).unwrap();
    assert!(body.len() < MAX_REQUEST);
    expect(
        "100001 records",
        fresh(&api)
            .send_bytes(Method::POST, "/api/v1/streams/events/records", "application/json", body)
            .await,
        400,
        &["100001 records", "at most 100000"],
    );

    assert_eq!(state(&server, &fresh(&api)).await, before);
    assert_eq!(state(&server, &fresh(&small)).await, before_small);
}

#[track_caller]
fn expect_too_large(what: &str, answer: (u16, Value)) {
    expect(what, answer, 413, &[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_json_bodies() {
    let (server, api) = setup().await;
    let admin = server.client(ADMIN);
    let (tenant_id, _) = server.tenant("other").await;
    let before = state(&server, &api).await;
    let deep = format!("{{\"records\": [{{\"value\": {}{}}}]}}", "[".repeat(100_000), "]".repeat(100_000));
    let quotas_path = format!("/api/v1/tenants/{tenant_id}/quotas");
    let routes: [(&Api, Method, &str); 5] = [
        (&admin, Method::POST, "/api/v1/tenants"),
        (&admin, Method::PUT, &quotas_path),
        (&api, Method::POST, "/api/v1/jobs"),
        (&api, Method::POST, "/api/v1/streams"),
        (&api, Method::POST, "/api/v1/streams/events/records"),
    ];
    for (client, method, path) in routes {
        let send = |body: Vec<u8>| client.send_bytes(method.clone(), path, "application/json", body);
        let what = |w: &str| format!("{method} {path}: {w}");
        expect(&what("no body"), send(Vec::new()).await, 400, &["needs a JSON body"]);
        expect(&what("cut JSON"), send(b"{\"name\": \"x\"".to_vec()).await, 400, &["invalid", "JSON"]);
        expect(&what("not JSON"), send(b"name=x".to_vec()).await, 400, &["invalid", "JSON"]);
        expect(
            &what("not UTF-8"),
            send(b"{\"name\": \"\xff\xfe\"}".to_vec()).await,
            400,
            &["invalid", "JSON"],
        );
        expect(&what("deep nesting"), send(deep.clone().into_bytes()).await, 400, &["invalid"]);
        for shape in ["null", "[]", "[\"x\"]", "42", "\"x\"", "true"] {
            expect(&what(shape), send(shape.as_bytes().to_vec()).await, 400, &["must be a JSON object"]);
        }
        expect(
            &what("an unknown field"),
            send(b"{\"no_such_field\": 1}".to_vec()).await,
            400,
            &["unknown field `no_such_field`"],
        );
    }

    // Right JSON, wrong shape or values.
    let cases: Vec<(&Api, Method, &str, Value, &[&str])> = vec![
        (&admin, Method::POST, "/api/v1/tenants", json!({ "name": 5 }), &["invalid type"]),
        (&admin, Method::POST, "/api/v1/tenants", json!({ "name": "../x" }), &["invalid tenant name"]),
        (&admin, Method::POST, "/api/v1/tenants", json!({ "name": "other" }), &["exists"]),
        (
            &admin,
            Method::POST,
            "/api/v1/tenants",
            json!({ "name": "q", "quotas": { "max_jobs": -1 } }),
            &["invalid value", "-1"],
        ),
        (
            &admin,
            Method::POST,
            "/api/v1/tenants",
            json!({ "name": "q", "quotas": { "max_cpu": 1 } }),
            &["unknown field `max_cpu`"],
        ),
        (&admin, Method::PUT, &quotas_path, json!({ "max_jobs": "many" }), &["invalid type"]),
        (
            &admin,
            Method::PUT,
            &quotas_path,
            json!({ "max_storage_bytes": 1e300 }),
            &["invalid type", "floating point"],
        ),
        (&api, Method::POST, "/api/v1/streams", json!({ "name": "s", "partitions": 0 }), &["partition"]),
        (
            &api,
            Method::POST,
            "/api/v1/streams",
            json!({ "name": "s", "partitions": 1_000_000 }),
            &["partition"],
        ),
        (
            &api,
            Method::POST,
            "/api/v1/streams",
            json!({ "name": "s", "partitions": -1 }),
            &["invalid value", "-1"],
        ),
        (&api, Method::POST, "/api/v1/streams", json!({ "name": "events", "partitions": 3 }), &["events"]),
        (&api, Method::POST, "/api/v1/streams/events/records", json!({ "records": {} }), &["invalid type"]),
        (
            &api,
            Method::POST,
            "/api/v1/streams/events/records",
            json!({ "records": [ { "key": 1 } ] }),
            &["missing field `value`"],
        ),
        (
            &api,
            Method::POST,
            "/api/v1/streams/events/records",
            json!({ "records": [ { "value": 1, "partition": 2 } ] }),
            &["partition 2 does not exist"],
        ),
        (
            &api,
            Method::POST,
            "/api/v1/streams/events/records",
            json!({ "records": [ { "value": 1, "timestamp": "now" } ] }),
            &["invalid type"],
        ),
        (
            &api,
            Method::POST,
            "/api/v1/streams/events/records",
            json!({ "records": [ { "value": 1 }, { "value": 2, "partition": 7 } ] }),
            &["record 1", "partition 7"],
        ),
    ];
    for (client, method, path, body, words) in cases {
        let what = format!("{method} {path} {body}");
        let status = if words == ["exists"] || words == ["events"] { 409 } else { 400 };
        expect(&what, client.send(client.request(method, path).json(&body)).await, status, words);
    }
    // JSON nested deeper than the parser's limit, and MessagePack nested 100000 deep: refused,
    // not a stack overflow.
    expect(
        "deep JSON",
        api.send_bytes(Method::POST, "/api/v1/streams/events/records", "application/json", deep.clone())
            .await,
        400,
        &["recursion limit"],
    );
    let mut deep_msgpack = vec![0x81, 0xa7];
    deep_msgpack.extend_from_slice(b"records");
    deep_msgpack.extend_from_slice(&[0x91, 0x81, 0xa5]);
    deep_msgpack.extend_from_slice(b"value");
    deep_msgpack.extend(std::iter::repeat_n(0x91, 100_000));
    deep_msgpack.push(0xc0);
    expect(
        "deep MessagePack",
        api.send_bytes(Method::POST, "/api/v1/streams/events/records", "application/msgpack", deep_msgpack)
            .await,
        400,
        &["invalid MessagePack body", "more than 128 deep"],
    );
    expect(
        "MessagePack that is not",
        api.send_bytes(
            Method::POST,
            "/api/v1/streams/events/records",
            "application/msgpack",
            b"\xc1\xc1\xc1".to_vec(),
        )
        .await,
        400,
        &["invalid MessagePack"],
    );
    // Query strings of the wrong type.
    for query in
        ["partition=x", "offset=-1", "limit=1e3", "partition=99999999999", "offset=18446744073709551616"]
    {
        expect_4xx(query, &api.get(&format!("/api/v1/streams/events/records?{query}")).await);
    }
    expect(
        "a partition that does not exist",
        api.get("/api/v1/streams/events/records?partition=2").await,
        400,
        &["partition 2 does not exist"],
    );

    assert_eq!(state(&server, &api).await, before, "a refused request wrote something");
}

fn spec(nodes: Value, edges: Value) -> Value {
    json!({ "name": "bad", "nodes": nodes, "edges": edges })
}

fn linear(source: Value, module: &str, sink: Value) -> Value {
    let mut source = source;
    source["id"] = json!("in");
    source["kind"] = json!("source");
    let mut sink = sink;
    sink["id"] = json!("out");
    sink["kind"] = json!("sink");
    spec(
        json!([source, { "id": "op", "kind": "operator", "module": module }, sink]),
        json!([ { "from": "in", "to": "op" }, { "from": "op", "to": "out" } ]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_job_specs() {
    let (server, api) = setup().await;
    let before = state(&server, &api).await;
    let generator = json!({ "connector": "generator", "config": { "mode": "sequence", "count": 10 } });
    let blackhole = json!({ "connector": "blackhole" });
    let tok = "builtin:tokenizer";
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "unknown module",
            linear(generator.clone(), "no-such-module", blackhole.clone()),
            &["unknown module `no-such-module`"],
        ),
        (
            "unknown builtin",
            linear(generator.clone(), "builtin:nope", blackhole.clone()),
            &["unknown module `builtin:nope`"],
        ),
        (
            "a module id nobody uploaded",
            linear(generator.clone(), &"ab".repeat(32), blackhole.clone()),
            &["unknown module"],
        ),
        (
            "a module path",
            linear(generator.clone(), "/etc/passwd", blackhole.clone()),
            &["unknown module `/etc/passwd`"],
        ),
        (
            "a module path out of the data dir",
            linear(generator.clone(), "../modules/x.wasm", blackhole.clone()),
            &["unknown module"],
        ),
        (
            "a module URL",
            linear(generator.clone(), "file:///etc/passwd", blackhole.clone()),
            &["unknown module"],
        ),
        (
            "unknown source connector",
            linear(json!({ "connector": "pulsar" }), tok, blackhole.clone()),
            &["unknown source connector `pulsar`"],
        ),
        (
            "unknown sink connector",
            linear(generator.clone(), tok, json!({ "connector": "s3" })),
            &["unknown sink connector `s3`"],
        ),
        ("no connector", linear(json!({}), tok, blackhole.clone()), &["connector"]),
        (
            "file source",
            linear(
                json!({ "connector": "file", "config": { "path": "/etc/passwd" } }),
                tok,
                blackhole.clone(),
            ),
            &["file connector", "not available"],
        ),
        (
            "file sink",
            linear(
                generator.clone(),
                tok,
                json!({ "connector": "file", "config": { "dir": "/tmp/weir-evil" } }),
            ),
            &["file connector", "not available"],
        ),
        (
            "a stream that does not exist",
            linear(json!({ "connector": "stream", "config": { "stream": "nope" } }), tok, blackhole.clone()),
            &["stream `nope` does not exist"],
        ),
        (
            "a stream name with a path",
            linear(
                json!({ "connector": "stream", "config": { "stream": "../../etc/passwd" } }),
                tok,
                blackhole.clone(),
            ),
            &["invalid stream name"],
        ),
        (
            "a sink stream name with a path",
            linear(
                generator.clone(),
                tok,
                json!({ "connector": "stream", "config": { "stream": "../x", "partitions": 1 } }),
            ),
            &["invalid stream name"],
        ),
        (
            "a stream without a name",
            linear(json!({ "connector": "stream", "config": {} }), tok, blackhole.clone()),
            &["needs `stream`"],
        ),
        (
            "a bad connector config",
            linear(
                json!({ "connector": "generator", "config": { "mode": "sequence" } }),
                tok,
                blackhole.clone(),
            ),
            &["generator", "count"],
        ),
        (
            "a config that is not an object",
            linear(json!({ "connector": "generator", "config": 5 }), tok, blackhole.clone()),
            &["config must be a JSON object"],
        ),
        (
            "a cycle",
            spec(
                json!([
                    { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1 } },
                    { "id": "a", "kind": "operator", "module": tok },
                    { "id": "b", "kind": "operator", "module": tok },
                    { "id": "out", "kind": "sink", "connector": "blackhole" }
                ]),
                json!([ { "from": "in", "to": "a" }, { "from": "a", "to": "b" }, { "from": "b", "to": "a" }, { "from": "b", "to": "out" } ]),
            ),
            &["cycle"],
        ),
        ("no nodes", spec(json!([]), json!([])), &["no nodes"]),
        (
            "an edge to nowhere",
            spec(
                json!([ { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1 } } ]),
                json!([ { "from": "in", "to": "ghost" } ]),
            ),
            &["unknown node `ghost`"],
        ),
        (
            "a bad node id",
            spec(
                json!([ { "id": "../x", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1 } } ]),
                json!([]),
            ),
            &["node id `../x` is invalid"],
        ),
        (
            "parallelism 0",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["nodes"][1]["parallelism"] = json!(0);
                s
            },
            &["parallelism"],
        ),
        (
            "parallelism 100000",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["nodes"][1]["parallelism"] = json!(100_000);
                s
            },
            &["parallelism"],
        ),
        (
            "an unknown kind",
            spec(json!([ { "id": "x", "kind": "mystery" } ]), json!([])),
            &["unknown variant `mystery`"],
        ),
        (
            "an unknown setting",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["settings"] = json!({ "turbo": true });
                s
            },
            &["unknown field `turbo`"],
        ),
        (
            "an unknown field",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["owner"] = json!("root");
                s
            },
            &["unknown field `owner`"],
        ),
        ("nodes that are not a list", json!({ "name": "x", "nodes": "all" }), &["invalid type"]),
    ];
    for (what, spec, words) in cases {
        expect(what, api.post("/api/v1/jobs", &spec).await, 400, words);
    }
    assert_eq!(state(&server, &api).await, before, "a refused job left something behind");
}

/// Ids and names that name nothing, many of them malformed: unknown, traversal shapes
/// (raw, encoded, double-encoded), NUL, very long, unicode, invalid UTF-8.
fn bad_ids() -> Vec<String> {
    vec![
        "0".repeat(64),
        "0".repeat(32),
        "0".repeat(16),
        "nope".into(),
        "..".into(),
        "%2e%2e".into(),
        "..%2f..%2f..%2fetc%2fpasswd".into(),
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd".into(),
        "..%252f..%252f..%252fetc%252fpasswd".into(),
        "..%5c..%5cwindows".into(),
        "%00".into(),
        "a%00b".into(),
        "%ff%fe".into(),
        "%".into(),
        "x".repeat(10_000),
        "%C3%BCn%C3%AFc%C3%B6d%C3%A9".into(),
        "%F0%9F%92%A9".into(),
        "-1".into(),
        "18446744073709551616".into(),
        "%20".into(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_ids_and_path_tricks() {
    let (server, api) = setup().await;
    let admin = server.client(ADMIN);
    api.upload_guest("tokenizer").await;
    // No periodic checkpoints: the tenant's stored bytes stay as they are.
    let mut spec = linear(
        json!({ "connector": "stream", "config": { "stream": "events", "follow": true } }),
        "tokenizer",
        json!({ "connector": "blackhole" }),
    );
    spec["settings"] = json!({ "checkpoint": { "interval_ms": null } });
    let job = api.create_job(&spec).await;
    api.wait_status(&job, "running", LONG).await;
    let before = state(&server, &api).await;

    for id in bad_ids() {
        let tenant_routes = [
            (Method::GET, format!("/api/v1/modules/{id}")),
            (Method::DELETE, format!("/api/v1/modules/{id}")),
            (Method::GET, format!("/api/v1/jobs/{id}")),
            (Method::POST, format!("/api/v1/jobs/{id}/stop")),
            (Method::POST, format!("/api/v1/jobs/{id}/cancel")),
            (Method::POST, format!("/api/v1/jobs/{id}/restart")),
            (Method::GET, format!("/api/v1/jobs/{id}/checkpoints")),
            (Method::POST, format!("/api/v1/jobs/{id}/checkpoints")),
            (Method::GET, format!("/api/v1/jobs/{id}/checkpoints/1")),
            (Method::GET, format!("/api/v1/jobs/{job}/checkpoints/{id}")),
            (Method::GET, format!("/api/v1/streams/{id}")),
            (Method::GET, format!("/api/v1/streams/{id}/records")),
            (Method::POST, format!("/api/v1/streams/{id}/records")),
        ];
        let short: String = id.chars().take(40).collect();
        for (method, path) in tenant_routes {
            let mut r = api.request(method.clone(), &path);
            if method == Method::POST {
                r = r.json(&json!({ "records": [ { "value": 1 } ] }));
            }
            let answer = api.send(r).await;
            expect_4xx(&format!("{method} {short}… ({})", path.len()), &answer);
            // The message names the input, shortened: it never echoes 10 000 characters.
            assert!(answer.1["error"].as_str().unwrap().len() < 400, "{method} {short}…: {}", answer.1);
            assert!(answer.0 == 400 || answer.0 == 404, "{method} {path}: {answer:?}");
        }
        for (method, path) in [
            (Method::GET, format!("/api/v1/tenants/{id}")),
            (Method::PUT, format!("/api/v1/tenants/{id}/quotas")),
            (Method::POST, format!("/api/v1/tenants/{id}/tokens")),
        ] {
            let mut r = admin.request(method.clone(), &path);
            if method == Method::PUT {
                r = r.json(&json!({}));
            }
            let answer = admin.send(r).await;
            expect_4xx(&format!("{method} {short}…"), &answer);
            assert!(answer.1["error"].as_str().unwrap().len() < 400, "{method} {short}…: {}", answer.1);
            assert!(answer.0 == 400 || answer.0 == 404, "{method} {path}: {answer:?}");
        }
    }

    // Well-formed ids that name nothing: 404 that names the id.
    let missing_module = "ab".repeat(32);
    expect(
        "unknown module",
        api.get(&format!("/api/v1/modules/{missing_module}")).await,
        404,
        &[&missing_module],
    );
    expect("unknown job", api.get(&format!("/api/v1/jobs/{}", "cd".repeat(16))).await, 404, &["no job"]);
    expect(
        "unknown checkpoint",
        api.get(&format!("/api/v1/jobs/{job}/checkpoints/999")).await,
        404,
        &["no checkpoint 999"],
    );
    expect("unknown stream", api.get("/api/v1/streams/nope").await, 404, &["nope"]);
    expect("unknown tenant", admin.get("/api/v1/tenants/0123456789abcdef").await, 404, &["no tenant"]);
    expect(
        "a non-numeric checkpoint",
        api.get(&format!("/api/v1/jobs/{job}/checkpoints/abc")).await,
        404,
        &["no checkpoint `abc`", "a number"],
    );
    expect(
        "a bad stream name",
        api.get("/api/v1/streams/..%2f..%2fetc%2fpasswd").await,
        400,
        &["invalid stream name"],
    );
    expect(
        "a NUL in a stream name",
        api.get("/api/v1/streams/a%00b").await,
        400,
        &["invalid stream name", "\\0"],
    );

    // Raw request lines that no client would normalise (CVE-2020-17519 read files through
    // `..%252f` in a path segment).
    let token = api.token().unwrap().to_string();
    for target in [
        "/api/v1/streams/../../../../etc/passwd",
        "/api/v1/modules/../../../../../etc/passwd",
        "/../../../../etc/passwd",
        "/api/v1/jobs/..%2f..%2f..%2fetc%2fpasswd",
        "/api/v1/jobs/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/api/v1/streams/..%252f..%252f..%252fetc%252fpasswd/records",
        "/api/v1/modules/..\\..\\..\\etc\\passwd",
        "//etc/passwd",
        "/api/v1/openapi.json/../../../etc/passwd",
        "/api/v1/streams/events%00.json",
        "/api/v1/streams/events/records?partition=0%00",
        "/api/v1/../v1/streams/events",
        "/%2e%2e/%2e%2e/etc/passwd",
    ] {
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        );
        let (status, headers, body) = server::raw_request(&server.url, request.as_bytes()).await;
        let text = String::from_utf8_lossy(&body).to_string();
        assert!(!text.contains("root:"), "{target}: {text}");
        assert!((400..500).contains(&status), "{target}: {status} {text}");
        assert!(
            headers.iter().any(|(k, v)| k == "content-type" && v.starts_with("application/json")),
            "{target}: {headers:?}"
        );
        let v: Value = serde_json::from_slice(&body).unwrap_or_else(|_| panic!("{target}: not JSON: {text}"));
        assert!(v["error"].is_string(), "{target}: {v}");
    }

    assert_eq!(state(&server, &api).await, before, "a refused request changed something");
    let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
    assert_eq!(j["status"], "running", "{j}");
    assert_eq!(j["restarts"], 0, "{j}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_errors_name_the_quota() {
    let server = TestServer::start(|_| {}).await;
    let quotas = json!({
        "max_jobs": 1, "max_subtasks": 3, "max_memory_mb": 64, "max_cpu_ms": 500,
        "max_module_bytes": 100_000, "max_storage_bytes": 200_000
    });
    let (_, api) = server.tenant_with("limited", Some(quotas)).await;
    api.post("/api/v1/streams", &json!({ "name": "in", "partitions": 1 })).await;
    let stream_job = |parallelism: u32, settings: Value| {
        json!({
            "name": "q",
            "nodes": [
                { "id": "in", "kind": "source", "connector": "stream", "config": { "stream": "in", "follow": true } },
                { "id": "op", "kind": "operator", "module": "builtin:tokenizer", "parallelism": parallelism },
                { "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": parallelism }
            ],
            "edges": [ { "from": "in", "to": "op" }, { "from": "op", "to": "out" } ],
            "settings": settings
        })
    };
    let before = state(&server, &api).await;

    expect(
        "memory",
        api.post("/api/v1/jobs", &stream_job(1, json!({ "memory_limit_mb": 128 }))).await,
        429,
        &["max_memory_mb", "128", "64"],
    );
    expect(
        "cpu",
        api.post("/api/v1/jobs", &stream_job(1, json!({ "cpu_limit_ms": 1000 }))).await,
        429,
        &["max_cpu_ms", "1000", "500"],
    );
    expect(
        "subtasks",
        api.post("/api/v1/jobs", &stream_job(2, json!({}))).await,
        429,
        &["max_subtasks", "5", "3"],
    );
    let tokenizer = std::fs::read(common::guest_path("tokenizer")).unwrap();
    expect("module size", api.upload("tok", tokenizer.clone()).await, 413, &["max_module_bytes", "100000"]);
    let value = "v".repeat(1000);
    let records: Vec<Value> = (0..250).map(|_| json!({ "value": value })).collect();
    expect(
        "storage",
        api.post("/api/v1/streams/in/records", &json!({ "records": records })).await,
        429,
        &["max_storage_bytes", "200000"],
    );
    assert_eq!(state(&server, &api).await, before, "a refused request wrote something");

    // Within the quotas, a job runs; a second one is over max_jobs.
    let job = api.create_job(&stream_job(1, json!({ "memory_limit_mb": 64, "cpu_limit_ms": 500 }))).await;
    let (_, jobs) = api.get("/api/v1/jobs").await;
    expect("jobs", api.post("/api/v1/jobs", &stream_job(1, json!({}))).await, 429, &["max_jobs", "1"]);
    let (_, after) = api.get("/api/v1/jobs").await;
    assert_eq!(after, jobs);
    // A stopped job still counts; a cancelled one does not.
    let (status, v) = api.post_empty(&format!("/api/v1/jobs/{job}/cancel")).await;
    assert_eq!(status, 200, "{v}");
    let second = api.create_job(&stream_job(1, json!({}))).await;
    expect(
        "restart over max_jobs",
        api.post_empty(&format!("/api/v1/jobs/{job}/restart")).await,
        429,
        &["max_jobs"],
    );
    let (status, v) = api.post_empty(&format!("/api/v1/jobs/{second}/cancel")).await;
    assert_eq!(status, 200, "{v}");
}
