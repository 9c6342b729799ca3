//! Nexmark queries 3, 4, 5, 7, 8 and 11 as Weir operators built on the guest SDK's windows
//! (`weir_guest::window`) and joins (`weir_guest::join`). One component, `builtin:nexmark`;
//! the config's `stage` says which query (stage) an operator node runs — the multi-stage
//! queries are two nodes. Jobs: `examples/nexmark/q*.job.json`.
//!
//! Semantics (windows are `[start, end)`, aligned to the epoch; event time is the events'
//! `date_time`):
//! - **q3** (local item suggestion, `q3`): auctions of category 10 joined with persons from
//!   OR, ID or CA (any case) on `seller = id` — a regular join, every pair once. Input: auctions keyed by
//!   seller and persons keyed by id (two inputs: 0 auctions, 1 persons), or the mixed stream
//!   keyed that way. Output `{name, city, state, id}` (`id`: the auction's).
//! - **q4** (average price per category): `q4-winning` keyed by auction id (auctions keyed by
//!   id, bids by auction) finds each auction's highest bid with `date_time ≤ bid ≤ expires`
//!   when the watermark reaches `expires`; `q4-average` keyed by category emits, per closed
//!   auction in `(expires, auction)` order, the running average (integer) of its category.
//!   Output `{category, auction, expires, price, avg, count}`.
//! - **q5** (hot items): `q5-count` keyed by auction counts bids per sliding window (10 s,
//!   every 2 s); `q5-hot` keyed by window keeps the auctions with the most bids. Output
//!   `{start, end, auction, count}`.
//! - **q7** (highest bid): `q7-partial` (per source subtask, `forward`) keeps each tumbling
//!   10 s window's highest price and the bids at it; `q7-final` keyed by window combines them.
//!   Output `{window_start, window_end, auction, bidder, price, date_time}`.
//! - **q8** (monitor new users): persons (keyed by id) who created an auction (keyed by seller)
//!   in the tumbling 10 s window in which they registered (two inputs: 0 persons, 1 auctions,
//!   or the mixed stream). Output `{window_start, id, name}`.
//! - **q11** (user sessions): bids keyed by bidder, session windows with a 10 s gap. Output
//!   `{bidder, start, end, count}`.

mod events;
mod q4;
mod windows;

use serde::{Deserialize, Serialize};
use weir_guest::join::{JoinSpec, KeyedJoin};
use weir_guest::window::{KeyedWindows, WindowSpec, Windows};
use weir_guest::{Context, Error, KeyedState, Operator, Output, RawKey, Record, Result, States, to_msgpack};

pub use events::{Auction, Bid, Event, Kind, Person};
use windows::{Count, Highest, Hot, NewUser, NewUserInput};

/// Nexmark's window sizes.
const TEN_SECONDS: i64 = 10_000;
const TWO_SECONDS: i64 = 2_000;

/// Which query stage a node runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Not configured yet.
    #[default]
    None,
    /// q3.
    Q3,
    /// q4, first stage.
    Q4Winning,
    /// q4, second stage.
    Q4Average,
    /// q5, first stage.
    Q5Count,
    /// q5, second stage.
    Q5Hot,
    /// q7, first stage.
    Q7Partial,
    /// q7, second stage.
    Q7Final,
    /// q8.
    Q8,
    /// q11.
    Q11,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    stage: Stage,
}

/// q3's output.
#[derive(Debug, Serialize)]
struct Q3 {
    name: String,
    city: String,
    state: String,
    /// The auction.
    id: u64,
}

/// q5's output (both stages).
#[derive(Debug, Serialize, Deserialize)]
struct Q5 {
    window_start: i64,
    window_end: i64,
    auction: u64,
    count: u64,
}

/// q7's first stage's output: a window's highest price and the bids at it.
#[derive(Debug, Serialize, Deserialize)]
struct Q7Partial {
    start: i64,
    end: i64,
    bids: Vec<Bid>,
}

