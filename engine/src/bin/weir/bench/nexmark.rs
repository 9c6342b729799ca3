//! `weir bench`: records per second per core of Nexmark q1 and q2 through the Wasm
//! operators versus the same logic compiled natively into the host.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use weir::connectors::NexmarkSourceConfig;
use weir::connectors::nexmark::{KeyField, push_keyed_event};
use weir::guest::bindings::Context;
use weir::guest::{GuestHost, InstanceLimits, OperatorInstance};
use weir::record::Batch;

/// A bid as the queries read and write it (the `nexmark` crate's field names). Strings
/// borrow from the batch, as in the Wasm operators, so both sides do the same work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bid<'a> {
    /// Auction id.
    pub auction: u64,
    /// Bidder id.
    pub bidder: u64,
    /// Price in cents.
    pub price: u64,
    /// Channel.
    pub channel: &'a str,
    /// URL.
    pub url: &'a str,
    /// Event time, ms.
    pub date_time: u64,
    /// Padding.
    pub extra: &'a str,
}

/// q2's output, and what q2 reads of a bid (as the Wasm operator: the decoder skips the
/// other fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuctionPrice {
    /// Auction id.
    pub auction: u64,
    /// Price.
    pub price: u64,
}

/// Native q1: dollars to euros. Same work as the Wasm operator: decode (with the guest
/// SDK's decoder, `weir_msgpack`), map, encode.
pub fn q1_native(input: &Batch) -> Batch {
    let mut out = Batch::with_capacity(input.len(), input.byte_len());
    for r in input.iter() {
        let mut bid: Bid<'_> = weir_msgpack::from_slice(r.value).expect("a bid");
        bid.price = bid.price * 908 / 1000;
        out.push_with(&[], r.timestamp, |buf| rmp_serde::encode::write_named(buf, &bid).expect("vec"));
    }
    out
}

/// Native q2: bids of every 123rd auction, projected to (auction, price).
pub fn q2_native(input: &Batch) -> Batch {
    let mut out = Batch::with_capacity(input.len() / 64, 64);
    for r in input.iter() {
        let bid: AuctionPrice = weir_msgpack::from_slice(r.value).expect("a bid");
        if bid.auction.is_multiple_of(123) {
            let ap = AuctionPrice { auction: bid.auction, price: bid.price };
            out.push_with(&[], r.timestamp, |buf| rmp_serde::encode::write_named(buf, &ap).expect("vec"));
        }
    }
    out
}

/// One line of the benchmark's result.
#[derive(Debug, Clone)]
pub struct BenchResult {
    /// `q1` or `q2`.
    pub query: &'static str,
    /// Records per batch.
    pub batch_size: usize,
    /// Records per second through the Wasm operator (one core).
    pub wasm: f64,
    /// Records per second natively (one core).
    pub native: f64,
}

/// `records` Nexmark bids in batches of `batch_size`, keyed by `key` when given.
pub(crate) fn bid_batches(records: usize, batch_size: usize, key: Option<KeyField>) -> Vec<Batch> {
    let config = NexmarkSourceConfig {
        event_type: "bid".into(),
        count: records as u64,
        base_time: 1_700_000_000_000,
        events_per_second: 10_000,
        key: None,
    };
    let mut g = config.generator(0, 1);
    let mut out = Vec::new();
    while (g.offset() as usize) < records {
        let mut b = Batch::with_capacity(batch_size, batch_size * 200);
        while b.len() < batch_size && (g.offset() as usize) < records {
            push_keyed_event(&mut b, &g.next().expect("endless"), key);
        }
        out.push(b);
    }
    out
}

/// Times passes until at least `min` has gone by (and two passes ran); records per second.
pub(crate) struct Timer {
    start: Instant,
    passes: u64,
    min: Duration,
}

impl Timer {
    pub(crate) fn new(min: Duration) -> Self {
        Timer { start: Instant::now(), passes: 0, min }
    }

    pub(crate) fn again(&mut self) -> bool {
        self.passes += 1;
        self.passes <= 2 || self.start.elapsed() < self.min
    }

    pub(crate) fn rate(&self, records: usize) -> f64 {
        (records as u64 * (self.passes - 1)) as f64 / self.start.elapsed().as_secs_f64()
    }
}

/// Runs the benchmark: each query at each batch size, `min` per measurement.
pub async fn run(host: &GuestHost, records: usize, min: Duration) -> anyhow::Result<Vec<BenchResult>> {
    let mut results = Vec::new();
    for (query, module, native) in [
        ("q1", "nexmark-q1", q1_native as fn(&Batch) -> Batch),
        ("q2", "nexmark-q2", q2_native as fn(&Batch) -> Batch),
    ] {
        let bytes = weir::builtin::get(module).expect("builtin module");
        let module = host.load(&format!("builtin:{module}"), bytes)?;
        for batch_size in [64usize, 1024, 8192] {
            let input = bid_batches(records, batch_size, None);
            let mut inst = OperatorInstance::new(&module, query, 0, InstanceLimits::default()).await?;
            inst.open(&Context::standalone(query, "{}", 128)).await?;
            let wasm_out: usize = {
                let mut n = 0;
                for b in &input {
                    n += inst.process(0, b).await?.len();
                }
                n
            };
            let native_out: usize = input.iter().map(|b| native(b).len()).sum();
            anyhow::ensure!(wasm_out == native_out, "{query}: wasm emitted {wasm_out}, native {native_out}");
            // The pass above warmed both up.
            let mut timer = Timer::new(min);
            while timer.again() {
                for b in &input {
                    std::hint::black_box(inst.process(0, b).await?);
                }
            }
            let wasm = timer.rate(records);
            let mut timer = Timer::new(min);
            while timer.again() {
                for b in &input {
                    std::hint::black_box(native(b));
                }
            }
            let native_rate = timer.rate(records);
            results.push(BenchResult { query, batch_size, wasm, native: native_rate });
        }
    }
    Ok(results)
}
