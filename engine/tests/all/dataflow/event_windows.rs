//! Windows of every kind (`builtin:window`, on the SDK's `KeyedWindows`) in real jobs: records
//! in and out of order, late ones dropped or routed to a side output, every window firing
//! exactly once — against the reference, and again under injected failures (restarts from
//! checkpoints) with the same output.

use crate::common;
use crate::common::event_time::{self, Assigner, Generated};

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};

/// One windowed job and its input.
#[derive(Debug, Clone, Copy)]
struct Case {
    assigner: Assigner,
    lateness: i64,
    /// Late records to the side output `late` (else dropped).
    side_output: bool,
    input: Generated,
}

fn input(keys: u64, interval_ms: i64) -> Generated {
    Generated {
        count: 6_000,
        offset: 0,
        keys,
        interval_ms,
        disorder_ms: 30,
        // Every 50th record 200 ms behind: late for any window here.
        late: Some((50, 200)),
        batch_size: 64,
        out_of_orderness_ms: 20,
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            assigner: Assigner::Tumbling { size: 100 },
            lateness: 0,
            side_output: false,
            input: input(7, 1),
        },
        Case {
            assigner: Assigner::Tumbling { size: 100 },
            lateness: 40,
            side_output: true,
            input: input(7, 1),
        },
        Case {
            assigner: Assigner::Sliding { size: 100, slide: 30 },
            lateness: 15,
            side_output: true,
            input: input(7, 1),
        },
        Case {
            assigner: Assigner::Session { gap: 25 },
            lateness: 10,
            side_output: true,
            input: input(11, 2),
        },
    ]
}

fn spec(case: &Case, out: &std::path::Path, late: &std::path::Path, rate: Option<u64>) -> Value {
    spec_with("builtin:window", case, out, late, rate)
}

fn spec_with(
    module: &str,
    case: &Case,
    out: &std::path::Path,
    late: &std::path::Path,
    rate: Option<u64>,
) -> Value {
    let late_policy = if case.side_output { json!({ "side_output": "late" }) } else { json!("drop") };
    json!({
        "nodes": [
            { "id": "numbers", "kind": "source", "connector": "generator", "parallelism": 1,
              "config": case.input.config(rate) },
            { "id": "window", "kind": "operator", "module": module, "parallelism": 2,
              "config": { "window": case.assigner.json(), "allowed_lateness_ms": case.lateness,
                          "late": late_policy } },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } },
            { "id": "late", "kind": "sink", "connector": "file", "config": { "path": late } }
        ],
        "edges": [
            { "from": "numbers", "to": "window", "partitioning": "hash" },
            { "from": "window", "to": "out" },
            { "from": "window", "to": "late", "output": "late" }
        ],
        "settings": { "checkpoint": { "interval_ms": 10 }, "restart": { "attempts": 10, "delay_ms": 0 } }
    })
}

/// Checks one run's output against the reference: the windows, and the late records on the
/// side output (or none there when they are dropped).
fn check(case: &Case, out: &[Value], late: &[Value], what: &str) {
    let (want, want_late) = event_time::windows(case.assigner, case.lateness, &case.input.steps());
    assert!(!want_late.is_empty(), "{what}: the input has late records");
    let got = event_time::fired_windows(out);
    if got != want {
        let missing: Vec<_> = want.difference(&got).take(5).collect();
        let extra: Vec<_> = got.difference(&want).take(5).collect();
        panic!(
            "{what}: {} windows, {} expected; missing {missing:?}, unexpected {extra:?}",
            got.len(),
            want.len()
        );
    }
    let mut want_late = want_late;
    want_late.sort_unstable();
    let expected_late = if case.side_output { want_late } else { Vec::new() };
    assert_eq!(event_time::ids(late), expected_late, "{what}: late records");
}

#[test]
fn every_window_kind_matches_the_reference_in_and_out_of_order() {
    for (i, case) in cases().iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let (out, late) = (dir.path().join("out"), dir.path().join("late"));
        common::run(spec(case, &out, &late, None)).expect("job runs");
        check(case, &common::read_output(&out), &common::read_output(&late), &format!("case {i} {case:?}"));
    }
}

/// Sessions merge in the job as the reference merges them: some window holds records that
/// arrived as separate sessions.
#[test]
fn session_windows_merge_out_of_order_records() {
    let case = cases()[3];
    let (fired, _) = event_time::windows(case.assigner, case.lateness, &case.input.steps());
    let Assigner::Session { gap } = case.assigner else { unreachable!() };
    assert!(fired.iter().any(|(_, s, e, n, _)| *n >= 3 && e - s > 2 * gap), "long merged sessions");
    assert!(fired.iter().any(|(_, _, _, n, _)| *n == 1), "single-record sessions");
}

