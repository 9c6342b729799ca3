//! Nexmark events (persons, auctions, bids) from the `nexmark` crate's generator, with a
//! fixed start time so that every run produces the same events.

use nexmark::EventGenerator;
use nexmark::config::NexmarkConfig;
use nexmark::event::{Event, EventType};
use serde::{Deserialize, Serialize};

use super::{BatchLimit, ConfigError, ConnectorError, Source, bad_position};
use crate::record::Batch;

pub use nexmark::event::{Auction, Bid, Person};

/// Config of the Nexmark source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NexmarkSourceConfig {
    /// Which events to emit: `bid`, `auction` or `person` (one stream per type, as the
    /// Nexmark topics; the value is the event's named MessagePack), or `mixed` (every event
    /// in the generator's order, persons : auctions : bids = 1 : 3 : 46; the value is the
    /// externally tagged `Event`: a one-entry map `{"Person" | "Auction" | "Bid": {...}}`).
    /// Ids and times are those of the mixed stream, so a per-type stream is the mixed one
    /// filtered by type.
    #[serde(default = "bid")]
    pub event_type: String,
    /// How many events of that type in all (for `mixed`: events of every type).
    pub count: u64,
    /// Event time of the first event, ms since the epoch.
    #[serde(default = "base_time")]
    pub base_time: u64,
    /// Events per second of event time (the generator's rate).
    #[serde(default = "rate")]
    pub events_per_second: usize,
    /// Keys every record by one of its event's id fields (a MessagePack unsigned int), so a
    /// `hash` edge groups by it. One field for a single-type stream (`"auction"`), or one per
    /// event type (`{"bid": "auction", "auction": "seller", "person": "id"}`), which the
    /// mixed stream needs for every type. The fields: `auction` or `bidder` for bids, `id`,
    /// `seller` or `category` for auctions, `id` for persons. Without it records have no key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<NexmarkKey>,
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

/// How a Nexmark source keys its records: one field, or one field per event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum NexmarkKey {
    /// The field of a single-type stream (`"auction"`).
    Field(KeyField),
    /// A field per event type (`{"bid": "auction", "person": "id"}`).
    PerType(KeyByType),
}

/// A key field per event type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyByType {
    /// The field of bids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bid: Option<KeyField>,
    /// The field of auctions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auction: Option<KeyField>,
    /// The field of persons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<KeyField>,
}

