//! Fat batches (issue 40): a generator of very long lines (10,000 words of a large
//! vocabulary, ~75 KB a line) at the largest `batch_size` once made one batch of ~0.9 GB.
//! Sources cut batches by bytes too (`batch_bytes`), and local channels count the bytes they
//! hold (`settings.channel_capacity_bytes`), so what is in flight is bounded in bytes.

use serde_json::json;

use crate::common;

#[test]
fn long_lines_are_cut_into_batches_by_bytes_and_channels_hold_a_bounded_number_of_bytes() {
    let lines = 600u64;
    let spec = json!({
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "words", "lines": lines, "words_per_line": 10_000,
                          "vocabulary": 1_000_000, "batch_size": 8192 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "out" } ],
        "settings": { "channel_capacity_bytes": 4 << 20 }
    });
    let report = common::run(spec).expect("the job runs");
    let out = report.nodes.iter().find(|n| n.id == "out").unwrap();
    assert_eq!(out.records_in, lines);
    let channel = &report.channels[0];
    // ~75 KB lines at the default batch_bytes of 1 MiB: about 14 lines a batch, where the
    // record count alone (8,192) would make one batch of all of them.
    assert!(channel.batches >= lines / 20, "{} batches for {lines} lines", channel.batches);
    assert_eq!(channel.capacity_bytes, 4 << 20);
    // The capacity, plus the batch pushed past it (1 MiB and a line at most).
    assert!(
        channel.max_bytes <= (4 << 20) + (1 << 20) + (200 << 10),
        "{} bytes queued on a channel of 4 MiB",
        channel.max_bytes
    );
}
