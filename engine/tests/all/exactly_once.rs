//! Exactly-once under failures, in the manner of Flink's UnalignedCheckpointITCase: unique
//! increasing ids flow through two keyed, stateful Wasm operators (parallelism 2, a hash
//! shuffle before each) into the two-phase-commit file sink, while failures are injected at
//! random points — while processing, in the guest snapshot, in the asynchronous write, during
//! recovery — or the whole process is killed with SIGKILL and started again.
//!
//! Every trial checks: at least one checkpoint completed and at least one recovery happened;
//! the committed output holds every id exactly once; per key, the running counts are exactly
//! 1..n (a lost or replayed record, or a state restored wrong, would repeat or skip one);
//! the final keyed state of both operators equals the reference.
//!
//! `WEIR_CHAOS_TRIALS` (per test, default 10) and `WEIR_CHAOS_SEED` (the base seed) make a
//! long run; a failure names its seed, and `WEIR_CHAOS_REPLAY=<seed>` (with
//! `WEIR_CHAOS_KILL=1` for a kill trial) replays exactly that trial.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
use weir_store::{CheckpointStatus, CheckpointStorage, Store};

const N: u64 = 12_000;
const KEYS1: u64 = 7;
const RESET1: u64 = 40;
const KEYS2: u64 = 5;
const RESET2: u64 = 30;
const JOB: &str = "chaos";

fn spec(out: &Path, module: &str) -> serde_json::Value {
    serde_json::json!({
        "name": "chaos",
        "nodes": [
            { "id": "ids", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": N, "keys": KEYS1, "batch_size": 20,
                          "records_per_second": 20000 } },
            { "id": "count1", "kind": "operator", "module": module, "parallelism": 2,
              "config": { "out_keys": KEYS2, "reset_at": RESET1 } },
            { "id": "count2", "kind": "operator", "module": module, "parallelism": 2,
              "config": { "reset_at": RESET2 } },
            { "id": "out", "kind": "sink", "connector": "file", "parallelism": 2,
              "config": { "path": out } }
        ],
        "edges": [
            { "from": "ids", "to": "count1", "partitioning": "hash" },
            { "from": "count1", "to": "count2", "partitioning": "hash" },
            { "from": "count2", "to": "out", "partitioning": "forward" }
        ],
        "settings": {
            "checkpoint": { "interval_ms": 10, "timeout_ms": 20000, "retained": 2, "max_chain_length": 3,
                            "tolerable_failures": 100 },
            "restart": { "attempts": 10, "delay_ms": 0 }
        }
    })
}

/// Counts per key of `0..N` keyed by `id % keys`.
fn per_key(keys: u64) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for id in 0..N {
        *m.entry(id % keys).or_insert(0) += 1;
    }
    m
}

/// The final state of a counter: count modulo reset, absent when zero.
fn expected_state(keys: u64, reset: u64) -> BTreeMap<u64, u64> {
    per_key(keys).into_iter().map(|(k, n)| (k, n % reset)).filter(|(_, c)| *c > 0).collect()
}

fn final_state(store: &Store, node: &str) -> Result<BTreeMap<u64, u64>, String> {
    common::final_counts(store, JOB, node)
}

/// Checks the committed output and the final state against the reference.
fn check(out: &Path, store: &Store) -> Result<(), String> {
    let lines = common::read_committed(out);
    let mut ids = Vec::with_capacity(lines.len());
    let mut counts: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for l in &lines {
        let key = l["key"].as_u64().ok_or(format!("bad line {l}"))?;
        let id = l["value"][0].as_u64().ok_or(format!("bad line {l}"))?;
        let count = l["value"][1].as_u64().ok_or(format!("bad line {l}"))?;
        if id % KEYS2 != key {
            return Err(format!("id {id} under key {key}"));
        }
        ids.push(id);
        counts.entry(key).or_default().push(count);
    }
    ids.sort_unstable();
    let mut dup = ids.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).peekable();
    if let Some(d) = dup.peek() {
        return Err(format!("{} duplicated ids, first {d}", ids.windows(2).filter(|w| w[0] == w[1]).count()));
    }
    if ids.len() as u64 != N || ids.iter().copied().ne(0..N) {
        let missing: Vec<u64> = (0..N).filter(|i| ids.binary_search(i).is_err()).take(5).collect();
        return Err(format!("{} ids committed instead of {N}; missing e.g. {missing:?}", ids.len()));
    }
    for (key, n) in per_key(KEYS2) {
        let mut got = counts.remove(&key).unwrap_or_default();
        got.sort_unstable();
        let mut want: Vec<u64> = (0..n).map(|j| j % RESET2 + 1).collect();
        want.sort_unstable();
        if got != want {
            return Err(format!("key {key}: running counts differ from 1..{n} (mod {RESET2})"));
        }
    }
    let s1 = final_state(store, "count1")?;
    if s1 != expected_state(KEYS1, RESET1) {
        return Err(format!("count1 final state {s1:?} != {:?}", expected_state(KEYS1, RESET1)));
    }
    let s2 = final_state(store, "count2")?;
    if s2 != expected_state(KEYS2, RESET2) {
        return Err(format!("count2 final state {s2:?} != {:?}", expected_state(KEYS2, RESET2)));
    }
    Ok(())
}

