//! Nexmark query 1 (currency conversion): every bid with its price converted from dollars to
//! euros (`price * 908 / 1000`, integer).
//!
//! Input and output values are bids as MessagePack maps with named fields, the encoding of the
//! `nexmark` crate's `Bid` through serde; records have no key.

use serde::{Deserialize, Serialize};

/// A Nexmark bid. The strings borrow from the input batch, so decoding allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bid<'a> {
    /// The auction this bid is for.
    pub auction: u64,
    /// The person who placed the bid.
    pub bidder: u64,
    /// The price, in dollars on input and in euros on output.
    pub price: u64,
    /// The channel of the bid.
    pub channel: &'a str,
    /// The URL of the bid.
    pub url: &'a str,
    /// Event time of the bid (milliseconds).
    pub date_time: u64,
    /// Padding.
    pub extra: &'a str,
}

/// Query 1: the bid with its price in euros.
#[weir_guest::map(name = "nexmark-q1")]
fn q1(bid: Bid<'_>) -> Bid<'_> {
    Bid { price: dollars_to_euros(bid.price), ..bid }
}

fn dollars_to_euros(dollars: u64) -> u64 {
    match dollars.checked_mul(908) {
        Some(scaled) => scaled / 1000,
        // A huge price: compute in u128 (the result is smaller than `dollars`).
        None => (u128::from(dollars) * 908 / 1000) as u64,
    }
}

#[cfg(test)]
mod tests {
    use weir_guest::testing::{Harness, TestRecord};

    use super::*;

    #[test]
    fn converts_prices_and_keeps_everything_else() {
        let bid =
            Bid { auction: 1, bidder: 2, price: 1000, channel: "web", url: "u", date_time: 3, extra: "" };
        let mut harness = Harness::<q1>::new();
        let out = harness.process(&[TestRecord::unkeyed(&bid, 42)]).unwrap();
        assert_eq!(out, [TestRecord::unkeyed(&Bid { price: 908, ..bid.clone() }, 42)]);
        assert_eq!(dollars_to_euros(u64::MAX), 16_749_643_618_928_272_866);
    }
}
