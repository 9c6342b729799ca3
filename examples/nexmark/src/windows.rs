//! The aggregate functions of the windowed queries.

use serde::{Deserialize, Serialize};
use weir_guest::window::AggregateFunction;

use crate::events::Bid;

/// Counts records (q5's first stage, q11).
#[derive(Default)]
pub struct Count;

impl AggregateFunction for Count {
    type Input = ();
    type Acc = u64;
    type Output = u64;
    fn create(&self) -> u64 {
        0
    }
    fn add(&self, acc: &mut u64, _: &()) {
        *acc += 1;
    }
    fn merge(&self, acc: &mut u64, other: u64) {
        *acc += other;
    }
    fn result(&self, acc: u64) -> u64 {
        acc
    }
}

/// q5's second stage: the auctions with the highest count of one sliding window.
#[derive(Default)]
pub struct Hot;

/// The auctions with the highest count of one sliding window `[start, end)`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HotAuctions {
    /// The sliding window.
    pub start: i64,
    /// Its end.
    pub end: i64,
    /// The highest count.
    pub count: u64,
    /// The auctions with it, in arrival order.
    pub auctions: Vec<u64>,
}

impl AggregateFunction for Hot {
    /// (auction, count, window start, window end)
    type Input = (u64, u64, i64, i64);
    type Acc = HotAuctions;
    type Output = HotAuctions;
    fn create(&self) -> HotAuctions {
        HotAuctions::default()
    }
    fn add(&self, acc: &mut HotAuctions, &(auction, count, start, end): &(u64, u64, i64, i64)) {
        (acc.start, acc.end) = (start, end);
        if count > acc.count {
            acc.count = count;
            acc.auctions.clear();
        }
        if count == acc.count {
            acc.auctions.push(auction);
        }
    }
    fn merge(&self, acc: &mut HotAuctions, other: HotAuctions) {
        for auction in other.auctions {
            self.add(acc, &(auction, other.count, other.start, other.end));
        }
    }
    fn result(&self, mut acc: HotAuctions) -> HotAuctions {
        acc.auctions.sort_unstable();
        acc
    }
}

/// q7: the highest price of a window and the bids at it.
#[derive(Default)]
pub struct Highest;

impl AggregateFunction for Highest {
    type Input = [Bid];
    type Acc = Vec<Bid>;
    type Output = Vec<Bid>;
    fn create(&self) -> Vec<Bid> {
        Vec::new()
    }
    fn add(&self, acc: &mut Vec<Bid>, bids: &[Bid]) {
        for b in bids {
            match acc.first().map(|top| top.price) {
                Some(top) if b.price < top => {}
                Some(top) if b.price == top => acc.push(*b),
                _ => {
                    acc.clear();
                    acc.push(*b);
                }
            }
        }
    }
    fn merge(&self, acc: &mut Vec<Bid>, other: Vec<Bid>) {
        self.add(acc, &other);
    }
    fn result(&self, acc: Vec<Bid>) -> Vec<Bid> {
        acc
    }
}

/// What q8 learns of a person in a window.
#[derive(Debug, Clone)]
pub enum NewUserInput {
    /// The person registered, with this name.
    Registered(String),
    /// The person created an auction.
    Sold,
}

/// q8: whether a person both registered and sold in a window.
#[derive(Default)]
pub struct NewUser;

impl AggregateFunction for NewUser {
    type Input = NewUserInput;
    /// (name once registered, sold something)
    type Acc = (Option<String>, bool);
    /// The name, when the person registered and sold.
    type Output = Option<String>;
    fn create(&self) -> (Option<String>, bool) {
        (None, false)
    }
    fn add(&self, acc: &mut (Option<String>, bool), input: &NewUserInput) {
        match input {
            NewUserInput::Registered(name) => acc.0 = Some(name.clone()),
            NewUserInput::Sold => acc.1 = true,
        }
    }
    fn merge(&self, acc: &mut (Option<String>, bool), other: (Option<String>, bool)) {
        if other.0.is_some() {
            acc.0 = other.0;
        }
        acc.1 |= other.1;
    }
    fn result(&self, acc: (Option<String>, bool)) -> Option<String> {
        acc.0.filter(|_| acc.1)
    }
}
