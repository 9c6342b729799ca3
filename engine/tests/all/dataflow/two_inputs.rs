//! Operators with several inputs: a union of two sources receives both, each in FIFO order;
//! named input ports decide the input index.

use crate::common;

use serde_json::json;

/// The values `test:faulty` (with `tag_input`) emitted, by the input index it put in the key.
fn by_input<const N: usize>(out: &[serde_json::Value]) -> [Vec<u64>; N] {
    let mut per_input = std::array::from_fn(|_| Vec::new());
    for r in out {
        let input = r["key"].as_u64().expect("the key is the input index") as usize;
        assert!(input < N, "input index {input} of {N} inputs");
        per_input[input].push(r["value"].as_u64().unwrap());
    }
    per_input
}

#[test]
fn union_of_two_sources_keeps_each_input_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (3_000u64, 2_000u64);
    common::run(json!({
        "nodes": [
            { "id": "a", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": a, "batch_size": 64 } },
            { "id": "b", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": b, "offset": 1_000_000, "batch_size": 50 } },
            { "id": "union", "kind": "operator", "module": "test:faulty", "config": { "tag_input": true } },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": dir.path() } }
        ],
        "edges": [
            { "from": "a", "to": "union" },
            { "from": "b", "to": "union" },
            { "from": "union", "to": "out" }
        ]
    }))
    .expect("job runs");

    let out = common::read_output(dir.path());
    let per_input = by_input::<2>(&out);
    assert_eq!(per_input[0], (0..a).collect::<Vec<_>>(), "input 0 carries source a, in order");
    assert_eq!(
        per_input[1],
        (1_000_000..1_000_000 + b).collect::<Vec<_>>(),
        "input 1 carries source b, in order"
    );
    // Both inputs were read while the other still had data: the union interleaves them.
    let first_b = out.iter().position(|r| r["key"] == 1).unwrap();
    let last_a = out.iter().rposition(|r| r["key"] == 0).unwrap();
    assert!(first_b < last_a, "inputs should interleave, not run one after the other");
}

/// Named ports: the port an edge names decides the input index the operator sees, whatever
/// the edges' order in the spec; one source may feed both ports of an operator (a self-join),
/// and each port then gets every record.
#[test]
fn named_ports_decide_the_input_index_and_one_source_feeds_both() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (2_000u64, 1_500u64);
    common::run(json!({
        "nodes": [
            { "id": "a", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": a, "batch_size": 64 } },
            { "id": "b", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": b, "offset": 1_000_000, "batch_size": 50 } },
            { "id": "j", "kind": "operator", "module": "test:faulty", "config": { "tag_input": true },
              "inputs": ["left", "right", "other"] },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": dir.path() } }
        ],
        "edges": [
            { "from": "b", "to": "j", "input": "other" },
            { "from": "a", "to": "j", "input": "right" },
            { "from": "a", "to": "j", "input": "left" },
            { "from": "j", "to": "out" }
        ]
    }))
    .expect("job runs");

    let per_input = by_input::<3>(&common::read_output(dir.path()));
    assert_eq!(
        per_input[0],
        (0..a).collect::<Vec<_>>(),
        "`left` (input 0) carries every record of a, in order"
    );
    assert_eq!(
        per_input[1],
        (0..a).collect::<Vec<_>>(),
        "`right` (input 1) carries every record of a, in order"
    );
    assert_eq!(
        per_input[2],
        (1_000_000..1_000_000 + b).collect::<Vec<_>>(),
        "`other` (input 2) carries source b, in order"
    );
}
