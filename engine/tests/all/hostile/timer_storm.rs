//! A timer storm (issue 40): the timers due at a watermark fire one call at a time, each
//! after there is room downstream, so the queue to a slow consumer stays within its
//! capacity however many timers are due; and a timer that registers itself again while due
//! waits for the next advance of the watermark instead of firing in the same loop forever.

use serde_json::{Value, json};

use crate::common;

/// Channel capacity of the jobs below (batches).
const CAPACITY: usize = 4;

/// generator → `storm` (faulty, `storm`) → `slow` (faulty, busy work per record) → blackhole.
fn storm(storm: Value, records: u64) -> Value {
    json!({
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": records, "batch_size": 10, "interval_ms": 1,
                          "out_of_orderness_ms": 0 } },
            { "id": "storm", "kind": "operator", "module": "test:faulty", "config": storm },
            { "id": "slow", "kind": "operator", "module": "test:faulty", "config": { "work": 20_000 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "src", "to": "storm" },
            { "from": "storm", "to": "slow" },
            { "from": "slow", "to": "out" }
        ],
        "settings": { "channel_capacity": CAPACITY }
    })
}

fn records_in(report: &weir::runtime::JobReport, node: &str) -> u64 {
    report.nodes.iter().find(|n| n.id == node).expect("node").records_in
}

#[test]
fn the_timers_due_at_a_watermark_wait_for_room_downstream() {
    // 3,000 timers due at once, each emitting 20 records (a batch per call): 3,000 batches
    // for a consumer that takes ~1 ms a batch. Fired in one loop, they all queue at once.
    let report = common::run(storm(json!({ "storm_at": 5, "timer_count": 3000, "storm_records": 20 }), 50))
        .expect("the job runs");
    assert_eq!(records_in(&report, "slow"), 50 + 3000 * 20, "every timer fired once");
    let channel = report.channels.iter().find(|c| c.from.0 == "storm").expect("storm → slow");
    assert_eq!(channel.capacity, CAPACITY);
    // At most the capacity, one call's output and the watermark that follows it.
    assert!(
        channel.max_depth <= CAPACITY + 2,
        "{} messages queued on a channel of capacity {CAPACITY}",
        channel.max_depth
    );
}

#[test]
fn a_timer_that_registers_itself_again_fires_once_per_advance() {
    // Each of 10 timers, when it fires, registers itself again at the same (due) time: in
    // one loop that never ends. Deferred, each fires once per advance of the watermark after
    // it was registered: at most once per source batch, plus the final advance.
    let (records, batches) = (200, 20);
    let report = common::run(storm(
        json!({ "storm_at": 5, "timer_count": 10, "storm_records": 1, "storm_rearm": true }),
        records,
    ))
    .expect("the job ends");
    let fired = records_in(&report, "slow") - records;
    assert!(fired >= 10 * 2, "the timers fired again at later advances: {fired}");
    assert!(fired <= 10 * (batches + 1), "at most once per advance: {fired}");
}