fn random_faults(rng: &mut SmallRng) -> Vec<PlannedFault> {
    (0..rng.gen_range(1..=3))
        .map(|i| {
            let point = match rng.gen_range(if i == 0 { 0..3 } else { 0..4 }) {
                0 => FaultPoint::Process,
                1 => FaultPoint::Snapshot,
                2 => FaultPoint::AsyncWrite,
                _ => FaultPoint::Restore,
            };
            let after = match point {
                FaultPoint::Process => rng.gen_range(0..150),
                FaultPoint::Snapshot => rng.gen_range(0..12),
                FaultPoint::AsyncWrite => rng.gen_range(0..8),
                _ => rng.gen_range(0..3),
            };
            let kind = if rng.gen_bool(0.5) { FaultKind::Error } else { FaultKind::Panic };
            PlannedFault { point, after, kind }
        })
        .collect()
}

/// Failures at random points (seeded: `WEIR_WINDOW_SEED` replays one), restarts from the
/// latest checkpoint: the output equals the failure-free reference, window for window.
#[test]
fn windows_survive_failures_with_the_same_output() {
    common::quiet_injected_panics();
    let base: u64 = std::env::var("WEIR_WINDOW_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1900);
    let trials: u64 = std::env::var("WEIR_WINDOW_TRIALS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    for (i, case) in cases().iter().enumerate() {
        for t in 0..trials {
            let seed = base + 100 * i as u64 + t;
            let mut rng = SmallRng::seed_from_u64(seed);
            let faults = random_faults(&mut rng);
            let unaligned = rng.gen_bool(0.5);
            let injector = Arc::new(FaultInjector::new(faults.clone()));
            let dir = tempfile::tempdir().unwrap();
            let (out, late) = (dir.path().join("out"), dir.path().join("late"));
            let mut spec = spec(case, &out, &late, Some(15_000));
            if unaligned {
                // Barriers overtake in-flight records and watermarks, which become channel state.
                spec["settings"]["checkpoint"]["mode"] = "unaligned".into();
                spec["settings"]["channel_capacity"] = 4.into();
            }
            let (result, _store) = common::run_checkpointed(spec, &dir.path().join("data"), "w", |env| {
                env.with_faults(injector.clone())
            });
            let what = format!(
                "seed {seed} (WEIR_WINDOW_SEED={seed} WEIR_WINDOW_TRIALS=1), unaligned {unaligned}, faults {faults:?}"
            );
            let report = result.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(injector.fired() >= 1, "{what}: no fault fired");
            assert!(!report.restored_from.is_empty() || injector.fired() >= 1, "{what}");
            check(case, &common::read_committed(&out), &common::read_committed(&late), &what);
        }
    }
}

/// `weir run` killed with SIGKILL after a checkpoint, then run again: the sliding windows and
/// their late records come out as in a run without the kill.
#[test]
fn windows_survive_sigkill_of_the_process() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Duration;

    let case = cases()[2];
    let dir = tempfile::tempdir().unwrap();
    let (out, late, data) = (dir.path().join("out"), dir.path().join("late"), dir.path().join("data"));
    let job_file = dir.path().join("window.job.json");
    std::fs::write(&job_file, spec(&case, &out, &late, Some(5_000)).to_string()).unwrap();
    let weir = env!("CARGO_BIN_EXE_weir");
    let run = || {
        Command::new(weir)
            .args(["run", job_file.to_str().unwrap(), "--job-id", "w", "--data-dir", data.to_str().unwrap()])
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
        let line = rx.recv_timeout(Duration::from_secs(120)).expect("a checkpoint within 120 s");
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
    check(&case, &common::read_committed(&out), &common::read_committed(&late), "after SIGKILL");
}

/// The Python window helper (`weirpy.window`, `examples/python/operators/window_count.py`)
/// passes the same reference checks, every window kind, and again after failures.
#[test]
fn python_windows_match_the_same_reference() {
    common::quiet_injected_panics();
    let module = common::languages::build("python").join("window-count.wasm");
    let module = module.to_str().unwrap();
    for (i, case) in cases().iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let (out, late) = (dir.path().join("out"), dir.path().join("late"));
        common::run(spec_with(module, case, &out, &late, None)).expect("job runs");
        check(case, &common::read_output(&out), &common::read_output(&late), &format!("python case {i}"));
    }
    let case = cases()[3];
    let injector = Arc::new(FaultInjector::new(vec![
        PlannedFault { point: FaultPoint::Process, after: 30, kind: FaultKind::Panic },
        PlannedFault { point: FaultPoint::Snapshot, after: 3, kind: FaultKind::Error },
    ]));
    let dir = tempfile::tempdir().unwrap();
    let (out, late) = (dir.path().join("out"), dir.path().join("late"));
    let (result, _) = common::run_checkpointed(
        spec_with(module, &case, &out, &late, Some(15_000)),
        &dir.path().join("data"),
        "w",
        |env| env.with_faults(injector.clone()),
    );
    let report = result.expect("job runs");
    assert_eq!(injector.fired(), 2);
    // Both faults may fire in one attempt (a snapshot fails while another task's batch
    // panics before the attempt is torn down), so one restore at least, not two. The
    // injector is armed by the first completed checkpoint: every restart restores one.
    assert!(report.restarts >= 1 && !report.restored_from.is_empty(), "{report:?}");
    check(&case, &common::read_committed(&out), &common::read_committed(&late), "python sessions, failures");
}
