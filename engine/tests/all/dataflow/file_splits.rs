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
use weir::runtime::RunEnv;
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
use weir::savepoint::{RestoreOptions, restore_into};
use weir_store::{SavepointInfo, Store};

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
            let checkpoint = rt.block_on(common::run_and_stop(&plan, &store, &job));
            previous = Some(common::savepoint(&store, &spec, &job, checkpoint));
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