fn completed_checkpoints(store: &Store) -> usize {
    store
        .history(JOB)
        .unwrap()
        .iter()
        .filter(|c| c.status == CheckpointStatus::Completed && !c.is_final)
        .count()
}

fn random_faults(rng: &mut SmallRng) -> Vec<PlannedFault> {
    let n = rng.gen_range(1..=3);
    (0..n)
        .map(|i| {
            // The first fault must not be a restore fault: something has to fail first.
            let point = match rng.gen_range(if i == 0 { 0..3 } else { 0..4 }) {
                0 => FaultPoint::Process,
                1 => FaultPoint::Snapshot,
                2 => FaultPoint::AsyncWrite,
                _ => FaultPoint::Restore,
            };
            // Within what even a slow run reaches: a loaded machine (the API tests run beside
            // these) completes fewer checkpoints of the 10 ms interval, and a fault that never
            // fires makes a trial that tests nothing (it fails as "no recovery").
            let after = match point {
                FaultPoint::Process => rng.gen_range(0..400),
                FaultPoint::Snapshot => rng.gen_range(0..24),
                FaultPoint::AsyncWrite => rng.gen_range(0..16),
                FaultPoint::Restore | FaultPoint::ChannelState => rng.gen_range(0..4),
            };
            let kind = if rng.gen_bool(0.5) { FaultKind::Error } else { FaultKind::Panic };
            PlannedFault { point, after, kind }
        })
        .collect()
}

fn in_process_trial(seed: u64) -> Result<String, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let faults = random_faults(&mut rng);
    let injector = Arc::new(FaultInjector::new(faults.clone()));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (result, store) =
        common::run_checkpointed(spec(&out, "test:counter"), &dir.path().join("data"), JOB, |env| {
            env.with_faults(injector.clone())
        });
    let report = result.map_err(|e| format!("job failed: {e}"))?;
    if injector.fired() == 0 || report.restored_from.is_empty() {
        return Err(format!(
            "no recovery happened (faults fired: {}, restored from {:?}, plan {faults:?})",
            injector.fired(),
            report.restored_from
        ));
    }
    if completed_checkpoints(&store) == 0 {
        return Err("no checkpoint completed".into());
    }
    check(&out, &store)?;
    Ok(format!(
        "faults {faults:?}: {} fired, restarts {}, restored from {:?}",
        injector.fired(),
        report.restarts,
        report.restored_from
    ))
}

