//! Bad input gets a clear error that names the problem, never a panic.

use crate::common;

use serde_json::{Value, json};
use weir::plan::PlanError;

fn one_operator(module: &str, config: Value, source: Value) -> Value {
    json!({
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator", "config": source },
            { "id": "op", "kind": "operator", "module": module, "config": config },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "op" }, { "from": "op", "to": "out" } ]
    })
}

fn numbers(count: u64) -> Value {
    json!({ "mode": "sequence", "count": count, "batch_size": 10 })
}

fn plan_error(spec: Value) -> String {
    match common::plan_json(spec) {
        Ok(_) => panic!("the plan should have been refused"),
        Err(e) => e.to_string(),
    }
}

fn job_error(spec: Value) -> String {
    match common::run(spec) {
        Ok(_) => panic!("the job should have failed"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_file_that_is_not_wasm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.wasm");
    std::fs::write(&path, "hello, I am text").unwrap();
    let e = plan_error(one_operator(path.to_str().unwrap(), json!({}), numbers(1)));
    assert!(e.contains("node `op`") && e.contains("is not a WebAssembly component"), "{e}");
    assert!(e.contains("magic bytes"), "{e}");
}

#[test]
fn a_core_module_instead_of_a_component() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("core.wasm");
    std::fs::write(&path, wat::parse_str("(module (func (export \"f\")))").unwrap()).unwrap();
    let e = plan_error(one_operator(path.to_str().unwrap(), json!({}), numbers(1)));
    assert!(e.contains("core WebAssembly module, not a component"), "{e}");
}

#[test]
fn a_truncated_component() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(common::guest_path("wordcount")).unwrap();
    let path = dir.path().join("cut.wasm");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let e = plan_error(one_operator(path.to_str().unwrap(), json!({}), numbers(1)));
    assert!(e.contains("is not a WebAssembly component"), "{e}");
}

#[test]
fn a_component_of_another_world() {
    let e = plan_error(one_operator("test:other-world", json!({}), numbers(1)));
    assert!(e.contains("does not implement the weir:operator@0.2.0 operator world"), "{e}");
    assert!(e.contains("does not export `weir:operator/operator@0.2.0`"), "{e}");
    assert!(e.contains("run"), "the message lists what it does export: {e}");
    assert!(!e.contains("built against version"), "not an older operator: {e}");
}

#[test]
fn a_component_built_against_the_previous_contract() {
    // What a 0.1.0 operator exports: its interface instance under the old version.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.wasm");
    let component = r#"(component
        (instance $operator)
        (export "weir:operator/operator@0.1.0" (instance $operator))
    )"#;
    std::fs::write(&path, wat::parse_str(component).unwrap()).unwrap();
    let e = plan_error(one_operator(path.to_str().unwrap(), json!({}), numbers(1)));
    assert!(e.contains("does not implement the weir:operator@0.2.0 operator world"), "{e}");
    assert!(
        e.contains(
            "does not export `weir:operator/operator@0.2.0` (it exports weir:operator/operator@0.1.0)"
        ),
        "{e}"
    );
    assert!(e.contains("built against version 0.1.0 of the contract: rebuild it"), "{e}");
}

#[test]
fn an_unknown_module() {
    let e = plan_error(one_operator("builtin:no-such-operator", json!({}), numbers(1)));
    assert!(e.contains("unknown module `builtin:no-such-operator`"), "{e}");
    let e = plan_error(one_operator("/nonexistent/op.wasm", json!({}), numbers(1)));
    assert!(e.contains("unknown module `/nonexistent/op.wasm`"), "{e}");
}

