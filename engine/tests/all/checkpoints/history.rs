//! The default checkpoint-history page reads a summary the store keeps up to date, and only
//! the rows it shows: with thousands of rows it must still say exactly what the whole history
//! says.

use std::time::Duration;

use serde_json::{Value, json};
use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage as _, SubtaskStats};

use crate::server::TestServer;

fn close(a: &Value, b: f64, what: &str) {
    let a = a.as_f64().unwrap_or_else(|| panic!("{what}: not a number: {a}"));
    assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{what}: page says {a}, the history {b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_page_of_a_long_history_matches_the_whole_history() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("historian").await;
    let spec = json!({
        "name": "short",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 2000 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "in", "to": "out", "partitioning": "forward" } ],
        "settings": { "checkpoint": { "interval_ms": 50 } }
    });
    let job = api.create_job(&spec).await;
    api.wait_status(&job, "finished", Duration::from_secs(60)).await;

    // Thousands of rows more, of every status, written as a long-running job would leave them.
    let store = server.service().store.clone();
    let seed = 0x1577_u64;
    println!("seed {seed}");
    let first = store.last_checkpoint_id(&job).expect("last id") + 1;
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let metas: Vec<CheckpointMeta> = (first..first + 3000)
        .map(|id| {
            let r = next();
            let status = match r % 10 {
                0 => CheckpointStatus::Failed,
                1 => CheckpointStatus::InProgress,
                _ => CheckpointStatus::Completed,
            };
            CheckpointMeta {
                status,
                duration_ms: Some((r % 1000) as f64 / 3.0),
                state_size: r % 100_000,
                full_size: r % 1_000_000,
                failure: (status == CheckpointStatus::Failed).then(|| "timed out".to_string()),
                subtasks: vec![SubtaskStats {
                    operator: "in".into(),
                    alignment_ms: (r % 77) as f64,
                    alignment_bytes: r % 4096,
                    ..SubtaskStats::default()
                }],
                ..CheckpointMeta::new(job.clone(), id, 1)
            }
        })
        .collect();
    store.import_history(&metas).expect("history written");
    let history = store.history(&job).expect("history");

    let (status, page) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert_eq!(status, 200, "{page}");
    let count = |s: CheckpointStatus| history.iter().filter(|m| m.status == s).count() as u64;
    assert_eq!(page["counts"]["total"], history.len() as u64);
    assert_eq!(page["counts"]["completed"], count(CheckpointStatus::Completed));
    assert_eq!(page["counts"]["failed"], count(CheckpointStatus::Failed));
    assert_eq!(page["counts"]["in_progress"], count(CheckpointStatus::InProgress));
    let completed: Vec<&CheckpointMeta> =
        history.iter().filter(|m| m.status == CheckpointStatus::Completed).collect();
    let stats = |f: &dyn Fn(&CheckpointMeta) -> f64| {
        let values: Vec<f64> = completed.iter().map(|m| f(m)).collect();
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (min, values.iter().sum::<f64>() / values.len() as f64, max)
    };
    for (name, f) in [
        (
            "duration_ms",
            &(|m: &CheckpointMeta| m.duration_ms.unwrap_or_default()) as &dyn Fn(&CheckpointMeta) -> f64,
        ),
        ("state_size", &|m: &CheckpointMeta| m.state_size as f64),
        ("full_size", &|m: &CheckpointMeta| m.full_size as f64),
        ("max_alignment_ms", &|m: &CheckpointMeta| {
            m.subtasks.iter().map(|s| s.alignment_ms).fold(0.0, f64::max)
        }),
        ("alignment_bytes", &|m: &CheckpointMeta| {
            m.subtasks.iter().map(|s| s.alignment_bytes).sum::<u64>() as f64
        }),
    ] {
        let (min, avg, max) = stats(f);
        close(&page["summary"][name]["min"], min, &format!("{name} min"));
        close(&page["summary"][name]["avg"], avg, &format!("{name} avg"));
        close(&page["summary"][name]["max"], max, &format!("{name} max"));
    }
    let latest_completed = completed.last().expect("a completed one").id;
    let latest_failed =
        history.iter().rev().find(|m| m.status == CheckpointStatus::Failed).expect("failed").id;
    assert_eq!(page["latest"]["completed"]["id"], latest_completed, "{}", page["latest"]);
    assert_eq!(page["latest"]["failed"]["id"], latest_failed, "{}", page["latest"]);
    let ids: Vec<u64> =
        page["data"].as_array().expect("data").iter().map(|v| v["id"].as_u64().expect("id")).collect();
    let expected: Vec<u64> = history.iter().rev().take(100).map(|m| m.id).collect();
    assert_eq!(ids, expected, "the page is the newest 100, newest first");

    // The summary is kept up to date by later changes (not recounted): a checkpoint begins,
    // then fails.
    let id = store.last_checkpoint_id(&job).expect("last id") + 1;
    let mut meta = CheckpointMeta::new(job.clone(), id, 2);
    store.begin(&meta).expect("begin");
    let (_, page) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert_eq!(page["counts"]["in_progress"], count(CheckpointStatus::InProgress) + 1);
    assert_eq!(page["data"][0]["id"], id);
    meta.failure = Some("storage quota exceeded".into());
    store.abort(&meta).expect("abort");
    let (_, page) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert_eq!(page["counts"]["total"], history.len() as u64 + 1);
    assert_eq!(page["counts"]["in_progress"], count(CheckpointStatus::InProgress));
    assert_eq!(page["counts"]["failed"], count(CheckpointStatus::Failed) + 1);
    assert_eq!(page["latest"]["failed"]["id"], id);
}
