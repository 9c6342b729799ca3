//! Savepoints over the API: a module upgrade through a drained savepoint, rescaling
//! 2 → 3 → 1, an incompatible state schema, a savepoint moved to a second server, a
//! savepoint outliving checkpoint retention, state inspection, bad input, and savepoints and
//! modules kept in a real S3 server.

use crate::server;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use server::wordcount::{expected_counts, lines, push};
use server::{Api, TestServer, wait_for};

const LONG: Duration = Duration::from_secs(120);

/// The word-count job of the API tests with every node at `parallelism`.
fn spec(name: &str, tokenizer: &str, wordcount: &str, parallelism: u32) -> Value {
    let mut spec = server::wordcount::spec(name, tokenizer, wordcount);
    for node in spec["nodes"].as_array_mut().unwrap() {
        node["parallelism"] = json!(parallelism);
    }
    spec
}

/// A count in the output: a bare number (wordcount, wordcount-v3) or `{"count": n, ...}`
/// (wordcount-v2).
fn count_of(value: &Value) -> u64 {
    value.as_u64().or_else(|| value["count"].as_u64()).unwrap_or_else(|| panic!("not a count: {value}"))
}

/// Each word's committed counts, in commit order, with the value as written.
async fn output(api: &Api) -> BTreeMap<String, Vec<Value>> {
    let mut seen: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut records = api.read_all("counts").await;
    // Partition then offset: a word's records are in one partition, in commit order.
    records.sort_by_key(|(p, o, _, _)| (*p, *o));
    for (_, _, key, value) in records {
        seen.entry(key.as_str().unwrap().to_string()).or_default().push(value);
    }
    seen
}

/// Waits until every word's latest count is its total over `n` lines.
async fn wait_totals(api: &Api, n: u64) {
    let expected = expected_counts(n);
    wait_for(&format!("the totals of {n} lines"), LONG, || async {
        let seen = output(api).await;
        expected.iter().all(|(w, total)| seen.get(w).and_then(|c| c.last()).map(count_of) == Some(*total))
    })
    .await;
}

/// Exactly once across every job that wrote `counts`: each word's counts rise strictly
/// (a replayed batch would repeat a count, lost state would start low again) and end at
/// the word's total over `n` lines.
async fn check_exactly_once(api: &Api, n: u64) -> BTreeMap<String, Vec<Value>> {
    let expected = expected_counts(n);
    let seen = output(api).await;
    assert_eq!(seen.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "words differ");
    for (word, values) in &seen {
        let counts: Vec<u64> = values.iter().map(count_of).collect();
        assert!(counts.windows(2).all(|w| w[0] < w[1]), "counts of `{word}` repeat or fall: {counts:?}");
        assert_eq!(counts.last(), Some(&expected[word]), "final count of `{word}`");
    }
    seen
}

/// Takes a savepoint of `job` with `mode` and waits until it completed; returns it.
async fn savepoint(api: &Api, job: &str, mode: &str) -> Value {
    let (status, sp) = api.post(&format!("/api/v1/jobs/{job}/savepoints"), &json!({ "mode": mode })).await;
    assert_eq!(status, 202, "{sp}");
    let id = sp["id"].as_str().unwrap().to_string();
    let mut last = sp;
    let deadline = std::time::Instant::now() + LONG;
    while last["status"] == "pending" {
        assert!(std::time::Instant::now() < deadline, "savepoint {id} still pending: {last}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (status, now) = api.get(&format!("/api/v1/savepoints/{id}")).await;
        assert_eq!(status, 200, "{now}");
        last = now;
    }
    assert_eq!(last["status"], "completed", "savepoint failed: {last}");
    last
}

/// Creates a job from a savepoint; returns the job.
async fn create_from(api: &Api, spec: &Value, savepoint: &str) -> Value {
    let (status, job) = api.post(&format!("/api/v1/jobs?from_savepoint={savepoint}"), spec).await;
    assert_eq!(status, 201, "create from savepoint: {job}");
    job
}

/// Every entry of an operator's state at `base` (`.../state/{operator}`), through the paged
/// inspection API.
async fn state(api: &Api, base: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("{base}?limit={limit}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let (status, page) = api.get(&path).await;
        assert_eq!(status, 200, "{page}");
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= limit);
        out.extend(data.iter().cloned());
        match page["next"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return out,
        }
    }
}

