//! Host keyed state from Python (`weirpy.state.HostKeyedState`) in real checkpointed jobs:
//! `examples/python/operators/counter_host.py` (`counter-host.wasm`, the Rust test guest
//! `counter` with its state "counts" on the host's disk) survives injected faults and a
//! SIGKILL of `weir run` with exactly-once output and final counts equal to a reference
//! computed here, and its state is the host's: the checkpoints hold it as `@host/counts`,
//! the guest hands over nothing of its own.
//!
//! The component comes from `examples/python/build.sh` through the language harness of
//! `api_languages` (built once into `<target>/lang/python`; the tools from `$WEIR_TOOLS`,
//! installed by `.ci/run` or `examples/python/build.sh --tools-only`).

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
use weir_store::{CheckpointStorage as _, Store};

/// Ids `0..COUNT`, key `id % KEYS`.
const COUNT: u64 = 6_000;
const KEYS: u64 = 61;
/// A key's count is deleted when it reaches this (so checkpoints carry deletes).
const RESET: u64 = 37;
const JOB: &str = "py-host";

fn module() -> PathBuf {
    common::languages::build("python").join("counter-host.wasm")
}

/// ids (2 subtasks) → the Python counter (2, hash) → file sink (exactly once).
fn spec(module: &Path, out: &Path, records_per_second: u64) -> Value {
    json!({
        "name": "python-host-counts",
        "nodes": [
            { "id": "ids", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": COUNT, "keys": KEYS, "batch_size": 20,
                          "records_per_second": records_per_second } },
            { "id": "count", "kind": "operator", "module": module, "parallelism": 2,
              "config": { "reset_at": RESET, "pad": 8 } },
            { "id": "out", "kind": "sink", "connector": "file", "parallelism": 2, "config": { "path": out } }
        ],
        "edges": [
            { "from": "ids", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 100 } }
    })
}

/// How many ids of `0..COUNT` fall on each key.
fn per_key() -> BTreeMap<u64, u64> {
    let mut n = BTreeMap::new();
    for id in 0..COUNT {
        *n.entry(id % KEYS).or_default() += 1;
    }
    n
}

/// The committed output holds every id once and, per key, the running counts of a run
/// without failures; the final checkpoint holds the reference counts, as host state only.
fn check(out: &Path, store: &Store, job: &str) {
    let lines = common::read_committed(out);
    let mut ids = Vec::with_capacity(lines.len());
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in &lines {
        let (id, count) = (l["value"][0].as_u64(), l["value"][1].as_u64());
        let (Some(id), Some(count)) = (id, count) else { panic!("bad line {l}") };
        assert_eq!(l["key"].as_u64(), Some(id % KEYS), "{l}");
        ids.push(id);
        counts.entry(id % KEYS).or_default().push(count);
    }
    ids.sort_unstable();
    assert!(ids.iter().copied().eq(0..COUNT), "{} ids committed, not each of 0..{COUNT} once", ids.len());
    for (key, n) in per_key() {
        let mut got = counts.remove(&key).unwrap_or_default();
        got.sort_unstable();
        let mut want: Vec<u64> = (0..n).map(|j| j % RESET + 1).collect();
        want.sort_unstable();
        assert_eq!(got, want, "key {key}: running counts");
    }
    let want: BTreeMap<u64, u64> =
        per_key().into_iter().map(|(k, n)| (k, n % RESET)).filter(|(_, c)| *c > 0).collect();
    assert_eq!(common::final_counts(store, job, "count").unwrap(), want, "final counts");
    let states = state_entries(store, job, "count");
    assert_eq!(
        states.keys().collect::<Vec<_>>(),
        ["@host/counts"],
        "states of the final checkpoint: {states:?}"
    );
    assert_eq!(states["@host/counts"], want.len(), "{states:?}");
}

/// Live entries per state name of `node` in the job's latest completed checkpoint.
fn state_entries(store: &Store, job: &str, node: &str) -> BTreeMap<String, usize> {
    let (_, manifest) = store.latest_completed(job).unwrap().expect("a completed checkpoint");
    let mut out = BTreeMap::new();
    for sub in manifest.get(node).expect("state of the node").values() {
        for chain in sub.chains.values() {
            for e in store.read_chain(job, chain).unwrap() {
                *out.entry(e.state).or_default() += 1;
            }
        }
    }
    out
}

/// A panic before a batch and a failed snapshot: the job restores its checkpoints (the
/// host state into fresh local stores) and still counts every id once.
#[test]
fn python_host_state_is_exactly_once_through_faults() {
    common::quiet_injected_panics();
    let module = module();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let injector = Arc::new(FaultInjector::new(vec![
        PlannedFault { point: FaultPoint::Process, after: 60, kind: FaultKind::Panic },
        PlannedFault { point: FaultPoint::Snapshot, after: 6, kind: FaultKind::Error },
    ]));
    let (result, store) =
        common::run_checkpointed(spec(&module, &out, 3_000), &dir.path().join("data"), JOB, |env| {
            env.with_faults(injector.clone())
        });
    let report = result.expect("the job runs");
    assert_eq!(injector.fired(), 2);
    // Both faults may fire in one attempt: one restore at least.
    assert!(report.restarts >= 1 && !report.restored_from.is_empty(), "{report:?}");
    check(&out, &store, JOB);
}

/// `weir run` killed with SIGKILL after a few checkpoints, then run again: it restores the
/// last checkpoint and ends with the same output and state as a run without the kill.
#[test]
fn python_host_state_survives_sigkill() {
    let module = module();
    let dir = tempfile::tempdir().unwrap();
    let (out, data) = (dir.path().join("out"), dir.path().join("data"));
    let job_file = dir.path().join("counter.job.json");
    std::fs::write(&job_file, spec(&module, &out, 1_000).to_string()).unwrap();
    let weir = env!("CARGO_BIN_EXE_weir");
    let run = || {
        Command::new(weir)
            .args(["run", job_file.to_str().unwrap(), "--job-id", JOB, "--data-dir", data.to_str().unwrap()])
            .env("RUST_LOG", "weir=warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("weir starts")
    };
    let mut child = run();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut completed = 0;
    while completed < 3 {
        let line = rx.recv_timeout(Duration::from_secs(180)).expect("a checkpoint within 180 s");
        assert!(!line.contains("(final)"), "the job ended before it could be killed");
        if line.starts_with("checkpoint ") && line.contains(" completed") {
            completed += 1;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let second = run().wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success(), "{stdout}");
    assert!(stdout.contains("restored from checkpoint"), "{stdout}");
    let store = Store::open(&data.join("weir.redb")).unwrap();
    check(&out, &store, JOB);
}
