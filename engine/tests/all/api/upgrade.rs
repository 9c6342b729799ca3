//! One-step upgrade and rescale of a running job over the API, against a real server, real
//! wasmtime and a real redb file: the word count goes to a new module version (state schema
//! 0 → 1, migrated) and from 2 to 3 counting subtasks with its state carried over, exactly
//! once next to a job that was never upgraded; a version whose state does not fit is
//! refused before anything stops; a version that fails at once is rolled back to the old one
//! from the same savepoint; and a server killed (SIGKILL) at any point of an upgrade leaves
//! the job on exactly one version with nothing lost or doubled.

use std::time::{Duration, Instant};

use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};

use crate::server::wordcount::{check_exactly_once_of, lines, output_of, push, spec_to, wait_output_of};
use crate::server::{Api, TestServer};

const LONG: Duration = Duration::from_secs(120);

/// A tenant with the word count's modules, stream `lines`, the job to upgrade (output
/// `counts`) and a reference job that is never upgraded (output `reference`), both fed
/// lines `0..1000`. Returns the job's id.
async fn two_word_counts(api: &Api) -> String {
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    assert_eq!(status, 201, "{v}");
    let job = api.create_job(&spec_to("upgraded", "tokenizer", "wordcount", "counts")).await;
    api.create_job(&spec_to("reference", "tokenizer", "wordcount", "reference")).await;
    push(api, lines(0, 1000)).await;
    wait_output_of(api, "counts", 1000).await;
    job
}

/// Waits until job `id` has no upgrade in progress; returns it.
async fn upgrade_ended(api: &Api, id: &str) -> Value {
    api.wait_job(id, LONG, |j| j["upgrade"].is_null() && j["status"] == "running").await
}

async fn versions(api: &Api, id: &str) -> Vec<Value> {
    let (status, v) = api.get(&format!("/api/v1/jobs/{id}/versions")).await;
    assert_eq!(status, 200, "{v}");
    v["data"].as_array().unwrap().clone()
}

