//! Request bodies that are wrong: uploads that are not operator components (broken
//! multipart, files that are not components or of another world, path tricks in file names —
//! the shape of Flink's CVE-2020-17518 upload), requests over `max_request_bytes`, and bad
//! JSON on every route that takes a body.

use crate::common;
use crate::server;

use reqwest::Method;
use serde_json::{Value, json};
use server::{ADMIN, Api};

use super::{MAX_REQUEST, expect, expect_4xx, setup, state};

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
