//! Nexmark q1 and q2 through Wasm operators against a native Rust reference.

use crate::common;

use serde::{Deserialize, Serialize};
use serde_json::json;
use weir::connectors::NexmarkSourceConfig;
use weir::connectors::nexmark::Bid;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct OutBid {
    auction: u64,
    bidder: u64,
    price: u64,
    channel: String,
    url: String,
    date_time: u64,
    extra: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct AuctionPrice {
    auction: u64,
    price: u64,
}

fn bids(count: u64, parallelism: u32) -> Vec<Vec<Bid>> {
    let config = NexmarkSourceConfig {
        event_type: "bid".into(),
        count,
        base_time: 1_700_000_000_000,
        events_per_second: 10_000,
        key: None,
    };
    (0..parallelism)
        .map(|i| {
            let mut g = config.generator(i, parallelism);
            let mut out = Vec::new();
            while g.offset() < count {
                match g.next().unwrap() {
                    nexmark::event::Event::Bid(b) => out.push(b),
                    other => panic!("unexpected {other:?}"),
                }
            }
            out
        })
        .collect()
}

fn q1_native(b: &Bid) -> OutBid {
    OutBid {
        auction: b.auction as u64,
        bidder: b.bidder as u64,
        price: b.price as u64 * 908 / 1000,
        channel: b.channel.clone(),
        url: b.url.clone(),
        date_time: b.date_time,
        extra: b.extra.clone(),
    }
}

fn q2_native(b: &Bid) -> Option<AuctionPrice> {
    b.auction.is_multiple_of(123).then_some(AuctionPrice { auction: b.auction as u64, price: b.price as u64 })
}

fn job(query: &str, parallelism: u32, count: u64, out: &std::path::Path) -> serde_json::Value {
    json!({
        "nodes": [
            { "id": "bids", "kind": "source", "connector": "nexmark", "parallelism": parallelism,
              "config": { "event_type": "bid", "count": count, "batch_size": 500 } },
            { "id": "q", "kind": "operator", "module": format!("builtin:{query}"), "parallelism": parallelism },
            { "id": "out", "kind": "sink", "connector": "file", "parallelism": parallelism, "config": { "path": out } }
        ],
        "edges": [
            { "from": "bids", "to": "q", "partitioning": "forward" },
            { "from": "q", "to": "out", "partitioning": "forward" }
        ]
    })
}

/// Output of sink subtask `i` is the query applied to source subtask `i`'s bids, in order.
fn check<T: for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(
    query: &str,
    parallelism: u32,
    count: u64,
    reference: impl Fn(&Bid) -> Option<T>,
) {
    let dir = tempfile::tempdir().unwrap();
    common::run(job(query, parallelism, count, dir.path())).expect("job runs");
    let input = bids(count, parallelism);
    assert_eq!(input.iter().map(Vec::len).sum::<usize>() as u64, count);
    let mut total = 0;
    for (i, bids) in input.iter().enumerate() {
        let expected: Vec<T> = bids.iter().filter_map(&reference).collect();
        let text = std::fs::read_to_string(dir.path().join(format!("part-{i}.jsonl"))).unwrap();
        let actual: Vec<T> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                serde_json::from_value(v["value"].clone()).unwrap()
            })
            .collect();
        assert_eq!(actual.len(), expected.len(), "{query} subtask {i}: record count");
        for (n, (a, e)) in actual.iter().zip(&expected).enumerate() {
            assert_eq!(a, e, "{query} subtask {i}: record {n} differs");
        }
        total += actual.len();
    }
    assert!(total > 0, "{query} produced nothing");
}

#[test]
fn q1_equals_native_reference() {
    check("nexmark-q1", 2, 20_000, |b| Some(q1_native(b)));
}

#[test]
fn q2_equals_native_reference() {
    check("nexmark-q2", 2, 60_000, q2_native);
}
