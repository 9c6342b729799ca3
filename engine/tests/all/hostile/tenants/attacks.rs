//! Tenant B's attacks. Each one asserts what B must get: a clear 4xx, or a failed job whose
//! error names the limit.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::guest_path;
use crate::server::Api;

/// How long B's jobs may take to fail.
const LONG: Duration = Duration::from_secs(120);

/// What B has set up before the attacks.
pub struct B {
    pub api: Api,
    /// The server's base URL.
    pub url: String,
    /// A completed savepoint of B's word count (example modules, schema version 0).
    pub savepoint: String,
    /// Its exported file.
    pub savepoint_file: Vec<u8>,
    /// B's storage quota.
    pub max_storage_bytes: u64,
}

/// generator → `module` (configured by `config`) → blackhole, with `settings`.
fn job(name: &str, module: &str, config: Value, settings: Value) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": 100, "batch_size": 10 } },
            { "id": "op", "kind": "operator", "module": module, "config": config },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "op" }, { "from": "op", "to": "out" } ],
        "settings": settings
    })
}

/// No restart, no checkpoints, and the given wall limit.
fn settings(wall_limit_ms: u64) -> Value {
    json!({
        "cpu_limit_ms": 1000,
        "wall_limit_ms": wall_limit_ms,
        "memory_limit_mb": 64,
        "restart": { "attempts": 0, "delay_ms": 1000 },
        "checkpoint": { "interval_ms": null }
    })
}

/// Waits until B's job `id` fails; asserts its error says each of `says`.
async fn fails_saying(b: &B, id: &str, says: &[&str]) {
    let job = b.api.wait_job(id, LONG, |j| j["status"] == "failed").await;
    let error = job["error"].as_str().unwrap_or_default().to_string();
    eprintln!("    B's job failed: {error}");
    for s in says {
        assert!(error.contains(s), "the error should say `{s}`: {error}");
    }
}

/// Asserts a 4xx whose error says each of `says`.
fn refused(what: &str, (status, v): (u16, Value), says: &[&str]) {
    eprintln!("    {what}: {status} {v}");
    assert!((400..500).contains(&status), "{what}: expected a 4xx, got {status}: {v}");
    let error = v["error"].as_str().unwrap_or_default();
    for s in says {
        assert!(error.contains(s), "{what}: the error should say `{s}`: {error}");
    }
}

/// A guest sleeping in `process` is stopped at its wall-time limit.
pub async fn sleep_in_process(b: &B) {
    let id =
        b.api.create_job(&job("sleep-process", "faulty", json!({ "sleep_at": 5 }), settings(2000))).await;
    fails_saying(b, &id, &["took longer than its wall-time limit of 2000 ms in one process call"]).await;
}

/// A guest sleeping in `describe`: as a job, and when starting from a savepoint (the
/// request holds no lock A needs while the guest sleeps).
pub async fn sleep_in_describe(b: &B) {
    let id = b.api.create_job(&job("sleep-describe", "slow-describe", json!({}), settings(2000))).await;
    fails_saying(b, &id, &["took longer than its wall-time limit of 2000 ms in one describe call"]).await;
    let spec = b_wordcount("sleep-describe-restore", "slow-describe", 3000);
    let answer = b.api.post(&format!("/api/v1/jobs?from_savepoint={}", b.savepoint), &spec).await;
    refused("from_savepoint with a sleeping describe", answer, &["wall-time limit of 3000 ms", "describe"]);
}

/// A guest sleeping in `restore` (its state migration) while a job starts from a savepoint.
pub async fn sleep_in_restore(b: &B) {
    let spec = b_wordcount("sleep-restore", "slow-migrate", 5000);
    let answer = b.api.post(&format!("/api/v1/jobs?from_savepoint={}", b.savepoint), &spec).await;
    refused("from_savepoint with a sleeping restore", answer, &["wall-time limit of 5000 ms", "restore"]);
}

/// B's word count over its stream `b-lines` with `count` as the counting module.
pub fn b_wordcount(name: &str, count: &str, wall_limit_ms: u64) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "stream", "config": { "stream": "b-lines", "follow": true } },
            { "id": "split", "kind": "operator", "module": "tokenizer" },
            { "id": "count", "kind": "operator", "module": count },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "lines", "to": "split" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out" }
        ],
        "settings": {
            "cpu_limit_ms": 1000,
            "wall_limit_ms": wall_limit_ms,
            "restart": { "attempts": 0, "delay_ms": 1000 },
            "checkpoint": { "interval_ms": 200 }
        }
    })
}

/// A guest that tries to open a socket traps: wasi:sockets is not linked.
pub async fn socket(b: &B) {
    let id = b.api.create_job(&job("socket", "faulty", json!({ "socket_at": 5 }), settings(2000))).await;
    fails_saying(b, &id, &["trapped", "wasi:sockets"]).await;
}

