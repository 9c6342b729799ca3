//! Native references for Nexmark q3, q4, q5, q7, q8 and q11, over the events of a
//! [`NexmarkSourceConfig`] ([`events`]). Each returns its rows sorted (derived `Ord`), so an
//! operator's output, decoded with [`rows`], compares record for record.
//!
//! Semantics (all times are event times in ms, `i64`; windows are `[start, end)`, aligned to
//! epoch 0, `window_end` exclusive):
//! - **q3** (local item suggestion): every pair auction A ⋈ person P with `A.seller = P.id`,
//!   `A.category = 10` and `P.state` one of OR, ID, CA (ASCII case-insensitive: the `nexmark`
//!   crate generates lowercase states); row (P.name, P.city, P.state, A.id). A regular
//!   unbounded join: every matching pair exactly once.
//! - **q4** (average price per category): an auction's winning price is the highest price of
//!   its bids B (`B.auction = A.id`, `A.date_time ≤ B.date_time ≤ A.expires`); auctions
//!   without such a bid are skipped. Per category, the closed auctions in (`expires`, `id`)
//!   order give rows (category, auction, expires, price, avg, count): the running average of
//!   the winning prices so far (integer division sum / count) and their count.
//! - **q5** (hot items): HOP windows of 10 s sliding by 2 s over bids; bids per auction per
//!   window; a row (window_start, window_end, auction, count) for every auction whose count
//!   is that window's highest.
//! - **q7** (highest bid): TUMBLE 10 s over bids; a row (window_start, window_end, auction,
//!   bidder, price, date_time) for every bid of the window at the window's highest price.
//! - **q8** (monitor new users): TUMBLE 10 s; a row (window_start, id, name) for each person
//!   registered (`P.date_time`) in a window in which an auction with `seller = P.id` was
//!   created (`A.date_time` in the same window); one row per distinct (window, id, name).
//! - **q11** (user sessions): session windows per bidder with a 10 s gap over bid times: a
//!   bid at `t` belongs to `[t, t + gap)`, and overlapping ones merge — a bid extends a
//!   session when it is less than `gap` after the session's last bid (exactly `gap` after it
//!   starts a new one, so a session fired at watermark `end − 1` can never grow). Row (bidder,
//!   session_start = first bid, session_end = last bid + gap, count).
//!
//! No window is empty: a window or session without events has no rows.

use std::collections::{BTreeMap, BTreeSet};

use nexmark::event::{Auction, Bid, Event, Person};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use weir::connectors::NexmarkSourceConfig;

/// Size of the q5, q7 and q8 windows.
pub const WINDOW_MS: i64 = 10_000;
/// Slide of the q5 windows.
pub const HOP_SLIDE_MS: i64 = 2_000;
/// Gap of the q11 sessions.
pub const SESSION_GAP_MS: i64 = 10_000;
/// The q3 category.
pub const Q3_CATEGORY: u64 = 10;
/// The q3 states.
pub const Q3_STATES: [&str; 3] = ["OR", "ID", "CA"];

/// A q3 row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Q3Row {
    pub name: String,
    pub city: String,
    pub state: String,
    pub id: u64,
}

/// A q4 row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Q4Row {
    pub category: u64,
    pub auction: u64,
    pub expires: i64,
    pub price: u64,
    pub avg: u64,
    pub count: u64,
}

/// A q5 row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Q5Row {
    pub window_start: i64,
    pub window_end: i64,
    pub auction: u64,
    pub count: u64,
}

/// A q7 row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Q7Row {
    pub window_start: i64,
    pub window_end: i64,
    pub auction: u64,
    pub bidder: u64,
    pub price: u64,
    pub date_time: i64,
}

/// A q8 row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Q8Row {
    pub window_start: i64,
    pub id: u64,
    pub name: String,
}

/// A q11 row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Q11Row {
    pub bidder: u64,
    pub session_start: i64,
    pub session_end: i64,
    pub count: u64,
}