// A string is one field, a map one field per type; each form keeps serde's own messages
// (unknown variant, unknown field) instead of an untagged enum's "did not match".
impl<'de> Deserialize<'de> for NexmarkKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = NexmarkKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key field (\"auction\") or a map of event type to key field")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NexmarkKey, E> {
                KeyField::deserialize(serde::de::value::StrDeserializer::new(v)).map(NexmarkKey::Field)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<NexmarkKey, A::Error> {
                KeyByType::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(NexmarkKey::PerType)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl From<KeyField> for NexmarkKey {
    fn from(field: KeyField) -> Self {
        NexmarkKey::Field(field)
    }
}

impl KeyField {
    /// The field's value in `event`; `None` when that event type has no such field.
    pub fn of(self, event: &Event) -> Option<u64> {
        let id = match (self, event) {
            (KeyField::Auction, Event::Bid(b)) => b.auction,
            (KeyField::Bidder, Event::Bid(b)) => b.bidder,
            (KeyField::Id, Event::Auction(a)) => a.id,
            (KeyField::Seller, Event::Auction(a)) => a.seller,
            (KeyField::Category, Event::Auction(a)) => a.category,
            (KeyField::Id, Event::Person(p)) => p.id,
            _ => return None,
        };
        Some(id as u64)
    }

    fn fits(self, kind: EventType) -> bool {
        matches!(
            (kind, self),
            (EventType::Bid, KeyField::Auction | KeyField::Bidder)
                | (EventType::Auction, KeyField::Id | KeyField::Seller | KeyField::Category)
                | (EventType::Person, KeyField::Id)
        )
    }

    fn name(self) -> &'static str {
        match self {
            KeyField::Auction => "auction",
            KeyField::Bidder => "bidder",
            KeyField::Id => "id",
            KeyField::Seller => "seller",
            KeyField::Category => "category",
        }
    }
}

/// The key field of each event type (indexed by [`type_index`]); `None`: no key.
type KeyTable = [Option<KeyField>; 3];

const TYPES: [(EventType, &str, &str); 3] = [
    (EventType::Person, "person", "id"),
    (EventType::Auction, "auction", "id, seller or category"),
    (EventType::Bid, "bid", "auction or bidder"),
];

fn type_index(kind: EventType) -> usize {
    match kind {
        EventType::Person => 0,
        EventType::Auction => 1,
        EventType::Bid => 2,
    }
}

/// How a mixed stream is keyed, for the message that refuses one key field for all types.
const MIXED_KEY_EXAMPLE: &str = "{\"bid\": \"auction\", \"auction\": \"id\", \"person\": \"id\"}";

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
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        self.event_kind()?;
        self.key_table()?;
        if self.events_per_second == 0 {
            return Err(ConfigError::OutOfRange("nexmark: events_per_second must be at least 1".into()));
        }
        Ok(())
    }

    /// The one event type emitted; `None` for the mixed stream.
    fn event_kind(&self) -> Result<Option<EventType>, ConfigError> {
        match self.event_type.as_str() {
            "bid" => Ok(Some(EventType::Bid)),
            "auction" => Ok(Some(EventType::Auction)),
            "person" => Ok(Some(EventType::Person)),
            "mixed" => Ok(None),
            other => Err(ConfigError::OutOfRange(format!(
                "nexmark: unknown event_type `{other}` (bid, auction, person or mixed)"
            ))),
        }
    }

    /// The key field per event type; refuses a field that its event type does not have, and
    /// a key that leaves an emitted type without a field.
    fn key_table(&self) -> Result<KeyTable, ConfigError> {
        let kind = self.event_kind()?;
        let table: KeyTable = match (self.key, kind) {
            (None, _) => return Ok([None; 3]),
            (Some(NexmarkKey::Field(field)), None) => {
                return Err(ConfigError::OutOfRange(format!(
                    "nexmark: the mixed stream is keyed per event type, e.g. {MIXED_KEY_EXAMPLE}, not by `{}`",
                    field.name()
                )));
            }
            (Some(NexmarkKey::Field(field)), Some(kind)) => {
                let mut table = [None; 3];
                table[type_index(kind)] = Some(field);
                table
            }
            (Some(NexmarkKey::PerType(map)), _) => [map.person, map.auction, map.bid],
        };
        for ((kind, name, fields), field) in TYPES.iter().zip(&table) {
            if let Some(field) = field
                && !field.fits(*kind)
            {
                return Err(ConfigError::OutOfRange(format!(
                    "nexmark: cannot key {name} events by `{}` ({fields})",
                    field.name()
                )));
            }
        }
        // Every emitted type has a field.
        let emitted = |i: usize| kind.is_none_or(|k| type_index(k) == i);
        let missing: Vec<&str> =
            (0..3).filter(|i| emitted(*i) && table[*i].is_none()).map(|i| TYPES[i].1).collect();
        match (missing.is_empty(), kind) {
            (true, _) => Ok(table),
            (false, Some(_)) => Err(ConfigError::OutOfRange(format!(
                "nexmark: the key map has no field for {} events, which this source emits",
                missing.join(", ")
            ))),
            (false, None) => Err(ConfigError::OutOfRange(format!(
                "nexmark: the mixed stream's key map needs a field for every event type (missing: {})",
                missing.join(", ")
            ))),
        }
    }

    /// The generator for subtask `index` of `parallelism`: the events `index, index +
    /// parallelism, …` of this config's stream (of its type, or of all types when mixed).
    pub fn generator(&self, index: u32, parallelism: u32) -> EventGenerator {
        let config = NexmarkConfig {
            base_time: self.base_time,
            first_rate: self.events_per_second,
            next_rate: self.events_per_second,
            ..NexmarkConfig::default()
        };
        let generator = EventGenerator::new(config);
        let generator = match self.event_kind() {
            Ok(Some(kind)) => generator.with_type_filter(kind),
            // An unknown type (refused by `validate`) generates the mixed stream.
            Ok(None) | Err(_) => generator,
        };
        generator.with_offset(u64::from(index)).with_step(u64::from(parallelism))
    }
}

/// A Nexmark subtask. Its position is the generator offset.
pub struct NexmarkSource {
    generator: EventGenerator,
    config: NexmarkSourceConfig,
    index: u32,
    parallelism: u32,
    count: u64,
    batch: BatchLimit,
    keys: KeyTable,
    /// Values are the externally tagged `Event` (the mixed stream).
    tagged: bool,
}

impl std::fmt::Debug for NexmarkSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NexmarkSource").field("offset", &self.generator.offset()).finish()
    }
}

impl NexmarkSource {
    /// Subtask `index` of `parallelism`. A config that does not pass validation (the planner
    /// refuses it) makes unkeyed records.
    pub fn new(
        config: &NexmarkSourceConfig,
        batch: impl Into<BatchLimit>,
        index: u32,
        parallelism: u32,
    ) -> Self {
        NexmarkSource {
            generator: config.generator(index, parallelism),
            config: config.clone(),
            index,
            parallelism,
            count: config.count,
            batch: batch.into(),
            keys: config.key_table().unwrap_or_default(),
            tagged: config.event_type == "mixed",
        }
    }
}

