//! Observing a job whose operators run on a worker (issue 42): the lines they log reach the
//! job's log on the controller (in order, tagged with the controller's attempt), and their
//! watermark, their own counters and the count of their log lines reach the job view and
//! the tenant's metrics.

use std::time::Duration;

use serde_json::json;

use super::workers::{TOKEN, Worker, controller, find, registered_id, wait_workers};

const LONG: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_on_a_worker_log_into_the_jobs_log_and_report_their_watermarks() {
    let dir = tempfile::tempdir().unwrap();
    let server = controller(&dir.path().join("data"), &[]);
    let addr = server.cluster.clone().unwrap();
    let worker = Worker::spawn(&addr, "w1", TOKEN);
    let id = registered_id(&worker.wait_line("registered as worker"));
    wait_workers(&server, "live", |l| find(l, id).is_some_and(|w| w["status"] == "live")).await;

    let (tenant, api) = server.tenant("acme").await;
    let counter = api.upload_guest("counter").await;
    let start = weir::clock::unix_ms() as i64 - 60_000;
    let mut spec = crate::api::observing::spec(&counter, 20, Some(10));
    spec["nodes"][0]["config"]["start_timestamp"] = json!(start);
    let job = api.create_job(&spec).await;
    // While it runs: the operator on the worker, its watermark and lag in the job view.
    let running = api
        .wait_job(&job, LONG, |j| {
            let sub = &j["vertices"][1]["subtasks"][0];
            sub["worker"] == json!(id) && sub["watermark_ms"].as_i64().is_some_and(|w| w >= start)
        })
        .await;
    let sub = &running["vertices"][1]["subtasks"][0];
    assert!(sub["event_time_lag_ms"].as_i64().unwrap() >= 59_000, "{sub}");
    api.wait_status(&job, "finished", LONG).await;

    let (status, page) = api.get(&format!("/api/v1/jobs/{job}/logs")).await;
    assert_eq!(status, 200, "{page}");
    let data = page["data"].as_array().unwrap();
    let got: Vec<&str> = data.iter().map(|l| l["message"].as_str().unwrap()).collect();
    let mut want = Vec::new();
    for i in 0..20 {
        for level in ["trace", "debug", "info", "warn", "error"] {
            want.push(format!("record {i} at {level}"));
        }
        want.push(format!("record {i} on stdout"));
    }
    assert_eq!(got, want, "every line, in order");
    assert!(data.iter().all(|l| l["node"] == "count" && l["subtask"] == 0 && l["attempt"] == 0), "{page}");
    // Not in the worker's own log.
    assert!(!worker.lines_so_far().iter().any(|l| l.contains("record 3 at warn")));

    let metrics = api.text("/api/v1/metrics").await;
    let labels = format!("tenant=\"{tenant}\",job=\"{job}\",node=\"count\"");
    for want in [
        format!("weir_operator_counter_total{{{labels},name=\"records_logged\"}} 20"),
        format!("weir_operator_log_lines_total{{{labels},level=\"info\"}} 20"),
        format!("weir_operator_log_lines_total{{{labels},level=\"stdout\"}} 20"),
    ] {
        assert!(metrics.lines().any(|l| l == want), "no `{want}` in\n{metrics}");
    }
    assert!(!metrics.contains("weir_operator_log_lines_dropped_total"), "{metrics}");
}
