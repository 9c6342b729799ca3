//! Restart strategies that heal (issue 41): a job on two workers, with the default restart
//! settings, survives ten SIGKILLs of its workers spread over its run (each worker comes back
//! under its name), reports each as a `platform` failure in its exception history, and its
//! output is exactly once. Under the default strategy a lost worker uses up no attempt: only
//! the delays grow (exponential, 1 s × 1.5), which is what this test waits for.

use std::time::Duration;

use serde_json::json;

use super::workers::{TOKEN, Worker, controller, find, registered_id, wait_workers};
use crate::server::wordcount::{self, check_exactly_once, lines, push, wait_output};

const LONG: Duration = Duration::from_secs(180);
const KILLS: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_on_workers_survives_ten_worker_kills_with_default_settings_as_platform_failures() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    let store = [
        ("WEIR_CHUNK_STORE__KIND".to_string(), "local".to_string()),
        ("WEIR_CHUNK_STORE__DIR".to_string(), objects.display().to_string()),
    ];
    let server = controller(
        &dir.path().join("data"),
        &store.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>(),
    );
    let addr = server.cluster.clone().unwrap();
    let mut workers: Vec<Worker> =
        (0..2).map(|i| Worker::spawn_with(&addr, &format!("w{i}"), TOKEN, &store)).collect();
    for w in &workers {
        w.wait_line("registered as worker");
    }

    let (_, api) = server.tenant("acme").await;
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    // The default settings: no `restart` in the spec.
    let spec = wordcount::spec("healing-wordcount", "tokenizer", "wordcount");
    assert!(spec["settings"].get("restart").is_none());
    let job = api.create_job(&spec).await;
    let mut pushed = 0;
    for kill in 0..KILLS {
        // Progress first: the job runs again (on the workers there are) and commits output.
        push(&api, lines(pushed, pushed + 100)).await;
        pushed += 100;
        wait_output(&api, pushed).await;
        let (_, before) = api.get(&format!("/api/v1/jobs/{job}")).await;
        let restarts = before["restarts"].as_u64().unwrap();
        let i = kill % workers.len();
        workers[i].signal("-KILL");
        let _ = workers[i].exit_status();
        let j = api.wait_job(&job, LONG, |j| j["restarts"].as_u64().unwrap() > restarts).await;
        assert_ne!(j["status"], "failed", "kill {kill}: {j}");
        // The worker comes back under its name (a new process registers anew).
        workers[i] = Worker::spawn_with(&addr, &format!("w{i}"), TOKEN, &store);
        let id = registered_id(&workers[i].wait_line("registered as worker"));
        wait_workers(&server, "the worker is back", |l| find(l, id).is_some_and(|w| w["status"] == "live"))
            .await;
        eprintln!("kill {kill} of w{i}: restart {}", j["restarts"]);
    }
    push(&api, lines(pushed, pushed + 100)).await;
    pushed += 100;
    wait_output(&api, pushed).await;
    let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
    assert_eq!(j["status"], "running", "{j}");

    // Each kill is in the history as the platform's failure, restarted.
    let (status, page) = api.get(&format!("/api/v1/jobs/{job}/exceptions")).await;
    assert_eq!(status, 200, "{page}");
    let rows = page["data"].as_array().unwrap();
    assert!(rows.len() >= KILLS, "{} exceptions for {KILLS} kills: {page}", rows.len());
    for row in rows {
        assert_eq!((&row["class"], &row["action"]), (&json!("platform"), &json!("restarted")), "{row}");
    }
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/stop")).await;
    assert_eq!(status, 202);
    api.wait_status(&job, "stopped", LONG).await;
    check_exactly_once(&api, pushed).await;
}
