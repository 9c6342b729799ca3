//! Operators written in Python, JavaScript and C, uploaded through the API and run in jobs
//! beside the Rust examples (issue 7). For each language:
//!
//! - the word count, Nexmark q1 and q17 give the same output as the Rust ones, record for
//!   record, and so does q1 on the language SDK's per-record API where there is one (Python's
//!   and JavaScript's q1 use their batch API);
//! - a server killed with SIGKILL at seeded random points, twice, still gives exactly-once
//!   output: q17 equals the failure-free Rust run record for record, and every word's counts
//!   rise strictly to their totals;
//! - the word count is savepointed and restored, then savepointed again and restored into the
//!   *Rust* word count (the state layout is the same in every language);
//! - components built against an older or a different world are refused at upload, naming
//!   the missing export or the unknown import.
//!
//! The components come from `common::languages::build` (each language's `build.sh`, once per
//! source change). `WEIR_LANG_SEED` replays a failing trial.

use crate::common;
use crate::server;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};
use server::wordcount::{check_exactly_once, lines, push, wait_output};
use server::{Api, TestServer, wait_for};

const LONG: Duration = Duration::from_secs(300);
/// Bids of the q17 jobs.
const BIDS: u64 = 20_000;

fn component(dir: &Path, name: &str) -> Vec<u8> {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------
// Jobs and their output.

async fn upload(api: &Api, name: &str, bytes: Vec<u8>) -> String {
    let (status, v) = api.upload(name, bytes).await;
    assert!(status == 201 || status == 200, "upload {name}: {status} {v}");
    v["id"].as_str().unwrap().to_string()
}

/// Bounded word count without checkpoints, so batches are cut the same way in every run:
/// stream `lines` (read to its end) → tokenizer (parallelism 1) → `count` (2, hash) →
/// stream `out`.
fn bounded_wordcount(name: &str, tokenizer: &str, count: &str, out: &str) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "stream", "config": { "stream": "lines" } },
            { "id": "split", "kind": "operator", "module": tokenizer },
            { "id": "count", "kind": "operator", "module": count, "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "stream", "parallelism": 2,
              "config": { "stream": out, "partitions": 2 } }
        ],
        "edges": [
            { "from": "lines", "to": "split", "partitioning": "forward" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": null } }
    })
}

/// Nexmark bids keyed by auction → q17 (parallelism 2, hash) → stream `out`; paced at
/// `rate` bids/s when given, checkpoints every 200 ms.
fn q17(name: &str, module: &str, out: &str, rate: Option<u64>) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "bids", "kind": "source", "connector": "nexmark",
              "config": { "event_type": "bid", "count": BIDS, "key": "auction", "records_per_second": rate } },
            { "id": "q17", "kind": "operator", "module": module, "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "stream", "parallelism": 2,
              "config": { "stream": out, "partitions": 2 } }
        ],
        "edges": [
            { "from": "bids", "to": "q17", "partitioning": "hash" },
            { "from": "q17", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": 200 } }
    })
}

/// Nexmark bids without a key → q1 (parallelism 1) → stream `out` (one partition): the
/// output order is the input order.
fn q1(name: &str, module: &str, out: &str) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "bids", "kind": "source", "connector": "nexmark",
              "config": { "event_type": "bid", "count": BIDS } },
            { "id": "q1", "kind": "operator", "module": module },
            { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": out, "partitions": 1 } }
        ],
        "edges": [
            { "from": "bids", "to": "q1", "partitioning": "forward" },
            { "from": "q1", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": 200 } }
    })
}

/// Stream `name` as each key's values in the order they were written.
async fn per_key(api: &Api, name: &str) -> BTreeMap<String, Vec<Value>> {
    let mut records = api.read_all(name).await;
    records.sort_by_key(|(p, o, _, _)| (*p, *o));
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (_, _, key, value) in records {
        out.entry(key.to_string()).or_default().push(value);
    }
    out
}

async fn committed(api: &Api, name: &str) -> usize {
    let (status, info) = api.get(&format!("/api/v1/streams/{name}")).await;
    if status == 404 {
        return 0;
    }
    assert_eq!(status, 200, "{info}");
    info["end_offsets"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap() as usize).sum()
}

/// Runs a bounded job to its end.
async fn run_to_end(api: &Api, spec: &Value) {
    let job = api.create_job(spec).await;
    let j = api.wait_job(&job, LONG, |j| j["status"] != "running").await;
    assert_eq!(j["status"], "finished", "{j}");
}

