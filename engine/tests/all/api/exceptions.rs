//! A job's exception history (issue 41): its failures, newest first, with their class,
//! where they happened and what Weir did; kept across a server's kill, read over the API and
//! the CLI, and nobody else's.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::server::TestServer;

const LONG: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_failures_are_kept_in_its_exception_history() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn_process(dir.path());
    let (_, api) = server.tenant("acme").await;
    let (_, other) = server.tenant("other").await;
    let faulty = api.upload_guest("faulty").await;
    // A poison record at every attempt: two restarts, then the job fails (the server raises
    // the 1 ms delay to its `min_restart_delay_ms`, 100 ms).
    let spec = json!({
        "name": "doomed",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 100 } },
            { "id": "poison", "kind": "operator", "module": faulty, "config": { "panic_at": 3 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "in", "to": "poison" }, { "from": "poison", "to": "out" } ],
        "settings": { "checkpoint": { "interval_ms": null },
                      "restart": { "strategy": "fixed", "attempts": 2, "delay_ms": 1 } }
    });
    let id = api.create_job(&spec).await;
    api.wait_status(&id, "failed", LONG).await;
    let path = format!("/api/v1/jobs/{id}/exceptions");
    let check = |page: &serde_json::Value| {
        let data = page["data"].as_array().unwrap_or_else(|| panic!("{page}"));
        assert_eq!(data.len(), 3, "{page}");
        // Newest first: the failure that ended the job, then the two that restarted it.
        let seen: Vec<_> =
            data.iter().map(|e| (e["seq"].as_u64(), e["attempt"].as_u64(), e["action"].as_str())).collect();
        assert_eq!(
            seen,
            [
                (Some(3), Some(2), Some("failed")),
                (Some(2), Some(2), Some("restarted")),
                (Some(1), Some(1), Some("restarted"))
            ]
        );
        for e in data {
            assert_eq!(
                (e["class"].as_str(), e["node"].as_str(), e["subtask"].as_u64()),
                (Some("user_code"), Some("poison"), Some(0)),
                "{e}"
            );
            assert!(e["error"].as_str().unwrap().contains("poison record 3"), "{e}");
            assert!(e["time_ms"].as_u64().unwrap() > 1_700_000_000_000, "{e}");
        }
        assert_eq!((data[1]["delay_ms"].as_u64(), data[0]["delay_ms"].as_u64()), (Some(100), None));
    };
    let (status, page) = api.get(&path).await;
    assert_eq!(status, 200, "{page}");
    check(&page);
    // Nobody else's.
    let (status, body) = other.get(&path).await;
    assert_eq!(status, 404, "{body}");

    // Counted per class on /metrics, with the delay the job last waited.
    let metrics = server.client(crate::server::ADMIN).text("/metrics").await;
    let restarts = metrics
        .lines()
        .find(|l| {
            l.starts_with("weir_job_restarts_total") && l.contains(&id) && l.contains(r#"class="user_code""#)
        })
        .unwrap_or_else(|| panic!("no restarts series for the job:\n{metrics}"));
    assert!(restarts.ends_with(" 2"), "{restarts}");
    assert!(
        metrics.lines().any(|l| l.starts_with("weir_job_restart_delay_seconds")
            && l.contains(&id)
            && l.ends_with(" 0.1")),
        "{metrics}"
    );

    // Kept across a kill of the server.
    server.kill9();
    let server = TestServer::spawn_process(dir.path());
    let api = api.at(&server.url);
    let (status, page) = api.get(&path).await;
    assert_eq!(status, 200, "{page}");
    check(&page);

    // The CLI reads it.
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["job", "exceptions", &id])
        .env("WEIR_URL", &server.url)
        .env("WEIR_TOKEN", api.token().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains("poison #0")).collect();
    assert_eq!(rows.len(), 3, "three failures:\n{stdout}");
    assert!(
        rows[0].contains("user_code") && rows[0].contains("failed") && !rows[0].contains("restarted"),
        "{stdout}"
    );
    assert!(rows[1].contains("restarted after 100 ms") && rows[1].contains("poison record 3"), "{stdout}");
}

/// A record that breaks an operator with `on_error: dead_letter` is in the history as
/// `dead_lettered`, not as a restart, and in the tenant's dead-letter stream with the
/// guest's message; the job finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_record_taken_out_is_in_the_history_and_the_dead_letter_stream() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let faulty = api.upload_guest("faulty").await;
    let spec = json!({
        "name": "healed",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 100 } },
            { "id": "poison", "kind": "operator", "module": faulty, "on_error": "dead_letter",
              "config": { "panic_at": 3 } },
            { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": "out", "partitions": 1 } }
        ],
        "edges": [ { "from": "in", "to": "poison" }, { "from": "poison", "to": "out" } ],
        "dead_letter": { "connector": "stream", "config": { "stream": "dead", "partitions": 1 } },
        "settings": { "checkpoint": { "interval_ms": 100 } }
    });
    let id = api.create_job(&spec).await;
    let job = api.wait_status(&id, "finished", LONG).await;
    assert_eq!(job["restarts"], 0, "{job}");
    let (status, page) = api.get(&format!("/api/v1/jobs/{id}/exceptions")).await;
    assert_eq!(status, 200, "{page}");
    let data = page["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{page}");
    assert_eq!(
        (data[0]["action"].as_str(), data[0]["node"].as_str()),
        (Some("dead_lettered"), Some("poison"))
    );
    assert!(data[0]["error"].as_str().unwrap().contains("poison record 3"), "{page}");
    let out = api.read_all("out").await;
    assert_eq!(out.len(), 99, "every record but the poison one");
    let dead = api.read_all("dead").await;
    assert_eq!(dead.len(), 1, "{dead:?}");
    let letter = &dead[0].3;
    assert_eq!(
        (letter["node"].as_str(), letter["reason"].as_str()),
        (Some("poison"), Some("guest_trap")),
        "{letter}"
    );
    assert!(letter["error"].as_str().unwrap().contains("poison record 3"), "{letter}");
}