async fn setup(api: &Api) -> String {
    let tokenizer = api.upload_guest("tokenizer").await;
    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    assert_eq!(status, 201, "{v}");
    tokenizer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrade_through_a_drained_savepoint_is_exactly_once() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let tokenizer = setup(&api).await;
    let v1 = api.upload_guest("wordcount").await;
    let v2 = api.upload_guest("wordcount-v2").await;

    let job = api.create_job(&spec("wc", &tokenizer, &v1, 2)).await;
    push(&api, lines(0, 400)).await;
    wait_totals(&api, 400).await;
    // More input, part of it still in flight when the drain starts.
    push(&api, lines(400, 800)).await;
    let sp = savepoint(&api, &job, "drain").await;
    let sp_id = sp["id"].as_str().unwrap();
    assert_eq!(sp["mode"], "drain");
    let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
    assert_eq!(j["status"], "finished", "a drained job finishes: {j}");
    let count = sp["description"]["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "count").unwrap();
    assert_eq!(count["state_version"], 0);
    let v1_records: usize = output(&api).await.values().map(Vec::len).sum();

    // v2: changed logic (its output says so), same state schema.
    let job2 = create_from(&api, &spec("wc-v2", &tokenizer, &v2, 2), sp_id).await;
    assert_eq!(job2["restored_from"]["savepoint"], sp_id);
    let count =
        job2["restored_from"]["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "count").unwrap();
    assert_eq!(count["restored"], true);
    assert_eq!(count["migrated"], false);
    push(&api, lines(800, 1200)).await;
    wait_totals(&api, 1200).await;

    let seen = check_exactly_once(&api, 1200).await;
    let (mut from_v1, mut from_v2) = (0, 0);
    for (word, values) in &seen {
        // v1's records come first, then v2's: the switch happened once per word.
        let switch = values.iter().position(|v| v.is_object()).unwrap_or(values.len());
        assert!(values[switch..].iter().all(|v| v["version"] == 2), "`{word}` goes back to v1: {values:?}");
        from_v1 += switch;
        from_v2 += values.len() - switch;
    }
    assert_eq!(from_v1, v1_records, "v1 wrote every record before the switch");
    assert!(from_v2 > 0, "v2 wrote nothing");
    // The new job's history starts with the savepoint's state.
    let (_, h) =
        api.get(&format!("/api/v1/jobs/{}/checkpoints?limit=100000", job2["id"].as_str().unwrap())).await;
    let first = h["data"].as_array().unwrap().last().unwrap();
    assert_eq!(first["id"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rescale_two_three_one_through_savepoints_equals_the_reference() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let tokenizer = setup(&api).await;
    let wordcount = api.upload_guest("wordcount").await;

    let mut job = api.create_job(&spec("wc-2", &tokenizer, &wordcount, 2)).await;
    let mut total = 0;
    for (step, parallelism) in [3u32, 1].into_iter().enumerate() {
        push(&api, lines(total, total + 300)).await;
        total += 300;
        wait_totals(&api, total).await;
        let sp = savepoint(&api, &job, "stop").await;
        let sp_id = sp["id"].as_str().unwrap().to_string();
        api.wait_status(&job, "stopped", LONG).await;

        // The savepoint's keyed state is the reference's, entry for entry (paged).
        let state = state(&api, &format!("/api/v1/savepoints/{sp_id}/state/count"), 7).await;
        let counts: BTreeMap<String, u64> = state
            .iter()
            .map(|e| {
                assert_eq!(e["state"], "counts");
                assert!(e["key_group"].as_u64().unwrap() < 128, "{e}");
                (e["key"].as_str().unwrap().to_string(), e["value"].as_u64().unwrap())
            })
            .collect();
        assert_eq!(counts.len(), state.len(), "an entry listed twice");
        assert_eq!(counts, expected_counts(total), "savepoint {step}");
        // The checkpoint it copies shows the same, in the same order.
        let checkpoint = sp["checkpoint"].as_u64().unwrap();
        let in_checkpoint =
            self::state(&api, &format!("/api/v1/jobs/{job}/checkpoints/{checkpoint}/state/count"), 50).await;
        assert_eq!(in_checkpoint, state, "savepoint {step} and checkpoint {checkpoint}");

        let created = create_from(
            &api,
            &spec(&format!("wc-{parallelism}"), &tokenizer, &wordcount, parallelism),
            &sp_id,
        )
        .await;
        for n in created["restored_from"]["nodes"].as_array().unwrap() {
            assert_eq!(n["parallelism"], parallelism, "{n}");
        }
        job = created["id"].as_str().unwrap().to_string();
    }
    push(&api, lines(total, total + 300)).await;
    total += 300;
    wait_totals(&api, total).await;
    check_exactly_once(&api, total).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_schema_the_module_cannot_read_is_refused_before_anything_starts() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let tokenizer = setup(&api).await;
    let v0 = api.upload_guest("wordcount").await;
    let v3 = api.upload_guest("wordcount-v3").await;

    // Version 0 → version 1: wordcount-v3 migrates it.
    let job = api.create_job(&spec("wc", &tokenizer, &v0, 2)).await;
    push(&api, lines(0, 300)).await;
    wait_totals(&api, 300).await;
    let sp0 = savepoint(&api, &job, "stop").await;
    let migrated = create_from(&api, &spec("wc-v3", &tokenizer, &v3, 2), sp0["id"].as_str().unwrap()).await;
    let count = migrated["restored_from"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "count")
        .unwrap()
        .clone();
    assert_eq!(count["migrated"], true, "{count}");
    assert_eq!(count["state_versions"], json!([0, 1]));
    let migrated = migrated["id"].as_str().unwrap().to_string();
    push(&api, lines(300, 600)).await;
    wait_totals(&api, 600).await;
    check_exactly_once(&api, 600).await;

    // Version 1 → version 0: the old module cannot read the new schema.
    let sp1 = savepoint(&api, &migrated, "stop").await;
    let sp1_id = sp1["id"].as_str().unwrap();
    let (_, jobs_before) = api.get("/api/v1/jobs").await;
    let (status, e) =
        api.post(&format!("/api/v1/jobs?from_savepoint={sp1_id}"), &spec("back", &tokenizer, &v0, 2)).await;
    assert_eq!(status, 400, "{e}");
    let message = e["error"].as_str().unwrap();
    for part in ["operator `count`", "schema version 1", "version 0", "cannot migrate from 1"] {
        assert!(message.contains(part), "`{part}` missing from: {message}");
    }
    let (_, jobs_after) = api.get("/api/v1/jobs").await;
    assert_eq!(jobs_before, jobs_after, "a job was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_exported_from_one_server_continues_on_another() {
    // Server A: lines 0..400, then a savepoint, exported.
    let a = TestServer::start(|_| {}).await;
    let (_, api_a) = a.tenant("acme").await;
    let tokenizer = setup(&api_a).await;
    let wordcount = api_a.upload_guest("wordcount").await;
    let job = api_a.create_job(&spec("wc", &tokenizer, &wordcount, 2)).await;
    push(&api_a, lines(0, 400)).await;
    wait_totals(&api_a, 400).await;
    let sp = savepoint(&api_a, &job, "stop").await;
    let file = api_a
        .request(reqwest::Method::GET, &format!("/api/v1/savepoints/{}/file", sp["id"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(file.status(), 200);
    let file = file.bytes().await.unwrap().to_vec();
    assert_eq!(&file[..8], b"WEIRSAVE");
    let output_a = output(&api_a).await;

    // Server B, another data dir: the same input log, the savepoint imported.
    let b = TestServer::start(|_| {}).await;
    assert_ne!(a.data_dir, b.data_dir);
    let (_, api_b) = b.tenant("other").await;
    let tokenizer_b = setup(&api_b).await;
    let wordcount_b = api_b.upload_guest("wordcount").await;
    push(&api_b, lines(0, 800)).await;
    let (status, imported) = api_b
        .send(
            api_b
                .request(reqwest::Method::POST, "/api/v1/savepoints")
                .header("content-type", "application/octet-stream")
                .body(file.clone()),
        )
        .await;
    assert_eq!(status, 201, "{imported}");
    assert_eq!(imported["origin"], sp["id"]);
    assert_eq!(imported["entries"], sp["entries"]);
    assert_eq!(imported["description"], sp["description"]);
    create_from(&api_b, &spec("wc", &tokenizer_b, &wordcount_b, 2), imported["id"].as_str().unwrap()).await;
    wait_totals(&api_b, 800).await;

    // A's output then B's is the reference's: B went on exactly where A stopped.
    let output_b = output(&api_b).await;
    let expected = expected_counts(800);
    for (word, total) in &expected {
        let mut counts: Vec<u64> = output_a.get(word).into_iter().flatten().map(count_of).collect();
        counts.extend(output_b.get(word).into_iter().flatten().map(count_of));
        assert!(counts.windows(2).all(|w| w[0] < w[1]), "`{word}`: {counts:?}");
        assert_eq!(counts.last(), Some(total), "`{word}`");
    }
    // B never read lines A had counted.
    for (word, counts) in &output_b {
        let before = output_a.get(word).and_then(|c| c.last()).map(count_of).unwrap_or(0);
        assert!(count_of(&counts[0]) > before, "`{word}` counted again on B");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_outlives_the_retention_of_every_checkpoint() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let tokenizer = setup(&api).await;
    let wordcount = api.upload_guest("wordcount").await;
    let mut job_spec = spec("wc", &tokenizer, &wordcount, 2);
    job_spec["settings"]["checkpoint"]["retained"] = json!(1);
    let job = api.create_job(&job_spec).await;
    push(&api, lines(0, 300)).await;
    wait_totals(&api, 300).await;
    let sp = savepoint(&api, &job, "keep_running").await;
    let checkpoint = sp["checkpoint"].as_u64().unwrap();

    // The job goes on: later checkpoints retire every earlier one, the savepoint's too.
    push(&api, lines(300, 500)).await;
    wait_totals(&api, 500).await;
    wait_for("retention of the savepoint's checkpoint", LONG, || async {
        let (_, cp) = api.get(&format!("/api/v1/jobs/{job}/checkpoints/{checkpoint}")).await;
        cp["retained"] == false
    })
    .await;
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/cancel")).await;
    assert_eq!(status, 200);
    let (_, history) = api.get(&format!("/api/v1/jobs/{job}/checkpoints?limit=100000")).await;
    let retained: Vec<u64> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["retained"] == true)
        .map(|c| c["id"].as_u64().unwrap())
        .collect();
    assert!(retained.iter().all(|id| *id > checkpoint), "retained: {retained:?}");

    // A fresh job from the savepoint counts lines 300.. again, from the savepoint's state,
    // into a fresh stream.
    let mut fork = spec("fork", &tokenizer, &wordcount, 2);
    fork["nodes"][3]["config"]["stream"] = json!("fork-counts");
    let created = create_from(&api, &fork, sp["id"].as_str().unwrap()).await;
    let fork_id = created["id"].as_str().unwrap().to_string();
    push(&api, lines(500, 600)).await;
    let expected = expected_counts(600);
    wait_for("the fork's totals", LONG, || async {
        let mut last: BTreeMap<String, u64> = BTreeMap::new();
        for (_, _, key, value) in api.read_all("fork-counts").await {
            last.insert(key.as_str().unwrap().to_string(), count_of(&value));
        }
        expected.iter().all(|(w, n)| last.get(w) == Some(n))
    })
    .await;
    let (_, j) = api.get(&format!("/api/v1/jobs/{fork_id}")).await;
    assert_eq!(j["restarts"], 0, "{j}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_savepoint_input_gets_clear_errors() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let (_, other) = server.tenant("other").await;
    let tokenizer = setup(&api).await;
    let wordcount = api.upload_guest("wordcount").await;
    let job = api.create_job(&spec("wc", &tokenizer, &wordcount, 2)).await;
    push(&api, lines(0, 200)).await;
    wait_totals(&api, 200).await;
    let sp = savepoint(&api, &job, "stop").await;
    let sp_id = sp["id"].as_str().unwrap().to_string();
    let file = api
        .request(reqwest::Method::GET, &format!("/api/v1/savepoints/{sp_id}/file"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    let import = |bytes: Vec<u8>| {
        let api = api.clone();
        async move {
            api.send(
                api.request(reqwest::Method::POST, "/api/v1/savepoints")
                    .header("content-type", "application/octet-stream")
                    .body(bytes),
            )
            .await
        }
    };
    let (_, before) = api.get("/api/v1/savepoints").await;

    // Truncated, tampered, not a savepoint at all.
    let (status, e) = import(file[..file.len() / 2].to_vec()).await;
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("truncated"), "{e}");
    let mut tampered = file.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0x40;
    let (status, e) = import(tampered).await;
    assert_eq!(status, 400, "{e}");
    let message = e["error"].as_str().unwrap();
    assert!(message.contains("checksum") || message.contains("frame"), "{e}");
    let (status, e) = import(b"{\"not\": \"a savepoint\"}".to_vec()).await;
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("not a Weir savepoint file"), "{e}");
    let (_, after) = api.get("/api/v1/savepoints").await;
    assert_eq!(before, after, "a bad file left a savepoint");

    // Another tenant's savepoint does not exist for this one, whatever the route.
    for path in [
        format!("/api/v1/savepoints/{sp_id}"),
        format!("/api/v1/savepoints/{sp_id}/file"),
        format!("/api/v1/savepoints/{sp_id}/state/count"),
    ] {
        let (status, e) = other.get(&path).await;
        assert_eq!(status, 404, "{path}: {e}");
        assert_eq!(e["error"], format!("no savepoint `{sp_id}`"));
    }
    let (status, _) = other.delete(&format!("/api/v1/savepoints/{sp_id}")).await;
    assert_eq!(status, 404);
    other.upload_guest("tokenizer").await;
    other.upload_guest("wordcount").await;
    let (status, e) = other
        .post(&format!("/api/v1/jobs?from_savepoint={sp_id}"), &spec("steal", "tokenizer", "wordcount", 2))
        .await;
    assert_eq!(status, 404, "{e}");
    let (_, none) = other.get("/api/v1/jobs").await;
    assert_eq!(none["data"], json!([]));

    // Node ids that do not match: refused unless told to drop the state.
    let mut renamed = spec("renamed", &tokenizer, &wordcount, 2);
    renamed["nodes"][2]["id"] = json!("tally");
    renamed["edges"][1]["to"] = json!("tally");
    renamed["edges"][2]["from"] = json!("tally");
    let (status, e) = api.post(&format!("/api/v1/jobs?from_savepoint={sp_id}"), &renamed).await;
    assert_eq!(status, 400, "{e}");
    let message = e["error"].as_str().unwrap();
    assert!(message.contains("node `count`") && message.contains("allow_non_restored_state"), "{message}");
    let (_, jobs) = api.get("/api/v1/jobs").await;
    assert_eq!(jobs["data"].as_array().unwrap().len(), 1, "a job was created");
    let (status, created) = api
        .post(&format!("/api/v1/jobs?from_savepoint={sp_id}&allow_non_restored_state=true"), &renamed)
        .await;
    assert_eq!(status, 201, "{created}");
    let dropped = created["restored_from"]["dropped"].as_array().unwrap();
    assert!(dropped.iter().any(|d| d.as_str().unwrap().contains("node `count`")), "{dropped:?}");

    // Unknown and malformed ids; a bad cursor; the delete, and what is left.
    let (status, _) = api.get(&format!("/api/v1/savepoints/{}", "0".repeat(32))).await;
    assert_eq!(status, 404);
    let (status, _) = api.get("/api/v1/savepoints/../etc").await;
    assert!(status == 400 || status == 404, "{status}");
    let (status, e) = api.get(&format!("/api/v1/savepoints/{sp_id}/state/count?cursor=nope")).await;
    assert_eq!(status, 400, "{e}");
    let (status, e) = api.get(&format!("/api/v1/savepoints/{sp_id}/state/nobody")).await;
    assert_eq!(status, 404, "{e}");
    let (status, _) = api.delete(&format!("/api/v1/savepoints/{sp_id}")).await;
    assert_eq!(status, 204);
    let (status, _) = api.get(&format!("/api/v1/savepoints/{sp_id}")).await;
    assert_eq!(status, 404);
    let (status, e) = api
        .post(&format!("/api/v1/jobs?from_savepoint={sp_id}"), &spec("gone", &tokenizer, &wordcount, 2))
        .await;
    assert_eq!(status, 404, "{e}");
}

/// Savepoints and uploaded modules in a real S3 server (moto, issue 22): a savepoint's
/// chunks are objects (none in the redb file), modules are objects too (those uploaded before
/// the store was set go there at start), a controller whose module files are gone fetches
/// them back, a job restores from the savepoint in the bucket, what failed writes left is
/// swept at start, and deleting the savepoint deletes its objects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn savepoints_and_modules_live_in_object_storage() {
    use weir::cluster::objects::ChunkObjects;
    let s3 = crate::common::s3::S3Server::start();
    s3.create_bucket("weir").await;
    let bucket = s3.config("weir");
    let objects = ChunkObjects::open(&bucket, "prod").unwrap();
    let config = |c: &mut weir::server::ServerConfig| {
        c.chunk_store = Some(bucket.clone());
        c.chunk_store_prefix = "prod".into();
        // What the crash below leaves is swept at the next start, however young.
        c.chunk_store_sweep.grace_ms = 0;
    };
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");

    // A module uploaded before the chunk store was set goes there at the next start.
    let mut plain = TestServer::start_in(&dir, |_| {}).await;
    let (_, api) = plain.tenant("acme").await;
    let tokenizer = setup(&api).await;
    plain.abort();
    drop(plain);
    let mut server = TestServer::start_in(&dir, config).await;
    assert_eq!(objects.list_modules().await.unwrap(), vec![tokenizer.clone()]);
    let api = server.client(api.token().unwrap());
    let wordcount = api.upload_guest("wordcount").await;
    let mut modules = vec![tokenizer.clone(), wordcount.clone()];
    modules.sort();
    assert_eq!(objects.list_modules().await.unwrap(), modules, "every upload is in the bucket");
    let job = api.create_job(&spec("wc", &tokenizer, &wordcount, 2)).await;
    push(&api, lines(0, 400)).await;
    wait_totals(&api, 400).await;
    push(&api, lines(400, 800)).await;
    let sp = savepoint(&api, &job, "drain").await;
    let sp_id = sp["id"].as_str().unwrap().to_string();
    assert_eq!(objects.list_savepoints().await.unwrap(), vec![sp_id.clone()]);
    assert!(objects.get_savepoint(&sp_id, 0).await.unwrap().is_some(), "chunk 0 is an object");
    {
        use redb::{ReadableDatabase as _, ReadableTableMetadata as _};
        const PIECES: redb::TableDefinition<'_, (&str, &str, u32, u32, u32), &[u8]> =
            redb::TableDefinition::new("weir.savepoint_pieces");
        let db = server.service().store.database().unwrap();
        let pieces = db.begin_read().unwrap().open_table(PIECES).unwrap().len().unwrap();
        assert_eq!(pieces, 0, "no savepoint chunk in the redb file");
    }
    // Its export reads the objects back.
    let file =
        api.request(reqwest::Method::GET, &format!("/api/v1/savepoints/{sp_id}/file")).send().await.unwrap();
    assert_eq!(file.status(), 200);
    assert_eq!(&file.bytes().await.unwrap()[..8], b"WEIRSAVE");
    server.abort();
    drop(server);

    // What a crash between a put and its commit leaves behind.
    objects.put_savepoint("ghost", 0, "left by a crash".into()).await.unwrap();
    objects.put_module(&"0".repeat(64), "never recorded".into()).await.unwrap();
    // The controller comes back on a volume without its module files.
    std::fs::remove_dir_all(dir.join("modules")).unwrap();
    let _ = std::fs::remove_dir_all(dir.join("module-cache"));
    let server = TestServer::start_in(&dir, config).await;
    assert_eq!(objects.list_savepoints().await.unwrap(), vec![sp_id.clone()], "the ghost is swept");
    assert_eq!(objects.list_modules().await.unwrap(), modules, "the unrecorded module is swept");
    let api = server.client(api.token().unwrap());
    // Rescaled 2 → 3 from the savepoint in the bucket, with modules fetched from it.
    let job2 = create_from(&api, &spec("wc2", &tokenizer, &wordcount, 3), &sp_id).await;
    assert_eq!(job2["restored_from"]["savepoint"], sp_id.as_str());
    for module in &modules {
        assert!(dir.join(format!("modules/{module}.wasm")).is_file(), "module {module} fetched back");
    }
    push(&api, lines(800, 1200)).await;
    wait_totals(&api, 1200).await;
    check_exactly_once(&api, 1200).await;

    let (status, v) = api.delete(&format!("/api/v1/savepoints/{sp_id}")).await;
    assert_eq!(status, 204, "{v}");
    assert!(objects.list_savepoints().await.unwrap().is_empty(), "its objects went with it");
}