/// Appends one event to `batch` (value = the event's named MessagePack, no key, event time).
pub fn push_event(batch: &mut Batch, event: &Event) {
    push_keyed_event(batch, event, None)
}

/// Appends one event to `batch`, keyed by `key` (a MessagePack unsigned int) when given and
/// the event has that field (else unkeyed). The value is the event's named MessagePack.
pub fn push_keyed_event(batch: &mut Batch, event: &Event, key: Option<KeyField>) {
    push(batch, event, key, false)
}

/// Appends one event of a mixed stream: as [`push_keyed_event`], but the value is the
/// externally tagged `Event` (`{"Bid": {...}}`, named fields).
pub fn push_tagged_event(batch: &mut Batch, event: &Event, key: Option<KeyField>) {
    push(batch, event, key, true)
}

fn push(batch: &mut Batch, event: &Event, key: Option<KeyField>, tagged: bool) {
    let mut key_bytes = [0u8; 9];
    let key_bytes: &[u8] = match key.and_then(|field| field.of(event)) {
        Some(id) => {
            let mut cursor = std::io::Cursor::new(&mut key_bytes[..]);
            rmp::encode::write_uint(&mut cursor, id).expect("9 bytes hold any u64");
            let len = cursor.position() as usize;
            &key_bytes[..len]
        }
        None => &[],
    };
    let ts = event.timestamp() as i64;
    match event {
        _ if tagged => batch.push_with(key_bytes, ts, |buf| encode(buf, event)),
        Event::Bid(b) => batch.push_with(key_bytes, ts, |buf| encode(buf, b)),
        Event::Auction(a) => batch.push_with(key_bytes, ts, |buf| encode(buf, a)),
        Event::Person(p) => batch.push_with(key_bytes, ts, |buf| encode(buf, p)),
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
        let (records, bytes) = self.batch.reserve(128);
        let mut batch = Batch::with_capacity(records, bytes);
        while !self.batch.is_full(&batch) && self.generator.offset() < self.count {
            let event = self.generator.next().expect("the generator is endless");
            let key = self.keys[type_index(event.event_type())];
            push(&mut batch, &event, key, self.tagged);
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
            key: Some(KeyField::Auction.into()),
        };
        let batch = NexmarkSource::new(&config, 64, 0, 1).next_batch().unwrap().unwrap();
        for record in batch.iter() {
            let bid: Bid = rmp_serde::from_slice(record.value).unwrap();
            let key: u64 = rmp_serde::from_slice(record.key).unwrap();
            assert_eq!(key, bid.auction as u64);
        }
        config.key = Some(KeyField::Seller.into());
        let e = config.validate().unwrap_err().to_string();
        assert_eq!(e, "nexmark: cannot key bid events by `seller` (auction or bidder)");
        config.event_type = "auction".into();
        assert!(config.validate().is_ok());
        let e =
            serde_json::from_value::<NexmarkSourceConfig>(serde_json::json!({ "count": 1, "key": "price" }))
                .unwrap_err()
                .to_string();
        assert!(e.contains("unknown variant `price`, expected one of `auction`, `bidder`"), "{e}");
    }

    fn config(event_type: &str, count: u64, key: serde_json::Value) -> Result<NexmarkSourceConfig, String> {
        let config: NexmarkSourceConfig = serde_json::from_value(
            serde_json::json!({ "event_type": event_type, "count": count, "key": key }),
        )
        .map_err(|e| e.to_string())?;
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }

    #[test]
    fn keys_the_mixed_stream_per_event_type() {
        let key = serde_json::json!({ "bid": "bidder", "auction": "seller", "person": "id" });
        let mixed = config("mixed", 500, key.clone()).unwrap();
        // The map form round-trips through JSON.
        assert_eq!(serde_json::to_value(&mixed).unwrap()["key"], key);
        let mut source = NexmarkSource::new(&mixed, 64, 0, 1);
        let mut kinds = [0; 3];
        while let Some(batch) = source.next_batch().unwrap() {
            for record in batch.iter() {
                let event: Event = rmp_serde::from_slice(record.value).unwrap();
                let key: u64 = rmp_serde::from_slice(record.key).unwrap();
                let expected = match &event {
                    Event::Bid(b) => b.bidder,
                    Event::Auction(a) => a.seller,
                    Event::Person(p) => p.id,
                };
                assert_eq!(key, expected as u64);
                assert_eq!(record.timestamp, event.timestamp() as i64);
                kinds[type_index(event.event_type())] += 1;
            }
        }
        assert_eq!(kinds, [10, 30, 460]);
        // A single-type stream takes the map form too (entries for other types are checked).
        assert!(config("bid", 1, serde_json::json!({ "bid": "auction", "person": "id" })).is_ok());
    }

    #[test]
    fn bad_keys_are_refused_with_what_to_change() {
        let err = |event_type: &str, key: serde_json::Value| config(event_type, 1, key).unwrap_err();
        let e = err("mixed", serde_json::json!("auction"));
        assert!(e.contains("the mixed stream is keyed per event type, e.g. {\"bid\": \"auction\""), "{e}");
        let e = err("mixed", serde_json::json!({ "bid": "auction" }));
        assert_eq!(
            e,
            "nexmark: the mixed stream's key map needs a field for every event type (missing: person, auction)"
        );
        let e = err("person", serde_json::json!({ "bid": "auction" }));
        assert_eq!(e, "nexmark: the key map has no field for person events, which this source emits");
        let e = err("mixed", serde_json::json!({ "bid": "id", "auction": "id", "person": "id" }));
        assert_eq!(e, "nexmark: cannot key bid events by `id` (auction or bidder)");
        let e = err("bid", serde_json::json!({ "bid": "auction", "person": "seller" }));
        assert_eq!(e, "nexmark: cannot key person events by `seller` (id)");
        let e = err("mixed", serde_json::json!({ "bids": "auction" }));
        assert!(e.contains("unknown field `bids`, expected one of `bid`, `auction`, `person`"), "{e}");
        let e = err("mixed", serde_json::json!({ "bid": "price" }));
        assert!(e.contains("unknown variant `price`"), "{e}");
        let e = err("mixed", serde_json::json!(7));
        assert!(e.contains("expected a key field (\"auction\") or a map of event type to key field"), "{e}");
        let e = err("all", serde_json::Value::Null);
        assert_eq!(e, "nexmark: unknown event_type `all` (bid, auction, person or mixed)");
    }

    #[test]
    fn per_type_streams_are_the_mixed_stream_filtered_at_any_parallelism() {
        let mixed = config("mixed", 2_000, serde_json::Value::Null).unwrap();
        let all: Vec<Event> = drain(&mut NexmarkSource::new(&mixed, 64, 0, 1))
            .iter()
            .map(|(v, _)| rmp_serde::from_slice(v).unwrap())
            .collect();
        assert_eq!(all.len(), 2_000);
        // The union over 3 subtasks, merged by event order, is the same stream.
        let mut parts: Vec<Vec<Event>> = (0..3)
            .map(|i| {
                let events = drain(&mut NexmarkSource::new(&mixed, 64, i, 3));
                events.iter().map(|(v, _)| rmp_serde::from_slice(v).unwrap()).collect()
            })
            .collect();
        let merged: Vec<Event> = (0..2_000).map(|n| parts[n % 3].remove(0)).collect();
        assert_eq!(merged, all);
        for (kind, name, _) in TYPES {
            let of_type: Vec<Event> = all.iter().filter(|e| e.event_type() == kind).cloned().collect();
            let single = config(name, of_type.len() as u64, serde_json::Value::Null).unwrap();
            let mut source = NexmarkSource::new(&single, 64, 0, 1);
            let decoded: Vec<Event> = drain(&mut source)
                .iter()
                .map(|(v, _)| match kind {
                    EventType::Person => Event::Person(rmp_serde::from_slice(v).unwrap()),
                    EventType::Auction => Event::Auction(rmp_serde::from_slice(v).unwrap()),
                    EventType::Bid => Event::Bid(rmp_serde::from_slice(v).unwrap()),
                })
                .collect();
            assert_eq!(decoded, of_type, "{name}");
        }
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
        let bids = NexmarkSourceConfig {
            event_type: "bid".into(),
            count: 500,
            base_time: base_time(),
            events_per_second: rate(),
            key: None,
        };
        let mixed = NexmarkSourceConfig { event_type: "mixed".into(), ..bids.clone() };
        for (config, index, parallelism) in [(&bids, 0, 1), (&bids, 1, 3), (&mixed, 0, 1), (&mixed, 2, 3)] {
            let all = drain(&mut NexmarkSource::new(config, 64, index, parallelism));
            let mut first = NexmarkSource::new(config, 64, index, parallelism);
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
            let mut resumed = NexmarkSource::new(config, 64, index, parallelism);
            resumed.seek(&position).unwrap();
            let tail = drain(&mut resumed);
            assert_eq!([head, tail].concat(), all, "{} subtask {index} of {parallelism}", config.event_type);
            assert!(resumed.seek(&serde_json::json!({ "next": 3 })).is_err());
        }
    }
}