#[test]
fn a_cycle() {
    let e = common::plan_json(json!({
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1 } },
            { "id": "a", "kind": "operator", "module": "test:faulty" },
            { "id": "b", "kind": "operator", "module": "test:faulty" },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "src", "to": "a" }, { "from": "a", "to": "b" },
            { "from": "b", "to": "a" }, { "from": "b", "to": "out" }
        ]
    }))
    .unwrap_err();
    assert!(matches!(&e, PlanError::Cycle(n) if n == "a" || n == "b"), "{e}");
    assert!(e.to_string().contains("has a cycle through node"), "{e}");
}

#[test]
fn parallelism_zero() {
    let mut spec = one_operator("test:faulty", json!({}), numbers(1));
    spec["nodes"][1]["parallelism"] = json!(0);
    let e = plan_error(spec);
    assert!(e.contains("node `op`: parallelism must be between 1 and max_parallelism (128), got 0"), "{e}");
}

#[test]
fn malformed_specs() {
    let e = weir::plan::JobSpec::from_json("{ \"nodes\": [ ").unwrap_err().to_string();
    assert!(e.starts_with("invalid job spec:") && e.contains("line 1"), "{e}");
    let e = plan_error(json!({ "nodes": [ { "id": "x", "kind": "source", "conector": "generator" } ] }));
    assert!(e.contains("unknown field `conector`"), "{e}");
    let e = plan_error(json!({ "nodes": [] }));
    assert!(e.contains("no nodes"), "{e}");
    let mut spec = one_operator("test:faulty", json!({}), numbers(1));
    spec["nodes"][1]["id"] = json!("../etc");
    spec["edges"] = json!([]);
    assert!(plan_error(spec).contains("node id `../etc` is invalid"));
    let spec = one_operator("test:faulty", json!({}), json!({ "mode": "sequence" }));
    let e = plan_error(spec);
    assert!(e.contains("node `src`") && e.contains("missing field `count`"), "{e}");
    let mut spec = one_operator("test:faulty", json!({}), numbers(1));
    spec["nodes"][1]["parallelism"] = json!(2);
    spec["edges"][0]["partitioning"] = json!("forward");
    assert!(plan_error(spec).contains("forward partitioning needs equal parallelism (1 vs 2)"));
    let mut spec = one_operator("test:faulty", json!({}), numbers(1));
    spec["edges"][1]["to"] = json!("nowhere");
    assert!(plan_error(spec).contains("unknown node `nowhere`"));
    let mut spec = one_operator("test:faulty", json!({}), numbers(1));
    let first = spec["edges"][0].clone();
    spec["edges"].as_array_mut().unwrap().extend([first.clone(), first]);
    let e = plan_error(spec);
    assert!(e.contains("the edge `src` → `op` is listed more than once"), "{e}");
}

#[test]
fn a_guest_that_traps_reports_its_panic_message() {
    let e = job_error(one_operator("test:faulty", json!({ "panic_at": 37 }), numbers(100)));
    assert!(e.contains("node `op` subtask 0"), "{e}");
    assert!(e.contains("trapped in process"), "{e}");
    assert!(e.contains("poison record 37"), "the guest's own message is carried: {e}");
}

#[test]
fn a_guest_error_is_reported() {
    let e = job_error(one_operator("test:faulty", json!({ "error_at": 5 }), numbers(100)));
    assert!(e.contains("failed in process") && e.contains("refused record 5"), "{e}");
}

#[test]
fn a_record_that_is_not_valid_msgpack_for_the_type() {
    // The faulty operator expects u64 values; the corpus generator sends strings.
    let source = json!({ "mode": "words", "lines": 10 });
    let e = job_error(one_operator("test:faulty", json!({}), source));
    assert!(e.contains("invalid input"), "{e}");
    assert!(e.contains("record 0"), "the message names the record: {e}");
}

#[test]
fn a_looping_guest_is_stopped_at_its_cpu_limit() {
    let mut spec = one_operator("test:faulty", json!({ "loop_at": 3 }), numbers(10));
    spec["settings"] = json!({ "cpu_limit_ms": 200 });
    let e = job_error(spec);
    assert!(e.contains("exceeded its CPU limit of 200 ms"), "{e}");
}

