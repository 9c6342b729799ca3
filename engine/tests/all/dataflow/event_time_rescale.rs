//! Windows and joins stopped into a savepoint and resumed at another parallelism, 2 → 3 → 1:
//! open windows, join buffers and their timers move by key group, and the three runs'
//! output together is exactly the reference (every window once, every pair once). The SDK's
//! windows and joins keep no operator state, so scaling down needs no
//! `allow_non_restored_state`.

use crate::common;
use crate::common::event_time::{self, Assigner, Bounds, Generated};

use std::path::Path;

use serde_json::{Value, json};
use weir::runtime::RunEnv;
use weir::savepoint::{RestoreOptions, restore_into};
use weir_store::{SavepointInfo, Store};

/// Out of order within the watermark's delay, none late: what event time restarting at a
/// savepoint cannot change.
fn input(offset: u64, interval_ms: i64) -> Generated {
    Generated {
        count: 30_000,
        offset,
        keys: 23,
        interval_ms,
        disorder_ms: 20,
        late: None,
        batch_size: 64,
        out_of_orderness_ms: 20,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Runs `spec(parallelism, out)` at 2, then 3, then 1, each started from the savepoint the
/// one before stopped into; returns every run's output lines.
fn rescaled(node: &str, spec: impl Fn(u32, &Path) -> Value) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let rt = runtime();
    let mut outputs = Vec::new();
    let mut previous: Option<SavepointInfo> = None;
    for (step, parallelism) in [2u32, 3, 1].into_iter().enumerate() {
        let out = dir.path().join(format!("out-{step}"));
        let spec = spec(parallelism, &out);
        let plan = common::plan_json(spec.clone()).unwrap();
        let job = format!("job-{step}");
        if let Some(sp) = &previous {
            let report =
                rt.block_on(restore_into(&store, &job, &plan, sp, RestoreOptions::default())).unwrap();
            assert!(report.dropped.is_empty(), "{:?}", report.dropped);
            let n = report.nodes.iter().find(|n| n.id == node).unwrap();
            assert!(n.restored && n.keyed_entries > 0, "{n:?}");
            assert_eq!(n.parallelism, parallelism);
        }
        if step < 2 {
            let checkpoint = rt.block_on(common::run_and_stop(&plan, &store, &job));
            let sp = common::savepoint(&store, &spec, &job, checkpoint);
            let timers: usize = store
                .savepoint_blobs(&sp.id, node)
                .unwrap()
                .values()
                .map(|b| weir::runtime::TaskState::decode(b).unwrap().timers.len())
                .sum();
            assert!(timers > 0, "step {step}: no timer in the savepoint");
            previous = Some(sp);
        } else {
            let env = RunEnv::new(job.clone(), store.clone());
            rt.block_on(weir::runtime::run_job_checkpointed(&plan, &env)).unwrap();
        }
        outputs.extend(common::read_committed(&out));
    }
    outputs
}

#[test]
fn session_windows_resume_at_2_3_1_and_fire_exactly_once() {
    let generated = input(0, 1);
    let assigner = Assigner::Session { gap: 30 };
    let spec = |parallelism: u32, out: &Path| {
        json!({
            "nodes": [
                { "id": "numbers", "kind": "source", "connector": "generator",
                  "config": generated.config(Some(20_000)) },
                { "id": "window", "kind": "operator", "module": "builtin:window",
                  "parallelism": parallelism,
                  "config": { "window": assigner.json(), "allowed_lateness_ms": 10 } },
                { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } }
            ],
            "edges": [
                { "from": "numbers", "to": "window", "partitioning": "hash" },
                { "from": "window", "to": "out" }
            ],
            "settings": { "checkpoint": { "interval_ms": 50 } }
        })
    };
    let lines = rescaled("window", spec);
    let (want, late) = event_time::windows(assigner, 10, &generated.steps());
    assert!(late.is_empty());
    assert_eq!(event_time::fired_windows(&lines), want);
}

#[test]
fn an_interval_join_resumes_at_2_3_1_with_every_pair_once() {
    let (left, right) = (input(0, 2), input(1_000_000, 3));
    let spec = |parallelism: u32, out: &Path| {
        json!({
            "nodes": [
                { "id": "left", "kind": "source", "connector": "generator", "config": left.config(Some(10_000)) },
                { "id": "right", "kind": "source", "connector": "generator", "config": right.config(Some(10_000)) },
                { "id": "join", "kind": "operator", "module": "builtin:join", "parallelism": parallelism,
                  "inputs": ["left", "right"],
                  "config": { "join": { "kind": "interval", "lower_ms": -30, "upper_ms": 60 } } },
                { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } }
            ],
            "edges": [
                { "from": "left", "to": "join", "partitioning": "hash", "input": "left" },
                { "from": "right", "to": "join", "partitioning": "hash", "input": "right" },
                { "from": "join", "to": "out" }
            ],
            "settings": { "checkpoint": { "interval_ms": 50 } }
        })
    };
    let lines = rescaled("join", spec);
    let (want, late) =
        event_time::join(Bounds { lo: Some(-30), hi: Some(60) }, &left.steps(), &right.steps());
    assert!(late.is_empty());
    assert!(want.len() > 10_000, "{}", want.len());
    assert_eq!(event_time::joined_pairs(&lines), want);
}