/// A guest registering timers without bound fails at its instance's limits.
pub async fn timer_flood(b: &B) {
    let id = b.api.create_job(&job("timers", "faulty", json!({ "timers_at": 5 }), settings(10_000))).await;
    fails_saying(b, &id, &["registered more timers than its instance may hold"]).await;
}

/// Specs that would amplify memory are refused at submission.
pub async fn amplifying_specs(b: &B) {
    let mut dup = job("dup", "faulty", json!({}), settings(2000));
    let edge = dup["edges"][0].clone();
    dup["edges"].as_array_mut().unwrap().extend([edge.clone(), edge]);
    refused("duplicate edges", b.api.post("/api/v1/jobs", &dup).await, &["listed more than once"]);

    let mut big = job("capacity", "faulty", json!({}), settings(2000));
    big["settings"]["channel_capacity"] = json!(65536);
    refused("channel_capacity 65536", b.api.post("/api/v1/jobs", &big).await, &["channel_capacity"]);

    let mut batch = job("batch", "faulty", json!({}), settings(2000));
    batch["nodes"][0]["config"]["batch_size"] = json!(1_000_000);
    refused("batch_size 1000000", b.api.post("/api/v1/jobs", &batch).await, &["batch_size"]);

    let mut words = job("words", "faulty", json!({}), settings(2000));
    words["nodes"][0]["config"] = json!({ "mode": "words", "lines": 10, "words_per_line": 100_000_000 });
    refused("words_per_line 1e8", b.api.post("/api/v1/jobs", &words).await, &["words_per_line"]);

    // Intervals and delays below the server's minimum are raised to it.
    let mut often = job("often", "faulty", json!({}), settings(2000));
    often["settings"]["checkpoint"] = json!({ "interval_ms": 1 });
    often["settings"]["restart"] = json!({ "attempts": 3, "delay_ms": 0 });
    let (status, v) = b.api.post("/api/v1/jobs", &often).await;
    assert_eq!(status, 201, "{v}");
    let raised = &v["spec"]["settings"];
    assert_eq!(raised["checkpoint"]["interval_ms"], 100, "{raised}");
    assert_eq!(raised["restart"]["delay_ms"], 100, "{raised}");
    let (status, v) = b.api.post_empty(&format!("/api/v1/jobs/{}/cancel", v["id"].as_str().unwrap())).await;
    assert!(status < 300, "{status} {v}");

    let mut restarts = job("restarts", "faulty", json!({}), settings(2000));
    restarts["settings"]["restart"] = json!({ "attempts": 1_000_000_000u64, "delay_ms": 0 });
    refused("a billion restarts", b.api.post("/api/v1/jobs", &restarts).await, &["restart"]);

    let mut wide = job("wide", "faulty", json!({}), settings(2000));
    wide["nodes"][1]["parallelism"] = json!(u32::MAX);
    refused("parallelism u32::MAX", b.api.post("/api/v1/jobs", &wide).await, &[]);
}

/// B's storage usage.
pub async fn usage(b: &B) -> u64 {
    let (status, v) = b.api.get("/api/v1/tenant").await;
    assert_eq!(status, 200, "{v}");
    v["usage"]["storage_bytes"].as_u64().expect("storage_bytes")
}

/// A generator writing into a stream stops at B's storage quota.
pub async fn stream_until_quota(b: &B) {
    let (status, v) = b.api.post("/api/v1/streams", &json!({ "name": "flood", "partitions": 1 })).await;
    assert_eq!(status, 201, "{v}");
    let spec = json!({
        "name": "flood",
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "words", "lines": 1_000_000_000u64, "words_per_line": 64 } },
            { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": "flood" } }
        ],
        "edges": [ { "from": "src", "to": "out" } ],
        "settings": { "restart": { "attempts": 0, "delay_ms": 1000 }, "checkpoint": { "interval_ms": 200 } }
    });
    let id = b.api.create_job(&spec).await;
    fails_saying(b, &id, &["storage quota exceeded"]).await;
    let used = usage(b).await;
    eprintln!("    B stores {used} of {} bytes", b.max_storage_bytes);
    assert!(used <= b.max_storage_bytes, "B stores {used} bytes, over its quota of {}", b.max_storage_bytes);
    // An append over what is left of the quota answers 429.
    let left = b.max_storage_bytes - used;
    let records: Vec<Value> = (0..=left / 10_000).map(|_| json!({ "value": "x".repeat(10_000) })).collect();
    let (status, v) = b.api.post("/api/v1/streams/flood/records", &json!({ "records": records })).await;
    assert_eq!(status, 429, "an append over the quota: {v}");
}

