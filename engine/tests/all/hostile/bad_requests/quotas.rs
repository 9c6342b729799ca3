//! Requests over a tenant's quotas (memory, CPU, subtasks, module size, storage, jobs)
//! answer 413 or 429 with an error that names the quota and its value, and write nothing.

use crate::common;
use crate::server;

use serde_json::{Value, json};
use server::TestServer;

use super::{expect, state};

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

/// The bytes a tenant's jobs' channels may hold together (channels ×
/// `channel_capacity_bytes`) are held to its `max_buffered_bytes`: the host memory its data
/// in flight may take. Its usage shows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_channels_of_a_tenants_jobs_are_held_to_its_buffered_bytes() {
    const MIB: u64 = 1 << 20;
    let server = TestServer::start(|_| {}).await;
    let quotas = json!({ "max_jobs": 8, "max_buffered_bytes": 40 * MIB });
    let (_, api) = server.tenant_with("buffers", Some(quotas)).await;
    api.post("/api/v1/streams", &json!({ "name": "in", "partitions": 1 })).await;
    // Two channels (in → op → out, forward): 16 MiB at the default 8 MiB each.
    let job = |name: &str, settings: Value| {
        json!({
            "name": name,
            "nodes": [
                { "id": "in", "kind": "source", "connector": "stream", "config": { "stream": "in", "follow": true } },
                { "id": "op", "kind": "operator", "module": "builtin:tokenizer" },
                { "id": "out", "kind": "sink", "connector": "blackhole" }
            ],
            "edges": [ { "from": "in", "to": "op" }, { "from": "op", "to": "out" } ],
            "settings": settings
        })
    };
    let buffered = |v: &Value| v["usage"]["buffered_bytes"].as_u64().unwrap();
    api.create_job(&job("a", json!({}))).await;
    api.create_job(&job("b", json!({}))).await;
    let (_, tenant) = api.get("/api/v1/tenant").await;
    assert_eq!(buffered(&tenant), 32 * MIB, "{tenant}");
    assert_eq!(tenant["quotas"]["max_buffered_bytes"], 40 * MIB);
    expect(
        "a third job of 16 MiB",
        api.post("/api/v1/jobs", &job("c", json!({}))).await,
        429,
        &["max_buffered_bytes", "16777216", "33554432", "41943040"],
    );
    // Smaller channels fit.
    api.create_job(&job("d", json!({ "channel_capacity_bytes": 2 * MIB }))).await;
    let (_, tenant) = api.get("/api/v1/tenant").await;
    assert_eq!(buffered(&tenant), 36 * MIB, "{tenant}");
}
