//! Starting a job from a savepoint, below the API: an event-time window stopped with open
//! windows (timers in the state) resumes at another parallelism, and every window fires
//! exactly once across the two jobs; a savepoint that does not fit is refused before
//! anything is written.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use weir::runtime::{JobEvent, RunEnv, StopMode};
use weir::savepoint::{RestoreError, RestoreOptions, restore_into};
use weir_store::{CheckpointStorage as _, SavepointInfo, Store};

const COUNT: u64 = 40_000;
const KEYS: u64 = 13;
const SIZE: i64 = 500;

fn spec(window_parallelism: u32, out: &Path) -> Value {
    json!({
        "name": "windows",
        "nodes": [
            { "id": "numbers", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": COUNT, "keys": KEYS, "interval_ms": 1,
                          "batch_size": 64, "out_of_orderness_ms": 50, "records_per_second": 20_000 } },
            { "id": "window", "kind": "operator", "module": "builtin:tumbling-window",
              "parallelism": window_parallelism, "config": { "size_ms": SIZE } },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } }
        ],
        "edges": [
            { "from": "numbers", "to": "window", "partitioning": "hash" },
            { "from": "window", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 50 } }
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Open windows' timers in the savepoint's blobs.
fn timers(store: &Store, savepoint: &str) -> usize {
    store
        .savepoint_blobs(savepoint, "window")
        .unwrap()
        .values()
        .map(|b| weir::runtime::TaskState::decode(b).unwrap().timers.len())
        .sum()
}

#[test]
fn windows_resume_at_another_parallelism_and_fire_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let rt = runtime();
    let mut outputs = Vec::new();
    let mut previous: Option<SavepointInfo> = None;
    // 2 subtasks → 3 → 1, a savepoint between each.
    for (step, parallelism) in [2u32, 3, 1].into_iter().enumerate() {
        let out = dir.path().join(format!("out-{step}"));
        let spec = spec(parallelism, &out);
        let plan = common::plan_json(spec.clone()).unwrap();
        let job = format!("job-{step}");
        if let Some(sp) = &previous {
            let mut options = RestoreOptions::default();
            if parallelism == 1 {
                // The window keeps its last watermark as operator (non-keyed) state: scaling
                // down would drop subtasks 1 and 2's, which needs saying so.
                let e = rt.block_on(restore_into(&store, &job, &plan, sp, options)).unwrap_err().to_string();
                assert!(
                    e.contains("subtask(s) [1, 2] of operator `window`, which scales from 3 to 1"),
                    "{e}"
                );
                assert!(store.history(&job).unwrap().is_empty(), "a refused restore wrote a checkpoint");
                options.allow_non_restored_state = true;
            }
            let report = rt.block_on(restore_into(&store, &job, &plan, sp, options)).unwrap();
            assert_eq!(report.dropped.len(), usize::from(parallelism == 1), "{:?}", report.dropped);
            let window = report.nodes.iter().find(|n| n.id == "window").unwrap();
            assert!(window.restored && window.keyed_entries > 0, "{window:?}");
            assert_eq!(window.parallelism, parallelism);
        }
        if step < 2 {
            let checkpoint = rt.block_on(common::run_and_stop(&plan, &store, &job));
            let sp = common::savepoint(&store, &spec, &job, checkpoint);
            assert!(timers(&store, &sp.id) > 0, "step {step}: no open window in the savepoint");
            previous = Some(sp);
        } else {
            let env = RunEnv::new(job.clone(), store.clone());
            let report = rt.block_on(weir::runtime::run_job_checkpointed(&plan, &env)).unwrap();
            assert_eq!(report.restored_from, vec![1], "the job restores its first checkpoint");
        }
        outputs.extend(common::read_committed(&out));
    }
    check(&outputs);
}

