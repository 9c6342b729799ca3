//! Nexmark query 2 (selection): the auction and price of the bids on every 123rd auction.
//!
//! Input values are Nexmark bids as MessagePack maps with named fields; output values are
//! `{ auction, price }` maps. Records have no key.

use serde::{Deserialize, Serialize};

/// The fields of a Nexmark bid that query 2 reads; the decoder skips the others.
#[derive(Debug, Deserialize)]
pub struct Bid {
    /// The auction this bid is for.
    pub auction: u64,
    /// The price of the bid.
    pub price: u64,
}

/// What query 2 emits for a selected bid.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuctionPrice {
    /// The auction.
    pub auction: u64,
    /// The price of the bid.
    pub price: u64,
}

/// Query 2: bids on auctions whose id is a multiple of 123, projected to auction and price.
#[weir_guest::filter_map(name = "nexmark-q2")]
fn q2(bid: Bid) -> Option<AuctionPrice> {
    bid.auction.is_multiple_of(123).then_some(AuctionPrice { auction: bid.auction, price: bid.price })
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
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

    #[test]
    fn selects_and_projects() {
        let bid = |auction| FullBid {
            auction,
            bidder: 1,
            price: 77,
            channel: "c",
            url: "u",
            date_time: 0,
            extra: "x",
        };
        let mut harness = Harness::<q2>::new();
        let out = harness
            .process(&[
                TestRecord::unkeyed(&bid(246), 1),
                TestRecord::unkeyed(&bid(247), 2),
                TestRecord::unkeyed(&bid(0), 3),
            ])
            .unwrap();
        assert_eq!(
            out,
            [
                TestRecord::unkeyed(&AuctionPrice { auction: 246, price: 77 }, 1),
                TestRecord::unkeyed(&AuctionPrice { auction: 0, price: 77 }, 3)
            ]
        );
    }
}
