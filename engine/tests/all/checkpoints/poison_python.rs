//! Poison records with the Python counter (`examples/python/operators/counter_host.py`,
//! component `counter-host`): the jobs of `poison` with the Rust test guest replaced by the
//! Python one, which keeps its counts in host keyed state (`HostKeyedState`) and is built by
//! componentize-py. A record that, after being counted, raises an unexpected exception
//! (weirpy returns it as an `other` error), is refused (`invalid-input`) or allocates past the
//! memory limit (a trap) goes to the dead letters with `on_error: dead_letter`, and the
//! counts go on as if it never arrived; with `dead_letter_every` the operator sends records
//! to the dead letters itself (`weirpy.host.dead_letter`), and the host unwraps them.

use super::poison::{EVERY, JOB, KEYS, N, check, is_poison, kill_trial, spec, trial_with};
use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The instance memory limit of these jobs, in MiB: the Python component starts in well
/// under it (CPython's heap after pre-initialization), and `alloc` passes it.
const MEMORY_MB: u64 = 64;

/// The Python counter component, built by `examples/python/build.sh` (once per source change).
fn counter_host() -> PathBuf {
    let path = common::languages::build("python").join("counter-host.wasm");
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

/// `poison::spec` with the Python counter in place of the Rust one.
fn python_spec(out: &Path, dead: &Path, poison: &str, on_error: &str) -> serde_json::Value {
    let module = counter_host();
    let mut spec = spec(out, dead, module.to_str().unwrap(), poison, on_error);
    spec["settings"]["memory_limit_mb"] = MEMORY_MB.into();
    spec
}

/// Runs the job of `poison` records with `on_error: dead_letter` and checks it as `poison`
/// does: each other id committed once with running counts 1..n per key, the final host state
/// equal to the reference without the poison records, the poison records (and only they) in
/// the dead letters with `message` in their error.
fn poison_trial(poison: &str, message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (out, dead) = (dir.path().join("out"), dir.path().join("dead"));
    let spec = python_spec(&out, &dead, poison, "dead_letter");
    let started = Instant::now();
    let (result, store) = common::run_checkpointed(spec, &dir.path().join("data"), JOB, |env| env);
    let report = result.unwrap_or_else(|e| panic!("{poison}: the job failed: {e}"));
    if let Err(e) = check(&out, &dead, &store, message) {
        panic!("{poison}: {e}");
    }
    eprintln!("{poison}: passed in {:?}, {} restarts", started.elapsed(), report.restarts);
}

#[test]
fn python_records_that_raise_go_to_the_dead_letters_with_state_as_if_never_seen() {
    poison_trial("panic", "RuntimeError: counter: poison record");
}

#[test]
fn python_records_the_guest_refuses_go_to_the_dead_letters_with_state_as_if_never_seen() {
    poison_trial("error", "counter: refused record");
}

#[test]
fn python_records_that_exhaust_the_guests_memory_go_to_the_dead_letters() {
    poison_trial("alloc", "memory limit");
}

#[test]
fn the_python_operator_sends_records_to_the_dead_letters_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (out, dead) = (dir.path().join("out"), dir.path().join("dead"));
    let mut spec = python_spec(&out, &dead, "panic", "fail");
    spec["nodes"][1]["config"] = serde_json::json!({ "dead_letter_every": EVERY });
    let (result, store) = common::run_checkpointed(spec, &dir.path().join("data"), JOB, |env| env);
    result.unwrap();

    // Every other id once; the sent-away ones never.
    let mut ids: Vec<u64> =
        common::read_committed(&out).iter().map(|l| l["value"][0].as_u64().expect("an id")).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..N).filter(|i| !is_poison(*i)).collect::<Vec<_>>());

    // The dead letters: each sent-away record once, as it came, with the guest's reason.
    let hex = |v: &serde_json::Value| -> u64 {
        let raw = hex::decode(v["hex"].as_str().unwrap_or_else(|| panic!("no raw bytes in {v}"))).unwrap();
        rmpv::decode::read_value(&mut &raw[..]).unwrap().as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
    };
    let mut found = BTreeSet::new();
    for l in common::read_committed(&dead) {
        let v = &l["value"];
        let id = hex(&v["value"]);
        assert_eq!(hex(&v["key"]), id % KEYS, "{v}");
        assert_eq!(v["reason"], format!("counter: record {id} sent away"), "{v}");
        assert_eq!(v["origin"]["kind"], "guest", "{v}");
        assert_eq!(v["node"], "count", "{v}");
        assert!(
            v["error"].as_str().is_some_and(|e| e.contains(&format!("counter: record {id} sent away"))),
            "{v}"
        );
        assert!(found.insert(id), "id {id} is in the dead letters twice");
    }
    assert_eq!(found, (0..N).filter(|i| is_poison(*i)).collect::<BTreeSet<_>>());

    // Counted all the same: the final host state holds every record.
    let mut reference: BTreeMap<u64, u64> = BTreeMap::new();
    for id in 0..N {
        *reference.entry(id % KEYS).or_default() += 1;
    }
    assert_eq!(common::final_counts(&store, JOB, "count").unwrap(), reference);
}

/// With faults injected at seeded points (the seed is printed on failure), and with the
/// process killed and started again, the Python counter's poison records are taken out all
/// the same.
#[test]
fn python_poison_records_survive_injected_faults_and_a_kill() {
    common::quiet_injected_panics();
    let module = counter_host();
    let module = module.to_str().unwrap();
    for (seed, poison, message) in
        [(4201, "error", "counter: refused record"), (4202, "panic", "counter: poison record")]
    {
        match trial_with(seed, module, Some(MEMORY_MB), poison, message) {
            Ok(summary) => eprintln!("python {poison} seed {seed}: {summary}"),
            Err(e) => panic!("python {poison} trial with seed {seed} failed (replay with this seed): {e}"),
        }
    }
    kill_trial(module, "error", Some(MEMORY_MB), "counter: refused record");
}