/// Runs `weir run` as a child process, kills it with SIGKILL after its `kill_after`-th
/// completed checkpoint, runs it again to the end and checks.
fn kill_trial(seed: u64) -> Result<String, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let kill_after = rng.gen_range(1..=5);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let data = dir.path().join("data");
    let job_file = dir.path().join("chaos.job.json");
    let module = common::guest_path("counter");
    let mut spec = spec(&out, module.to_str().unwrap());
    // Slower than in-process trials: the process must still be running after a few
    // checkpoints even on a loaded machine.
    spec["nodes"][0]["config"]["records_per_second"] = 10_000.into();
    std::fs::write(&job_file, spec.to_string()).unwrap();
    let weir = env!("CARGO_BIN_EXE_weir");
    let run = || {
        Command::new(weir)
            .args(["run", job_file.to_str().unwrap(), "--job-id", JOB, "--data-dir", data.to_str().unwrap()])
            .env("RUST_LOG", "weir=warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start weir: {e}"))
    };
    let mut child = run()?;
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = 0;
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .map_err(|_| "no checkpoint within 120 s".to_string())?;
        if line.contains("(final)") {
            return Err(format!("the job finished before checkpoint {kill_after} could be waited for"));
        }
        if line.starts_with("checkpoint ") && line.contains(" completed") {
            seen += 1;
            if seen == kill_after {
                break;
            }
        }
    }
    child.kill().map_err(|e| format!("kill: {e}"))?; // SIGKILL
    child.wait().unwrap();
    let second = run()?.wait_with_output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&second.stdout);
    if !second.status.success() {
        return Err(format!("the restarted job failed: {stdout}"));
    }
    if !stdout.contains("restored from checkpoint") {
        return Err(format!("the restarted job did not restore a checkpoint:\n{stdout}"));
    }
    let store = Store::open(&data.join("weir.redb")).map_err(|e| e.to_string())?;
    check(&out, &store)?;
    drop(store);
    // The history survived the crash and the CLI prints it.
    let history = Command::new(weir)
        .args(["checkpoint", "list", "--local", JOB, "--data-dir", data.to_str().unwrap()])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&history.stdout);
    if !history.status.success() || !text.contains("completed") || !text.contains("final") {
        return Err(format!("`weir checkpoint list --local` printed:\n{text}"));
    }
    Ok(format!("killed after checkpoint #{kill_after}"))
}

fn trials(first: u64) {
    common::quiet_injected_panics();
    if let Some(seed) = std::env::var("WEIR_CHAOS_REPLAY").ok().and_then(|v| v.parse::<u64>().ok()) {
        if first == 1 {
            let kill = std::env::var("WEIR_CHAOS_KILL").is_ok_and(|v| v == "1");
            let result = if kill { kill_trial(seed) } else { in_process_trial(seed) };
            result.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
        return;
    }
    let count: u64 = std::env::var("WEIR_CHAOS_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let base: u64 = std::env::var("WEIR_CHAOS_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_0000);
    for t in 0..count {
        let seed = base + first * 1000 + t;
        // One trial in five kills the whole process.
        let kill = t % 5 == 4;
        let result = if kill { kill_trial(seed) } else { in_process_trial(seed) };
        match result {
            Ok(what) => eprintln!("trial seed {seed}{}: ok ({what})", if kill { " (kill -9)" } else { "" }),
            Err(e) => panic!(
                "chaos trial with seed {seed} failed — replay with WEIR_CHAOS_REPLAY={seed}{} \
                 cargo nextest run -p weir --test exactly_once chaos_trials_a: {e}",
                if kill { " WEIR_CHAOS_KILL=1" } else { "" }
            ),
        }
    }
}

#[test]
fn chaos_trials_a() {
    trials(1);
}

#[test]
fn chaos_trials_b() {
    trials(2);
}

#[test]
fn chaos_trials_c() {
    trials(3);
}

#[test]
fn chaos_trials_d() {
    trials(4);
}

#[test]
fn chaos_trials_e() {
    trials(5);
}

#[test]
fn failure_free_run_matches_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (result, store) =
        common::run_checkpointed(spec(&out, "test:counter"), &dir.path().join("data"), JOB, |env| env);
    let report = result.unwrap();
    assert_eq!(report.restarts, 0);
    assert!(report.final_checkpoint.is_some());
    assert!(completed_checkpoints(&store) >= 1, "periodic checkpoints completed");
    // The acks carried statistics; every subtask of every checkpoint acked. (Whether an
    // alignment lets records of another channel through depends on timing — on an idle
    // machine it often does not, and asserting it failed about one run in four; the barrier
    // proptest checks what alignment lets through deterministically.)
    let history = store.history(JOB).unwrap();
    let stats: Vec<_> = history.iter().flat_map(|c| &c.subtasks).collect();
    assert!(history.iter().all(|c| c.subtasks.len() == 8), "2 sources, 2 + 2 operators, 2 sinks");
    assert!(stats.iter().all(|s| s.alignment_ms >= 0.0 && s.alignment_ms.is_finite()), "alignment measured");
    assert!(stats.iter().any(|s| s.operator == "count1" && s.state_bytes > 0 && s.full_state_bytes > 0));
    assert!(stats.iter().all(|s| s.sync_ms >= 0.0 && s.async_ms > 0.0 && s.start_delay_ms >= 0.0));
    check(&out, &store).unwrap();
    // Nothing is left pending.
    assert_eq!(std::fs::read_dir(out.join(".pending")).unwrap().count(), 0);
}
