//! Nexmark events (persons, auctions, bids) from the `nexmark` crate's generator, with a
//! fixed start time so that every run produces the same events.

use nexmark::EventGenerator;
use nexmark::config::NexmarkConfig;
use nexmark::event::{Event, EventType};
use serde::{Deserialize, Serialize};

use super::{ConnectorError, Source, bad_position};
use crate::record::Batch;

pub use nexmark::event::{Auction, Bid, Person};

/// Config of the Nexmark source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NexmarkSourceConfig {
    /// Which events to emit: `bid`, `auction` or `person` (one stream per type, as the
    /// Nexmark topics; ids and times are those of the mixed stream).
    #[serde(default = "bid")]
    pub event_type: String,
    /// How many events of that type in all.
    pub count: u64,
    /// Event time of the first event, ms since the epoch.
    #[serde(default = "base_time")]
    pub base_time: u64,
    /// Events per second of event time (the generator's rate).
    #[serde(default = "rate")]
    pub events_per_second: usize,
    /// Keys every record by one of its event's id fields (a MessagePack unsigned int), so a
    /// `hash` edge groups by it: `auction` or `bidder` for bids, `id`, `seller` or `category`
    /// for auctions, `id` for persons. Without it records have no key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyField>,
}

/// The id field a Nexmark source keys its records by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyField {
    /// A bid's auction.
    Auction,
    /// A bid's bidder.
    Bidder,
    /// An auction's or a person's id.
    Id,
    /// An auction's seller.
    Seller,
    /// An auction's category.
    Category,
}

impl KeyField {
    fn of(self, event: &Event) -> u64 {
        let id = match (self, event) {
            (KeyField::Auction, Event::Bid(b)) => b.auction,
            (KeyField::Bidder, Event::Bid(b)) => b.bidder,
            (KeyField::Id, Event::Auction(a)) => a.id,
            (KeyField::Seller, Event::Auction(a)) => a.seller,
            (KeyField::Category, Event::Auction(a)) => a.category,
            (KeyField::Id, Event::Person(p)) => p.id,
            // `validate` accepts only the fields of the configured event type, and a source
            // emits only that type.
            (field, _) => unreachable!("nexmark key {field:?} on another event type"),
        };
        id as u64
    }
}

fn bid() -> String {
    "bid".into()
}
fn base_time() -> u64 {
    1_700_000_000_000
}
fn rate() -> usize {
    10_000
}

impl NexmarkSourceConfig {
    pub(crate) fn validate(&self) -> Result<(), String> {
        self.event_kind()?;
        self.check_key()?;
        if self.events_per_second == 0 {
            return Err("nexmark: events_per_second must be at least 1".into());
        }
        Ok(())
    }

    fn event_kind(&self) -> Result<EventType, String> {
        match self.event_type.as_str() {
            "bid" => Ok(EventType::Bid),
            "auction" => Ok(EventType::Auction),
            "person" => Ok(EventType::Person),
            other => Err(format!("nexmark: unknown event_type `{other}` (bid, auction or person)")),
        }
    }

    /// Refuses a key field that the configured event type does not have.
    fn check_key(&self) -> Result<(), String> {
        let fits = matches!(
            (self.event_type.as_str(), self.key),
            (_, None)
                | ("bid", Some(KeyField::Auction | KeyField::Bidder))
                | ("auction", Some(KeyField::Id | KeyField::Seller | KeyField::Category))
                | ("person", Some(KeyField::Id))
        );
        if fits {
            return Ok(());
        }
        let fields = match self.event_type.as_str() {
            "bid" => "auction or bidder",
            "auction" => "id, seller or category",
            _ => "id",
        };
        let key = self.key.map(|k| format!("{k:?}").to_lowercase()).unwrap_or_default();
        Err(format!("nexmark: cannot key {} events by `{key}` ({fields})", self.event_type))
    }

    /// The generator for subtask `index` of `parallelism`.
    pub fn generator(&self, index: u32, parallelism: u32) -> EventGenerator {
        let config = NexmarkConfig {
            base_time: self.base_time,
            first_rate: self.events_per_second,
            next_rate: self.events_per_second,
            ..NexmarkConfig::default()
        };
        EventGenerator::new(config)
            .with_type_filter(self.event_kind().expect("validated"))
            .with_offset(u64::from(index))
            .with_step(u64::from(parallelism))
    }
}

/// A Nexmark subtask. Its position is the generator offset.
pub struct NexmarkSource {
    generator: EventGenerator,
    config: NexmarkSourceConfig,
    index: u32,
    parallelism: u32,
    count: u64,
    batch_size: usize,
    key: Option<KeyField>,
}

impl std::fmt::Debug for NexmarkSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NexmarkSource").field("offset", &self.generator.offset()).finish()
    }
}

impl NexmarkSource {
    /// Subtask `index` of `parallelism`.
    pub fn new(config: &NexmarkSourceConfig, batch_size: usize, index: u32, parallelism: u32) -> Self {
        NexmarkSource {
            generator: config.generator(index, parallelism),
            config: config.clone(),
            index,
            parallelism,
            count: config.count,
            batch_size,
            key: config.key,
        }
    }
}

