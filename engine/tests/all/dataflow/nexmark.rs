//! Nexmark q1 and q2 through Wasm operators against a native Rust reference; the mixed
//! stream (persons, auctions and bids in one source) against the generator.

use crate::common;
use crate::common::nexmark_ref;

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

fn mixed_job(parallelism: u32, count: u64, out: &std::path::Path) -> serde_json::Value {
    json!({
        "nodes": [
            { "id": "events", "kind": "source", "connector": "nexmark", "parallelism": parallelism,
              "config": { "event_type": "mixed", "count": count, "batch_size": 100,
                          "key": { "bid": "auction", "auction": "seller", "person": "id" } } },
            { "id": "out", "kind": "sink", "connector": "file", "parallelism": parallelism, "config": { "path": out } }
        ],
        "edges": [ { "from": "events", "to": "out", "partitioning": "forward" } ]
    })
}

/// Sink subtask `i` holds source subtask `i`'s share of the mixed stream: every event in
/// generator order, as the externally tagged `Event`, keyed per type, in the proportions
/// person 1 : auction 3 : bid 46.
#[test]
fn mixed_stream_carries_every_event_tagged_and_keyed_per_type() {
    use nexmark::event::Event;

    let (parallelism, count) = (3, 5_000);
    let dir = tempfile::tempdir().unwrap();
    let spec = mixed_job(parallelism, count, dir.path());
    let config: NexmarkSourceConfig = {
        let mut c = spec["nodes"][0]["config"].clone();
        c.as_object_mut().unwrap().remove("batch_size");
        serde_json::from_value(c).unwrap()
    };
    common::run(spec).expect("job runs");
    let mut kinds = std::collections::BTreeMap::new();
    for i in 0..parallelism {
        let expected = nexmark_ref::subtask_events(&config, i, parallelism);
        let text = std::fs::read_to_string(dir.path().join(format!("part-{i}.jsonl"))).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), expected.len(), "subtask {i}");
        for (line, event) in lines.iter().zip(&expected) {
            assert_eq!(line["value"], serde_json::to_value(event).unwrap());
            let (kind, key) = match event {
                Event::Person(p) => ("Person", p.id),
                Event::Auction(a) => ("Auction", a.seller),
                Event::Bid(b) => ("Bid", b.auction),
            };
            assert!(line["value"].get(kind).is_some(), "{line}");
            assert_eq!(line["key"].as_u64(), Some(key as u64), "{line}");
            assert_eq!(line["timestamp"].as_u64(), Some(event.timestamp()), "{line}");
            *kinds.entry(kind).or_insert(0) += 1;
        }
    }
    let kinds: Vec<_> = kinds.into_iter().collect();
    assert_eq!(kinds, [("Auction", 300), ("Bid", 4_600), ("Person", 100)]);
}

/// What a Rust guest declares to read the mixed stream: its own structs, with the crate's
/// field names (every one: unknown fields are refused) and plain integer types.
mod guest_view {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Person {
        pub id: u64,
        pub name: String,
        pub email_address: String,
        pub credit_card: String,
        pub city: String,
        pub state: String,
        pub date_time: u64,
        pub extra: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Auction {
        pub id: u64,
        pub item_name: String,
        pub description: String,
        pub initial_bid: u64,
        pub reserve: u64,
        pub date_time: u64,
        pub expires: u64,
        pub seller: u64,
        pub category: u64,
        pub extra: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Bid {
        pub auction: u64,
        pub bidder: u64,
        pub price: u64,
        pub channel: String,
        pub url: String,
        pub date_time: u64,
        pub extra: String,
    }

    #[derive(Debug, Deserialize)]
    pub enum Event {
        Person(Person),
        Auction(Auction),
        Bid(Bid),
    }
}

#[test]
fn a_guest_decodes_the_mixed_stream_with_its_own_event_enum() {
    use nexmark::event::Event;
    use weir::connectors::Source as _;

    let config: NexmarkSourceConfig =
        serde_json::from_value(json!({ "event_type": "mixed", "count": 1_000 })).unwrap();
    let mut source = weir::connectors::NexmarkSource::new(&config, 256, 0, 1);
    let mut expected = nexmark_ref::events(&config).into_iter();
    let mut seen = 0;
    while let Some(batch) = source.next_batch().unwrap() {
        for record in batch.iter() {
            let decoded: guest_view::Event = rmp_serde::from_slice(record.value).unwrap();
            let same = match (decoded, expected.next().unwrap()) {
                (guest_view::Event::Person(g), Event::Person(p)) => {
                    (
                        g.id,
                        &g.name,
                        &g.email_address,
                        &g.credit_card,
                        &g.city,
                        &g.state,
                        g.date_time,
                        &g.extra,
                    ) == (
                        p.id as u64,
                        &p.name,
                        &p.email_address,
                        &p.credit_card,
                        &p.city,
                        &p.state,
                        p.date_time,
                        &p.extra,
                    )
                }
                (guest_view::Event::Auction(g), Event::Auction(a)) => {
                    (g.id, &g.item_name, &g.description, g.initial_bid, g.reserve, g.date_time, g.expires)
                        == (
                            a.id as u64,
                            &a.item_name,
                            &a.description,
                            a.initial_bid as u64,
                            a.reserve as u64,
                            a.date_time,
                            a.expires,
                        )
                        && (g.seller, g.category, &g.extra) == (a.seller as u64, a.category as u64, &a.extra)
                }
                (guest_view::Event::Bid(g), Event::Bid(b)) => {
                    (g.auction, g.bidder, g.price, &g.channel, &g.url, g.date_time, &g.extra)
                        == (
                            b.auction as u64,
                            b.bidder as u64,
                            b.price as u64,
                            &b.channel,
                            &b.url,
                            b.date_time,
                            &b.extra,
                        )
                }
                (g, e) => panic!("decoded {g:?}, generated {e:?}"),
            };
            assert!(same, "event {seen} differs");
            seen += 1;
        }
    }
    assert_eq!(seen, 1_000);
}

/// The references find rows on the generated stream (so the query tests check something),
/// and the per-type streams give them the same events as the mixed one.
#[test]
fn references_have_rows_on_the_generated_stream() {
    let mixed: NexmarkSourceConfig =
        serde_json::from_value(json!({ "event_type": "mixed", "count": 300_000 })).unwrap();
    let events = nexmark_ref::events(&mixed);
    let counts = [
        ("q3", nexmark_ref::q3(&events).len()),
        ("q4", nexmark_ref::q4(&events).len()),
        ("q5", nexmark_ref::q5(&events).len()),
        ("q7", nexmark_ref::q7(&events).len()),
        ("q8", nexmark_ref::q8(&events).len()),
        ("q11", nexmark_ref::q11(&events).len()),
    ];
    println!("rows over {} mixed events: {counts:?}", events.len());
    for (query, rows) in counts {
        assert!(rows > 0, "{query} has no rows");
    }
    let bids: NexmarkSourceConfig =
        serde_json::from_value(json!({ "event_type": "bid", "count": 300_000 / 50 * 46 })).unwrap();
    let only_bids: Vec<_> =
        events.iter().filter(|e| matches!(e, nexmark::event::Event::Bid(_))).cloned().collect();
    assert_eq!(nexmark_ref::events(&bids), only_bids);
    assert_eq!(nexmark_ref::q7(&only_bids), nexmark_ref::q7(&events));
}
