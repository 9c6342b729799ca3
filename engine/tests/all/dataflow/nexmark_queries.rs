//! Nexmark q3, q4, q5, q7, q8 and q11 (`builtin:nexmark`, on the SDK's windows and joins) in
//! real jobs, each against its native reference (`common::nexmark_ref`) on the same events,
//! record for record: the mixed stream from two source subtasks (so the operators see the
//! minimum of two watermarks), and q3 also from two per-type sources on named ports.

use crate::common;
use crate::common::nexmark_ref::{self, Q3Row, Q4Row, Q5Row, Q7Row, Q8Row, Q11Row};

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use weir::connectors::NexmarkSourceConfig;

/// Events of every test: 100 s of event time at 1,000 events a second (50 sliding and 10
/// tumbling windows).
const EVENTS: u64 = 100_000;

fn source(event_type: &str, key: Value) -> Value {
    json!({ "event_type": event_type, "count": EVENTS, "events_per_second": 1_000, "key": key,
            "batch_size": 256, "out_of_orderness_ms": 0 })
}

/// The persons and auctions among the mixed stream's first [`EVENTS`] (1 : 3 : 46 with bids).
const PERSONS: u64 = EVENTS / 50;
const AUCTIONS: u64 = EVENTS * 3 / 50;

/// A per-type stream of `count` events of `event_type` (`count` counts that type alone).
fn typed(event_type: &str, count: u64, key: &str) -> Value {
    json!({ "event_type": event_type, "count": count, "events_per_second": 1_000, "key": key,
            "batch_size": 256, "out_of_orderness_ms": 0 })
}

/// The events a source with `config` emits (keys play no part).
fn events() -> Vec<nexmark::event::Event> {
    let config: NexmarkSourceConfig =
        serde_json::from_value(json!({ "event_type": "mixed", "count": EVENTS, "events_per_second": 1_000 }))
            .unwrap();
    nexmark_ref::events(&config)
}

/// A job: the mixed stream keyed by `key` (p2) → each `(stage, partitioning)` in turn (p2) →
/// file sink.
fn job(key: Value, stages: &[(&str, &str)], out: &std::path::Path) -> Value {
    let mut nodes = vec![json!({ "id": "events", "kind": "source", "connector": "nexmark",
                                 "parallelism": 2, "config": source("mixed", key) })];
    let mut edges = Vec::new();
    let mut from = "events".to_string();
    for (stage, partitioning) in stages {
        nodes.push(json!({ "id": stage, "kind": "operator", "module": "builtin:nexmark", "parallelism": 2,
                           "config": { "stage": stage } }));
        edges.push(json!({ "from": from, "to": stage, "partitioning": partitioning }));
        from = stage.to_string();
    }
    nodes.push(json!({ "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } }));
    edges.push(json!({ "from": from, "to": "out" }));
    json!({ "nodes": nodes, "edges": edges })
}

fn run<T: DeserializeOwned + Ord + Debug>(spec: Value, out: &std::path::Path, want: Vec<T>, what: &str) {
    common::run(spec).unwrap_or_else(|e| panic!("{what}: {e}"));
    let got: Vec<T> = nexmark_ref::rows(&common::read_output(out));
    assert!(!want.is_empty(), "{what}: the reference has rows");
    if got != want && std::env::var_os("WEIR_NEXMARK_DUMP").is_some() {
        std::fs::write("/tmp/q-got.txt", got.iter().map(|r| format!("{r:?}\n")).collect::<String>()).unwrap();
        std::fs::write("/tmp/q-want.txt", want.iter().map(|r| format!("{r:?}\n")).collect::<String>())
            .unwrap();
    }
    if got != want {
        let missing: Vec<_> = want.iter().filter(|r| !got.contains(r)).take(12).collect();
        let extra: Vec<_> = got.iter().filter(|r| !want.contains(r)).take(12).collect();
        panic!(
            "{what}: {} rows, {} expected; missing {missing:?}, unexpected {extra:?}",
            got.len(),
            want.len()
        );
    }
}

#[test]
fn q3_local_item_suggestion_equals_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let key = json!({ "auction": "seller", "person": "id", "bid": "auction" });
    let out = dir.path().join("mixed");
    run::<Q3Row>(job(key, &[("q3", "hash")], &out), &out, nexmark_ref::q3(&events()), "q3, mixed stream");
    // Two per-type streams on the join's named ports.
    let out = dir.path().join("ports");
    let spec = json!({
        "nodes": [
            { "id": "auctions", "kind": "source", "connector": "nexmark", "parallelism": 2,
              "config": typed("auction", AUCTIONS, "seller") },
            { "id": "persons", "kind": "source", "connector": "nexmark", "config": typed("person", PERSONS, "id") },
            { "id": "q3", "kind": "operator", "module": "builtin:nexmark", "parallelism": 2,
              "inputs": ["auctions", "persons"], "config": { "stage": "q3" } },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": out } }
        ],
        "edges": [
            { "from": "persons", "to": "q3", "partitioning": "hash", "input": "persons" },
            { "from": "auctions", "to": "q3", "partitioning": "hash", "input": "auctions" },
            { "from": "q3", "to": "out" }
        ]
    });
    // The per-type streams together hold the mixed stream's auctions and persons.
    run::<Q3Row>(spec, &out, nexmark_ref::q3(&events()), "q3, two sources");
}

#[test]
fn q4_average_price_per_category_equals_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let key = json!({ "auction": "id", "bid": "auction", "person": "id" });
    let spec = job(key, &[("q4-winning", "hash"), ("q4-average", "hash")], &out);
    run::<Q4Row>(spec, &out, nexmark_ref::q4(&events()), "q4");
}

#[test]
fn q5_hot_items_equals_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let key = json!({ "bid": "auction", "auction": "id", "person": "id" });
    let spec = job(key, &[("q5-count", "hash"), ("q5-hot", "hash")], &out);
    run::<Q5Row>(spec, &out, nexmark_ref::q5(&events()), "q5");
}

