//! Keyed two-input joins (`builtin:join`, on the SDK's `KeyedJoin`) in real jobs: every
//! matching pair exactly once against the reference, out-of-order and late inputs, state that
//! expires with the TTL, inclusive and exclusive interval bounds, and the same pairs after
//! injected failures.

use crate::common;
use crate::common::event_time::{self, Bounds, Generated};

use std::sync::Arc;

use serde_json::{Value, json};
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};

fn side(offset: u64, interval_ms: i64) -> Generated {
    Generated {
        count: 3_000,
        offset,
        keys: 40,
        interval_ms,
        disorder_ms: 15,
        late: Some((40, 120)),
        batch_size: 50,
        out_of_orderness_ms: 10,
    }
}

/// Left ids from 0; right ids from 1,000,000, its event time running 1.5× slower.
fn left() -> Generated {
    side(0, 2)
}

fn right() -> Generated {
    side(1_000_000, 3)
}

fn spec(join: Value, out: &std::path::Path, late: &std::path::Path, rate: Option<u64>) -> Value {
    spec_with("builtin:join", join, out, late, rate)
}

fn spec_with(
    module: &str,
    join: Value,
    out: &std::path::Path,
    late: &std::path::Path,
    rate: Option<u64>,
) -> Value {
    json!({
        "nodes": [
            { "id": "left", "kind": "source", "connector": "generator", "config": left().config(rate) },
            { "id": "right", "kind": "source", "connector": "generator", "config": right().config(rate) },
            { "id": "join", "kind": "operator", "module": module, "parallelism": 2,
              "inputs": ["left", "right"], "config": join },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } },
            { "id": "late", "kind": "sink", "connector": "file", "config": { "path": late } }
        ],
        "edges": [
            { "from": "right", "to": "join", "partitioning": "hash", "input": "right" },
            { "from": "left", "to": "join", "partitioning": "hash", "input": "left" },
            { "from": "join", "to": "out" },
            { "from": "join", "to": "late", "output": "late" }
        ],
        "settings": { "checkpoint": { "interval_ms": 10 }, "restart": { "attempts": 10, "delay_ms": 0 } }
    })
}

/// (config, bounds) of each join under test.
fn joins() -> Vec<(Value, Bounds)> {
    vec![
        (json!({ "join": { "kind": "regular" } }), Bounds { lo: None, hi: None }),
        (
            json!({ "join": { "kind": "regular", "ttl_ms": 300 }, "late": { "side_output": "late" } }),
            Bounds { lo: Some(-300), hi: Some(300) },
        ),
        (
            json!({ "join": { "kind": "interval", "lower_ms": -50, "upper_ms": 200 },
                    "late": { "side_output": "late" } }),
            Bounds { lo: Some(-50), hi: Some(200) },
        ),
        (
            json!({ "join": { "kind": "interval", "lower_ms": 0, "upper_ms": 100,
                              "lower_exclusive": true, "upper_exclusive": true },
                    "late": { "side_output": "late" } }),
            Bounds { lo: Some(1), hi: Some(99) },
        ),
    ]
}

fn check(bounds: Bounds, out: &[Value], late: &[Value], what: &str) {
    let (want, want_late) = event_time::join(bounds, &left().steps(), &right().steps());
    assert!(!want.is_empty(), "{what}");
    let got = event_time::joined_pairs(out);
    if got != want {
        let missing: Vec<_> = want.difference(&got).take(5).collect();
        let extra: Vec<_> = got.difference(&want).take(5).collect();
        panic!(
            "{what}: {} pairs, {} expected; missing {missing:?}, unexpected {extra:?}",
            got.len(),
            want.len()
        );
    }
    let side_output = bounds.lo.is_some();
    if side_output {
        assert!(!want_late.is_empty(), "{what}: the inputs have late records");
    }
    assert_eq!(event_time::ids(late), want_late, "{what}: late records");
}

#[test]
fn every_matching_pair_exactly_once_against_the_reference() {
    for (join, bounds) in joins() {
        let dir = tempfile::tempdir().unwrap();
        let (out, late) = (dir.path().join("out"), dir.path().join("late"));
        common::run(spec(join.clone(), &out, &late, None)).expect("job runs");
        check(bounds, &common::read_output(&out), &common::read_output(&late), &join.to_string());
    }
}

