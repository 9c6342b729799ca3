//! The storage quota means what it says: every byte a tenant makes the server keep is in
//! `usage.storage_bytes`, the figure follows the data directory's real growth, and writes that
//! would pass `max_storage_bytes` are refused before they happen (an append answers 429, a
//! job's stream sink and a checkpoint fail with "storage quota exceeded", savepoint imports are
//! cut off while they stream).
//!
//! What counts as the data directory's growth: the pages redb has allocated
//! (`allocated_pages × page_size` of `WriteTransaction::stats`, after durable commits let it
//! reuse the pages that earlier transactions freed), plus the files under
//! `modules/` (uploaded module bytes) and `tmp/` (uploads being spooled). Not the length of
//! `weir.redb`: redb grows its file in large steps and keeps freed pages for reuse, so the
//! file length moves in jumps that have nothing to do with what a tenant stores. Not
//! `module-cache/`: compiled modules are the server's cache (shared, rebuilt on demand).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weir::server::Server;

use crate::common::guest_path;
use crate::server::{Api, TestServer, files, wait_for};

/// Bytes redb uses for its trees, plus the files a tenant's data lives in outside the store.
async fn disk_used(server: &TestServer) -> u64 {
    let store = server.service().store.clone();
    let redb = tokio::task::spawn_blocking(move || {
        // Durable empty commits let redb reuse the pages earlier transactions freed.
        for _ in 0..2 {
            store.database().unwrap().begin_write().expect("write transaction").commit().expect("commit");
        }
        let txn = store.database().unwrap().begin_write().expect("write transaction");
        let stats = txn.stats().expect("stats");
        txn.abort().expect("abort");
        stats.allocated_pages() * stats.page_size() as u64
    })
    .await
    .expect("stats task");
    let outside: u64 =
        ["modules", "tmp"].iter().map(|d| files(&server.data_dir.join(d)).values().sum::<u64>()).sum();
    redb + outside
}

async fn usage(api: &Api) -> u64 {
    let (status, v) = api.get("/api/v1/tenant").await;
    assert_eq!(status, 200, "{v}");
    v["usage"]["storage_bytes"].as_u64().expect("storage_bytes")
}

/// Usage and disk now.
async fn measure(server: &TestServer, api: &Api) -> (u64, u64) {
    (usage(api).await, disk_used(server).await)
}

/// |Δusage − Δdisk| ≤ 10 % of Δdisk between two measurements.
fn assert_tracks(phase: &str, before: (u64, u64), after: (u64, u64)) {
    let usage = after.0 as i64 - before.0 as i64;
    let disk = after.1 as i64 - before.1 as i64;
    println!("{phase}: usage grew {usage} bytes, the data directory {disk} bytes");
    assert!(disk > 4 << 20, "{phase}: too little data to compare ({disk} bytes)");
    assert!(
        (usage - disk).abs() * 10 <= disk,
        "{phase}: usage grew {usage} bytes but the data directory {disk} bytes (more than 10 % apart)"
    );
}

/// A valid component of about `extra` more bytes than guest `name`: a custom section
/// (ignored by the engine) makes it distinct and large.
fn padded_module(name: &str, extra: usize, seed: u8) -> Vec<u8> {
    let mut bytes = std::fs::read(guest_path(name)).expect("guest built");
    let label = b"weir-test-padding";
    let mut payload = vec![label.len() as u8];
    payload.extend_from_slice(label);
    payload.extend((0..extra).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
    bytes.push(0); // custom section
    let mut len = payload.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            bytes.push(byte);
            break;
        }
        bytes.push(byte | 0x80);
    }
    bytes.extend_from_slice(&payload);
    bytes
}

/// Appends `batches` requests of 1,000 records of about 1 KiB to stream `name`.
async fn append_kib_records(api: &Api, name: &str, batches: usize) {
    for b in 0..batches {
        let records: Vec<Value> = (0..1000)
            .map(|i| json!({ "key": format!("k{}", (b * 1000 + i) % 97), "value": format!("{b}-{i}-{}", "x".repeat(1000)) }))
            .collect();
        let (status, v) =
            api.post(&format!("/api/v1/streams/{name}/records"), &json!({ "records": records })).await;
        assert_eq!(status, 201, "append: {v}");
    }
}

/// Words generator → stream sink `out` (exactly once: records are staged at each checkpoint,
/// every 100 ms, and committed when it completes).
fn generator_to_stream(name: &str, lines: u64, out: &str, restarts: u32) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "generator",
              "config": { "mode": "words", "lines": lines, "words_per_line": 64, "vocabulary": 100000, "seed": 11 } },
            { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": out, "partitions": 2 } }
        ],
        "edges": [ { "from": "lines", "to": "out", "partitioning": "forward" } ],
        "settings": {
            "checkpoint": { "interval_ms": 100, "tolerable_failures": 0 },
            "restart": { "attempts": restarts, "delay_ms": 100 }
        }
    })
}

