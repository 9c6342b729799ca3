//! Observing jobs (issue 42) over a real socket. Operator logs: every level and stdout, in order per
//! subtask, filtered by level and node; followed as server-sent events; nobody else's; kept
//! across a server restart; printed by `weir job logs`.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server::TestServer;

const LONG: Duration = Duration::from_secs(120);

/// generator (`count` records, keyed, at `rate`/s) → the counter guest logging every level
/// for every record (`records {i} at {level}`, and on stdout) → blackhole.
pub(crate) fn spec(counter: &str, count: u64, rate: Option<u64>) -> Value {
    json!({
        "name": "talkative",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": count, "keys": 3, "batch_size": 1,
                          "records_per_second": rate } },
            { "id": "count", "kind": "operator", "module": counter, "config": { "log_levels": true } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "in", "to": "count", "partitioning": "hash" }, { "from": "count", "to": "out" } ],
        "settings": { "checkpoint": { "interval_ms": 100 } }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_operator_logs_are_the_tenants_to_read_filter_and_follow() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn_process(dir.path());
    let (_, api) = server.tenant("acme").await;
    let (_, other) = server.tenant("other").await;
    let counter = api.upload_guest("counter").await;
    let id = api.create_job(&spec(&counter, 10, None)).await;
    api.wait_status(&id, "finished", LONG).await;
    let path = format!("/api/v1/jobs/{id}/logs");
    let check = |page: &Value| {
        let data = page["data"].as_array().unwrap_or_else(|| panic!("{page}"));
        let lines: Vec<(String, String)> = data
            .iter()
            .map(|l| (l["level"].as_str().unwrap().to_string(), l["message"].as_str().unwrap().to_string()))
            .collect();
        let mut want = Vec::new();
        for i in 0..10 {
            for level in ["trace", "debug", "info", "warn", "error"] {
                want.push((level.to_string(), format!("record {i} at {level}")));
            }
            want.push(("stdout".to_string(), format!("record {i} on stdout")));
        }
        assert_eq!(lines, want, "in order, every level");
        let seqs: Vec<u64> = data.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        assert!(
            data.iter().all(|l| l["node"] == "count" && l["subtask"] == 0 && l["attempt"] == 0),
            "{page}"
        );
    };
    let (status, page) = api.get(&path).await;
    assert_eq!(status, 200, "{page}");
    check(&page);
    // Filters.
    let (_, warn) = api.get(&format!("{path}?level=warn")).await;
    let levels: Vec<&str> =
        warn["data"].as_array().unwrap().iter().map(|l| l["level"].as_str().unwrap()).collect();
    assert_eq!(levels.len(), 20, "{warn}");
    assert!(levels.iter().all(|l| *l == "warn" || *l == "error"), "{levels:?}");
    let (_, none) = api.get(&format!("{path}?node=in")).await;
    assert_eq!(none["data"], json!([]));
    let first = page["data"][5]["seq"].as_u64().unwrap();
    let (_, after) = api.get(&format!("{path}?after={first}&limit=3")).await;
    let after: Vec<u64> =
        after["data"].as_array().unwrap().iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(after, [first + 1, first + 2, first + 3]);
    // Nobody else's.
    let (status, body) = other.get(&path).await;
    assert_eq!(status, 404, "{body}");

    // Followed: the lines so far, then new ones as they are logged.
    let slow = api.create_job(&spec(&counter, 400, Some(10))).await;
    let response = reqwest::Client::new()
        .get(format!("{}/api/v1/jobs/{slow}/logs?follow=true&level=info", server.url))
        .bearer_auth(api.token().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let started = Instant::now();
    let mut response = response;
    let mut text = String::new();
    let mut seen = 0;
    while seen < 40 {
        assert!(started.elapsed() < LONG, "40 lines were not followed in {LONG:?}:\n{text}");
        let chunk = response.chunk().await.unwrap().expect("the stream goes on");
        text.push_str(&String::from_utf8_lossy(&chunk));
        seen = text.matches("event: line").count();
    }
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(events.iter().all(|e| e["level"] != "trace" && e["level"] != "debug"), "{text}");
    assert_eq!(events[0]["message"], "record 0 at info", "{text}");
    drop(response);
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{slow}/cancel")).await;
    assert_eq!(status, 200);

    // Kept across a kill of the server; the CLI prints them.
    server.kill9();
    let server = TestServer::spawn_process(dir.path());
    let api = api.at(&server.url);
    let (status, page) = api.get(&path).await;
    assert_eq!(status, 200, "{page}");
    check(&page);
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["job", "logs", &id, "--level", "error"])
        .env("WEIR_URL", &server.url)
        .env("WEIR_TOKEN", api.token().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let printed: Vec<&str> = stdout.lines().collect();
    assert_eq!(printed.len(), 10, "{stdout}");
    assert!(
        printed[3].contains("error")
            && printed[3].contains("count#0")
            && printed[3].ends_with("record 3 at error")
    );
}