/// Every window of the reference fired exactly once, with the right count and sum.
fn check(lines: &[Value]) {
    let mut reference: BTreeMap<(u64, i64), (u64, i64)> = BTreeMap::new();
    for i in 0..COUNT {
        let e = reference.entry((i % KEYS, (i as i64).div_euclid(SIZE) * SIZE)).or_default();
        e.0 += 1;
        e.1 += i as i64;
    }
    let mut actual: BTreeMap<(u64, i64), (u64, i64)> = BTreeMap::new();
    for r in lines {
        let v = &r["value"];
        let key = (r["key"].as_u64().unwrap(), v["window_start"].as_i64().unwrap());
        let prev = actual.insert(key, (v["count"].as_u64().unwrap(), v["sum"].as_i64().unwrap()));
        assert!(prev.is_none(), "window {key:?} fired twice");
    }
    let missing: Vec<_> = reference.keys().filter(|k| !actual.contains_key(k)).take(5).collect();
    assert!(missing.is_empty(), "windows never fired: {missing:?}");
    assert_eq!(actual, reference);
}

#[test]
fn a_savepoint_that_does_not_fit_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let rt = runtime();
    let spec_a = spec(2, &dir.path().join("a"));
    let plan = common::plan_json(spec_a.clone()).unwrap();
    let checkpoint = rt.block_on(common::run_and_stop(&plan, &store, "a"));
    let sp = common::savepoint(&store, &spec_a, "a", checkpoint);

    let refused_from = |sp: &SavepointInfo, spec: Value, job: &str| {
        let plan = common::plan_json(spec).unwrap();
        let e = rt.block_on(restore_into(&store, job, &plan, sp, RestoreOptions::default())).unwrap_err();
        assert!(matches!(e, RestoreError::Incompatible(_)), "{e}");
        assert_eq!(store.last_checkpoint_id(job).unwrap(), 0, "{job}: something was written");
        assert!(store.history(job).unwrap().is_empty(), "{job}: something was written");
        e.to_string()
    };
    let refused = |spec: Value, job: &str| refused_from(&sp, spec, job);
    // Other key groups.
    let mut other = spec(2, &dir.path().join("b"));
    other["settings"]["max_parallelism"] = json!(64);
    let e = refused(other, "b");
    assert!(e.contains("128 key groups") && e.contains("max_parallelism is 64"), "{e}");
    // A generator cannot change parallelism.
    let mut rescaled_source = spec(2, &dir.path().join("c"));
    rescaled_source["nodes"][0]["parallelism"] = json!(3);
    let e = refused(rescaled_source, "c");
    assert!(e.contains("source `numbers` cannot go from 2 to 3 subtasks"), "{e}");
    // The window's state has no node to go to.
    let mut renamed = spec(2, &dir.path().join("d"));
    renamed["nodes"][1]["id"] = json!("w2");
    renamed["edges"][0]["to"] = json!("w2");
    renamed["edges"][1]["from"] = json!("w2");
    let e = refused(renamed.clone(), "d");
    assert!(e.contains("node `window`") && e.contains("allow_non_restored_state"), "{e}");
    // ... unless allowed: then it is dropped, and the job starts from the rest.
    let plan = common::plan_json(renamed).unwrap();
    let report = rt
        .block_on(restore_into(&store, "d", &plan, &sp, RestoreOptions { allow_non_restored_state: true }))
        .unwrap();
    assert!(report.dropped.iter().any(|d| d.contains("node `window`")), "{report:?}");
    assert_eq!(store.last_checkpoint_id("d").unwrap(), 1);

    // A description that does not match the data (an imported file says what its uploader
    // wrote): refused, never looped over or allocated for.
    let manifest = store.checkpoint("a", checkpoint).unwrap().unwrap().1.unwrap();
    let forged = |id: &str, node: usize, parallelism: u64| {
        let mut info = sp.clone();
        info.id = id.into();
        info.description["nodes"][node]["parallelism"] = json!(parallelism);
        store.create_savepoint(info, &manifest).unwrap()
    };
    let shrunk = forged("shrunk", 1, 1);
    let e = refused_from(&shrunk, spec(2, &dir.path().join("e")), "e");
    assert!(
        e.contains("inconsistent") && e.contains("node `window` has 1 subtask(s) but state for subtask 1"),
        "{e}"
    );
    let huge = forged("huge", 0, u64::from(u32::MAX));
    let e = refused_from(&huge, spec(2, &dir.path().join("f")), "f");
    assert!(e.contains("node `numbers` parallelism 4294967295, outside 1..=128"), "{e}");

    // Entries kept under a key group that is not their key's (a forged file).
    use weir_store::{CheckpointMeta, CheckpointStatus, ScopeDelta, StateEntry, SubtaskWrite};
    let key = vec![0x01];
    let wrong = (weir::key_groups::key_group(&key, 128) + 1) % 128;
    store.begin(&CheckpointMeta::new("forged", 1, 0)).unwrap();
    let state = store
        .write_subtask(SubtaskWrite {
            job: "forged".into(),
            checkpoint: 1,
            operator: "window".into(),
            subtask: 0,
            full: true,
            scopes: Arc::new(vec![ScopeDelta {
                scope: wrong,
                entries: vec![StateEntry { state: "windows".into(), key, value: Some(vec![0x80]) }],
            }]),
            blob: Vec::new(),
            max_chain_length: 8,
            ..SubtaskWrite::default()
        })
        .unwrap();
    let manifest = [("window".to_string(), [(0, state)].into())].into();
    let meta = CheckpointMeta { status: CheckpointStatus::Completed, ..CheckpointMeta::new("forged", 1, 0) };
    store.complete(&meta, &manifest, 1).unwrap();
    let mut info = sp.clone();
    info.id = "misplaced".into();
    info.job = "forged".into();
    info.description = json!({ "format": 1, "job_name": "forged", "max_parallelism": 128,
        "nodes": [{ "id": "window", "kind": "operator", "parallelism": 1, "state_version": 0 }] });
    let misplaced = store.create_savepoint(info, &manifest).unwrap();
    let e = rt
        .block_on(restore_into(
            &store,
            "g",
            &common::plan_json(spec(2, &dir.path().join("g"))).unwrap(),
            &misplaced,
            RestoreOptions::default(),
        ))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("keeps a key of key group {} in key group {wrong}", (wrong + 127) % 128)),
        "{e}"
    );
    assert!(store.latest_completed("g").unwrap().is_none(), "a job restored misplaced state");
}