/// Two outputs are equal record for record: the same keys, and each key's values in the
/// same order.
fn assert_same(what: &str, expected: &BTreeMap<String, Vec<Value>>, seen: &BTreeMap<String, Vec<Value>>) {
    assert_eq!(expected.len(), seen.len(), "{what}: keys differ");
    for (key, values) in expected {
        let got = seen.get(key).unwrap_or_else(|| panic!("{what}: key {key} missing"));
        if got != values {
            let at = values.iter().zip(got).position(|(a, b)| a != b).unwrap_or(values.len().min(got.len()));
            panic!(
                "{what}: key {key} differs at record {at} of {} (seen {}): expected {:?}, seen {:?}",
                values.len(),
                got.len(),
                values.get(at),
                got.get(at)
            );
        }
    }
}

/// Takes a `stop` savepoint of `job` and waits for it; returns its id.
async fn stop_savepoint(api: &Api, job: &str) -> String {
    let (status, sp) = api.post(&format!("/api/v1/jobs/{job}/savepoints"), &json!({ "mode": "stop" })).await;
    assert_eq!(status, 202, "{sp}");
    let id = sp["id"].as_str().unwrap().to_string();
    wait_for(&format!("savepoint {id}"), LONG, || async {
        let (_, now) = api.get(&format!("/api/v1/savepoints/{id}")).await;
        assert_ne!(now["status"], "failed", "{now}");
        now["status"] == "completed"
    })
    .await;
    api.wait_status(job, "stopped", LONG).await;
    id
}

// ---------------------------------------------------------------------------------------
// The test of one language.

