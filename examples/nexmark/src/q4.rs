//! q4, average price per category: each auction's winning bid (its highest bid between its
//! opening and its expiry, once the watermark reaches the expiry), then per category the
//! running average of the winning prices, in order of expiry.

use serde::{Deserialize, Serialize};
use weir_guest::{KeyedState, Output, RawKey, Record, Result, timers};

use crate::events::{Auction, Event};
use crate::time;

/// An auction of the first stage, keyed by its id.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Open {
    /// The auction, once it arrived.
    auction: Option<Auction>,
    /// The best price among its bids in range so far.
    best: Option<u64>,
    /// Bids that arrived before the auction: (date_time, price).
    early: Vec<(u64, u64)>,
}

/// What the first stage emits per closed auction, keyed by category.
#[derive(Debug, Serialize, Deserialize)]
pub struct Winning {
    auction: u64,
    category: u64,
    expires: u64,
    price: u64,
}

/// The output of q4.
#[derive(Debug, Serialize)]
struct Average {
    category: u64,
    auction: u64,
    expires: u64,
    price: u64,
    avg: u64,
    count: u64,
}

/// A category of the second stage.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Category {
    sum: u64,
    count: u64,
    /// Closed auctions not yet counted: (expires, auction, price).
    pending: Vec<(u64, u64, u64)>,
}

fn in_range(a: &Auction, date_time: u64) -> bool {
    (a.date_time..=a.expires).contains(&date_time)
}

/// First stage: an auction or a bid, keyed by the auction id.
pub fn winning(state: &mut KeyedState<RawKey, Open>, record: &Record<'_>, event: Event) -> Result<()> {
    let key = record.key_bytes();
    match event {
        Event::Auction(a) => {
            let open = state.get_or_insert_with_raw(key, Open::default);
            for (t, price) in std::mem::take(&mut open.early) {
                if in_range(&a, t) {
                    open.best = open.best.max(Some(price));
                }
            }
            open.auction = Some(a);
            timers::register_raw(key, time(a.expires));
        }
        Event::Bid(b) => {
            let open = state.get_or_insert_with_raw(key, Open::default);
            match &open.auction {
                Some(a) if in_range(a, b.date_time) => open.best = open.best.max(Some(b.price)),
                Some(_) => {}
                None => {
                    // Kept until its auction arrives, or until the watermark passes it (one
                    // timer per key, at the earliest early bid).
                    if open.early.iter().all(|(t, _)| *t > b.date_time) {
                        timers::register_raw(key, record.timestamp());
                    }
                    open.early.push((b.date_time, b.price));
                }
            }
        }
        Event::Person(_) => {}
    }
    Ok(())
}

/// First stage's timer: the auction closes (its winning bid goes out, keyed by category), or
/// early bids at or before the timer are dropped: an auction that has not arrived by the time
/// the watermark passes a bid opens after it, so the bid is not in its range. (Nexmark bids on
/// auctions up to a few ids ahead, and another source subtask's stream may lag.)
pub fn close(
    state: &mut KeyedState<RawKey, Open>,
    key: &[u8],
    timestamp: i64,
    out: &mut Output,
) -> Result<()> {
    let Some(open) = state.get_raw(key) else { return Ok(()) };
    match open.auction {
        Some(a) if time(a.expires) <= timestamp => {
            if let Some(price) = open.best {
                let w = Winning { auction: a.id, category: a.category, expires: a.expires, price };
                out.emit(&a.category, &w, time(a.expires))?;
            }
            state.remove_raw(key);
        }
        Some(_) => {}
        None => {
            let open = state.get_mut_raw(key).expect("present");
            open.early.retain(|(t, _)| time(*t) > timestamp);
            match open.early.iter().map(|(t, _)| *t).min() {
                Some(next) => timers::register_raw(key, time(next)),
                None => {
                    state.remove_raw(key);
                }
            }
        }
    }
    Ok(())
}

/// Second stage: a closed auction, keyed by category, waits for the watermark to pass its
/// expiry so that a category's auctions are counted in (expiry, id) order.
pub fn closed(state: &mut KeyedState<RawKey, Category>, record: &Record<'_>) -> Result<()> {
    let w: Winning = record.value()?;
    let key = record.key_bytes();
    let category = state.get_or_insert_with_raw(key, Category::default);
    if category.pending.iter().all(|p| p.0 > w.expires) {
        timers::register_raw(key, time(w.expires));
    }
    category.pending.push((w.expires, w.auction, w.price));
    Ok(())
}

/// Second stage's timer: counts the category's closed auctions up to `timestamp`.
pub fn average(
    state: &mut KeyedState<RawKey, Category>,
    key: &[u8],
    timestamp: i64,
    out: &mut Output,
) -> Result<()> {
    let Some(category) = state.get_raw(key) else { return Ok(()) };
    if category.pending.iter().all(|p| time(p.0) > timestamp) {
        return Ok(());
    }
    let id: u64 = weir_guest::from_msgpack(key)?;
    let category = state.get_mut_raw(key).expect("present");
    category.pending.sort_unstable();
    let due = category.pending.iter().take_while(|p| time(p.0) <= timestamp).count();
    for (expires, auction, price) in category.pending.drain(..due).collect::<Vec<_>>() {
        category.sum += price;
        category.count += 1;
        let row = Average {
            category: id,
            auction,
            expires,
            price,
            avg: category.sum / category.count,
            count: category.count,
        };
        out.emit_with_key_bytes(key, &row, time(expires))?;
    }
    if let Some(next) = category.pending.first() {
        timers::register_raw(key, time(next.0));
    }
    Ok(())
}
