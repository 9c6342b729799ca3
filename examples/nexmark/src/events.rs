//! Nexmark events as the `nexmark` source emits them: per-type streams carry the event's
//! fields as a MessagePack map; the mixed stream (`event_type: "mixed"`) carries the event
//! tagged with its type (`{"Person": {...}}`, `{"Auction": {...}}`, `{"Bid": {...}}`). Only the
//! fields the queries read are decoded; the decoder skips the others.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use weir_guest::{Record, Result};

/// The fields of a person the queries read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    /// The person's id.
    pub id: u64,
    /// Full name.
    pub name: String,
    /// City.
    pub city: String,
    /// Two-letter US state.
    pub state: String,
    /// When the person registered (ms).
    pub date_time: u64,
}

/// The fields of an auction the queries read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auction {
    /// The auction's id.
    pub id: u64,
    /// The person who sells.
    pub seller: u64,
    /// Its category.
    pub category: u64,
    /// When it opened (ms).
    pub date_time: u64,
    /// When it closes (ms).
    pub expires: u64,
}

/// The fields of a bid the queries read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bid {
    /// The auction bid on.
    pub auction: u64,
    /// Who bids.
    pub bidder: u64,
    /// The price (cents).
    pub price: u64,
    /// When (ms).
    pub date_time: u64,
}

/// One Nexmark event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A new person.
    Person(Person),
    /// A new auction.
    Auction(Auction),
    /// A bid.
    Bid(Bid),
}

/// The tagged form of the mixed stream, skipping the types a query ignores.
#[derive(Deserialize)]
enum Tagged<P, A, B> {
    Person(P),
    Auction(A),
    Bid(B),
}

/// A MessagePack map of one entry: the mixed stream's tagged event (a per-type event has
/// more fields).
fn tagged(value: &[u8]) -> bool {
    value.first() == Some(&0x81)
}

/// The record's event: tagged (mixed stream) or of the type `only` names (per-type stream).
pub fn event(record: &Record<'_>, only: Kind) -> Result<Event> {
    if tagged(record.value_bytes()) {
        return Ok(match record.value::<Tagged<Person, Auction, Bid>>()? {
            Tagged::Person(p) => Event::Person(p),
            Tagged::Auction(a) => Event::Auction(a),
            Tagged::Bid(b) => Event::Bid(b),
        });
    }
    Ok(match only {
        Kind::Person => Event::Person(record.value()?),
        Kind::Auction => Event::Auction(record.value()?),
        Kind::Bid => Event::Bid(record.value()?),
    })
}

/// The record's bid, if it is one: a tagged event of another type is skipped undecoded.
pub fn bid(record: &Record<'_>) -> Result<Option<Bid>> {
    if tagged(record.value_bytes()) {
        return Ok(match record.value::<Tagged<IgnoredAny, IgnoredAny, Bid>>()? {
            Tagged::Bid(b) => Some(b),
            _ => None,
        });
    }
    Ok(Some(record.value()?))
}

/// An event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Persons.
    Person,
    /// Auctions.
    Auction,
    /// Bids.
    Bid,
}
