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

/// The generator's `disorder_ms`/`late_every`/`late_by_ms` (subtask `i` feeds window subtask
/// `i` on a forward edge, so each window subtask sees one source subtask's watermarks).
fn disorder_spec(
    out: &std::path::Path,
    disorder_ms: i64,
    window: bool,
    rate: Option<u64>,
) -> serde_json::Value {
    let source = json!({ "id": "numbers", "kind": "source", "connector": "generator", "parallelism": 2,
        "config": { "mode": "sequence", "count": DISORDER_COUNT, "keys": DISORDER_COUNT,
                    "start_timestamp": 1_000_000, "interval_ms": 2, "disorder_ms": disorder_ms,
                    "late_every": 50, "late_by_ms": 500, "batch_size": DISORDER_BATCH,
                    "out_of_orderness_ms": DISORDER_OOO, "records_per_second": rate } });
    let sink = json!({ "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } });
    if !window {
        return json!({ "nodes": [source, sink], "edges": [{ "from": "numbers", "to": "out" }] });
    }
    json!({
        "nodes": [source, sink,
            { "id": "window", "kind": "operator", "module": "builtin:tumbling-window", "parallelism": 2,
              "config": { "size_ms": 1 } }],
        "edges": [
            { "from": "numbers", "to": "window", "partitioning": "forward" },
            { "from": "window", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 10 }, "restart": { "attempts": 5, "delay_ms": 0 } }
    })
}

const DISORDER_COUNT: u64 = 6_000;
const DISORDER_BATCH: usize = 16;
const DISORDER_OOO: i64 = 30;

fn disorder_config(spec: &serde_json::Value) -> weir::connectors::GeneratorConfig {
    let mut config = spec["nodes"][0]["config"].clone();
    for setting in ["batch_size", "out_of_orderness_ms", "records_per_second"] {
        config.as_object_mut().unwrap().remove(setting);
    }
    serde_json::from_value(config).unwrap()
}

/// Every record arrives with `GeneratorConfig::event_time` of its index, and they are out of
/// order.
#[test]
fn generator_disorder_reaches_the_sink_with_the_documented_event_times() {
    let dir = tempfile::tempdir().unwrap();
    let spec = disorder_spec(dir.path(), DISORDER_OOO, false, None);
    let config = disorder_config(&spec);
    common::run(spec).expect("job runs");
    let mut seen = vec![false; DISORDER_COUNT as usize];
    let mut backwards = 0;
    let mut last = i64::MIN;
    for r in common::read_output(dir.path()) {
        let v = r["value"].as_u64().unwrap();
        assert_eq!(r["key"].as_u64().unwrap(), v);
        let ts = r["timestamp"].as_i64().unwrap();
        assert_eq!(ts, config.event_time(v), "record {v}");
        assert!(!std::mem::replace(&mut seen[v as usize], true), "record {v} twice");
        backwards += usize::from(ts < last);
        last = ts;
    }
    assert!(seen.iter().all(|s| *s));
    assert!(backwards > 1_000, "only {backwards} records went back in time");
}

/// A one-millisecond tumbling window drops exactly the records behind its watermark: the
/// windows that fire are those of every record except `GeneratorConfig::late_records`. With
/// `disorder_ms ≤ out_of_orderness_ms` the watermark downstream never passes a record that is
/// not made late, and the `late_every` ones are late; with more disorder, some others are late
/// too (and some fall exactly on the watermark). The same holds after failures (batch
/// boundaries and source watermarks are restored with the position).
#[test]
fn only_the_generators_late_records_are_late_downstream() {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
    for disorder_ms in [DISORDER_OOO, 4 * DISORDER_OOO] {
        let dir = tempfile::tempdir().unwrap();
        let spec = disorder_spec(&dir.path().join("plain"), disorder_ms, true, None);
        let config = disorder_config(&spec);
        let late: BTreeSet<u64> =
            (0..2).flat_map(|i| config.late_records(i, 2, DISORDER_BATCH, DISORDER_OOO)).collect();
        let made_late: BTreeSet<u64> = (0..DISORDER_COUNT).filter(|i| config.made_late(*i)).collect();
        if disorder_ms <= DISORDER_OOO {
            // Exactly the made-late records, bar those of the first batches.
            assert!(late.is_subset(&made_late));
            assert!(
                late.len() + 2 >= made_late.len() && late.len() > 100,
                "{} of {}",
                late.len(),
                made_late.len()
            );
        } else {
            assert!(late.difference(&made_late).count() > 100, "disorder alone makes records late");
        }
        let check = |lines: &[serde_json::Value]| {
            let mut fired = BTreeSet::new();
            for r in lines {
                let v = &r["value"];
                let key = r["key"].as_u64().unwrap();
                assert_eq!((v["count"].as_u64(), v["sum"].as_u64()), (Some(1), Some(key)), "{r}");
                assert_eq!(v["window_start"].as_i64().unwrap(), config.event_time(key), "{r}");
                assert!(fired.insert(key), "window of record {key} fired twice");
            }
            let dropped: BTreeSet<u64> = (0..DISORDER_COUNT).filter(|i| !fired.contains(i)).collect();
            assert_eq!(dropped, late, "disorder_ms {disorder_ms}");
        };
        common::run(spec).expect("job runs");
        check(&common::read_output(&dir.path().join("plain")));

        let faults = Arc::new(FaultInjector::new(vec![
            PlannedFault { point: FaultPoint::Process, after: 150, kind: FaultKind::Error },
            PlannedFault { point: FaultPoint::Snapshot, after: 5, kind: FaultKind::Error },
        ]));
        let out = dir.path().join("faulty");
        let (result, _store) = common::run_checkpointed(
            disorder_spec(&out, disorder_ms, true, Some(20_000)),
            &dir.path().join("data"),
            "late",
            |env| env.with_faults(faults.clone()),
        );
        let report = result.unwrap();
        assert_eq!(faults.fired(), 2);
        assert!(!report.restored_from.is_empty(), "{:?}", report.restored_from);
        check(&common::read_committed(&out));
    }
}