#[test]
fn a_sleeping_guest_is_stopped_at_its_wall_time_limit() {
    // A guest waiting in a host call (here `std::thread::sleep`, a `wasi:io/poll`) runs no
    // Wasm code, so its CPU limit never fires; the wall-time limit does.
    let mut spec = one_operator("test:faulty", json!({ "sleep_at": 3 }), numbers(10));
    spec["settings"] = json!({ "cpu_limit_ms": 200, "wall_limit_ms": 500 });
    let started = std::time::Instant::now();
    let e = job_error(spec);
    assert!(e.contains("took longer than its wall-time limit of 500 ms in one process call"), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "stopped after {:?}", started.elapsed());
}

#[test]
fn a_guest_cannot_open_a_socket() {
    // wasi:sockets is not linked: the guest's socket imports trap when called, so no socket
    // is created on the server and the operator's own job fails.
    let e = job_error(one_operator("test:faulty", json!({ "socket_at": 3 }), numbers(10)));
    assert!(e.contains("trapped") && e.contains("wasi:sockets"), "{e}");
    assert!(!e.contains("a socket was opened"), "{e}");
}

#[test]
fn a_timer_flood_is_stopped_at_the_instance_limits() {
    // 2,000,000 timers with 1 KiB keys would hold ~2 GiB of host memory; a 64 MiB instance may
    // keep a quarter of that in timers.
    let mut spec = one_operator("test:faulty", json!({ "timers_at": 3 }), numbers(10));
    spec["settings"] = json!({ "memory_limit_mb": 64 });
    let e = job_error(spec);
    assert!(e.contains("registered more timers than its instance may hold"), "{e}");
    assert!(e.contains(&format!("{} bytes at most", (64 << 20) / 4)), "{e}");
}

/// A guest's side outputs are held to the same per-call output limit as its returned batch,
/// to 64-byte names and to 16 names, whether or not an edge carries them: the call fails and
/// the job with it.
#[test]
fn side_output_floods_are_stopped_at_the_limits() {
    let routed = |config: Value| {
        let mut spec = one_operator("test:faulty", config, numbers(10));
        spec["nodes"]
            .as_array_mut()
            .unwrap()
            .push(json!({ "id": "late", "kind": "sink", "connector": "blackhole" }));
        spec["edges"].as_array_mut().unwrap().push(json!({ "from": "op", "to": "late", "output": "late" }));
        spec["settings"] = json!({ "max_output_bytes_per_call": 1 << 20 });
        spec
    };
    let e = job_error(routed(json!({ "side_at": 3, "flood_records": 200_000 })));
    assert!(e.contains("emitted more than 1048576 bytes on side outputs"), "{e}");
    // Not routed: the records are dropped, but the limit holds all the same.
    let e = job_error(routed(json!({ "side_at": 3, "side": "elsewhere", "flood_records": 200_000 })));
    assert!(e.contains("emitted more than 1048576 bytes on side outputs"), "{e}");
    let e = job_error(routed(json!({ "side_at": 3, "side_names": 17 })));
    assert!(e.contains("at most 16 side outputs"), "{e}");
    let e = job_error(routed(json!({ "side_at": 3, "side": "x".repeat(65), "flood_records": 1 })));
    assert!(e.contains("at most 64"), "{e}");
    // Within the limits, a routed side output reaches its edge and the job ends normally.
    let dir = tempfile::tempdir().unwrap();
    let mut spec = routed(json!({ "side_at": 3, "flood_records": 100 }));
    spec["nodes"][3] =
        json!({ "id": "late", "kind": "sink", "connector": "file", "config": { "path": dir.path() } });
    common::run(spec).expect("job runs");
    let late = common::read_output(dir.path());
    assert_eq!(late.len(), 100);
    assert!(late.iter().all(|r| r["value"] == 3), "the record as it came");
}