/// A tenant's `GET /api/v1/metrics` holds its own jobs' series and usage, and nothing of
/// another tenant's, of the process or of the workers; the admin's `/metrics` holds both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_metrics_are_its_own() {
    let server = TestServer::start(|_| {}).await;
    let (a_id, a) = server.tenant("a").await;
    let (b_id, b) = server.tenant("b").await;
    let mut jobs = Vec::new();
    for api in [&a, &b] {
        let counter = api.upload_guest("counter").await;
        let id = api.create_job(&spec(&counter, 10, None)).await;
        api.wait_status(&id, "finished", LONG).await;
        jobs.push(id);
    }
    let text = |api: &crate::server::Api| {
        let api = api.clone();
        async move {
            let response = reqwest::Client::new()
                .get(format!("{}/api/v1/metrics", api.url))
                .bearer_auth(api.token().unwrap())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            response.text().await.unwrap()
        }
    };
    let mine = text(&a).await;
    let records = format!("tenant=\"{a_id}\",job=\"{}\"", jobs[0]);
    assert!(
        mine.lines().any(|l| l.starts_with("weir_records_in_total{") && l.contains(&records)),
        "A's records are in A's metrics:\n{mine}"
    );
    assert!(
        mine.contains("weir_tenant_quota{") && mine.contains("# TYPE weir_records_in_total counter"),
        "{mine}"
    );
    // The operator's own counter, summed over its subtasks.
    let counted = format!(
        "weir_operator_counter_total{{tenant=\"{a_id}\",job=\"{}\",node=\"count\",name=\"records_logged\"}} 10",
        jobs[0]
    );
    assert!(mine.lines().any(|l| l == counted), "no `{counted}` in\n{mine}");
    assert!(!mine.contains(&b_id) && !mine.contains(&jobs[1]), "B is not in A's metrics:\n{mine}");
    assert!(!mine.contains("process_") && !mine.contains("weir_worker"), "{mine}");
    for line in mine.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.contains(&format!("tenant=\"{a_id}\"")), "{line}");
    }
    let theirs = text(&b).await;
    assert!(theirs.contains(&jobs[1]) && !theirs.contains(&a_id), "{theirs}");
    let (status, _) = server.anonymous().get("/api/v1/metrics").await;
    assert_eq!(status, 401);
    // The admin's has both.
    let all = server.client(crate::server::ADMIN).text("/metrics").await;
    assert!(all.contains(&jobs[0]) && all.contains(&jobs[1]), "{all}");
}

/// The dashboard in `deploy/observability/` asks only for metrics the server exports (each
/// name is one the telemetry records or a scrape writes).
#[test]
fn the_dashboard_uses_the_servers_metric_names() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("deploy/observability/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let sources: String = ["engine/src/server/telemetry.rs", "engine/src/server/telemetry/scrape.rs"]
        .iter()
        .map(|f| std::fs::read_to_string(root.join(f)).unwrap())
        .collect();
    let mut names = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let mut rest = expr;
            while let Some(at) = rest.find("weir_") {
                let name: String =
                    rest[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                rest = &rest[at + name.len()..];
                names.push(name.trim_end_matches("_bucket").to_string());
            }
        }
    }
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        assert!(
            sources.contains(&format!("\"{name}\"")) || sources.contains(&format!("{name}{{")),
            "the dashboard asks for `{name}`, which the server does not export"
        );
    }
}