#[test]
fn q7_highest_bid_equals_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Unkeyed: a partial maximum per source subtask, then one per window.
    let spec = job(Value::Null, &[("q7-partial", "forward"), ("q7-final", "hash")], &out);
    run::<Q7Row>(spec, &out, nexmark_ref::q7(&events()), "q7");
}

#[test]
fn q8_monitor_new_users_equals_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let key = json!({ "person": "id", "auction": "seller", "bid": "bidder" });
    run::<Q8Row>(job(key, &[("q8", "hash")], &out), &out, nexmark_ref::q8(&events()), "q8");
}

#[test]
fn q11_user_sessions_equals_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let key = json!({ "bid": "bidder", "auction": "id", "person": "id" });
    run::<Q11Row>(job(key, &[("q11", "hash")], &out), &out, nexmark_ref::q11(&events()), "q11");
}

/// The job files in `examples/nexmark/` run as written (fewer events, output redirected) and
/// give the reference's rows.
#[test]
fn the_example_job_files_give_the_reference_rows() {
    let dir = tempfile::tempdir().unwrap();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/nexmark");
    let config: NexmarkSourceConfig =
        serde_json::from_value(json!({ "event_type": "mixed", "count": 30_000 })).unwrap();
    let events = nexmark_ref::events(&config);
    for q in ["q3", "q4", "q5", "q7", "q8", "q11"] {
        let text = std::fs::read_to_string(examples.join(format!("{q}.job.json"))).unwrap();
        let mut spec: Value = serde_json::from_str(&text).unwrap();
        let out = dir.path().join(q);
        for n in spec["nodes"].as_array_mut().unwrap() {
            match n["kind"].as_str().unwrap() {
                "source" => n["config"]["count"] = 30_000.into(),
                "sink" => n["config"]["path"] = out.to_str().unwrap().into(),
                _ => {}
            }
        }
        let lines = || common::read_output(&out);
        common::run(spec).unwrap_or_else(|e| panic!("{q}: {e}"));
        let equal = match q {
            "q3" => nexmark_ref::rows::<Q3Row>(&lines()) == nexmark_ref::q3(&events),
            "q4" => nexmark_ref::rows::<Q4Row>(&lines()) == nexmark_ref::q4(&events),
            "q5" => nexmark_ref::rows::<Q5Row>(&lines()) == nexmark_ref::q5(&events),
            "q7" => nexmark_ref::rows::<Q7Row>(&lines()) == nexmark_ref::q7(&events),
            "q8" => nexmark_ref::rows::<Q8Row>(&lines()) == nexmark_ref::q8(&events),
            _ => nexmark_ref::rows::<Q11Row>(&lines()) == nexmark_ref::q11(&events),
        };
        assert!(equal, "{q}: the job file's output differs from the reference");
        assert!(!lines().is_empty(), "{q}: no rows");
    }
}
