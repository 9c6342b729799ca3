//! The life of a job over the API: upload, create, checkpoints, stop, history; and a server
//! killed with SIGKILL that resumes its running job with exactly-once output.

use crate::server;

use std::time::Duration;

use serde_json::json;
use server::wordcount::{check_exactly_once, lines, push, wait_output};
use server::{Api, TestServer, wordcount};

const LONG: Duration = Duration::from_secs(120);

async fn completed_checkpoints(api: &Api, job: &str) -> u64 {
    let (status, h) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert_eq!(status, 200, "{h}");
    h["counts"]["completed"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_run_checkpoint_stop_and_history() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let tokenizer = api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    let (status, _) = api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    assert_eq!(status, 201);
    push(&api, lines(0, 1000)).await;

    // Modules may be named by id or by name.
    let job = api.create_job(&wordcount::spec("live-wordcount", &tokenizer, "wordcount")).await;
    let (_, detail) = api.get(&format!("/api/v1/jobs/{job}")).await;
    assert_eq!(detail["status"], "running");
    assert_eq!(detail["vertices"].as_array().unwrap().len(), 4);
    assert_eq!(detail["edges"][1]["partitioning"], "hash");
    // The spec is the tenant's own: pinned module ids, its own stream names.
    assert_eq!(detail["spec"]["nodes"][2]["module"].as_str().unwrap().len(), 64);
    assert_eq!(detail["spec"]["nodes"][3]["config"]["stream"], "counts");

    wait_output(&api, 1000).await;
    api.wait_job(&job, LONG, |j| j["latest_checkpoint"]["id"].as_u64().unwrap_or(0) >= 2).await;
    let live = api.wait_job(&job, LONG, |j| j["vertices"][2]["records_in"].as_u64() == Some(3000)).await;
    assert_eq!(live["vertices"][1]["records_in"].as_u64(), Some(1000), "{live}");

    // An on-demand checkpoint: triggered, then completed.
    let (status, t) = api.post_empty(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert_eq!(status, 202, "{t}");
    let id = t["id"].as_u64().unwrap();
    let deadline = std::time::Instant::now() + LONG;
    loop {
        let (status, cp) = api.get(&format!("/api/v1/jobs/{job}/checkpoints/{id}")).await;
        if status == 200 && cp["status"] == "completed" {
            assert_eq!(cp["acknowledged_subtasks"], cp["total_subtasks"]);
            assert_eq!(cp["subtasks"].as_array().unwrap().len(), 7, "{cp}");
            assert_eq!(cp["operators"].as_array().unwrap().len(), 4, "{cp}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "checkpoint {id}: {status} {cp}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (status, stopped) = api.post_empty(&format!("/api/v1/jobs/{job}/stop")).await;
    assert_eq!(status, 202, "{stopped}");
    api.wait_status(&job, "stopped", LONG).await;
    let (_, history) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    let latest = &history["latest"]["completed"];
    assert_eq!(latest["is_final"], true, "{history}");
    assert_eq!(latest["stopped"], true, "{history}");
    assert!(history["counts"]["completed"].as_u64().unwrap() >= 3, "{history}");
    assert!(history["summary"]["duration_ms"]["max"].as_f64().unwrap() > 0.0, "{history}");
    check_exactly_once(&api, 1000).await;

    // Restarted, it resumes where it stopped: new lines are counted on top.
    push(&api, lines(1000, 1500)).await;
    let (status, v) = api.post_empty(&format!("/api/v1/jobs/{job}/restart")).await;
    assert_eq!(status, 200, "{v}");
    wait_output(&api, 1500).await;
    let (status, v) = api.post_empty(&format!("/api/v1/jobs/{job}/cancel")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "canceled");
    check_exactly_once(&api, 1500).await;

    let (status, _) = api.get("/metrics").await;
    assert_eq!(status, 403, "metrics name every tenant's jobs: admin only");
    let metrics = server.client(server::ADMIN).text("/metrics").await;
    assert!(metrics.contains("weir_checkpoints_completed_total"), "{metrics}");
    assert!(metrics.contains("weir_records_in_total"), "{metrics}");
    assert!(metrics.contains("weir_checkpoint_duration_seconds_bucket"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_server_resumes_its_running_job_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = TestServer::spawn_process(dir.path());
    let (_, api) = first.tenant("acme").await;
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    let job = api.create_job(&wordcount::spec("live-wordcount", "tokenizer", "wordcount")).await;
    push(&api, lines(0, 2000)).await;
    // Some output and at least two completed checkpoints, then SIGKILL mid-stream.
    let deadline = std::time::Instant::now() + LONG;
    while completed_checkpoints(&api, &job).await < 2 {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    push(&api, lines(2000, 3000)).await;
    let (_, before) = api.get(&format!("/api/v1/jobs/{job}/checkpoints?limit=100000")).await;
    first.kill9();

    let second = TestServer::spawn_process(dir.path());
    let api = api.at(&second.url);
    let (status, resumed) = api.get(&format!("/api/v1/jobs/{job}")).await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["status"], "running", "{resumed}");
    // The history is intact: every checkpoint completed before the kill is still listed.
    let (_, after) = api.get(&format!("/api/v1/jobs/{job}/checkpoints?limit=100000")).await;
    for cp in before["data"].as_array().unwrap().iter().filter(|c| c["status"] == "completed") {
        let same = after["data"].as_array().unwrap().iter().find(|c| c["id"] == cp["id"]).expect("kept");
        assert_eq!(same["status"], "completed");
        assert_eq!(same["state_size"], cp["state_size"]);
    }
    push(&api, lines(3000, 4000)).await;
    wait_output(&api, 4000).await;
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/stop")).await;
    assert_eq!(status, 202);
    api.wait_status(&job, "stopped", LONG).await;
    check_exactly_once(&api, 4000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_sink_shows_as_backpressure_upstream() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let job = api
        .create_job(&json!({
            "name": "slow",
            "nodes": [
                { "id": "in", "kind": "source", "connector": "generator",
                  "config": { "mode": "sequence", "count": 1_000_000_000u64, "batch_size": 64 } },
                { "id": "out", "kind": "sink", "connector": "blackhole", "config": { "pause_ms_per_batch": 20 } }
            ],
            "edges": [{ "from": "in", "to": "out" }]
        }))
        .await;
    // The source waits on the full channel nearly all the time; the sink never waits.
    let j =
        api.wait_job(&job, LONG, |j| j["vertices"][0]["backpressure"].as_f64().unwrap_or(0.0) > 0.5).await;
    assert_eq!(j["vertices"][1]["backpressure"].as_f64(), Some(0.0), "{j}");
    let rate = j["vertices"][1]["records_in_per_second"].as_f64().unwrap();
    assert!(rate > 0.0 && rate < 64.0 * 1000.0 / 20.0 * 1.5, "sink rate {rate}");
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/cancel")).await;
    assert_eq!(status, 200);
}