/// q7's output.
#[derive(Debug, Serialize)]
struct Q7 {
    window_start: i64,
    window_end: i64,
    auction: u64,
    bidder: u64,
    price: u64,
    date_time: u64,
}

/// q8's output.
#[derive(Debug, Serialize)]
struct Q8 {
    window_start: i64,
    id: u64,
    name: String,
}

/// q11's output.
#[derive(Debug, Serialize)]
struct Q11 {
    bidder: u64,
    session_start: i64,
    session_end: i64,
    count: u64,
}

/// The operator: every stage's state, of which the configured stage uses its own.
#[derive(Default, States)]
pub struct Nexmark {
    stage: Stage,
    #[state(name = "q3")]
    local: KeyedJoin<Auction, Person>,
    #[state(name = "q4_auctions")]
    auctions: KeyedState<RawKey, q4::Open>,
    #[state(name = "q4_categories")]
    categories: KeyedState<RawKey, q4::Category>,
    #[state(name = "counts")]
    counts: KeyedWindows<Count>,
    #[state(name = "q5_hot")]
    hot: KeyedWindows<Hot>,
    #[state(name = "q7")]
    highest: KeyedWindows<Highest>,
    #[state(name = "q8")]
    new_users: KeyedWindows<NewUser>,
}

fn tumbling(size_ms: i64) -> WindowSpec {
    WindowSpec::new(Windows::Tumbling { size_ms, offset_ms: 0 })
}

