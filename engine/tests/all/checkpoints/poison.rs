//! Records that break an operator (issue 41): a keyed counter that, after counting it,
//! panics, returns an error or runs out of memory on 1 in 10,000 records. With
//! `on_error: dead_letter` the job finds each such record by replaying from its checkpoint
//! record by record, sends it to the dead letters with the guest's message, and goes on with
//! the counter's state as if the record never arrived: the committed output holds every other
//! id exactly once with running counts 1..n per key, the final state equals the reference
//! without the poison records, and the dead letters hold exactly those records — also with
//! faults injected at random points (seeded; the seed is printed on failure) and with the
//! process killed (SIGKILL) and started again. With `fail` the job fails as before; with a
//! guest that fails on every record the per-minute limit ends the job with an error that
//! says so.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
use weir_store::Store;

pub(super) const N: u64 = 40_000;
pub(super) const KEYS: u64 = 7;
pub(super) const EVERY: u64 = 10_000;
pub(super) const JOB: &str = "poison";

pub(super) fn is_poison(id: u64) -> bool {
    id % EVERY == EVERY - 1
}

/// Ids `0..N` through a keyed counter (2 subtasks) whose record `poison_every·k − 1` breaks
/// it as `poison` says, into a file sink; dead letters into `dead`.
pub(super) fn spec(out: &Path, dead: &Path, module: &str, poison: &str, on_error: &str) -> serde_json::Value {
    serde_json::json!({
        "name": "poison",
        "nodes": [
            { "id": "ids", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": N, "keys": KEYS, "batch_size": 100,
                          "records_per_second": 40000 } },
            { "id": "count", "kind": "operator", "module": module, "parallelism": 2,
              "on_error": on_error,
              "config": { "poison_every": EVERY, "poison": poison } },
            { "id": "out", "kind": "sink", "connector": "file", "parallelism": 2, "config": { "path": out } }
        ],
        "edges": [
            { "from": "ids", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "dead_letter": { "connector": "file", "config": { "path": dead } },
        "settings": {
            "memory_limit_mb": 64,
            "checkpoint": { "interval_ms": 50, "timeout_ms": 20000, "tolerable_failures": 100 },
            "restart": { "attempts": 10, "delay_ms": 0 }
        }
    })
}

/// The field `name` of a JSON object.
fn field<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    &v[name]
}

/// Checks the committed output, the dead letters and the final state against the
/// reference without the poison records; `message` is what the guest's error says.
pub(super) fn check(out: &Path, dead: &Path, store: &Store, message: &str) -> Result<(), String> {
    let mut ids = Vec::new();
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in common::read_committed(out) {
        let id = l["value"][0].as_u64().ok_or(format!("bad line {l}"))?;
        let count = l["value"][1].as_u64().ok_or(format!("bad line {l}"))?;
        ids.push(id);
        counts.entry(id % KEYS).or_default().push(count);
    }
    ids.sort_unstable();
    let want: Vec<u64> = (0..N).filter(|i| !is_poison(*i)).collect();
    if ids != want {
        let dup = ids.windows(2).filter(|w| w[0] == w[1]).count();
        let poisoned: Vec<u64> = ids.iter().copied().filter(|i| is_poison(*i)).collect();
        return Err(format!(
            "{} ids committed instead of {} ({dup} duplicated, poison ids among them: {poisoned:?})",
            ids.len(),
            want.len()
        ));
    }
    let mut reference: BTreeMap<u64, u64> = BTreeMap::new();
    for id in &want {
        *reference.entry(id % KEYS).or_default() += 1;
    }
    for (key, n) in &reference {
        let mut got = counts.remove(key).unwrap_or_default();
        got.sort_unstable();
        if got != (1..=*n).collect::<Vec<_>>() {
            return Err(format!("key {key}: running counts are not 1..{n}: a poison record was counted"));
        }
    }
    let state = common::final_counts(store, JOB, "count")?;
    if state != reference {
        return Err(format!("final state {state:?} != reference {reference:?}"));
    }
    let letters = common::read_committed(dead);
    let mut found = BTreeSet::new();
    for l in &letters {
        let v = field(l, "value");
        let raw = hex::decode(v["value"]["hex"].as_str().ok_or(format!("no raw value in {v}"))?)
            .map_err(|e| e.to_string())?;
        let id = rmpv::decode::read_value(&mut &raw[..])
            .map_err(|e| e.to_string())?
            .as_u64()
            .ok_or("not a u64")?;
        let error = v["error"].as_str().unwrap_or_default();
        if v["node"] != "count" || v["origin"]["kind"] != "operator" || !error.contains(message) {
            return Err(format!("dead letter of id {id} says {v}"));
        }
        if !found.insert(id) {
            return Err(format!("id {id} is in the dead letters twice"));
        }
    }
    let poison: BTreeSet<u64> = (0..N).filter(|i| is_poison(*i)).collect();
    if found != poison {
        return Err(format!("dead letters hold ids {found:?}, not the poison ids {poison:?}"));
    }
    Ok(())
}

