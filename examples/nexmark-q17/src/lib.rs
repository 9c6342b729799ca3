//! Nexmark query 17 (auction statistics), grouped by auction: for every bid, the running
//! statistics of its auction — bids in all and per price rank, lowest, highest, average and
//! total price. A keyed, stateful operator; the same query exists in Python, JavaScript and C
//! (`examples/{python,js,c}`), with the same state layout and output.
//!
//! Flink's Nexmark Q17 groups by auction and day; Weir's Nexmark source runs a few minutes of
//! event time, so the day is left out and the key is the auction alone.
//!
//! - Input: bids keyed by their auction id (MessagePack unsigned int; the Nexmark source does
//!   this with `"key": "auction"`), value = the bid as a MessagePack map with named fields.
//! - State `stats`: per key, `[total_bids, rank1_bids, rank2_bids, rank3_bids, min_price,
//!   max_price, sum_price]` as a MessagePack array. Ranks: price < 10 000, below 1 000 000,
//!   and the rest. The sum saturates at `u64::MAX`.
//! - Output: for every bid, one record with the bid's key and timestamp whose value is the
//!   auction's [`AuctionStats`] after that bid.

use serde::{Deserialize, Serialize};
use weir_guest::{Error, KeyedState, Operator, Output, Record, Result, States};

/// The fields of a bid that the query reads (the others are skipped).
#[derive(Debug, Deserialize)]
struct Bid {
    auction: u64,
    price: u64,
}

/// What the query emits for each bid: its auction's statistics so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuctionStats {
    /// The auction.
    pub auction: u64,
    /// Bids on it.
    pub total_bids: u64,
    /// Bids below 10 000.
    pub rank1_bids: u64,
    /// Bids from 10 000 to below 1 000 000.
    pub rank2_bids: u64,
    /// Bids of 1 000 000 and above.
    pub rank3_bids: u64,
    /// The lowest price.
    pub min_price: u64,
    /// The highest price.
    pub max_price: u64,
    /// `sum_price / total_bids`, rounded down.
    pub avg_price: u64,
    /// The sum of the prices (saturating).
    pub sum_price: u64,
}

/// The state of one auction: `[total, rank1, rank2, rank3, min, max, sum]`.
type Stats = [u64; 7];

/// The query.
#[derive(Default, States)]
pub struct Q17 {
    stats: KeyedState<u64, Stats>,
}

impl Operator for Q17 {
    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        let bid: Bid = record.value()?;
        if !record.has_key() {
            return Err(Error::invalid_input(
                "q17 expects bids keyed by auction (source config \"key\": \"auction\")",
            ));
        }
        let s = self.stats.get_or_insert_with_raw(record.key_bytes(), || [0, 0, 0, 0, u64::MAX, 0, 0]);
        s[0] += 1;
        s[rank(bid.price)] += 1;
        s[4] = s[4].min(bid.price);
        s[5] = s[5].max(bid.price);
        s[6] = s[6].saturating_add(bid.price);
        let row = AuctionStats {
            auction: bid.auction,
            total_bids: s[0],
            rank1_bids: s[1],
            rank2_bids: s[2],
            rank3_bids: s[3],
            min_price: s[4],
            max_price: s[5],
            avg_price: s[6] / s[0],
            sum_price: s[6],
        };
        out.emit_with_key_bytes(record.key_bytes(), &row, record.timestamp())
    }
}

/// The index in [`Stats`] of the counter of a price's rank.
fn rank(price: u64) -> usize {
    match price {
        0..10_000 => 1,
        10_000..1_000_000 => 2,
        _ => 3,
    }
}

weir_guest::export_operator!(Q17, name = "nexmark-q17");

#[cfg(test)]
mod tests {
    use weir_guest::testing::{Harness, TestRecord};

    use super::*;

    #[derive(Serialize)]
    struct FullBid<'a> {
        auction: u64,
        bidder: u64,
        price: u64,
        channel: &'a str,
        url: &'a str,
        date_time: u64,
        extra: &'a str,
    }

    fn bid(auction: u64, price: u64, ts: i64) -> TestRecord {
        let bid =
            FullBid { auction, bidder: 9, price, channel: "web", url: "u", date_time: ts as u64, extra: "" };
        TestRecord::keyed(&auction, &bid, ts)
    }

    fn stats(out: &[TestRecord]) -> Vec<AuctionStats> {
        out.iter().map(|r| r.decode_value()).collect()
    }

    #[test]
    fn running_statistics_per_auction() {
        let mut h = Harness::<Q17>::new();
        let out = h.process(&[bid(1, 500, 10), bid(2, 20_000, 11), bid(1, 2_000_000, 12)]).unwrap();
        assert_eq!(out[0].key, out[2].key, "the output keeps the auction key");
        assert_eq!(out[2].timestamp, 12);
        let rows = stats(&out);
        assert_eq!(
            rows[0],
            AuctionStats {
                auction: 1,
                total_bids: 1,
                rank1_bids: 1,
                rank2_bids: 0,
                rank3_bids: 0,
                min_price: 500,
                max_price: 500,
                avg_price: 500,
                sum_price: 500
            }
        );
        assert_eq!((rows[1].auction, rows[1].rank2_bids, rows[1].total_bids), (2, 1, 1));
        assert_eq!(
            rows[2],
            AuctionStats {
                auction: 1,
                total_bids: 2,
                rank1_bids: 1,
                rank2_bids: 0,
                rank3_bids: 1,
                min_price: 500,
                max_price: 2_000_000,
                avg_price: 1_000_250,
                sum_price: 2_000_500
            }
        );
    }

    #[test]
    fn the_sum_saturates_and_state_survives_a_restore() {
        let mut h = Harness::<Q17>::new();
        h.process(&[bid(7, u64::MAX, 1)]).unwrap();
        let delta = h.snapshot(false).unwrap();
        let mut restored = Harness::<Q17>::new();
        restored.restore(&delta).unwrap();
        let out = restored.process(&[bid(7, 1, 2)]).unwrap();
        let row = &stats(&out)[0];
        assert_eq!((row.total_bids, row.sum_price, row.min_price), (2, u64::MAX, 1));
    }

    #[test]
    fn an_unkeyed_bid_is_invalid_input() {
        let mut h = Harness::<Q17>::new();
        let bid = FullBid { auction: 1, bidder: 2, price: 3, channel: "", url: "", date_time: 0, extra: "" };
        let e = h.process(&[TestRecord::unkeyed(&bid, 0)]).unwrap_err();
        assert!(e.message().contains("keyed by auction"), "{e:?}");
    }
}