fn time(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

impl Operator for Nexmark {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.stage = context.config::<Config>()?.stage;
        match self.stage {
            Stage::None => return Err(Error::invalid_config("nexmark: `stage` is required")),
            Stage::Q3 => self.local.configure(JoinSpec::regular(None))?,
            Stage::Q5Count => self.counts.configure(WindowSpec::new(Windows::Sliding {
                size_ms: TEN_SECONDS,
                slide_ms: TWO_SECONDS,
                offset_ms: 0,
            }))?,
            // One pane per sliding window's end: it fires when the watermark reaches `end − 1`.
            Stage::Q5Hot => self.hot.configure(tumbling(TWO_SECONDS))?,
            Stage::Q7Partial | Stage::Q7Final => self.highest.configure(tumbling(TEN_SECONDS))?,
            Stage::Q8 => self.new_users.configure(tumbling(TEN_SECONDS))?,
            Stage::Q11 => self.counts.configure(WindowSpec::new(Windows::Session { gap_ms: TEN_SECONDS }))?,
            Stage::Q4Winning | Stage::Q4Average => {}
        }
        Ok(())
    }

    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        match self.stage {
            Stage::Q3 => {
                let key = record.key_bytes();
                let kind = if record.input() == 0 { Kind::Auction } else { Kind::Person };
                let mut emit = |a: &Auction, a_ts: i64, p: &Person, p_ts: i64| {
                    let row =
                        Q3 { name: p.name.clone(), city: p.city.clone(), state: p.state.clone(), id: a.id };
                    out.emit_with_key_bytes(key, &row, a_ts.max(p_ts))
                };
                match events::event(&record, kind)? {
                    Event::Auction(a) if a.category == 10 => {
                        self.local.add_left(key, record.timestamp(), a, &mut emit)?;
                    }
                    // The generator writes states in lower case.
                    Event::Person(p)
                        if ["OR", "ID", "CA"].iter().any(|s| p.state.eq_ignore_ascii_case(s)) =>
                    {
                        self.local.add_right(key, record.timestamp(), p, &mut emit)?;
                    }
                    _ => {}
                }
            }
            Stage::Q4Winning => {
                let kind = if record.input() == 0 { Kind::Auction } else { Kind::Bid };
                q4::winning(&mut self.auctions, &record, events::event(&record, kind)?)?;
            }
            Stage::Q4Average => q4::closed(&mut self.categories, &record)?,
            Stage::Q5Count => {
                if events::bid(&record)?.is_some() {
                    self.counts.add(&record, &())?;
                }
            }
            Stage::Q5Hot => {
                let q5: Q5 = record.value()?;
                self.hot.add(&record, &(q5.auction, q5.count, q5.window_start, q5.window_end))?;
            }
            Stage::Q7Partial => {
                if let Some(bid) = events::bid(&record)? {
                    // One window for all bids of this subtask: the empty key.
                    self.highest.add_raw(&[], record.timestamp(), &[bid][..])?;
                }
            }
            Stage::Q7Final => {
                let partial: Q7Partial = record.value()?;
                self.highest.add(&record, &partial.bids[..])?;
            }
            Stage::Q8 => {
                let kind = if record.input() == 0 { Kind::Person } else { Kind::Auction };
                let input = match events::event(&record, kind)? {
                    Event::Person(p) => NewUserInput::Registered(p.name),
                    Event::Auction(_) => NewUserInput::Sold,
                    Event::Bid(_) => return Ok(()),
                };
                self.new_users.add(&record, &input)?;
            }
            Stage::Q11 => {
                if events::bid(&record)?.is_some() {
                    self.counts.add(&record, &())?;
                }
            }
            Stage::None => return Err(Error::other("nexmark: not opened")),
        }
        Ok(())
    }

    fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
        match self.stage {
            Stage::Q3 => self.local.expire(key, timestamp),
            Stage::Q4Winning => q4::close(&mut self.auctions, key, timestamp, out),
            Stage::Q4Average => q4::average(&mut self.categories, key, timestamp, out),
            Stage::Q5Count => self.counts.fire(key, timestamp, |w, count| {
                let auction: u64 = weir_guest::from_msgpack(key)?;
                let row = Q5 { window_start: w.start, window_end: w.end, auction, count };
                out.emit(&w.end, &row, w.max_timestamp())
            }),
            Stage::Q5Hot => self.hot.fire(key, timestamp, |_, hot| {
                for auction in hot.auctions {
                    let row = Q5 { window_start: hot.start, window_end: hot.end, auction, count: hot.count };
                    out.emit_with_key_bytes(key, &row, hot.end - 1)?;
                }
                Ok(())
            }),
            Stage::Q7Partial => self.highest.fire(key, timestamp, |w, bids| {
                out.emit(&w.start, &Q7Partial { start: w.start, end: w.end, bids }, w.max_timestamp())
            }),
            Stage::Q7Final => self.highest.fire(key, timestamp, |w, bids| {
                for b in bids {
                    let row = Q7 {
                        window_start: w.start,
                        window_end: w.end,
                        auction: b.auction,
                        bidder: b.bidder,
                        price: b.price,
                        date_time: b.date_time,
                    };
                    out.emit(&b.auction, &row, w.max_timestamp())?;
                }
                Ok(())
            }),
            Stage::Q8 => self.new_users.fire(key, timestamp, |w, user| {
                if let Some(name) = user {
                    let id: u64 = weir_guest::from_msgpack(key)?;
                    out.emit_with_key_bytes(key, &Q8 { window_start: w.start, id, name }, w.max_timestamp())?;
                }
                Ok(())
            }),
            Stage::Q11 => self.counts.fire(key, timestamp, |w, count| {
                let bidder: u64 = weir_guest::from_msgpack(key)?;
                out.emit_with_key_bytes(
                    key,
                    &Q11 { bidder, session_start: w.start, session_end: w.end, count },
                    w.max_timestamp(),
                )
            }),
            Stage::None => Ok(()),
        }
    }
}

/// The encoded key of `id` (as the `nexmark` source keys records: a MessagePack uint).
pub fn key_of(id: u64) -> Vec<u8> {
    to_msgpack(&id).expect("a u64 encodes")
}

weir_guest::export_operator!(Nexmark, name = "nexmark");

#[cfg(test)]
mod tests;
