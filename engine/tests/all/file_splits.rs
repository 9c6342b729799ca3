//! The file source reads one file with several subtasks (line-aligned byte ranges): every
//! line reaches the sink exactly once across a crash and restore at the same parallelism, and
//! across savepoints restored at other parallelisms (2 → 3 → 1), which reassign and re-cut
//! the splits.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use weir::plan::{JobSpec, Plan};
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
use weir::runtime::{JobEvent, RunEnv, StopMode};
use weir::savepoint::{Description, RestoreOptions, restore_into};
use weir_store::{CheckpointStorage as _, SavepointInfo, Store};

const COUNT: u64 = 6000;

/// One file of `COUNT` numbered lines of random lengths, with empty lines between them and
/// the last line without `\n`.
fn write_input(path: &Path, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut text = String::new();
    for id in 0..COUNT {
        if rng.gen_range(0..8) == 0 {
            text.push('\n');
        }
        let pad = "p".repeat(rng.gen_range(0..200));
        text.push_str(&format!("{{\"k\": {}, \"id\": {id}, \"pad\": \"{pad}\"}}", id % 7));
        if id + 1 < COUNT {
            text.push('\n');
        }
    }
    std::fs::write(path, text).unwrap();
}

fn spec(input: &Path, out: &Path, parallelism: u32, checkpoint_ms: u64) -> Value {
    json!({
        "name": "file-splits",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "file", "parallelism": parallelism,
              "config": { "path": input, "key_field": "k", "split_bytes": 4096, "batch_size": 16,
                          "records_per_second": 4000 } },
            { "id": "out", "kind": "sink", "connector": "file", "parallelism": 2, "config": { "path": out } }
        ],
        "edges": [ { "from": "in", "to": "out", "partitioning": "hash" } ],
        "settings": { "checkpoint": { "interval_ms": checkpoint_ms }, "restart": { "attempts": 3, "delay_ms": 0 } }
    })
}

/// The ids in the committed output of `outs`, sorted; fails on a line that is not one of ours.
fn ids(outs: &[&Path]) -> Vec<u64> {
    let mut ids: Vec<u64> = outs
        .iter()
        .flat_map(|out| common::read_committed(out))
        .map(|l| l["value"]["id"].as_u64().unwrap_or_else(|| panic!("not an input line: {l}")))
        .collect();
    ids.sort_unstable();
    ids
}

fn assert_exactly_once(ids: &[u64], seed: u64) {
    let repeated: Vec<_> = ids.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).take(5).collect();
    assert!(repeated.is_empty(), "seed {seed}: lines read twice: {repeated:?}");
    let missing: Vec<_> = (0..COUNT).filter(|id| ids.binary_search(id).is_err()).take(5).collect();
    assert!(missing.is_empty(), "seed {seed}: lines never read: {missing:?}");
    assert_eq!(ids.len() as u64, COUNT, "seed {seed}");
}

#[test]
fn one_file_read_by_three_subtasks_survives_a_crash_exactly_once() {
    let seed = 18;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_input(&input, seed);
    let out = dir.path().join("out");
    let faults = Arc::new(FaultInjector::new(vec![PlannedFault {
        point: FaultPoint::Snapshot,
        after: 6,
        kind: FaultKind::Error,
    }]));
    let (result, _store) =
        common::run_checkpointed(spec(&input, &out, 3, 10), &dir.path().join("data"), "splits", |env| {
            env.with_faults(faults.clone())
        });
    let report = result.unwrap();
    assert_eq!(faults.fired(), 1);
    assert!(report.restarts >= 1 && !report.restored_from.is_empty(), "{report:?}");
    assert_exactly_once(&ids(&[&out]), seed);
}

/// Runs job `id` until its second checkpoint completed, then stops it with a pinned final
/// checkpoint; returns that checkpoint's id.
async fn run_and_stop(plan: &Plan, store: &Store, id: &str) -> u64 {
    let env = Arc::new(RunEnv::new(id, store.clone()));
    let mut events = env.subscribe();
    let stopper = env.clone();
    tokio::spawn(async move {
        let mut completed = 0;
        while let Ok(event) = events.recv().await {
            if let JobEvent::CheckpointCompleted { .. } = event {
                completed += 1;
                if completed == 2 {
                    stopper.stop_with(StopMode::Suspend, true);
                    return;
                }
            }
        }
    });
    let report = weir::runtime::run_job_checkpointed(plan, &env).await.expect("job runs");
    assert!(report.stopped, "the job ended before it was stopped");
    report.final_checkpoint.expect("a final checkpoint")
}

fn savepoint(store: &Store, spec: &Value, job: &str, checkpoint: u64) -> SavepointInfo {
    let spec: JobSpec = serde_json::from_value(spec.clone()).unwrap();
    let (_, manifest) = store.checkpoint(job, checkpoint).unwrap().unwrap();
    let manifest = manifest.unwrap();
    let description = Description::of(&spec, &manifest).unwrap();
    let info = SavepointInfo {
        id: format!("sp-{job}"),
        owner: "tests".into(),
        job: job.into(),
        checkpoint,
        created_ms: 0,
        bytes: 0,
        entries: 0,
        origin: None,
        description: serde_json::to_value(description).unwrap(),
    };
    let info = store.create_savepoint(info, &manifest).unwrap();
    store.unpin(job, checkpoint).unwrap();
    info
}

#[test]
fn savepoints_restored_at_other_parallelisms_read_every_line_once() {
    let seed = 19;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    write_input(&input, seed);
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut outs = Vec::new();
    let mut previous: Option<SavepointInfo> = None;
    for (step, parallelism) in [2u32, 3, 1].into_iter().enumerate() {
        let out = dir.path().join(format!("out-{step}"));
        let spec = spec(&input, &out, parallelism, 50);
        let plan = common::plan_json(spec.clone()).unwrap();
        let job = format!("job-{step}");
        if let Some(sp) = &previous {
            let report =
                rt.block_on(restore_into(&store, &job, &plan, sp, RestoreOptions::default())).unwrap();
            let source = report.nodes.iter().find(|n| n.id == "in").unwrap();
            assert_eq!(source.parallelism, parallelism);
        }
        if step < 2 {
            let checkpoint = rt.block_on(run_and_stop(&plan, &store, &job));
            previous = Some(savepoint(&store, &spec, &job, checkpoint));
        } else {
            let env = RunEnv::new(job.clone(), store.clone());
            let report = rt.block_on(weir::runtime::run_job_checkpointed(&plan, &env)).unwrap();
            assert_eq!(report.restored_from, vec![1], "the job restores its first checkpoint");
        }
        outs.push(out);
    }
    let outs: Vec<&Path> = outs.iter().map(|p| p.as_path()).collect();
    let per_job: Vec<usize> = outs.iter().map(|o| common::read_committed(o).len()).collect();
    assert!(per_job.iter().all(|n| *n > 0), "every job read some lines: {per_job:?}");
    assert_exactly_once(&ids(&outs), seed);
}