/// 16 concurrent savepoint imports, each larger than B's room and than a request may be.
pub async fn oversized_imports(b: &B) {
    let before = usage(b).await;
    let size: usize = 80 << 20;
    let mut imports = Vec::new();
    for i in 0..16 {
        let api = b.api.fresh();
        let mut file = b.savepoint_file.clone();
        file.resize(size, i as u8);
        imports.push(tokio::spawn(async move {
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                file.chunks(1 << 20).map(|c| Ok(c.to_vec())).collect();
            let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
            let t = Instant::now();
            let answer = api
                .request(reqwest::Method::POST, "/api/v1/savepoints")
                .header("content-type", "application/octet-stream")
                .body(body)
                .send()
                .await;
            let status = match answer {
                Ok(r) => r.status().as_u16(),
                // The server may answer and close before the client has sent everything.
                Err(e) => {
                    eprintln!("    import {i}: the connection ended early: {e}");
                    0
                }
            };
            (status, t.elapsed())
        }));
    }
    let mut statuses = Vec::new();
    for i in imports {
        let (status, took) = i.await.unwrap();
        assert!(status == 0 || status == 413 || status == 429, "an oversized import answered {status}");
        statuses.push((status, took));
    }
    eprintln!("    imports: {statuses:?}");
    assert!(statuses.iter().any(|(s, _)| *s != 0), "no import got an answer");
    let after = usage(b).await;
    assert_eq!(after, before, "the refused imports left storage behind");
    let (_, list) = b.api.get("/api/v1/savepoints").await;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1), "only B's own savepoint: {list}");
}

/// A module-upload storm: distinct components (a custom section with a counter appended),
/// uploaded at once. Each answer is a success or a clear 429; none is a 5xx.
pub async fn upload_storm(b: &B) {
    let base = std::fs::read(guest_path("tokenizer")).unwrap();
    let mut uploads = Vec::new();
    for i in 0..24u32 {
        let api = b.api.fresh();
        let mut bytes = base.clone();
        append_custom_section(&mut bytes, "storm", &i.to_le_bytes());
        uploads.push(tokio::spawn(async move { api.upload(&format!("storm-{i}"), bytes).await }));
    }
    let (mut ok, mut busy) = (Vec::new(), 0);
    for u in uploads {
        let (status, v) = u.await.unwrap();
        match status {
            200 | 201 => ok.push(v["id"].as_str().unwrap().to_string()),
            429 => {
                assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
                busy += 1;
            }
            _ => panic!("an upload of the storm answered {status}: {v}"),
        }
    }
    eprintln!("    uploads: {} accepted, {busy} refused as busy", ok.len());
    assert!(busy > 0, "24 concurrent compiles of one tenant were all accepted");
    for id in ok {
        let (status, v) = b.api.delete(&format!("/api/v1/modules/{id}")).await;
        assert!(status == 204 || status == 200, "{status} {v}");
    }
}

/// Appends a custom section (id 0) named `name` to a Wasm binary (a component too).
fn append_custom_section(wasm: &mut Vec<u8>, name: &str, payload: &[u8]) {
    let mut body = Vec::new();
    leb128(&mut body, name.len() as u64);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    wasm.push(0);
    leb128(wasm, body.len() as u64);
    wasm.extend_from_slice(&body);
}

fn leb128(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// 1,000 connections that send half a request head and stall. The server closes them after
/// its header timeout (`header_timeout`), while A goes on.
pub async fn slow_connections(b: &B, header_timeout: Duration) {
    let address = b.url.strip_prefix("http://").unwrap().to_string();
    let mut connections = Vec::new();
    for _ in 0..1000 {
        match tokio::net::TcpStream::connect(&address).await {
            Ok(mut c) => {
                // A refused write means the server closed it already: also fine.
                let _ = c.write_all(b"GET /api/v1/jobs HTTP/1.1\r\nHost: weir\r\nX-Slow: ").await;
                connections.push(c);
            }
            // A server at its connection limit may refuse at once.
            Err(e) => eprintln!("    a slow connection was refused: {e}"),
        }
    }
    let opened = connections.len();
    eprintln!("    {opened} slow connections open");
    let deadline = Instant::now() + header_timeout + Duration::from_secs(30);
    let mut closed = 0;
    for mut c in connections {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut buf = [0u8; 512];
        // Whatever the server sends (a 408, or nothing), it must end the connection.
        loop {
            match tokio::time::timeout(left, c.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed += 1;
                    break;
                }
                Ok(Ok(_)) => continue,
                Err(_) => break,
            }
        }
    }
    assert_eq!(closed, opened, "the server kept slow connections open past its header timeout");
}