/// The events subtask `index` of `parallelism` of a `config` source emits, in order.
pub fn subtask_events(config: &NexmarkSourceConfig, index: u32, parallelism: u32) -> Vec<Event> {
    let mut generator = config.generator(index, parallelism);
    let mut out = Vec::new();
    while generator.offset() < config.count {
        out.push(generator.next().expect("the generator is endless"));
    }
    out
}

/// Every event of a `config` source: the union over its subtasks at any parallelism, in
/// generator order, which is event-time order.
pub fn events(config: &NexmarkSourceConfig) -> Vec<Event> {
    let events = subtask_events(config, 0, 1);
    assert!(events.is_sorted_by_key(Event::timestamp), "generator order is event-time order");
    events
}

/// The `value`s of a file sink's lines, decoded and sorted.
pub fn rows<T: DeserializeOwned + Ord>(lines: &[serde_json::Value]) -> Vec<T> {
    let mut rows: Vec<T> = lines
        .iter()
        .map(|l| serde_json::from_value(l["value"].clone()).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    rows.sort();
    rows
}

/// Start of the tumbling window of `size` ms holding `t`.
pub fn tumble_start(t: i64, size: i64) -> i64 {
    t.div_euclid(size) * size
}

/// Starts of the hopping windows (`size` ms, every `slide` ms) holding `t`, ascending.
pub fn hop_starts(t: i64, size: i64, slide: i64) -> impl Iterator<Item = i64> {
    let last = tumble_start(t, slide);
    let first = last - (size - 1).div_euclid(slide) * slide;
    (first..=last).step_by(slide as usize).filter(move |s| t < s + size)
}

fn time(t: u64) -> i64 {
    i64::try_from(t).expect("event time fits in an i64")
}

fn persons(events: &[Event]) -> impl Iterator<Item = &Person> {
    events.iter().filter_map(|e| if let Event::Person(p) = e { Some(p) } else { None })
}

fn auctions(events: &[Event]) -> impl Iterator<Item = &Auction> {
    events.iter().filter_map(|e| if let Event::Auction(a) = e { Some(a) } else { None })
}

fn bids(events: &[Event]) -> impl Iterator<Item = &Bid> {
    events.iter().filter_map(|e| if let Event::Bid(b) = e { Some(b) } else { None })
}

/// q3: local item suggestion.
pub fn q3(events: &[Event]) -> Vec<Q3Row> {
    let mut by_id: BTreeMap<usize, Vec<&Person>> = BTreeMap::new();
    for p in persons(events).filter(|p| Q3_STATES.iter().any(|s| s.eq_ignore_ascii_case(&p.state))) {
        by_id.entry(p.id).or_default().push(p);
    }
    let mut rows = Vec::new();
    for a in auctions(events).filter(|a| a.category as u64 == Q3_CATEGORY) {
        for p in by_id.get(&a.seller).into_iter().flatten() {
            rows.push(Q3Row {
                name: p.name.clone(),
                city: p.city.clone(),
                state: p.state.clone(),
                id: a.id as u64,
            });
        }
    }
    rows.sort();
    rows
}

/// q4: average winning price per category.
pub fn q4(events: &[Event]) -> Vec<Q4Row> {
    let mut bids_of: BTreeMap<usize, Vec<&Bid>> = BTreeMap::new();
    for b in bids(events) {
        bids_of.entry(b.auction).or_default().push(b);
    }
    // category → (expires, id, winning price) of its closed auctions.
    let mut closed: BTreeMap<u64, Vec<(i64, u64, u64)>> = BTreeMap::new();
    for a in auctions(events) {
        let winning = bids_of
            .get(&a.id)
            .into_iter()
            .flatten()
            .filter(|b| a.date_time <= b.date_time && b.date_time <= a.expires)
            .map(|b| b.price as u64)
            .max();
        if let Some(price) = winning {
            closed.entry(a.category as u64).or_default().push((time(a.expires), a.id as u64, price));
        }
    }
    let mut rows = Vec::new();
    for (category, mut auctions) in closed {
        auctions.sort();
        let (mut sum, mut count) = (0u128, 0u64);
        for (expires, auction, price) in auctions {
            sum += u128::from(price);
            count += 1;
            let avg = u64::try_from(sum / u128::from(count)).expect("an average of u64s fits");
            rows.push(Q4Row { category, auction, expires, price, avg, count });
        }
    }
    rows.sort();
    rows
}

/// q5: hot items.
pub fn q5(events: &[Event]) -> Vec<Q5Row> {
    let mut counts: BTreeMap<i64, BTreeMap<u64, u64>> = BTreeMap::new();
    for b in bids(events) {
        for start in hop_starts(time(b.date_time), WINDOW_MS, HOP_SLIDE_MS) {
            *counts.entry(start).or_default().entry(b.auction as u64).or_default() += 1;
        }
    }
    let mut rows = Vec::new();
    for (window_start, per_auction) in counts {
        let max = per_auction.values().copied().max().expect("a window with a bid");
        for (auction, count) in per_auction.into_iter().filter(|(_, c)| *c == max) {
            rows.push(Q5Row { window_start, window_end: window_start + WINDOW_MS, auction, count });
        }
    }
    rows.sort();
    rows
}

/// q7: highest bid.
pub fn q7(events: &[Event]) -> Vec<Q7Row> {
    let mut windows: BTreeMap<i64, Vec<&Bid>> = BTreeMap::new();
    for b in bids(events) {
        windows.entry(tumble_start(time(b.date_time), WINDOW_MS)).or_default().push(b);
    }
    let mut rows = Vec::new();
    for (window_start, bids) in windows {
        let max = bids.iter().map(|b| b.price).max().expect("a window with a bid");
        for b in bids.into_iter().filter(|b| b.price == max) {
            rows.push(Q7Row {
                window_start,
                window_end: window_start + WINDOW_MS,
                auction: b.auction as u64,
                bidder: b.bidder as u64,
                price: b.price as u64,
                date_time: time(b.date_time),
            });
        }
    }
    rows.sort();
    rows
}

/// q8: monitor new users.
pub fn q8(events: &[Event]) -> Vec<Q8Row> {
    let sellers: BTreeSet<(i64, usize)> =
        auctions(events).map(|a| (tumble_start(time(a.date_time), WINDOW_MS), a.seller)).collect();
    let rows: BTreeSet<Q8Row> = persons(events)
        .map(|p| (tumble_start(time(p.date_time), WINDOW_MS), p))
        .filter(|(start, p)| sellers.contains(&(*start, p.id)))
        .map(|(window_start, p)| Q8Row { window_start, id: p.id as u64, name: p.name.clone() })
        .collect();
    rows.into_iter().collect()
}

/// q11: user sessions.
pub fn q11(events: &[Event]) -> Vec<Q11Row> {
    let mut times: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for b in bids(events) {
        times.entry(b.bidder as u64).or_default().push(time(b.date_time));
    }
    let mut rows = Vec::new();
    for (bidder, mut times) in times {
        times.sort_unstable();
        let mut session: Option<(i64, i64, u64)> = None; // (start, last bid, count)
        for t in times {
            session = match session {
                Some((start, last, count)) if t - last < SESSION_GAP_MS => Some((start, t, count + 1)),
                Some((start, last, count)) => {
                    let session_end = last + SESSION_GAP_MS;
                    rows.push(Q11Row { bidder, session_start: start, session_end, count });
                    Some((t, t, 1))
                }
                None => Some((t, t, 1)),
            };
        }
        if let Some((start, last, count)) = session {
            rows.push(Q11Row { bidder, session_start: start, session_end: last + SESSION_GAP_MS, count });
        }
    }
    rows.sort();
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: usize, name: &str, state: &str, t: u64) -> Event {
        Event::Person(Person {
            id,
            name: name.into(),
            email_address: String::new(),
            credit_card: String::new(),
            city: format!("city {id}"),
            state: state.into(),
            date_time: t,
            extra: String::new(),
        })
    }

    fn auction(id: usize, seller: usize, category: usize, t: u64, expires: u64) -> Event {
        Event::Auction(Auction {
            id,
            item_name: String::new(),
            description: String::new(),
            initial_bid: 1,
            reserve: 2,
            date_time: t,
            expires,
            seller,
            category,
            extra: String::new(),
        })
    }

    fn bid(auction: usize, bidder: usize, price: usize, t: u64) -> Event {
        Event::Bid(Bid {
            auction,
            bidder,
            price,
            channel: String::new(),
            url: String::new(),
            date_time: t,
            extra: String::new(),
        })
    }

    #[test]
    fn q3_joins_every_matching_pair_once_in_any_order() {
        let events = [
            auction(100, 1, 10, 0, 9), // before its person: the join is unbounded
            person(1, "ann", "or", 1),
            person(2, "bob", "CA", 2),
            person(3, "cid", "wa", 3),
            auction(101, 1, 11, 4, 9), // another category
            auction(102, 3, 10, 5, 9), // a seller in another state
            auction(103, 2, 10, 6, 9), // uppercase state
            auction(104, 9, 10, 7, 9), // no such person
            auction(105, 1, 10, 8, 9), // a second auction of ann's
        ];
        let row = |name: &str, state: &str, id| Q3Row {
            name: name.into(),
            city: format!("city {}", if name == "ann" { 1 } else { 2 }),
            state: state.into(),
            id,
        };
        assert_eq!(q3(&events), [row("ann", "or", 100), row("ann", "or", 105), row("bob", "CA", 103)]);
        assert!(q3(&events[..1]).is_empty());
    }

    #[test]
    fn q4_takes_bids_within_the_auction_inclusive_and_averages_in_expiry_order() {
        let events = [
            auction(1, 7, 10, 1_000, 5_000),
            bid(1, 1, 50, 999),    // before the auction
            bid(1, 1, 70, 1_000),  // at its start
            bid(1, 1, 90, 5_000),  // at its expiry
            bid(1, 1, 200, 5_001), // after it
            auction(2, 7, 10, 2_000, 3_000),
            bid(2, 1, 40, 2_500),
            auction(3, 7, 10, 0, 3_000), // expires with 2: id order
            bid(3, 1, 11, 100),
            bid(3, 1, 9, 200),
            auction(4, 7, 11, 0, 100), // no bid: skipped
            auction(5, 7, 11, 0, 100),
            bid(5, 1, 1_000, 101), // only after expiry: skipped
            auction(6, 7, 11, 0, 100),
            bid(6, 1, 7, 50),
            bid(99, 1, 1, 50), // no such auction
        ];
        let row = |category, auction, expires, price, avg, count| Q4Row {
            category,
            auction,
            expires,
            price,
            avg,
            count,
        };
        assert_eq!(
            q4(&events),
            [
                row(10, 1, 5_000, 90, 47, 3), // (40 + 11 + 90) / 3
                row(10, 2, 3_000, 40, 40, 1),
                row(10, 3, 3_000, 11, 25, 2), // (40 + 11) / 2
                row(11, 6, 100, 7, 7, 1),
            ]
        );
    }

    #[test]
    fn hop_windows_hold_a_time_from_their_start_to_before_their_end() {
        assert_eq!(hop_starts(0, 10_000, 2_000).collect::<Vec<_>>(), [-8_000, -6_000, -4_000, -2_000, 0]);
        assert_eq!(hop_starts(9_999, 10_000, 2_000).collect::<Vec<_>>(), [0, 2_000, 4_000, 6_000, 8_000]);
        assert_eq!(
            hop_starts(10_000, 10_000, 2_000).collect::<Vec<_>>(),
            [2_000, 4_000, 6_000, 8_000, 10_000]
        );
        assert_eq!(hop_starts(-1, 10_000, 3_000).collect::<Vec<_>>(), [-9_000, -6_000, -3_000]);
        assert_eq!((tumble_start(9_999, 10_000), tumble_start(10_000, 10_000)), (0, 10_000));
        assert_eq!(tumble_start(-1, 10_000), -10_000);
    }

    #[test]
    fn q5_keeps_every_auction_at_the_windows_highest_count() {
        let events = [
            bid(1, 1, 1, 0),
            bid(3, 1, 1, 1_999),
            bid(1, 1, 1, 9_999),
            bid(2, 1, 1, 10_000),
            bid(2, 1, 1, 10_001),
        ];
        let row = |window_start, auction, count| Q5Row {
            window_start,
            window_end: window_start + 10_000,
            auction,
            count,
        };
        let mut expected = Vec::new();
        for start in [-8_000, -6_000, -4_000, -2_000] {
            expected.extend([row(start, 1, 1), row(start, 3, 1)]); // a tie
        }
        expected.push(row(0, 1, 2));
        for start in [2_000, 4_000, 6_000, 8_000, 10_000] {
            expected.push(row(start, 2, 2));
        }
        assert_eq!(q5(&events), expected);
        assert!(q5(&[person(1, "a", "or", 0)]).is_empty());
    }

    #[test]
    fn q7_keeps_every_bid_at_the_windows_highest_price() {
        let events = [
            bid(1, 11, 5, 0),
            bid(2, 12, 9, 9_999),
            bid(3, 13, 9, 5_000),
            bid(4, 14, 1, 10_000),
            bid(5, 15, 3, 30_000), // the window of 20 000 is empty
        ];
        let row = |window_start, auction, bidder, price, date_time| Q7Row {
            window_start,
            window_end: window_start + 10_000,
            auction,
            bidder,
            price,
            date_time,
        };
        assert_eq!(
            q7(&events),
            [
                row(0, 2, 12, 9, 9_999),
                row(0, 3, 13, 9, 5_000),
                row(10_000, 4, 14, 1, 10_000),
                row(30_000, 5, 15, 3, 30_000)
            ]
        );
    }

    #[test]
    fn q8_needs_the_person_and_an_auction_of_theirs_in_the_same_window() {
        let events = [
            auction(50, 1, 10, 0, 1),
            person(1, "ann", "or", 9_999),
            auction(51, 2, 10, 9_999, 1),
            person(2, "bob", "or", 10_000), // the auction was in the window before
            person(3, "cid", "or", 20_000),
            auction(52, 3, 10, 25_000, 1),
            auction(53, 3, 10, 29_999, 1),  // a second auction: still one row
            person(4, "dan", "or", 20_000), // no auction
            auction(54, 5, 10, 20_000, 1),  // no person
        ];
        let row = |window_start, id, name: &str| Q8Row { window_start, id, name: name.into() };
        assert_eq!(q8(&events), [row(0, 1, "ann"), row(20_000, 3, "cid")]);
    }

    #[test]
    fn q11_sessions_merge_while_bids_are_less_than_the_gap_apart() {
        let events = [
            bid(1, 1, 1, 0),
            bid(1, 1, 1, 9_999),
            bid(1, 1, 1, 19_998),
            bid(1, 1, 1, 29_998), // exactly the gap after the last bid: a new session
            bid(1, 2, 1, 50_000), // out of order
            bid(1, 2, 1, 30_000),
            bid(1, 2, 1, 41_000),
            bid(1, 3, 1, 0),
            bid(1, 3, 1, 15_000),
            bid(1, 3, 1, 8_000), // bridges the two sessions of bidder 3
        ];
        let row =
            |bidder, session_start, session_end, count| Q11Row { bidder, session_start, session_end, count };
        assert_eq!(
            q11(&events),
            [
                row(1, 0, 29_998, 3),
                row(1, 29_998, 39_998, 1),
                row(2, 30_000, 40_000, 1),
                row(2, 41_000, 60_000, 2),
                row(3, 0, 25_000, 3),
            ]
        );
        assert!(q11(&[]).is_empty());
    }

    #[test]
    fn events_are_the_union_of_the_subtasks_in_event_time_order() {
        for event_type in ["mixed", "auction"] {
            let config: NexmarkSourceConfig =
                serde_json::from_value(serde_json::json!({ "event_type": event_type, "count": 300 }))
                    .unwrap();
            let all = events(&config);
            assert_eq!(all.len(), 300);
            let mut parts: Vec<_> = (0..4).map(|i| subtask_events(&config, i, 4).into_iter()).collect();
            let merged: Vec<Event> = (0..300).map(|n| parts[n % 4].next().unwrap()).collect();
            assert_eq!(merged, all, "{event_type}");
        }
    }
}