/// With a TTL, the join's state holds only what can still match: nothing is live in the final
/// checkpoint, and the stored state stays far below the unbounded join's.
#[test]
fn state_expires_with_the_ttl() {
    let state_bytes = |join: Value| {
        let dir = tempfile::tempdir().unwrap();
        let (out, late) = (dir.path().join("out"), dir.path().join("late"));
        let (result, store) = common::run_checkpointed(
            spec(join, &out, &late, Some(20_000)),
            &dir.path().join("data"),
            "j",
            |env| env,
        );
        result.expect("job runs");
        use weir_store::CheckpointStorage as _;
        let history = store.history("j").unwrap();
        let completed: Vec<_> =
            history.iter().filter(|c| c.status == weir_store::CheckpointStatus::Completed).collect();
        assert!(completed.len() >= 3, "checkpoints: {}", completed.len());
        // The join's state in each checkpoint, as stored (its chains' chunks).
        let join_bytes = |c: &weir_store::CheckpointMeta| -> u64 {
            c.subtasks.iter().filter(|s| s.operator == "join").map(|s| s.full_state_bytes).sum()
        };
        let peak = completed.iter().map(|c| join_bytes(c)).max().unwrap();
        let live = common::final_state(&store, "j", "join").expect("final state").len();
        (peak, live)
    };
    let (ttl_peak, ttl_final) = state_bytes(json!({ "join": { "kind": "regular", "ttl_ms": 100 } }));
    let (all_peak, all_final) = state_bytes(json!({ "join": { "kind": "regular" } }));
    assert_eq!(ttl_final, 0, "every record expired by the end of event time");
    assert!(all_final > 0, "the unbounded join keeps every key");
    assert!(ttl_peak * 3 < all_peak, "state with a TTL {ttl_peak} B, without {all_peak} B");
}

/// Failures at random points: the same pairs, each once.
#[test]
fn joins_survive_failures_with_the_same_pairs() {
    common::quiet_injected_panics();
    let base: u64 = std::env::var("WEIR_JOIN_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(1950);
    for (i, (join, bounds)) in joins().into_iter().enumerate() {
        let seed = base + i as u64;
        let faults = vec![
            PlannedFault { point: FaultPoint::Process, after: 20 + seed % 50, kind: FaultKind::Error },
            PlannedFault { point: FaultPoint::Snapshot, after: 3 + seed % 5, kind: FaultKind::Panic },
        ];
        let injector = Arc::new(FaultInjector::new(faults.clone()));
        let dir = tempfile::tempdir().unwrap();
        let (out, late) = (dir.path().join("out"), dir.path().join("late"));
        let (result, _) = common::run_checkpointed(
            spec(join.clone(), &out, &late, Some(15_000)),
            &dir.path().join("data"),
            "j",
            |env| env.with_faults(injector.clone()),
        );
        let what = format!("seed {seed}, {join}, faults {faults:?}");
        let report = result.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(injector.fired(), 2, "{what}");
        // Both faults fired; a second one before any checkpoint completed restarts from the
        // same checkpoint (or the start).
        assert!(!report.restored_from.is_empty(), "{what}: {:?}", report.restored_from);
        check(bounds, &common::read_committed(&out), &common::read_committed(&late), &what);
    }
}

/// The Python join helper (`weirpy.join`, `examples/python/operators/join_pairs.py`) pairs
/// exactly what the reference pairs, for every join kind.
#[test]
fn python_joins_match_the_same_reference() {
    let module = common::languages::build("python").join("join-pairs.wasm");
    for (join, bounds) in joins() {
        let dir = tempfile::tempdir().unwrap();
        let (out, late) = (dir.path().join("out"), dir.path().join("late"));
        common::run(spec_with(module.to_str().unwrap(), join.clone(), &out, &late, None)).expect("job runs");
        check(bounds, &common::read_output(&out), &common::read_output(&late), &format!("python {join}"));
    }
}