fn random_faults(rng: &mut SmallRng) -> Vec<PlannedFault> {
    (0..rng.gen_range(1..=2))
        .map(|i| {
            let point = if i == 0 || rng.gen_bool(0.5) { FaultPoint::Process } else { FaultPoint::Snapshot };
            let after = match point {
                FaultPoint::Process => rng.gen_range(0..400),
                _ => rng.gen_range(0..20),
            };
            let kind = if rng.gen_bool(0.5) { FaultKind::Error } else { FaultKind::Panic };
            PlannedFault { point, after, kind }
        })
        .collect()
}

/// One in-process run with `poison` records and (seeded) faults.
fn trial(seed: u64, poison: &str, message: &str) -> Result<String, String> {
    trial_with(seed, "test:counter", None, poison, message)
}

/// [`trial`] with `module` (and `memory_limit_mb`).
pub(super) fn trial_with(
    seed: u64,
    module: &str,
    memory_mb: Option<u64>,
    poison: &str,
    message: &str,
) -> Result<String, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let faults = if seed == 0 { Vec::new() } else { random_faults(&mut rng) };
    let injector = Arc::new(FaultInjector::new(faults.clone()));
    let dir = tempfile::tempdir().unwrap();
    let (out, dead) = (dir.path().join("out"), dir.path().join("dead"));
    let mut spec = spec(&out, &dead, module, poison, "dead_letter");
    if let Some(mb) = memory_mb {
        spec["settings"]["memory_limit_mb"] = mb.into();
    }
    let (result, store) = common::run_checkpointed(spec, &dir.path().join("data"), JOB, |env| {
        env.with_faults(injector.clone())
    });
    let report = result.map_err(|e| format!("job failed: {e}"))?;
    check(&out, &dead, &store, message)?;
    Ok(format!("faults {faults:?}: {} fired, restarts {}", injector.fired(), report.restarts))
}

fn trials(poison: &str, message: &str, seeds: &[u64]) {
    common::quiet_injected_panics();
    for &seed in seeds {
        match trial(seed, poison, message) {
            Ok(summary) => eprintln!("{poison} seed {seed}: {summary}"),
            Err(e) => panic!("{poison} trial with seed {seed} failed (replay with this seed): {e}"),
        }
    }
}

#[test]
fn records_that_panic_the_guest_go_to_the_dead_letters_with_state_as_if_never_seen() {
    trials("panic", "counter: poison record", &[0, 4101, 4102]);
}

#[test]
fn records_the_guest_refuses_go_to_the_dead_letters_with_state_as_if_never_seen() {
    trials("error", "counter: refused record", &[0, 4111]);
}

#[test]
fn records_that_exhaust_the_guests_memory_go_to_the_dead_letters() {
    trials("alloc", "memory", &[4121]);
}

#[test]
fn a_poison_record_survives_a_kill_of_the_process() {
    let module = common::guest_path("counter");
    kill_trial(module.to_str().unwrap(), "panic", None, "counter: poison record");
}