/// docs/observing-a-job.md names every metric the server exports.
#[test]
fn the_docs_name_every_metric_the_server_exports() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let docs = std::fs::read_to_string(root.join("docs/observing-a-job.md")).unwrap();
    let mut names = std::collections::BTreeSet::new();
    for file in ["telemetry.rs", "telemetry/scrape.rs", "telemetry/process.rs"] {
        let text = std::fs::read_to_string(root.join("engine/src/server").join(file)).unwrap();
        // The code, not its unit tests.
        let code = text.split("#[cfg(test)]").next().unwrap();
        for prefix in ["\"weir_", "\"process_", " weir_"] {
            for (at, _) in code.match_indices(prefix) {
                let name: String =
                    code[at + 1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                names.insert(name);
            }
        }
    }
    assert!(names.len() >= 40, "{names:?}");
    let missing: Vec<&String> = names.iter().filter(|n| !docs.contains(&format!("`{n}`"))).collect();
    assert!(missing.is_empty(), "docs/observing-a-job.md does not name {missing:?}");
}

/// A Python operator's log lines (weirpy's logging, and `print`) and its own counter reach the
/// job's log and the tenant's metrics like a Rust operator's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_operators_logs_and_counters_are_the_tenants() {
    let built = tokio::task::spawn_blocking(|| crate::common::languages::build("python")).await.unwrap();
    let server = TestServer::start(|_| {}).await;
    let (tenant, api) = server.tenant("acme").await;
    let bytes = std::fs::read(built.join("counter-host.wasm")).expect("the Python counter is built");
    let (status, v) = api.upload("counter-py", bytes).await;
    assert_eq!(status, 201, "{v}");
    let id = api.create_job(&spec("counter-py", 10, None)).await;
    api.wait_status(&id, "finished", LONG).await;
    let (status, page) = api.get(&format!("/api/v1/jobs/{id}/logs")).await;
    assert_eq!(status, 200, "{page}");
    let lines: Vec<(String, String)> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["level"].as_str().unwrap().to_string(), l["message"].as_str().unwrap().to_string()))
        .collect();
    let mut want = Vec::new();
    for i in 0..10 {
        for level in ["trace", "debug", "info", "warn", "error"] {
            want.push((level.to_string(), format!("record {i} at {level}")));
        }
        want.push(("stdout".to_string(), format!("record {i} on stdout")));
    }
    assert_eq!(lines, want);
    let text = reqwest::Client::new()
        .get(format!("{}/api/v1/metrics", api.url))
        .bearer_auth(api.token().unwrap())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let counted = format!(
        "weir_operator_counter_total{{tenant=\"{tenant}\",job=\"{id}\",node=\"count\",name=\"records_logged\"}} 10"
    );
    assert!(text.lines().any(|l| l == counted), "no `{counted}` in\n{text}");
}

/// Busy time says where a job spends its time: an operator that burns CPU on every record is
/// busy most of the time, the source ahead of it waits for room (backpressured), the sink
/// after it is mostly idle; the same shares and the bytes are in the tenant's metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_and_backpressured_time_show_the_slow_operator() {
    let server = TestServer::start(|_| {}).await;
    let (tenant, api) = server.tenant("acme").await;
    api.upload_guest("faulty").await;
    let spec = json!({
        "name": "slow",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": 100_000_000u64, "batch_size": 16 } },
            { "id": "slow", "kind": "operator", "module": "faulty", "config": { "work": 200_000 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "in", "to": "slow" }, { "from": "slow", "to": "out" } ],
        "settings": { "channel_capacity": 2, "checkpoint": { "interval_ms": null } }
    });
    let id = api.create_job(&spec).await;
    let sub = |j: &Value, node: usize, what: &str| j["vertices"][node]["subtasks"][0][what].as_f64().unwrap();
    let j = api
        .wait_job(&id, LONG, |j| {
            j["status"] == "running" && sub(j, 1, "busy") > 0.5 && sub(j, 0, "backpressure") > 0.5
        })
        .await;
    assert!(sub(&j, 2, "busy") < 0.5, "the sink is not the busy one: {j}");
    let metrics = api.text("/api/v1/metrics").await;
    let labels = format!("tenant=\"{tenant}\",job=\"{id}\"");
    for series in [
        format!("weir_subtask_busy_ratio{{{labels},node=\"slow\",subtask=\"0\"}}"),
        format!("weir_subtask_backpressured_ratio{{{labels},node=\"in\",subtask=\"0\"}}"),
        format!("weir_bytes_in_total{{{labels},node=\"slow\"}}"),
        format!("weir_bytes_out_total{{{labels},node=\"in\"}}"),
    ] {
        let value: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{series} ")))
            .unwrap_or_else(|| panic!("no {series} in\n{metrics}"))
            .parse()
            .unwrap();
        assert!(value > 0.0, "{series} {value}");
    }
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{id}/cancel")).await;
    assert_eq!(status, 200);
}