/// Stop with drain: the end-of-input watermark goes through before the final checkpoint, so
/// every open window fires and the savepoint holds no window and no timer; a plain stop
/// keeps them open (and a drained job finishes rather than stops).
#[test]
fn a_drain_fires_every_open_window_before_the_savepoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let rt = runtime();
    for (job, mode) in [("stopped", StopMode::Suspend), ("drained", StopMode::Drain)] {
        let out = dir.path().join(job);
        let plan = common::plan_json(spec(2, &out)).unwrap();
        let env = Arc::new(RunEnv::new(job, store.clone()));
        let mut events = env.subscribe();
        let stopper = env.clone();
        let report = rt.block_on(async move {
            tokio::spawn(async move {
                while let Ok(event) = events.recv().await {
                    if let JobEvent::CheckpointCompleted { .. } = event {
                        stopper.stop_with(mode, true);
                        return;
                    }
                }
            });
            weir::runtime::run_job_checkpointed(&plan, &env).await.expect("job runs")
        });
        assert_eq!((report.stopped, report.drained), (mode == StopMode::Suspend, mode == StopMode::Drain));
        let (meta, manifest) = store.latest_completed(job).unwrap().unwrap();
        assert!(meta.pinned && meta.is_final);
        assert_eq!(meta.stopped, mode == StopMode::Suspend, "only a plain stop resumes as if never stopped");
        let mut open_windows = 0;
        let mut timers = 0;
        for state in manifest["window"].values() {
            timers += weir::runtime::TaskState::decode(&state.blob).unwrap().timers.len();
            for chain in state.chains.values() {
                open_windows +=
                    store.read_chain(job, chain).unwrap().iter().filter(|e| e.state == "windows").count();
            }
        }
        let fired = common::read_committed(&out).len();
        match mode {
            StopMode::Suspend => assert!(open_windows > 0 && timers > 0, "a stop keeps open windows"),
            StopMode::Drain => {
                assert_eq!((open_windows, timers), (0, 0), "a drain leaves no open window");
                assert!(fired > 0);
            }
        }
    }
}