async fn language(lang: &str, default_seed: u64) {
    let seed = std::env::var("WEIR_LANG_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default_seed);
    eprintln!("{lang}: seed {seed} (replay with WEIR_LANG_SEED={seed})");
    let mut rng = SmallRng::seed_from_u64(seed);
    let built = common::languages::build(lang);
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn_process(dir.path());
    let (_, api) = server.tenant("acme").await;

    let tokenizer = api.upload_guest("tokenizer").await;
    let rust_count = api.upload_guest("wordcount").await;
    let rust_q17 = api.upload_guest("nexmark-q17").await;
    let count = upload(&api, &format!("wordcount-{lang}"), component(&built, "wordcount")).await;
    let q17_module = upload(&api, &format!("nexmark-q17-{lang}"), component(&built, "nexmark-q17")).await;

    // 1. The same output as the Rust operators, record for record.
    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    assert_eq!(status, 201, "{v}");
    push(&api, lines(0, 1500)).await;
    run_to_end(&api, &bounded_wordcount("wc-rust", &tokenizer, &rust_count, "wc-rust")).await;
    run_to_end(&api, &bounded_wordcount(&format!("wc-{lang}"), &tokenizer, &count, "wc-lang")).await;
    let reference = per_key(&api, "wc-rust").await;
    assert_eq!(reference.len(), 31, "the words of the input");
    assert_same(&format!("{lang} word count vs Rust"), &reference, &per_key(&api, "wc-lang").await);

    run_to_end(&api, &q17("q17-rust", &rust_q17, "q17-rust", None)).await;
    run_to_end(&api, &q17(&format!("q17-{lang}"), &q17_module, "q17-lang", None)).await;
    let q17_reference = per_key(&api, "q17-rust").await;
    assert_eq!(q17_reference.values().map(Vec::len).sum::<usize>(), BIDS as usize);
    assert_same(&format!("{lang} q17 vs Rust"), &q17_reference, &per_key(&api, "q17-lang").await);

    // Nexmark q1; where the language has a second q1 on its per-record API (the first one
    // on its batch API), that one too: all equal.
    let rust_q1 = api.upload_guest("nexmark-q1").await;
    run_to_end(&api, &q1("q1-rust", &rust_q1, "q1-rust")).await;
    let q1_reference = per_key(&api, "q1-rust").await;
    assert_eq!(q1_reference.values().map(Vec::len).sum::<usize>(), BIDS as usize);
    for variant in ["nexmark-q1", "nexmark-q1-records"] {
        if variant.ends_with("records") && !built.join(format!("{variant}.wasm")).is_file() {
            continue;
        }
        let module = upload(&api, &format!("{variant}-{lang}"), component(&built, variant)).await;
        run_to_end(&api, &q1(&format!("{variant}-{lang}"), &module, &format!("{variant}-{lang}"))).await;
        let seen = per_key(&api, &format!("{variant}-{lang}")).await;
        assert_same(&format!("{lang} {variant} vs Rust"), &q1_reference, &seen);
    }

    // 2. SIGKILL twice at seeded random points, with a live word count and a paced q17.
    let (_, api2) = server.tenant("chaos").await;
    let tokenizer2 = api2.upload_guest("tokenizer").await;
    let count2 = upload(&api2, &format!("wordcount-{lang}"), component(&built, "wordcount")).await;
    let q17_2 = upload(&api2, &format!("nexmark-q17-{lang}"), component(&built, "nexmark-q17")).await;
    let (status, v) = api2.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    assert_eq!(status, 201, "{v}");
    let wc_job =
        api2.create_job(&server::wordcount::spec(&format!("live-{lang}"), &tokenizer2, &count2)).await;
    let q17_job = api2.create_job(&q17(&format!("paced-{lang}"), &q17_2, "q17-out", Some(2_500))).await;
    let mut pushed = 0;
    let mut api2 = api2;
    for kill in 0..2 {
        push(&api2, lines(pushed, pushed + 300)).await;
        pushed += 300;
        // Kill once q17 has committed a random number of records more than it had: a
        // point in the middle of the run (checked after the restart).
        let at = committed(&api2, "q17-out").await + rng.gen_range(1_000..6_000);
        eprintln!("{lang}: kill {kill} once q17 committed {at} records");
        wait_for(&format!("{at} q17 records"), LONG, || async { committed(&api2, "q17-out").await >= at })
            .await;
        server.kill9();
        server = TestServer::spawn_process(dir.path());
        api2 = api2.at(&server.url);
        let (_, j) = api2.get(&format!("/api/v1/jobs/{q17_job}")).await;
        assert_eq!(j["status"], "running", "q17 was killed mid-run and resumed: {j}");
        assert!(committed(&api2, "q17-out").await < BIDS as usize, "q17 was killed before its end");
    }
    push(&api2, lines(pushed, pushed + 300)).await;
    pushed += 300;
    let j = api2.wait_job(&q17_job, LONG, |j| j["status"] != "running").await;
    assert_eq!(j["status"], "finished", "{j}");
    assert_same(
        &format!("{lang} q17 with two SIGKILLs vs the failure-free Rust run"),
        &q17_reference,
        &per_key(&api2, "q17-out").await,
    );
    wait_output(&api2, pushed).await;
    check_exactly_once(&api2, pushed).await;

    // 3. Savepoint and restore: into the same module, then into the Rust word count.
    let sp = stop_savepoint(&api2, &wc_job).await;
    let spec = server::wordcount::spec(&format!("restored-{lang}"), &tokenizer2, &count2);
    let (status, job) = api2.post(&format!("/api/v1/jobs?from_savepoint={sp}"), &spec).await;
    assert_eq!(status, 201, "{job}");
    let node = job["restored_from"]["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "count").unwrap();
    assert_eq!(node["restored"], true, "{job}");
    push(&api2, lines(pushed, pushed + 300)).await;
    pushed += 300;
    wait_output(&api2, pushed).await;
    let sp2 = stop_savepoint(&api2, job["id"].as_str().unwrap()).await;
    let rust_count2 = api2.upload_guest("wordcount").await;
    let spec = server::wordcount::spec(&format!("to-rust-{lang}"), &tokenizer2, &rust_count2);
    let (status, job) = api2.post(&format!("/api/v1/jobs?from_savepoint={sp2}"), &spec).await;
    assert_eq!(status, 201, "the Rust word count restores the {lang} state: {job}");
    push(&api2, lines(pushed, pushed + 300)).await;
    pushed += 300;
    wait_output(&api2, pushed).await;
    check_exactly_once(&api2, pushed).await;
    server.kill9();
}

/// Each wrong-world component is refused at upload with a message naming what is missing.
async fn wrong_worlds(lang: &str) {
    let built = common::languages::build(lang);
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let cases = [
        (
            "v0.1.0",
            "does not export `weir:operator/operator@0.2.0` (it exports ",
            "weir:operator/operator@0.1.0); it was built against version 0.1.0 of the contract: rebuild it",
        ),
        ("incomplete", "instance export `weir:operator/operator@0.2.0` does not have export `snapshot`", ""),
        ("foreign-import", "it imports `weir:operator/cache@0.2.0`, which Weir does not provide", ""),
    ];
    for (world, names, hint) in cases {
        let bytes = component(&built.join("wrong-worlds"), world);
        let (status, v) = api.upload(&format!("{lang}-{world}"), bytes).await;
        assert_eq!(status, 422, "{lang} {world}: {v}");
        let message = v["error"].as_str().unwrap_or_default();
        assert!(message.contains("does not implement the weir:operator@0.2.0 operator world"), "{message}");
        assert!(message.contains(names), "{lang} {world}: {message}");
        assert!(message.contains(hint), "{lang} {world}: {message}");
    }
    let (_, modules) = api.get("/api/v1/modules").await;
    assert_eq!(modules["data"], json!([]), "a refused upload stores nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_operators_match_rust_survive_kills_and_restore() {
    language("python", 71).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_operators_match_rust_survive_kills_and_restore() {
    language("js", 72).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_operators_match_rust_survive_kills_and_restore() {
    language("c", 73).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_components_of_other_worlds_are_refused() {
    wrong_worlds("python").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_components_of_other_worlds_are_refused() {
    wrong_worlds("js").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_components_of_other_worlds_are_refused() {
    wrong_worlds("c").await;
}
