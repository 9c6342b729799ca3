//! State schema versions and migration through the real wasmtime host: `describe` reports
//! a module's version and the versions it migrates from, `restore` is told which version
//! wrote each chunk (the example word count writes version 0; `wordcount-v3` reads it by
//! migrating and writes version 1), and the runtime records the version with every
//! checkpoint and refuses to restore a checkpoint into a module of another version.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use weir::guest::bindings::{ChangeKind, StateDelta};
use weir::guest::{GuestError, InstanceLimits, OperatorError, OperatorInstance, OperatorModule};
use weir::record::{Batch, to_msgpack};
use weir::runtime::TaskState;
use weir_store::CheckpointStorage as _;

/// What `wordcount-v3` keeps per word (state schema version 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
struct Tally {
    count: u64,
    batches: u64,
}

/// What `wordcount-v2` emits per word.
#[derive(Debug, PartialEq, Eq, Deserialize)]
struct VersionedTotal {
    count: u64,
    version: u32,
}

fn module(guest: &str) -> Arc<OperatorModule> {
    common::host().load(guest, &std::fs::read(common::guest_path(guest)).unwrap()).unwrap()
}

async fn instance(guest: &str) -> OperatorInstance {
    OperatorInstance::new(&module(guest), "count", 0, InstanceLimits::default()).await.unwrap()
}

/// The puts of a state delta of the state "counts", by word, values decoded as `V`.
fn entries<V: for<'de> Deserialize<'de>>(delta: &StateDelta) -> BTreeMap<String, V> {
    let mut out = BTreeMap::new();
    let mut offset = 0;
    for e in &delta.entries {
        let key = &delta.data[offset..offset + e.key_len as usize];
        let value = &delta.data[offset + e.key_len as usize..offset + (e.key_len + e.value_len) as usize];
        offset += (e.key_len + e.value_len) as usize;
        assert_eq!(delta.names[e.state as usize], "counts");
        assert!(matches!(e.kind, ChangeKind::Put), "only puts here");
        out.insert(rmp_serde::from_slice(key).unwrap(), rmp_serde::from_slice(value).unwrap());
    }
    out
}

/// The records of a batch, by word, values decoded as `V`.
fn totals<V: for<'de> Deserialize<'de>>(out: &Batch) -> BTreeMap<String, V> {
    out.iter()
        .map(|r| (rmp_serde::from_slice(r.key).unwrap(), rmp_serde::from_slice(r.value).unwrap()))
        .collect()
}

/// Runs the example word count over two batches and returns the instance and the two
/// incremental snapshots it took (restore chunks of state schema version 0).
async fn example_with_state() -> (OperatorInstance, Vec<StateDelta>) {
    let mut example = instance("wordcount").await;
    example.open(&common::count_context(false)).await.unwrap();
    example.process(0, &common::word_batch(&["a", "b", "a"])).await.unwrap();
    let first = example.snapshot(1, false).await.unwrap();
    example.process(0, &common::word_batch(&["c", "a"])).await.unwrap();
    let second = example.snapshot(2, false).await.unwrap();
    assert_eq!(entries::<u64>(&second), BTreeMap::from([("a".into(), 3), ("c".into(), 1)]));
    (example, vec![first, second])
}