/// Every word's final count in `stream` equals the reference job's, and both are exactly
/// once over `n` lines.
async fn same_as_reference(api: &Api, n: u64) {
    wait_output_of(api, "counts", n).await;
    wait_output_of(api, "reference", n).await;
    check_exactly_once_of(api, "counts", n).await;
    check_exactly_once_of(api, "reference", n).await;
    let finals = |m: std::collections::BTreeMap<String, Vec<u64>>| {
        m.into_iter().map(|(w, c)| (w, *c.last().unwrap())).collect::<Vec<_>>()
    };
    assert_eq!(finals(output_of(api, "counts").await), finals(output_of(api, "reference").await));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_upgrades_to_a_new_module_and_rescales_with_its_state_exactly_once() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let job = two_word_counts(&api).await;
    let v3 = api.upload_guest("wordcount-v3").await;
    let change = json!({ "modules": { "count": "wordcount-v3" }, "parallelism": { "count": 3, "out": 3 }, "grace_period_ms": 1500 });

    // The dry run answers the check and changes nothing.
    let mut dry = change.clone();
    dry["dry_run"] = json!(true);
    let (status, answer) = api.post(&format!("/api/v1/jobs/{job}/upgrade"), &dry).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (answer["check"]["from_version"].as_u64(), answer["check"]["to_version"].as_u64()),
        (Some(1), Some(2))
    );
    let count = answer["check"]["check"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "count")
        .unwrap()
        .clone();
    assert_eq!(count["has_state"], true, "{count}");
    assert_eq!(count["migrates"], true, "{count}");
    assert_eq!(count["state_versions"], json!([0, 1]), "{count}");
    assert_eq!((count["from_parallelism"].as_u64(), count["parallelism"].as_u64()), (Some(2), Some(3)));
    assert_eq!(answer["job"]["version"], 1);
    let (_, savepoints) = api.get("/api/v1/savepoints").await;
    assert_eq!(
        savepoints["data"].as_array().unwrap().len(),
        0,
        "the check's savepoint is gone: {savepoints}"
    );

    // The upgrade: lines keep coming while it happens.
    let feeder = {
        let api = api.clone();
        tokio::spawn(async move { push(&api, lines(1000, 3000)).await })
    };
    let (status, answer) = api.post(&format!("/api/v1/jobs/{job}/upgrade"), &change).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["job"]["version"], 2, "{answer}");
    assert_eq!(answer["job"]["upgrade"]["phase"], "probation", "{answer}");
    // Nothing else changes the job while it is on probation.
    for action in ["stop", "cancel", "restart", "checkpoints", "savepoints"] {
        let (status, v) = api.post(&format!("/api/v1/jobs/{job}/{action}"), &json!({})).await;
        assert_eq!(status, 409, "{action}: {v}");
        assert!(v["error"].as_str().unwrap().contains("being upgraded"), "{action}: {v}");
    }
    feeder.await.unwrap();
    let upgraded = upgrade_ended(&api, &job).await;
    assert_eq!(upgraded["version"], 2);
    let counting = upgraded["vertices"].as_array().unwrap().iter().find(|v| v["id"] == "count").unwrap();
    assert_eq!(counting["parallelism"], 3);
    assert_eq!(counting["module"], v3.as_str());
    // The state came over: the counting node restored its keyed entries, migrated.
    let restored = &upgraded["restored_from"];
    let node = restored["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "count").unwrap();
    assert!(node["keyed_entries"].as_u64().unwrap() > 0, "{restored}");
    assert_eq!(node["migrated"], true, "{restored}");
    let history = versions(&api, &job).await;
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(history[0]["outcome"], "replaced");
    assert_eq!(history[1]["outcome"], "current");
    assert_eq!(history[1]["savepoint"], restored["savepoint"]);
    let digest = history[1]["modules"].as_array().unwrap().iter().find(|m| m["node"] == "count").unwrap();
    assert_eq!(digest["digest"], v3.as_str());
    assert_eq!(digest["name"], "wordcount-v3");

    push(&api, lines(3000, 4000)).await;
    same_as_reference(&api, 4000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_version_is_rolled_back_and_an_incompatible_one_is_refused_before_anything_stops() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let job = two_word_counts(&api).await;
    api.upload_guest("faulty").await;
    api.upload_guest("wordcount-v3").await;

    // A version that fails at once (the faulty operator takes no word: it reads u64s):
    // rolled back to version 1 from the same savepoint, with the reason in the history and
    // the exception history.
    let (status, v) = api
        .post(
            &format!("/api/v1/jobs/{job}/upgrade"),
            &json!({ "modules": { "count": "faulty" }, "grace_period_ms": 60000 }),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    push(&api, lines(1000, 1100)).await;
    let rolled = api.wait_job(&job, LONG, |j| j["upgrade"].is_null()).await;
    assert_eq!(rolled["status"], "running", "{rolled}");
    assert_eq!(rolled["version"], 1, "{rolled}");
    assert!(rolled["error"].as_str().unwrap().contains("rolled back"), "{rolled}");
    let history = versions(&api, &job).await;
    assert_eq!(history[1]["version"], 2);
    assert_eq!(history[1]["outcome"], "rolled_back", "{history:?}");
    assert!(history[1]["reason"].as_str().unwrap().contains("version 2"), "{history:?}");
    assert_eq!(history[0]["outcome"], "current");
    let (_, exceptions) = api.get(&format!("/api/v1/jobs/{job}/exceptions")).await;
    assert!(
        exceptions["data"].as_array().unwrap().iter().any(|e| e["action"] == "rolled_back"),
        "{exceptions}"
    );
    push(&api, lines(1100, 1500)).await;
    same_as_reference(&api, 1500).await;

    // Refused before anything stops: version 3 (wordcount-v3) writes state schema 1, which
    // the example (version 4) cannot read.
    let (status, v) = api
        .post(
            &format!("/api/v1/jobs/{job}/upgrade"),
            &json!({ "modules": { "count": "wordcount-v3" }, "grace_period_ms": 500 }),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    let on_v3 = upgrade_ended(&api, &job).await;
    assert_eq!(on_v3["version"], 3);
    let (status, v) = api
        .post(&format!("/api/v1/jobs/{job}/upgrade"), &json!({ "modules": { "count": "wordcount" } }))
        .await;
    assert_eq!(status, 422, "{v}");
    let message = v["error"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("schema version 1") && message.contains("`count`"), "{message}");
    let (_, after) = api.get(&format!("/api/v1/jobs/{job}")).await;
    assert_eq!(after["status"], "running");
    assert_eq!(after["version"], 3);
    assert_eq!(after["start_ms"], on_v3["start_ms"], "the run was never stopped");
    assert_eq!(versions(&api, &job).await.len(), 3, "a refused upgrade adds no version");
    push(&api, lines(1500, 2000)).await;
    same_as_reference(&api, 2000).await;
}

/// A client that goes away in the middle of an upgrade (a closed browser tab, a timeout)
/// does not cancel it: the job still ends on the new version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_goes_on_when_its_client_goes_away() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let job = two_word_counts(&api).await;
    api.upload_guest("wordcount-v3").await;
    // The request goes out whole on a connection of its own, which is closed once the
    // upgrade has begun (the job is stopping, or the new version on probation).
    use tokio::io::AsyncWriteExt as _;
    let body = json!({ "modules": { "count": "wordcount-v3" }, "grace_period_ms": 3000 }).to_string();
    let address = api.url.trim_start_matches("http://").to_string();
    let mut connection = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request = format!(
        "POST /api/v1/jobs/{job}/upgrade HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        api.token().unwrap(),
        body.len()
    );
    connection.write_all(request.as_bytes()).await.unwrap();
    api.wait_job(&job, LONG, |j| !j["upgrade"].is_null()).await;
    drop(connection);
    let upgraded = api.wait_job(&job, LONG, |j| j["version"] == 2 && j["upgrade"].is_null()).await;
    assert_eq!(upgraded["status"], "running", "{upgraded}");
    push(&api, lines(1000, 2000)).await;
    same_as_reference(&api, 2000).await;
}

/// Kills the server in the middle of an upgrade — when the test sees it stopping, on
/// probation, or after a seeded random delay (which lands in any phase, rollbacks of a
/// version that fails at once included) — and starts it again: the job ends on exactly one
/// version, never the failing one, and its output is exactly once next to the reference
/// job's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_in_the_middle_of_an_upgrade_leaves_the_job_on_one_version_exactly_once() {
    let seed: u64 =
        std::env::var("WEIR_UPGRADE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0a9e_17de);
    eprintln!("upgrade kill seed: {seed} (WEIR_UPGRADE_SEED replays it)");
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn_process(dir.path());
    let (_, mut api) = server.tenant("acme").await;
    let job = two_word_counts(&api).await;
    let v3 = api.upload_guest("wordcount-v3").await;
    let faulty = api.upload_guest("faulty").await;
    let mut n = 1000;
    // (when to kill, upgrade to the failing version): the failing version only while the
    // job runs the example (its state schema is the example's).
    let rounds =
        [("rollback", true), ("rollback", true), ("random", true), ("stopping", false), ("probation", false)]
            .into_iter()
            .chain(std::iter::repeat_n(("random", false), 3));
    for (round, (when, failing)) in rounds.enumerate() {
        let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
        let module = |j: &Value| {
            j["vertices"].as_array().unwrap().iter().find(|v| v["id"] == "count").unwrap()["module"].clone()
        };
        let on_v3 = module(&j) == v3.as_str();
        let p = 2 + (round as u64 % 2);
        let change = match (failing, on_v3) {
            // A long probation: only records (pushed after the restart too) end it, in a rollback.
            (true, _) => json!({ "modules": { "count": "faulty" }, "grace_period_ms": 60000 }),
            (false, false) => json!({ "modules": { "count": "wordcount-v3" }, "grace_period_ms": 2000 }),
            (false, true) => json!({ "parallelism": { "count": p, "out": p }, "grace_period_ms": 2000 }),
        };
        // The answer may never come (the server is killed): it is not waited for.
        let request =
            api.request(reqwest::Method::POST, &format!("/api/v1/jobs/{job}/upgrade")).json(&change);
        let request = tokio::spawn(async move { request.send().await.map(|r| r.status()) });
        let deadline = Instant::now() + LONG;
        let known = versions(&api, &job).await.len();
        // Until the upgrade is in one of `phases` (or, with `or_ended`, over already).
        let wait_for = |phases: &'static [&'static str], or_ended: bool| {
            let (api, job) = (api.clone(), job.clone());
            async move {
                loop {
                    let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
                    if phases.iter().any(|p| j["upgrade"]["phase"] == *p) {
                        return;
                    }
                    if or_ended && j["upgrade"].is_null() && versions(&api, &job).await.len() > known {
                        return;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "round {round}: never saw phase {phases:?} (seed {seed}): {j}"
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        };
        match when {
            "random" => tokio::time::sleep(Duration::from_millis(rng.gen_range(0..150))).await,
            // The failing version fails at once (in its restore, or on the records pushed
            // now): the kill lands in its probation, its rollback, or just after.
            "rollback" => {
                wait_for(&["probation", "rolling_back"], true).await;
                push(&api, lines(n, n + 10)).await;
                tokio::time::sleep(Duration::from_millis(rng.gen_range(0..30))).await;
            }
            "stopping" => wait_for(&["stopping", "restoring"], true).await,
            _ => wait_for(&["probation"], false).await,
        }
        let pushed = if when == "rollback" { n + 10 } else { n };
        push(&api, lines(pushed, n + 200)).await;
        server.kill9();
        request.abort();
        server = TestServer::spawn_process(dir.path());
        api = api.at(&server.url);
        push(&api, lines(n + 200, n + 500)).await;
        n += 500;
        let resumed = upgrade_ended(&api, &job).await;
        let history = versions(&api, &job).await;
        let current: Vec<&Value> = history.iter().filter(|v| v["outcome"] == "current").collect();
        assert_eq!(
            current.len(),
            1,
            "round {round} (seed {seed}): exactly one version is current: {history:?}"
        );
        assert_eq!(current[0]["version"], resumed["version"], "seed {seed}");
        assert_ne!(
            module(&resumed),
            faulty.as_str(),
            "round {round} (seed {seed}): the failing version stayed"
        );
        wait_output_of(&api, "counts", n).await;
        check_exactly_once_of(&api, "counts", n).await;
    }
    same_as_reference(&api, n).await;
}
