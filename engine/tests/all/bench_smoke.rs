//! The benchmark suites at a tiny size: each must run to the end and print its table. Their
//! figures are not checked (a debug build on a shared machine), only that the bench still
//! works — a job spec it builds can fall behind the planner's checks unnoticed otherwise.

use std::process::Command;

/// Runs `weir --data-dir <tmp> bench <args>` with the bench cache in the same temporary
/// directory; returns stdout, failing on a non-zero exit.
fn bench(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("--data-dir")
        .arg(dir.path())
        .arg("bench")
        .args(args)
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "weir bench {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

#[test]
fn the_checkpoint_bench_runs_every_part() {
    let out = bench(&[
        "checkpoints",
        "--job-records",
        "20000",
        "--job-keys",
        "100",
        "--runs",
        "1",
        "--state-keys",
        "100",
        "--incremental-keys",
        "1000",
        "--value-bytes",
        "100",
    ]);
    for line in ["1 s checkpoints", "per CPU-second", "restore"] {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }
}

#[test]
fn the_pipeline_bench_runs_the_file_and_the_stream_log_paths() {
    let out = bench(&[
        "pipeline",
        "--bids",
        "3000",
        "--runs",
        "1",
        "--queries",
        "q0,q1",
        "--parallelism",
        "2",
        "--stream-bids",
        "3000",
    ]);
    for line in ["q0", "q1", "per CPU-s", "Stream log", "3000 bids appended"] {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }
}

#[test]
fn the_nexmark_bench_runs_every_query_end_to_end() {
    let out = bench(&["nexmark", "--events", "20000", "--runs", "1"]);
    for q in ["q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q11"] {
        assert!(out.lines().any(|l| l.contains(&format!(" {q} "))), "no row for {q}:\n{out}");
    }
    assert!(out.contains("Flink per core"), "{out}");
}

#[test]
fn the_operator_bench_compares_wasm_and_native() {
    let out = bench(&["operators", "--records", "2048", "--seconds", "0.05"]);
    assert!(out.contains("q1") && out.contains("q2"), "{out}");
}

#[test]
fn the_state_bench_compares_guest_and_host_state() {
    let out = bench(&[
        "state",
        "--keys",
        "3000",
        "--runs",
        "1",
        "--pad",
        "20",
        "--steady-records",
        "2000",
        "--checkpoint-records",
        "2048",
        "--batch",
        "256",
    ]);
    for line in ["3000 keys", "guest", "host", "host / guest", "records per CPU-second", "restore"] {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }
}

#[test]
fn the_state_bench_reports_a_guest_out_of_memory() {
    // 20,000 keys of ~1 KiB do not fit a 16 MiB instance; on the host they do.
    let out = bench(&[
        "state",
        "--keys",
        "20000",
        "--runs",
        "1",
        "--pad",
        "1000",
        "--steady-records",
        "100",
        "--memory-mib",
        "16",
    ]);
    assert!(out.contains("fails after") && out.contains("memory limit"), "{out}");
    assert!(out.contains("no pair of runs"), "{out}");
}
