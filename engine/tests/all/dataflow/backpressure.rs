//! With a slow sink, queues stay within their bounds and the source is held back.

use crate::common;

use serde_json::json;

#[test]
fn slow_sink_holds_queues_within_channel_bounds() {
    let capacity = 4usize;
    let batches = 600u64;
    let report = common::run(json!({
        "nodes": [
            { "id": "numbers", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": batches * 16, "batch_size": 16 } },
            { "id": "pass", "kind": "operator", "module": "test:faulty" },
            { "id": "slow", "kind": "sink", "connector": "blackhole", "config": { "pause_ms_per_batch": 1 } }
        ],
        "edges": [
            { "from": "numbers", "to": "pass", "partitioning": "forward" },
            { "from": "pass", "to": "slow", "partitioning": "forward" }
        ],
        "settings": { "channel_capacity": capacity }
    }))
    .expect("job runs");

    assert_eq!(report.node("slow").unwrap().records_in, batches * 16);
    assert_eq!(report.channels.len(), 2);
    // A task waits for room before it takes its next input, then queues that input's
    // output (here one batch per channel): a channel never holds more than its capacity.
    for c in &report.channels {
        assert_eq!(c.capacity, capacity);
        assert!(c.max_depth <= capacity, "{c:?} exceeded its capacity");
        assert_eq!(c.batches, batches);
    }
    // Nothing else buffers: batches made by the source but not yet at the sink are at most
    // what the channels hold plus one batch in the hands of each task.
    let bound = (report.channels.len() * capacity + report.tasks) as u64;
    assert!(
        report.max_batches_in_flight <= bound,
        "{} batches in flight, bound {bound}",
        report.max_batches_in_flight
    );
    // And the source really was held back: without backpressure it would have run far ahead.
    assert!(report.max_batches_in_flight >= capacity as u64, "the sink should have been the bottleneck");
    assert!(batches > 10 * bound);
}
