//! An event-time tumbling window (timers + watermarks) against a reference.

mod common;

use std::collections::BTreeMap;

use serde_json::json;

#[test]
fn tumbling_window_sums_equal_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (count, keys, size) = (20_000u64, 7u64, 1_000i64);
    common::run(json!({
        "nodes": [
            { "id": "numbers", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": count, "keys": keys, "interval_ms": 1,
                          "batch_size": 128, "out_of_orderness_ms": 50 } },
            { "id": "window", "kind": "operator", "module": "builtin:tumbling-window", "parallelism": 2,
              "config": { "size_ms": size } },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": dir.path() } }
        ],
        "edges": [
            { "from": "numbers", "to": "window", "partitioning": "hash" },
            { "from": "window", "to": "out" }
        ]
    }))
    .expect("job runs");

    // value i has key i % keys and time i.
    let mut reference: BTreeMap<(u64, i64), (u64, i64)> = BTreeMap::new();
    for i in 0..count {
        let start = (i as i64).div_euclid(size) * size;
        let e = reference.entry((i % keys, start)).or_default();
        e.0 += 1;
        e.1 += i as i64;
    }
    let mut actual: BTreeMap<(u64, i64), (u64, i64)> = BTreeMap::new();
    for r in common::read_output(dir.path()) {
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
