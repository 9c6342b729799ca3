//! Ids and names that name nothing, many of them malformed (traversal shapes as in Flink's
//! CVE-2020-17519, NUL, very long, unicode, invalid UTF-8), on every route that takes one: a
//! 4xx with a JSON error, and the tenant's running job untouched.

use crate::server;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use server::ADMIN;

use super::specs::linear;
use super::{expect, expect_4xx, setup, state};

const LONG: Duration = Duration::from_secs(120);

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