#[test]
fn a_wall_time_limit_below_the_cpu_limit_or_above_an_hour_is_refused() {
    let mut spec = one_operator("test:faulty", json!({}), numbers(10));
    spec["settings"] = json!({ "cpu_limit_ms": 1000, "wall_limit_ms": 500 });
    let Err(e) = common::plan_json(spec) else { panic!("a wall limit below the CPU limit was accepted") };
    let e = e.to_string();
    assert!(e.contains("wall_limit_ms (500) must be at least cpu_limit_ms (1000)"), "{e}");
    // A huge limit would be no limit at all.
    let mut spec = one_operator("test:faulty", json!({}), numbers(10));
    spec["settings"] = json!({ "wall_limit_ms": u64::MAX });
    let Err(e) = common::plan_json(spec) else { panic!("an unbounded wall limit was accepted") };
    assert!(e.to_string().contains("wall_limit_ms must be at most 3600000"), "{e}");
}

#[test]
fn a_memory_bomb_is_stopped_at_its_memory_limit() {
    let mut spec = one_operator("test:faulty", json!({ "alloc_at": 3 }), numbers(10));
    spec["settings"] = json!({ "memory_limit_mb": 64 });
    let e = job_error(spec);
    assert!(e.contains("trapped"), "{e}");
}

#[test]
fn bad_operator_config_is_reported() {
    let e = job_error(one_operator("builtin:tumbling-window", json!({ "size_ms": 0 }), numbers(10)));
    assert!(e.contains("invalid config"), "{e}");
}

#[test]
fn bad_disorder_and_nexmark_key_settings_name_what_to_change() {
    let source = |connector: &str, config: Value| {
        plan_error(json!({
            "nodes": [
                { "id": "src", "kind": "source", "connector": connector, "config": config },
                { "id": "out", "kind": "sink", "connector": "blackhole" }
            ],
            "edges": [ { "from": "src", "to": "out" } ]
        }))
    };
    let e = source("generator", json!({ "mode": "sequence", "count": 5, "disorder_ms": -1 }));
    assert!(
        e.contains("node `src`") && e.contains("generator: disorder_ms must be at least 0, got -1"),
        "{e}"
    );
    let e = source("generator", json!({ "mode": "sequence", "count": 5, "late_by_ms": 10 }));
    assert!(e.contains("late_by_ms needs late_every"), "{e}");
    let e = source("generator", json!({ "mode": "sequence", "count": 5, "late_every": 0, "late_by_ms": 1 }));
    assert!(e.contains("late_every must be at least 1"), "{e}");
    let e = source(
        "generator",
        json!({ "mode": "sequence", "count": 5, "start_timestamp": i64::MIN + 10, "disorder_ms": 11 }),
    );
    assert!(e.contains("event times reach down to") && e.contains("does not fit in an i64"), "{e}");
    let e = source("nexmark", json!({ "event_type": "mixed", "count": 5, "key": "auction" }));
    assert!(e.contains("the mixed stream is keyed per event type"), "{e}");
    let e = source(
        "nexmark",
        json!({ "event_type": "mixed", "count": 5, "key": { "bid": "auction", "auction": "id" } }),
    );
    assert!(e.contains("needs a field for every event type (missing: person)"), "{e}");
    let e = source("nexmark", json!({ "event_type": "mixed", "count": 5, "key": { "bid": "seller" } }));
    assert!(e.contains("cannot key bid events by `seller` (auction or bidder)"), "{e}");
    let e = source(
        "nexmark",
        json!({ "event_type": "mixed", "count": 5, "key": { "bid": "auction", "people": "id" } }),
    );
    assert!(e.contains("unknown field `people`, expected one of `bid`, `auction`, `person`"), "{e}");
    let e = source("nexmark", json!({ "event_type": "mix", "count": 5 }));
    assert!(e.contains("unknown event_type `mix` (bid, auction, person or mixed)"), "{e}");
}
