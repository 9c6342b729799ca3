//! Unaligned checkpoints are visible: history rows with unaligned subtask statistics, stored
//! as the runtime stores them, come out of the API (history, summary, counts, one checkpoint
//! per operator and per subtask) and out of `/metrics` with the stored values.

use std::time::Duration;

use serde_json::{Value, json};
use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage as _, SubtaskStats};

use crate::server::{ADMIN, TestServer};

fn close(a: &Value, b: f64, what: &str) {
    let a = a.as_f64().unwrap_or_else(|| panic!("{what}: not a number: {a}"));
    assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{what}: the API says {a}, the store {b}");
}

fn took_unaligned(s: &SubtaskStats) -> bool {
    s.unaligned || s.switched_to_unaligned_ms.is_some()
}

/// The value of `name`'s series of `job` in a Prometheus exposition.
fn metric(text: &str, name: &str, job: &str) -> f64 {
    let label = format!("job=\"{job}\"");
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(&label))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no {name} of job {job} in\n{text}"))
        .parse()
        .expect("a number")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unaligned_statistics_in_the_store_reach_the_api_and_the_metrics() {
    let server = TestServer::start(|_| {}).await;
    let (tenant, api) = server.tenant("unaligner").await;
    let spec = json!({
        "name": "short",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 500 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "in", "to": "out", "partitioning": "forward" } ],
        "settings": { "checkpoint": { "interval_ms": 50 } }
    });
    let job = api.create_job(&spec).await;
    api.wait_status(&job, "finished", Duration::from_secs(60)).await;

    // Rows of every kind: aligned, unaligned from the trigger, switched by some subtasks.
    let store = server.service().store.clone();
    let seed = 0x17_5eed_u64;
    println!("seed {seed}");
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let first = store.last_checkpoint_id(&job).expect("last id") + 1;
    let metas: Vec<CheckpointMeta> = (first..first + 60)
        .map(|id| {
            let trigger = 1_000_000 + id * 1000;
            let kind = next() % 3;
            let subtasks = ["in", "out"]
                .iter()
                .flat_map(|op| (0..2).map(move |i| (*op, i)))
                .map(|(op, i)| {
                    let r = next();
                    // kind 0: aligned; 1: unaligned from the start; 2: some subtasks switch.
                    let switched = (kind == 2 && r % 2 == 0).then(|| trigger + 5 + r % 50);
                    let unaligned = kind == 1 || switched.is_some();
                    SubtaskStats {
                        operator: op.into(),
                        subtask: i,
                        ack_time_ms: trigger + 100,
                        alignment_bytes: r % 5000,
                        unaligned,
                        persisted_in_flight_bytes: if unaligned { 1 + r % 100_000 } else { 0 },
                        switched_to_unaligned_ms: switched,
                        ..SubtaskStats::default()
                    }
                })
                .collect();
            CheckpointMeta {
                status: if next() % 8 == 0 { CheckpointStatus::Failed } else { CheckpointStatus::Completed },
                duration_ms: Some(100.0),
                end_time_ms: Some(trigger + 100),
                subtasks,
                ..CheckpointMeta::new(job.clone(), id, trigger)
            }
        })
        .collect();
    assert!(
        metas.iter().any(|m| m.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some()))
            && metas.iter().any(|m| m.subtasks.iter().all(|s| s.unaligned))
            && metas.iter().any(|m| !m.subtasks.iter().any(took_unaligned)),
        "seed {seed}: the rows lack a kind"
    );
    store.import_history(&metas).expect("history written");
    let history = store.history(&job).expect("history");

    let (status, page) = api.get(&format!("/api/v1/jobs/{job}/checkpoints?limit=1000")).await;
    assert_eq!(status, 200, "{page}");
    let completed: Vec<&CheckpointMeta> =
        history.iter().filter(|m| m.status == CheckpointStatus::Completed).collect();
    let unaligned = completed.iter().filter(|m| m.subtasks.iter().any(took_unaligned)).count() as u64;
    let switched =
        completed.iter().filter(|m| m.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some())).count()
            as u64;
    assert!(unaligned > switched && switched > 0, "seed {seed}: {unaligned} unaligned, {switched} switched");
    assert_eq!(page["counts"]["unaligned"], unaligned, "{}", page["counts"]);
    assert_eq!(page["counts"]["switched_to_unaligned"], switched, "{}", page["counts"]);
    let persisted = |m: &CheckpointMeta| m.subtasks.iter().map(|s| s.persisted_in_flight_bytes).sum::<u64>();
    let values: Vec<f64> = completed.iter().map(|m| persisted(m) as f64).collect();
    let summary = &page["summary"]["persisted_in_flight_bytes"];
    close(&summary["min"], values.iter().copied().fold(f64::INFINITY, f64::min), "persisted min");
    close(&summary["avg"], values.iter().sum::<f64>() / values.len() as f64, "persisted avg");
    close(&summary["max"], values.iter().copied().fold(f64::NEG_INFINITY, f64::max), "persisted max");

    let rows = page["data"].as_array().expect("data");
    assert_eq!(rows.len(), history.len());
    for (row, m) in rows.iter().zip(history.iter().rev()) {
        assert_eq!(row["id"], m.id);
        let expected_type = if m.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some()) {
            "aligned_then_unaligned"
        } else if m.subtasks.iter().any(|s| s.unaligned) {
            "unaligned"
        } else {
            "aligned"
        };
        assert_eq!(row["checkpoint_type"], expected_type, "checkpoint {}: {row}", m.id);
        assert_eq!(row["unaligned"], m.subtasks.iter().any(took_unaligned), "checkpoint {}", m.id);
        assert_eq!(row["persisted_in_flight_bytes"], persisted(m), "checkpoint {}", m.id);
        let processed: u64 = m.subtasks.iter().map(|s| s.alignment_bytes).sum();
        assert_eq!(row["processed_in_flight_bytes"], processed, "checkpoint {}", m.id);
        assert_eq!(row["alignment_bytes"], processed, "checkpoint {}", m.id);
        let switch = m.subtasks.iter().filter_map(|s| s.switched_to_unaligned_ms).min();
        assert_eq!(row["switched_to_unaligned_ms"], json!(switch), "checkpoint {}", m.id);
    }

    // One switched checkpoint in detail: each subtask's values, and each operator's sums.
    let m = metas
        .iter()
        .find(|m| m.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some()))
        .expect("a switched one");
    let (status, detail) = api.get(&format!("/api/v1/jobs/{job}/checkpoints/{}", m.id)).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["checkpoint_type"], "aligned_then_unaligned");
    let subtasks = detail["subtasks"].as_array().expect("subtasks");
    assert_eq!(subtasks.len(), m.subtasks.len());
    for s in &m.subtasks {
        let v = subtasks
            .iter()
            .find(|v| v["operator"] == s.operator.as_str() && v["subtask"] == s.subtask)
            .unwrap_or_else(|| panic!("no subtask {}#{} in {detail}", s.operator, s.subtask));
        assert_eq!(v["unaligned"], s.unaligned, "{v}");
        assert_eq!(v["persisted_in_flight_bytes"], s.persisted_in_flight_bytes, "{v}");
        assert_eq!(v["processed_in_flight_bytes"], s.alignment_bytes, "{v}");
        assert_eq!(v["switched_to_unaligned_ms"], json!(s.switched_to_unaligned_ms), "{v}");
    }
    for op in ["in", "out"] {
        let subs: Vec<&SubtaskStats> = m.subtasks.iter().filter(|s| s.operator == op).collect();
        let v = detail["operators"]
            .as_array()
            .expect("operators")
            .iter()
            .find(|v| v["id"] == op)
            .unwrap_or_else(|| panic!("no operator {op} in {detail}"));
        let persisted: u64 = subs.iter().map(|s| s.persisted_in_flight_bytes).sum();
        let processed: u64 = subs.iter().map(|s| s.alignment_bytes).sum();
        assert_eq!(v["persisted_in_flight_bytes"], persisted, "{v}");
        assert_eq!(v["processed_in_flight_bytes"], processed, "{v}");
        assert_eq!(v["unaligned_subtasks"], subs.iter().filter(|s| took_unaligned(s)).count(), "{v}");
        let switch = subs.iter().filter_map(|s| s.switched_to_unaligned_ms).min();
        assert_eq!(v["switched_to_unaligned_ms"], json!(switch), "{v}");
    }

    // `/metrics`: the server records a completed checkpoint from its stored row.
    let scrape = || async {
        reqwest::Client::new()
            .get(format!("{}/metrics", server.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("scraped")
            .text()
            .await
            .expect("text")
    };
    let telemetry = &server.service().telemetry;
    let mut fed = (0u64, 0u64, 0u64, 0u64);
    for m in metas.iter().filter(|m| m.status == CheckpointStatus::Completed) {
        let row = store.history_row(&job, m.id).expect("read").expect("stored");
        telemetry.checkpoint_completed(&tenant, &job, &row);
        fed.0 += 1;
        fed.1 += u64::from(row.subtasks.iter().any(took_unaligned));
        fed.2 += u64::from(row.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some()));
        fed.3 += persisted(&row);
    }
    // The job's own checkpoints (aligned: they add 0 to these) may still be being recorded.
    let after = scrape().await;
    assert_eq!(metric(&after, "weir_checkpoints_unaligned_total", &job), fed.1 as f64, "{after}");
    assert_eq!(metric(&after, "weir_checkpoints_switched_to_unaligned_total", &job), fed.2 as f64);
    assert_eq!(metric(&after, "weir_checkpoint_persisted_in_flight_bytes_total", &job), fed.3 as f64);
    assert!(metric(&after, "weir_checkpoint_persisted_in_flight_bytes_count", &job) >= fed.0 as f64);
    assert!(metric(&after, "weir_checkpoints_completed_total", &job) >= fed.0 as f64);
}