/// Word count over many distinct words (large keyed state), checkpointed every 100 ms and
/// keeping 2 checkpoints, into a blackhole.
fn stateful(name: &str, lines: u64, tolerable: u32) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "generator",
              "config": { "mode": "words", "lines": lines, "words_per_line": 32, "vocabulary": 5000000, "seed": 5 } },
            { "id": "split", "kind": "operator", "module": "builtin:tokenizer" },
            { "id": "count", "kind": "operator", "module": "builtin:wordcount", "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "lines", "to": "split", "partitioning": "forward" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "rebalance" }
        ],
        "settings": {
            "checkpoint": { "interval_ms": 100, "retained": 2, "tolerable_failures": tolerable },
            "restart": { "attempts": 0 }
        }
    })
}

/// The ledger says what a full recount of the data says, for every tenant.
async fn assert_ledger_matches_recount(server: &Arc<Server>) {
    let store = server.store.clone();
    let (ledger, recount) = tokio::task::spawn_blocking(move || {
        (store.usage_ledger().expect("ledger"), weir::server::recount::recount(&store).expect("recount"))
    })
    .await
    .expect("recount task");
    for (tenant, counted) in &recount {
        assert_eq!(ledger.get(tenant).copied().unwrap_or(0), *counted, "ledger of tenant {tenant} drifted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn usage_tracks_the_growth_of_the_data_directory() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("grower").await;
    let start = measure(&server, &api).await;

    // Modules: three distinct uploads of about 2 MiB.
    let mut before = start;
    for seed in 0..3u8 {
        let (status, v) = api.upload(&format!("padded{seed}"), padded_module("counter", 2 << 20, seed)).await;
        assert_eq!(status, 201, "upload: {v}");
    }
    let after = measure(&server, &api).await;
    assert_tracks("modules", before, after);

    // Stream records appended over the API: about 12 MiB.
    before = after;
    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "appended", "partitions": 4 })).await;
    assert_eq!(status, 201, "{v}");
    append_kib_records(&api, "appended", 12).await;
    let after = measure(&server, &api).await;
    assert_tracks("stream appends", before, after);

    // Records a job writes to a stream: about 10 MiB.
    before = after;
    let job = api.create_job(&generator_to_stream("writer", 25_000, "written", 0)).await;
    let done = api.wait_status(&job, "finished", Duration::from_secs(120)).await;
    assert_eq!(done["status"], "finished", "{done}");
    let after = measure(&server, &api).await;
    assert_tracks("a job's stream sink", before, after);

    // Checkpoints: periodic, 2 retained, of a large keyed state.
    before = after;
    let job = api.create_job(&stateful("counter", 30_000, 0)).await;
    let done = api.wait_status(&job, "finished", Duration::from_secs(180)).await;
    assert_eq!(done["status"], "finished", "{done}");
    let (_, history) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    println!("checkpoints: {history}");
    let after = measure(&server, &api).await;
    assert_tracks("checkpoints", before, after);

    // Savepoints: one taken of the finished job, then its file imported twice.
    before = after;
    let (status, sp) = api.post(&format!("/api/v1/jobs/{job}/savepoints"), &json!({})).await;
    assert_eq!(status, 202, "{sp}");
    let sp_id = sp["id"].as_str().expect("savepoint id").to_string();
    wait_for("the savepoint completes", Duration::from_secs(60), || {
        let api = api.clone();
        let sp_id = sp_id.clone();
        async move { api.get(&format!("/api/v1/savepoints/{sp_id}")).await.1["status"] == "completed" }
    })
    .await;
    let file = api
        .request(reqwest::Method::GET, &format!("/api/v1/savepoints/{sp_id}/file"))
        .send()
        .await
        .expect("export")
        .bytes()
        .await
        .expect("export body");
    for _ in 0..2 {
        let started = Instant::now();
        let (status, v) = api
            .send_bytes(reqwest::Method::POST, "/api/v1/savepoints", "application/octet-stream", file.clone())
            .await;
        assert_eq!(status, 201, "import: {v}");
        println!("imported a {} byte savepoint file in {:?}", file.len(), started.elapsed());
    }
    let after = measure(&server, &api).await;
    assert_tracks("savepoints", before, after);

    assert_ledger_matches_recount(server.service()).await;
    assert!(files(&server.data_dir.join("tmp")).is_empty(), "temporary files left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_writing_to_a_stream_stops_at_the_quota_and_appends_answer_429() {
    let server = TestServer::start(|_| {}).await;
    let limit = 3u64 << 20;
    let (_, api) = server.tenant_with("filler", Some(json!({ "max_storage_bytes": limit }))).await;
    let job = api.create_job(&generator_to_stream("filler", 10_000_000, "flood", 0)).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let failed = loop {
        let (_, v) = api.get(&format!("/api/v1/jobs/{job}")).await;
        if v["status"] == "failed" {
            break v;
        }
        println!("status {} usage {}", v["status"], usage(&api).await);
        assert!(Instant::now() < deadline, "the job did not fail: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(error.contains("storage quota exceeded"), "the job failed for another reason: {failed}");
    let used = usage(&api).await;
    assert!(used <= limit, "the tenant stores {used} bytes, over its limit of {limit}");

    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "more", "partitions": 1 })).await;
    assert_eq!(status, 201, "{v}");
    // About 1 KiB a record, a few hundred more than the room left (how close to the limit the
    // job stopped depends on the size of the write that failed).
    let over = (limit - used) / 1000 + 300;
    let records: Vec<Value> =
        (0..over).map(|i| json!({ "value": format!("{i}-{}", "y".repeat(1000)) })).collect();
    let (status, v) = api.post("/api/v1/streams/more/records", &json!({ "records": records })).await;
    assert_eq!(status, 429, "an append of {over} records over the quota ({used} of {limit} bytes used)");
    assert!(v["error"].as_str().unwrap_or_default().contains("max_storage_bytes"), "{v}");
    assert_ledger_matches_recount(server.service()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_checkpoint_over_the_quota_fails_the_job_with_the_reason() {
    let server = TestServer::start(|_| {}).await;
    let limit = 2u64 << 20;
    let (_, api) = server.tenant_with("stateful", Some(json!({ "max_storage_bytes": limit }))).await;
    let job = api.create_job(&stateful("big-state", 50_000_000, 0)).await;
    let failed = api.wait_status(&job, "failed", Duration::from_secs(120)).await;
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(error.contains("storage quota exceeded"), "the job failed for another reason: {failed}");
    let (_, history) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert!(
        history.to_string().contains("storage quota exceeded"),
        "no checkpoint failed on the quota: {history}"
    );
    let used = usage(&api).await;
    assert!(used <= limit, "the tenant stores {used} bytes, over its limit of {limit}");
    assert_ledger_matches_recount(server.service()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_oversized_savepoint_imports_are_refused_and_leave_nothing() {
    let server = TestServer::start(|c| c.max_request_bytes = 8 << 20).await;
    let (_, a) = server.tenant("bystander").await;
    let (_, b) = server.tenant_with("importer", Some(json!({ "max_storage_bytes": 1u64 << 20 }))).await;
    let start = usage(&b).await;
    // Garbage, larger than B's quota (cut off by the quota) or than the request limit.
    let seed = 0x5eed_u64;
    println!("seed {seed}");
    let file: Vec<u8> = (0..(4usize << 20)).map(|i| ((i as u64).wrapping_mul(seed) >> 7) as u8).collect();
    let file = bytes::Bytes::from(file);
    let started = Instant::now();
    let imports: Vec<_> = (0..16)
        .map(|i| {
            // A connection of its own each: the server closes one whose upload it cut off.
            let (b, file) = (b.fresh(), if i % 2 == 0 { file.clone() } else { file.slice(..) });
            tokio::spawn(async move {
                let request = b
                    .request(reqwest::Method::POST, "/api/v1/savepoints")
                    .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                    .body(file);
                // The server answers as soon as the upload is over a limit and closes the
                // connection: the client may see that as an error while it is still sending.
                match request.send().await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        (status, response.text().await.unwrap_or_default())
                    }
                    Err(e) => (0, e.to_string()),
                }
            })
        })
        .collect();
    let (status, v) = a.get("/api/v1/tenant").await;
    assert_eq!(status, 200, "the other tenant's request: {v}");
    for import in imports {
        let (status, v) = import.await.expect("import task");
        assert!(status == 429 || status == 413 || status == 0, "an oversized import answered {status}: {v}");
        println!("import: {status} {v}");
    }
    let took = started.elapsed();
    println!("16 imports refused in {took:?}");
    assert!(took < Duration::from_secs(30), "refusing the imports took {took:?}");
    wait_for("the reservations are given back", Duration::from_secs(10), || {
        let b = b.fresh();
        async move { usage(&b).await == start }
    })
    .await;
    assert!(files(&server.data_dir.join("tmp")).is_empty(), "temporary files left");
    let (status, _) = a.get("/api/v1/streams").await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_directory_without_a_ledger_is_recounted_at_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (token, counted) = {
        let server = TestServer::start_in(dir.path(), |_| {}).await;
        let (_, api) = server.tenant("old").await;
        let (status, v) = api.post("/api/v1/streams", &json!({ "name": "s", "partitions": 2 })).await;
        assert_eq!(status, 201, "{v}");
        append_kib_records(&api, "s", 2).await;
        let counted = usage(&api).await;
        assert!(counted > 2_000_000, "{counted}");
        (api.token().expect("token").to_string(), counted)
    };
    // Make it a data directory of a version without the ledger: no marker, no ledger rows.
    let db = loop {
        match redb::Database::open(dir.path().join("weir.redb")) {
            Ok(db) => break db,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    let txn = db.begin_write().expect("write");
    {
        let counters: redb::TableDefinition<'_, &str, u64> = redb::TableDefinition::new("weir.counters");
        txn.open_table(counters).expect("counters").remove("usage_ledger_version").expect("remove");
        let usage: redb::TableDefinition<'_, &str, u64> = redb::TableDefinition::new("weir.usage");
        txn.open_table(usage).expect("usage").retain(|_, _| false).expect("clear");
    }
    txn.commit().expect("commit");
    drop(db);

    let server = TestServer::start_in(dir.path(), |_| {}).await;
    let api = server.client(&token);
    assert_eq!(usage(&api).await, counted, "the recount at open differs from the ledger kept before");
}
