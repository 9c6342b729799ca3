//! Upgrading a job that runs on workers: the new version (another module, another
//! parallelism) starts on the workers from the upgrade's savepoint, its checkpoints held by
//! the controller's coordinator during its probation; a version that fails at once on a
//! worker is rolled back to the old one. The output is exactly once throughout.

use serde_json::json;

use super::workers::{TOKEN, Worker, controller, find, registered_id, wait_workers};
use crate::server::wordcount::{self, check_exactly_once, lines, push, wait_output};

const LONG: std::time::Duration = std::time::Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_on_workers_upgrades_rescales_and_rolls_back_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = controller(&dir.path().join("data"), &[]);
    let addr = server.cluster.clone().unwrap();
    let w1 = Worker::spawn(&addr, "w1", TOKEN);
    let w2 = Worker::spawn(&addr, "w2", TOKEN);
    let id1 = registered_id(&w1.wait_line("registered as worker"));
    let id2 = registered_id(&w2.wait_line("registered as worker"));
    wait_workers(&server, "both live", |l| {
        [id1, id2].iter().all(|id| find(l, *id).is_some_and(|w| w["status"] == "live"))
    })
    .await;

    let (_, api) = server.tenant("acme").await;
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    api.upload_guest("wordcount-v3").await;
    api.upload_guest("faulty").await;
    api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    push(&api, lines(0, 1000)).await;
    let job = api.create_job(&wordcount::spec("cluster-upgrade", "tokenizer", "wordcount")).await;
    wait_output(&api, 1000).await;

    // Fails at once on a worker (its restore refuses the example's state): rolled back.
    let (status, v) = api
        .post(
            &format!("/api/v1/jobs/{job}/upgrade"),
            &json!({ "modules": { "count": "faulty" }, "grace_period_ms": 60000 }),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    let rolled = api.wait_job(&job, LONG, |j| j["upgrade"].is_null() && j["status"] == "running").await;
    assert_eq!(rolled["version"], 1, "{rolled}");
    push(&api, lines(1000, 2000)).await;
    wait_output(&api, 2000).await;

    // The new module, and three counting subtasks (and sink subtasks) instead of two.
    let (status, v) = api
        .post(
            &format!("/api/v1/jobs/{job}/upgrade"),
            &json!({ "modules": { "count": "wordcount-v3" }, "parallelism": { "count": 3, "out": 3 }, "grace_period_ms": 1000 }),
        )
        .await;
    assert_eq!(status, 202, "{v}");
    push(&api, lines(2000, 3000)).await;
    let upgraded = api.wait_job(&job, LONG, |j| j["upgrade"].is_null() && j["version"] == 3).await;
    let count = upgraded["vertices"].as_array().unwrap().iter().find(|v| v["id"] == "count").unwrap();
    assert_eq!(count["parallelism"], 3, "{upgraded}");
    // The new version's subtasks run on the workers.
    assert!(count["subtasks"].as_array().unwrap().iter().all(|s| s["worker"].is_u64()), "{count}");
    push(&api, lines(3000, 4000)).await;
    wait_output(&api, 4000).await;
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/stop")).await;
    assert_eq!(status, 202);
    api.wait_status(&job, "stopped", LONG).await;
    check_exactly_once(&api, 4000).await;
}