/// `weir run` of the job with `module` (and `memory_limit_mb`), killed with SIGKILL once a
/// poison record was taken out and a checkpoint followed, then run to its end and checked.
pub(super) fn kill_trial(module: &str, poison: &str, memory_mb: Option<u64>, message: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (out, dead, data) = (dir.path().join("out"), dir.path().join("dead"), dir.path().join("data"));
    let mut spec = spec(&out, &dead, module, poison, "dead_letter");
    spec["nodes"][0]["config"]["records_per_second"] = 10_000.into();
    if let Some(mb) = memory_mb {
        spec["settings"]["memory_limit_mb"] = mb.into();
    }
    let job_file = dir.path().join("poison.job.json");
    std::fs::write(&job_file, spec.to_string()).unwrap();
    let weir = env!("CARGO_BIN_EXE_weir");
    let run = || {
        Command::new(weir)
            .args(["run", job_file.to_str().unwrap(), "--job-id", JOB, "--data-dir", data.to_str().unwrap()])
            .env("RUST_LOG", "weir=warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut child = run();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines().map_while(Result::ok);
    // Killed once the first poison record was taken out and a checkpoint followed.
    let mut took_out = false;
    for line in lines {
        took_out |= line.starts_with("took a record out");
        assert!(!line.contains("(final)"), "the job finished before it could be killed");
        if took_out && line.starts_with("checkpoint ") && line.contains(" completed") {
            break;
        }
    }
    assert!(took_out, "no record was taken out before the output ended");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let second = run().wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success(), "the restarted job failed: {stdout}");
    assert!(stdout.contains("restored from checkpoint"), "{stdout}");
    let store = Store::open(&data.join("weir.redb")).unwrap();
    check(&out, &dead, &store, message).unwrap();
}

#[test]
fn with_fail_a_poison_record_fails_the_job_as_before() {
    common::quiet_injected_panics();
    let dir = tempfile::tempdir().unwrap();
    let (out, dead) = (dir.path().join("out"), dir.path().join("dead"));
    let mut spec = spec(&out, &dead, "test:counter", "error", "fail");
    spec["settings"]["restart"] = serde_json::json!({ "attempts": 2, "delay_ms": 0 });
    let (result, _store) = common::run_checkpointed(spec, &dir.path().join("data"), JOB, |env| env);
    let e = result.expect_err("the job must fail").to_string();
    assert!(e.contains("counter: refused record 9999") && e.contains("2 restart"), "{e}");
    assert!(common::read_committed(&dead).is_empty(), "nothing is dead-lettered with `fail`");
}

#[test]
fn a_guest_that_fails_on_every_record_is_stopped_by_the_limit() {
    common::quiet_injected_panics();
    let dir = tempfile::tempdir().unwrap();
    let (out, dead) = (dir.path().join("out"), dir.path().join("dead"));
    let mut spec = spec(&out, &dead, "test:counter", "error", "skip");
    spec["nodes"][1]["config"]["poison_every"] = 1.into();
    spec["settings"]["max_dead_letters_per_minute"] = 5.into();
    let started = std::time::Instant::now();
    let (result, _store) = common::run_checkpointed(spec, &dir.path().join("data"), JOB, |env| env);
    let e = result.expect_err("the job must fail").to_string();
    assert!(e.contains("max_dead_letters_per_minute (5)") && e.contains("refused record"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(120), "it took {:?}", started.elapsed());
}

#[test]
fn an_operator_sends_records_to_the_dead_letters_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (out, dead) = (dir.path().join("out"), dir.path().join("dead"));
    let mut spec = spec(&out, &dead, "test:counter", "panic", "fail");
    spec["nodes"][1]["config"] = serde_json::json!({ "dead_letter_every": EVERY });
    let (result, _store) = common::run_checkpointed(spec, &dir.path().join("data"), JOB, |env| env);
    result.unwrap();
    assert_eq!(common::read_committed(&out).len() as u64, N - N / EVERY);
    let letters = common::read_committed(&dead);
    let mut reasons: Vec<String> =
        letters.iter().map(|l| l["value"]["reason"].as_str().unwrap_or_default().to_string()).collect();
    reasons.sort();
    let mut want: Vec<String> =
        (0..N).filter(|i| is_poison(*i)).map(|i| format!("counter: record {i} sent away")).collect();
    want.sort();
    assert_eq!(reasons, want, "{letters:?}");
    assert!(letters.iter().all(|l| l["value"]["origin"]["kind"] == "guest"), "{letters:?}");
}

#[test]
fn an_operators_own_dead_letters_are_held_to_the_limit_without_a_destination() {
    let dir = tempfile::tempdir().unwrap();
    let (out, dead) = (dir.path().join("out"), dir.path().join("dead"));
    let mut spec = spec(&out, &dead, "test:counter", "panic", "fail");
    spec.as_object_mut().unwrap().remove("dead_letter");
    spec["nodes"][1]["config"] = serde_json::json!({ "dead_letter_every": 100 });
    spec["settings"]["max_dead_letters_per_minute"] = 5.into();
    let (result, _store) = common::run_checkpointed(spec, &dir.path().join("data"), JOB, |env| env);
    let e = result.expect_err("the limit ends the job").to_string();
    assert!(e.contains("max_dead_letters_per_minute (5)") && e.contains("sent away"), "{e}");
}