/// The operator error of a failed call, which must be `invalid-state`.
fn invalid_state(e: GuestError) -> String {
    match e {
        GuestError::Operator { error: OperatorError::InvalidState(m), .. } => m,
        other => panic!("expected an invalid-state error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_reports_the_state_version_and_what_it_migrates_from() {
    for (guest, name, version, migrates_from) in [
        ("wordcount", "wordcount", 0, vec![]),
        ("tokenizer", "tokenizer", 0, vec![]),
        ("wordcount-v2", "wordcount-v2", 0, vec![]),
        ("wordcount-v3", "wordcount-v3", 1, vec![0]),
    ] {
        let info = instance(guest).await.describe().await.unwrap();
        assert_eq!(info.name, name);
        assert_eq!((info.state_version, info.migrates_from), (version, migrates_from), "{guest}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wordcount_v3_migrates_the_state_the_example_wrote() {
    let (mut example, chunks) = example_with_state().await;
    let mut v3 = instance("wordcount-v3").await;
    for chunk in &chunks {
        v3.restore(0, chunk).await.unwrap();
    }
    v3.open(&common::count_context(true)).await.unwrap();

    // The counts go on where the example stands, with the same output.
    let next = common::word_batch(&["a", "b", "d", "a"]);
    let from_example = totals::<u64>(&example.process(0, &next).await.unwrap());
    let from_v3 = totals::<u64>(&v3.process(0, &next).await.unwrap());
    assert_eq!(from_v3, from_example);
    assert_eq!(from_v3, BTreeMap::from([("a".into(), 5), ("b".into(), 2), ("d".into(), 1)]));

    // The full snapshot holds every entry in the new format: migrated entries have counted
    // no batch yet, those touched since have one.
    let full = entries::<Tally>(&v3.snapshot(0, true).await.unwrap());
    let tally = |count, batches| Tally { count, batches };
    assert_eq!(
        full,
        BTreeMap::from([
            ("a".into(), tally(5, 1)),
            ("b".into(), tally(2, 1)),
            ("c".into(), tally(1, 0)),
            ("d".into(), tally(1, 1)),
        ])
    );
    // ... while the example still writes bare counts (version 0).
    let old = entries::<u64>(&example.snapshot(3, true).await.unwrap());
    assert_eq!(old, full.iter().map(|(w, t)| (w.clone(), t.count)).collect());

    // A fresh v3 restores that snapshot as its own version, without migrating it again.
    let mut again = instance("wordcount-v3").await;
    again.restore(1, &v3.snapshot(0, true).await.unwrap()).await.unwrap();
    again.open(&common::count_context(true)).await.unwrap();
    assert_eq!(totals::<u64>(&again.process(0, &common::word_batch(&["c"])).await.unwrap())["c"], 2);
    let full = entries::<Tally>(&again.snapshot(0, true).await.unwrap());
    assert_eq!((full["a"], full["c"]), (tally(5, 1), tally(2, 1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wordcount_v2_restores_the_examples_state_as_it_is() {
    let (_, chunks) = example_with_state().await;
    let mut v2 = instance("wordcount-v2").await;
    for chunk in &chunks {
        v2.restore(0, chunk).await.unwrap();
    }
    v2.open(&common::count_context(true)).await.unwrap();
    let out = totals::<VersionedTotal>(&v2.process(0, &common::word_batch(&["a", "c", "e"])).await.unwrap());
    let total = |count| VersionedTotal { count, version: 2 };
    assert_eq!(out, BTreeMap::from([("a".into(), total(4)), ("c".into(), total(2)), ("e".into(), total(1))]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_of_a_version_the_module_does_not_know_is_refused() {
    let (_, chunks) = example_with_state().await;

    // The example reads only version 0.
    let mut example = instance("wordcount").await;
    let m = invalid_state(example.restore(1, &chunks[0]).await.unwrap_err());
    assert_eq!(m, "state schema version 1 cannot be restored by this operator (version 0, migrates from [])");
    // The message of the whole error names the operator and the call.
    let e = example.restore(1, &chunks[0]).await.unwrap_err().to_string();
    assert!(e.starts_with("operator `count` (subtask 0) failed in restore: invalid state: "), "{e}");

    // v3 reads 1 and migrates 0, nothing else.
    let mut v3 = instance("wordcount-v3").await;
    let m = invalid_state(v3.restore(2, &chunks[0]).await.unwrap_err());
    assert_eq!(
        m,
        "state schema version 2 cannot be restored by this operator (version 1, migrates from [0])"
    );

    // Version-0 entries that do not hold a count cannot be migrated.
    let mut bad = chunks[0].clone();
    bad.data = [to_msgpack("a"), to_msgpack("two")].concat();
    bad.names = vec!["counts".into()];
    bad.entries.truncate(1);
    bad.entries[0].state = 0;
    bad.entries[0].key_len = to_msgpack("a").len() as u32;
    bad.entries[0].value_len = to_msgpack("two").len() as u32;
    let m = invalid_state(v3.restore(0, &bad).await.unwrap_err());
    assert!(
        m.starts_with("restore entry 0 of state \"counts\" cannot be migrated from state schema version 0: "),
        "{m}"
    );
}

#[test]
fn a_task_state_written_before_versions_were_recorded_restores_as_the_modules_own() {
    /// The blob of an operator subtask before `state_version` existed.
    #[derive(Serialize)]
    struct Before {
        position: Option<Value>,
        source_watermark: Option<(i64, i64)>,
        watermarks: Vec<i64>,
        timers: Vec<(i64, Vec<u8>)>,
        sink_pending: Vec<(u64, Value)>,
    }
    let before = Before {
        position: None,
        source_watermark: None,
        watermarks: vec![7],
        timers: vec![(9, vec![1])],
        sink_pending: Vec::new(),
    };
    let state = TaskState::decode(&rmp_serde::to_vec_named(&before).unwrap()).unwrap();
    assert_eq!((state.state_version, state.watermarks.as_slice()), (None, &[7][..]));
    assert_eq!(state.restore_version("count", 3).unwrap(), 3);

    let state = TaskState { state_version: Some(1), ..TaskState::default() };
    let state = TaskState::decode(&state.encode()).unwrap();
    assert_eq!(state.restore_version("count", 1).unwrap(), 1);
    assert_eq!(
        state.restore_version("count", 2).unwrap_err().to_string(),
        "operator `count`: the checkpoint's state has schema version 1 but the module has version 2; \
         start a changed module from a savepoint"
    );
}

/// lines → tokenizer → `module` (node `count`, keyed by word) → file sink, checkpointing
/// every 10 ms, without restarts. Paced, so that it can be stopped halfway.
fn wordcount_job(module: &str, out: &Path) -> Value {
    json!({
        "name": "versions",
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "words", "lines": LINES, "words_per_line": 6, "vocabulary": 50,
                          "seed": SEED, "batch_size": 20, "records_per_second": 2000 } },
            { "id": "split", "kind": "operator", "module": "builtin:tokenizer", "parallelism": 2 },
            { "id": "count", "kind": "operator", "module": module, "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } }
        ],
        "edges": [
            { "from": "lines", "to": "split", "partitioning": "forward" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out" }
        ],
        "settings": {
            "checkpoint": { "interval_ms": 10, "tolerable_failures": 1000 },
            "restart": { "attempts": 0, "delay_ms": 0 }
        }
    })
}

const LINES: u64 = 2000;
const SEED: u64 = 5;

/// Runs the job with the example word count and stops it once some output is committed:
/// its final checkpoint is a stopped one, from which running the job again resumes.
fn run_example_and_stop_halfway(data: &Path, out: &Path, job: &str) {
    let plan = common::plan_json(wordcount_job("builtin:wordcount", out)).expect("plan");
    std::fs::create_dir_all(data).unwrap();
    let store = weir_store::Store::open(&data.join("weir.redb")).expect("store");
    let env = weir::runtime::RunEnv::new(job, store.clone());
    let finished = AtomicBool::new(false);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let report = runtime.block_on(async {
        let run = async {
            let report = weir::runtime::run_job_checkpointed(&plan, &env).await;
            finished.store(true, Ordering::SeqCst);
            report
        };
        let stop = async {
            while !finished.load(Ordering::SeqCst) {
                if out.exists() && !common::read_committed(out).is_empty() {
                    env.stop();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        };
        tokio::join!(run, stop).0
    });
    let report = report.expect("the example runs");
    assert!(report.stopped, "the job was stopped before its input ended");

    // Every operator subtask recorded its module's state schema version; other tasks none.
    let (meta, manifest) = store.latest_completed(job).unwrap().expect("a completed checkpoint");
    assert!(meta.is_final && meta.stopped);
    for (node, version) in [("count", Some(0)), ("split", Some(0)), ("lines", None), ("out", None)] {
        for sub in manifest[node].values() {
            assert_eq!(TaskState::decode(&sub.blob).unwrap().state_version, version, "{node}");
        }
    }
}

/// The reference word counts of the job's input.
fn reference() -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for i in 0..LINES {
        let line = weir::connectors::generator::corpus_line(SEED, 50, 6, i);
        for w in line.split_whitespace() {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
            if !w.is_empty() {
                *counts.entry(w).or_default() += 1;
            }
        }
    }
    counts
}

#[test]
fn a_checkpoint_is_not_restored_into_a_module_of_another_state_version() {
    let dir = tempfile::tempdir().unwrap();
    let (data, out) = (dir.path().join("data"), dir.path().join("out"));
    run_example_and_stop_halfway(&data, &out, "wc");

    let (result, store) =
        common::run_checkpointed(wordcount_job("test:wordcount-v3", &out), &data, "wc", |env| env);
    let e = result.expect_err("version 1 must not restore the version-0 checkpoint").to_string();
    assert!(
        e.contains(
            "cannot restore: operator `count`: the checkpoint's state has schema version 0 but the module has \
             version 1; start a changed module from a savepoint"
        ),
        "{e}"
    );
    // The checkpoint stays as it was, to resume with the right module.
    let (meta, _) = store.latest_completed("wc").unwrap().unwrap();
    assert!(meta.is_final && meta.stopped);
}

#[test]
fn a_changed_module_of_the_same_state_version_resumes_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (data, out) = (dir.path().join("data"), dir.path().join("out"));
    run_example_and_stop_halfway(&data, &out, "wc2");

    let (result, _store) =
        common::run_checkpointed(wordcount_job("test:wordcount-v2", &out), &data, "wc2", |env| env);
    let report = result.expect("wordcount-v2 resumes the example's checkpoint");
    assert_eq!(report.restored_from.len(), 1);

    // Output is exactly once across both runs: every total of a word appears once, the
    // example's (bare counts) all below version 2's ({"count", "version": 2}), and the last
    // total of every word is its count.
    let mut by_word: BTreeMap<String, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
    for r in common::read_committed(&out) {
        let word = r["key"].as_str().expect("the key is the word").to_string();
        let (v1, v2) = by_word.entry(word).or_default();
        match &r["value"] {
            Value::Number(n) => v1.push(n.as_u64().unwrap()),
            v => {
                assert_eq!(v["version"], 2, "{v}");
                v2.push(v["count"].as_u64().unwrap());
            }
        }
    }
    assert!(by_word.values().any(|(v1, _)| !v1.is_empty()), "the example committed output before it stopped");
    assert!(by_word.values().any(|(_, v2)| !v2.is_empty()), "version 2 went on from there");
    let mut last = BTreeMap::new();
    for (word, (mut v1, mut v2)) in by_word {
        v1.sort_unstable();
        v2.sort_unstable();
        let all: Vec<u64> = v1.iter().chain(&v2).copied().collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]), "{word}: example {v1:?} then v2 {v2:?}");
        last.insert(word, *all.last().unwrap());
    }
    assert_eq!(last, reference());
}