/// Appends one event to `batch` (value = the event's named MessagePack, no key, event time).
pub fn push_event(batch: &mut Batch, event: &Event) {
    push_keyed_event(batch, event, None)
}

/// Appends one event to `batch`, keyed by `key` (a MessagePack unsigned int) when given.
pub fn push_keyed_event(batch: &mut Batch, event: &Event, key: Option<KeyField>) {
    let mut key_bytes = [0u8; 9];
    let key_bytes: &[u8] = match key {
        Some(field) => {
            let mut cursor = std::io::Cursor::new(&mut key_bytes[..]);
            rmp::encode::write_uint(&mut cursor, field.of(event)).expect("9 bytes hold any u64");
            let len = cursor.position() as usize;
            &key_bytes[..len]
        }
        None => &[],
    };
    match event {
        Event::Bid(b) => batch.push_with(key_bytes, b.date_time as i64, |buf| encode(buf, b)),
        Event::Auction(a) => batch.push_with(key_bytes, a.date_time as i64, |buf| encode(buf, a)),
        Event::Person(p) => batch.push_with(key_bytes, p.date_time as i64, |buf| encode(buf, p)),
    }
}

fn encode<T: Serialize>(buf: &mut Vec<u8>, v: &T) {
    rmp_serde::encode::write_named(buf, v).expect("MessagePack into a Vec cannot fail");
}

impl Source for NexmarkSource {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        if self.generator.offset() >= self.count {
            return Ok(None);
        }
        let mut batch = Batch::with_capacity(self.batch_size, self.batch_size * 128);
        while batch.len() < self.batch_size && self.generator.offset() < self.count {
            let event = self.generator.next().expect("the generator is endless");
            push_keyed_event(&mut batch, &event, self.key);
        }
        Ok(Some(batch))
    }

    fn position(&self) -> serde_json::Value {
        serde_json::json!({ "offset": self.generator.offset() })
    }

    fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError> {
        let offset = position.get("offset").and_then(|v| v.as_u64()).ok_or_else(|| bad_position(position))?;
        let step = u64::from(self.parallelism);
        if offset % step != u64::from(self.index) % step {
            return Err(bad_position(position));
        }
        self.generator = self.config.generator(self.index, self.parallelism).with_offset(offset);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_records_by_an_id_field() {
        let mut config = NexmarkSourceConfig {
            event_type: "bid".into(),
            count: 50,
            base_time: base_time(),
            events_per_second: rate(),
            key: Some(KeyField::Auction),
        };
        let batch = NexmarkSource::new(&config, 64, 0, 1).next_batch().unwrap().unwrap();
        for record in batch.iter() {
            let bid: Bid = rmp_serde::from_slice(record.value).unwrap();
            let key: u64 = rmp_serde::from_slice(record.key).unwrap();
            assert_eq!(key, bid.auction as u64);
        }
        config.key = Some(KeyField::Seller);
        let e = config.validate().unwrap_err();
        assert_eq!(e, "nexmark: cannot key bid events by `seller` (auction or bidder)");
        config.event_type = "auction".into();
        assert!(config.validate().is_ok());
        let e =
            serde_json::from_value::<NexmarkSourceConfig>(serde_json::json!({ "count": 1, "key": "price" }))
                .unwrap_err()
                .to_string();
        assert!(e.contains("unknown variant `price`, expected one of `auction`, `bidder`"), "{e}");
    }

    fn drain(source: &mut NexmarkSource) -> Vec<(Vec<u8>, i64)> {
        let mut out = Vec::new();
        while let Some(b) = source.next_batch().unwrap() {
            out.extend(b.iter().map(|r| (r.value.to_vec(), r.timestamp)));
        }
        out
    }

    #[test]
    fn resumes_at_a_saved_offset_with_the_same_events() {
        let config = NexmarkSourceConfig {
            event_type: "bid".into(),
            count: 500,
            base_time: base_time(),
            events_per_second: rate(),
            key: None,
        };
        for (index, parallelism) in [(0, 1), (1, 3)] {
            let all = drain(&mut NexmarkSource::new(&config, 64, index, parallelism));
            let mut first = NexmarkSource::new(&config, 64, index, parallelism);
            let head: Vec<_> = (0..2)
                .flat_map(|_| {
                    first
                        .next_batch()
                        .unwrap()
                        .unwrap()
                        .iter()
                        .map(|r| (r.value.to_vec(), r.timestamp))
                        .collect::<Vec<_>>()
                })
                .collect();
            let position = first.position();
            let mut resumed = NexmarkSource::new(&config, 64, index, parallelism);
            resumed.seek(&position).unwrap();
            let tail = drain(&mut resumed);
            assert_eq!([head, tail].concat(), all, "subtask {index} of {parallelism}");
            assert!(resumed.seek(&serde_json::json!({ "next": 3 })).is_err());
        }
    }
}
