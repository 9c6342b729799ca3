//! An event-time tumbling window (timers + watermarks) against a reference.

use crate::common;

use std::collections::BTreeMap;

use serde_json::json;

fn spec(count: u64, keys: u64, size: i64, out: &std::path::Path, rate: Option<u64>) -> serde_json::Value {
    json!({
        "nodes": [
            { "id": "numbers", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": count, "keys": keys, "interval_ms": 1,
                          "batch_size": 128, "out_of_orderness_ms": 50, "records_per_second": rate } },
            { "id": "window", "kind": "operator", "module": "builtin:tumbling-window", "parallelism": 2,
              "config": { "size_ms": size } },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } }
        ],
        "edges": [
            { "from": "numbers", "to": "window", "partitioning": "hash" },
            { "from": "window", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 10 }, "restart": { "attempts": 5, "delay_ms": 0 } }
    })
}

#[test]
fn tumbling_window_sums_equal_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (count, keys, size) = (20_000u64, 7u64, 1_000i64);
    common::run(spec(count, keys, size, dir.path(), None)).expect("job runs");
    check(&common::read_output(dir.path()), count, keys, size);
}

/// Timers and watermarks are part of the checkpoint: after failures, every window fires
/// exactly once with the right sums (a lost timer would drop a window, a replayed one would
/// fire it twice).
#[test]
fn tumbling_windows_survive_failures_exactly_once() {
    use std::sync::Arc;

    use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let (count, keys, size) = (20_000u64, 7u64, 500i64);
    let faults = Arc::new(FaultInjector::new(vec![
        PlannedFault { point: FaultPoint::Process, after: 100, kind: FaultKind::Error },
        PlannedFault { point: FaultPoint::Snapshot, after: 10, kind: FaultKind::Error },
    ]));
    let (result, store) = common::run_checkpointed(
        spec(count, keys, size, &out, Some(20_000)),
        &dir.path().join("data"),
        "w",
        |env| env.with_faults(faults.clone()),
    );
    let report = result.unwrap();
    assert_eq!(faults.fired(), 2);
    assert!(report.restored_from.len() >= 2, "{:?}", report.restored_from);
    // The restored checkpoints held timers.
    use weir_store::CheckpointStorage as _;
    let (_, manifest) = store.checkpoint("w", report.restored_from[0]).unwrap().unwrap();
    if let Some(manifest) = manifest {
        let timers: usize = manifest["window"]
            .values()
            .map(|s| weir::runtime::TaskState::decode(&s.blob).unwrap().timers.len())
            .sum();
        assert!(timers > 0, "open windows have timers in the checkpoint");
    }
    check(&common::read_committed(&out), count, keys, size);
}

fn check(lines: &[serde_json::Value], count: u64, keys: u64, size: i64) {
    // value i has key i % keys and time i.
    let mut reference: BTreeMap<(u64, i64), (u64, i64)> = BTreeMap::new();
    for i in 0..count {
        let start = (i as i64).div_euclid(size) * size;
        let e = reference.entry((i % keys, start)).or_default();
        e.0 += 1;
        e.1 += i as i64;
    }
    let mut actual: BTreeMap<(u64, i64), (u64, i64)> = BTreeMap::new();
    for r in lines {
        let v = &r["value"];
        let start = v["window_start"].as_i64().unwrap();
        assert_eq!(v["window_end"].as_i64().unwrap(), start + size);
        assert_eq!(r["timestamp"].as_i64().unwrap(), start + size - 1);
        let prev = actual.insert(
            (r["key"].as_u64().unwrap(), start),
            (v["count"].as_u64().unwrap(), v["sum"].as_i64().unwrap()),
        );
        assert!(prev.is_none(), "window fired twice: {r}");
    }
    assert_eq!(actual, reference);
}
