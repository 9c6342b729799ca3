//! Key and value formats: how Kafka's bytes become a Weir record's bytes and back.
//!
//! Weir's convention is MessagePack (a record's key and value are MessagePack; an empty key is
//! no key). `raw` passes bytes through untouched both ways; `json` converts JSON text to
//! MessagePack on the way in and MessagePack to JSON on the way out; `msgpack` checks that the
//! bytes are one MessagePack value and passes them through.

mod json;
mod shown;

use std::borrow::Cow;

use rmp::Marker;
use rmp::decode::RmpRead as _;
use serde::{Deserialize, Serialize};

/// How a key or value is encoded in Kafka.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// The bytes as they are.
    #[default]
    Raw,
    /// JSON text (a sink converts the record's MessagePack to JSON; a source the JSON to
    /// MessagePack).
    Json,
    /// MessagePack, as Weir's records are.
    Msgpack,
}

/// The part of a record a format applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordPart {
    /// The key.
    Key,
    /// The value.
    Value,
}

impl std::fmt::Display for RecordPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecordPart::Key => "key",
            RecordPart::Value => "value",
        })
    }
}

/// Why a key or value does not fit its format. The message completes "its value …" (a
/// record read) or "it …" (a record written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Not JSON text (what the parser said).
    #[error("is not JSON ({0})")]
    NotJson(String),
    /// Bytes after one MessagePack value.
    #[error("holds {0} bytes after its MessagePack value")]
    TrailingBytes(usize),
    /// Not MessagePack (what the decoder said).
    #[error("is not MessagePack ({0})")]
    NotMsgpack(String),
    /// A record's MessagePack that is to be written as JSON does not decode.
    #[error("is not MessagePack, so it cannot be written as JSON")]
    NotJsonWritable,
    /// JSON encoding failed.
    #[error("cannot be written as JSON ({0})")]
    JsonEncoding(String),
    /// An event-time field looked up in a value that is not a map.
    #[error("is not a map, so it has no field `{0}`")]
    NotAMap(String),
    /// The event-time field does not fit an i64.
    #[error("field `{0}` is out of range")]
    FieldRange(String),
    /// The event-time field is not an integer.
    #[error("field `{field}` is {value}, not an integer (ms)")]
    FieldNotInteger {
        /// The field.
        field: String,
        /// What it holds.
        value: String,
    },
    /// No event-time field.
    #[error("has no field `{0}`")]
    NoField(String),
}

impl FormatError {
    /// A short tag for what is wrong (a dead letter's `reason`, a metric's label).
    pub fn reason(&self) -> &'static str {
        match self {
            FormatError::NotJson(_) => "bad_json",
            FormatError::TrailingBytes(_) | FormatError::NotMsgpack(_) => "bad_msgpack",
            FormatError::NotJsonWritable | FormatError::JsonEncoding(_) => "unwritable",
            FormatError::NotAMap(_)
            | FormatError::FieldRange(_)
            | FormatError::FieldNotInteger { .. }
            | FormatError::NoField(_) => "bad_event_time",
        }
    }
}

/// Kafka bytes (`None`: null) → Weir bytes. A null becomes empty bytes in `raw` (no key, or
/// an empty value) and MessagePack nil otherwise.
/// Borrows the bytes where no conversion is needed (`raw`, `msgpack`): no copy per record.
/// No value tree is built: JSON is transcoded in one pass, MessagePack checked by [`skip`].
pub fn decode(format: Format, bytes: Option<&[u8]>) -> Result<Cow<'_, [u8]>, FormatError> {
    match (format, bytes) {
        (Format::Raw, b) => Ok(Cow::Borrowed(b.unwrap_or_default())),
        (_, None) => Ok(Cow::Borrowed(&[0xc0])),
        (Format::Json, Some(b)) => {
            // One pass, no `serde_json::Value` tree; the same bytes as `to_msgpack(Value)`.
            let mut out = Vec::with_capacity(b.len());
            crate::record::json::Transcoder::new()
                .transcode(b, &mut out, &mut crate::record::json::FieldPicks::default())
                .map_err(|e| FormatError::NotJson(e.to_string()))?;
            Ok(Cow::Owned(out))
        }
        (Format::Msgpack, Some(b)) => {
            let mut cursor = b;
            match skip(&mut cursor) {
                Ok(()) if cursor.is_empty() => Ok(Cow::Borrowed(b)),
                Ok(()) => Err(FormatError::TrailingBytes(cursor.len())),
                Err(e) => Err(FormatError::NotMsgpack(e.to_string())),
            }
        }
    }
}

/// Weir bytes → Kafka bytes (`None`: null, for an empty key or value in `raw`). `json` writes
/// what `serde_json::to_vec(&record::msgpack_to_json(bytes))` writes, in one pass with no
/// value tree ([`json::write`]).
pub fn encode(format: Format, bytes: &[u8]) -> Result<Option<Vec<u8>>, FormatError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    match format {
        Format::Raw | Format::Msgpack => Ok(Some(bytes.to_vec())),
        Format::Json => {
            let mut cursor = bytes;
            match skip(&mut cursor) {
                Ok(()) if cursor.is_empty() => {}
                _ => return Err(FormatError::NotJsonWritable),
            }
            let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 2);
            json::write(bytes, &mut out)?;
            Ok(Some(out))
        }
    }
}

/// The integer field `field` of a MessagePack map (an event time in ms): the first entry
/// whose key is the string `field`. The value is checked whole (as a decode would) and only
/// the field's own value is decoded.
pub fn field_time(msgpack: &[u8], field: &str) -> Result<i64, FormatError> {
    let mut cursor = msgpack;
    skip(&mut cursor).map_err(|e| FormatError::NotMsgpack(e.to_string()))?;
    let mut rd = msgpack;
    let not_msgpack = |e: rmpv::decode::Error| FormatError::NotMsgpack(e.to_string());
    let entries = match rmp::decode::read_marker(&mut rd).map_err(|e| not_msgpack(e.into()))? {
        Marker::FixMap(n) => u32::from(n),
        Marker::Map16 => u32::from(rd.read_data_u16().map_err(|e| not_msgpack(e.into()))?),
        Marker::Map32 => rd.read_data_u32().map_err(|e| not_msgpack(e.into()))?,
        _ => return Err(FormatError::NotAMap(field.to_string())),
    };
    for _ in 0..entries {
        let key = rd;
        skip(&mut rd).map_err(not_msgpack)?;
        let key = &key[..key.len() - rd.len()];
        if str_bytes(key) == Some(field.as_bytes()) {
            return field_integer(rd, field);
        }
        skip(&mut rd).map_err(not_msgpack)?;
    }
    Err(FormatError::NoField(field.to_string()))
}

/// The event-time field's value `rd` (checked well formed) as milliseconds: an integer, or a
/// float without a fraction; anything else is refused showing (the start of) what it holds.
fn field_integer(mut rd: &[u8], field: &str) -> Result<i64, FormatError> {
    let not_msgpack = |e: rmpv::decode::Error| FormatError::NotMsgpack(e.to_string());
    let start = rd;
    let out_of_range = || FormatError::FieldRange(field.to_string());
    let marker = rmp::decode::read_marker(&mut rd).map_err(|e| not_msgpack(e.into()))?;
    let data = |e: rmp::decode::ValueReadError| not_msgpack(e.into());
    match marker {
        Marker::FixPos(n) => return Ok(i64::from(n)),
        Marker::FixNeg(n) => return Ok(i64::from(n)),
        Marker::U8 => return rd.read_data_u8().map(i64::from).map_err(data),
        Marker::U16 => return rd.read_data_u16().map(i64::from).map_err(data),
        Marker::U32 => return rd.read_data_u32().map(i64::from).map_err(data),
        Marker::U64 => return i64::try_from(rd.read_data_u64().map_err(data)?).map_err(|_| out_of_range()),
        Marker::I8 => return rd.read_data_i8().map(i64::from).map_err(data),
        Marker::I16 => return rd.read_data_i16().map(i64::from).map_err(data),
        Marker::I32 => return rd.read_data_i32().map(i64::from).map_err(data),
        Marker::I64 => return rd.read_data_i64().map_err(data),
        Marker::F64 => {
            let f = rd.read_data_f64().map_err(data)?;
            if f.fract() == 0.0 {
                return Ok(f as i64);
            }
        }
        _ => {}
    }
    let value = shown::shown(start, 200).ok_or_else(|| FormatError::NotMsgpack("cut short".into()))?;
    Err(FormatError::FieldNotInteger { field: field.to_string(), value })
}

/// The bytes of a MessagePack string (`None`: not a string, or cut short).
fn str_bytes(value: &[u8]) -> Option<&[u8]> {
    let (&marker, rest) = value.split_first()?;
    let (len, rest) = match Marker::from_u8(marker) {
        Marker::FixStr(n) => (usize::from(n), rest),
        Marker::Str8 => (usize::from(*rest.first()?), rest.get(1..)?),
        Marker::Str16 => (usize::from(u16::from_be_bytes(rest.get(..2)?.try_into().ok()?)), rest.get(2..)?),
        Marker::Str32 => (u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize, rest.get(4..)?),
        _ => return None,
    };
    rest.get(..len)
}

/// The type and data of an ext value whose `marker` was just read from `rd` (None when it is
/// truncated); `rd` moves past it.
fn ext_data<'a>(rd: &mut &'a [u8], marker: Marker) -> Option<(i8, &'a [u8])> {
    let len = match marker {
        Marker::FixExt1 => 1,
        Marker::FixExt2 => 2,
        Marker::FixExt4 => 4,
        Marker::FixExt8 => 8,
        Marker::FixExt16 => 16,
        Marker::Ext8 => usize::from(rd.read_data_u8().ok()?),
        Marker::Ext16 => usize::from(rd.read_data_u16().ok()?),
        _ => rd.read_data_u32().ok()? as usize,
    };
    let kind = rd.read_data_i8().ok()?;
    let data = rd.get(..len)?;
    *rd = &rd[len..];
    Some((kind, data))
}

/// Reads past one MessagePack value at the front of `rd`, accepting and refusing exactly what
/// `rmpv::decode::read_value` does, with the same errors (its depth limit counted as it counts
/// it), but without building the value or recursing: the open containers are a stack of counts
/// (at most `rmpv::decode::MAX_DEPTH / 2` of them).
pub fn skip(rd: &mut &[u8]) -> Result<(), rmpv::decode::Error> {
    use rmpv::decode::Error;
    fn deeper(depth: u16) -> Result<u16, Error> {
        depth.checked_sub(1).ok_or(Error::DepthLimitExceeded)
    }
    fn bin(rd: &mut &[u8], len: usize, depth: u16) -> Result<(), Error> {
        deeper(depth)?;
        if rd.len() < len {
            let read = rd.len();
            *rd = &rd[read..];
            return Err(Error::InvalidDataRead(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("Expected {len} bytes, read {read} bytes"),
            )));
        }
        *rd = &rd[len..];
        Ok(())
    }
    fn string(rd: &mut &[u8], len: usize, depth: u16) -> Result<(), Error> {
        bin(rd, len, deeper(depth)?)
    }
    fn ext(rd: &mut &[u8], len: usize, depth: u16) -> Result<(), Error> {
        let depth = deeper(depth)?;
        rd.read_data_i8()?;
        bin(rd, len, depth)
    }
    // (values left, the depth each starts with) per open container; the bottom entry is the
    // top-level value.
    let mut open: Vec<(u64, u16)> = Vec::new();
    let mut top = (1u64, rmpv::decode::MAX_DEPTH as u16);
    loop {
        if top.0 == 0 {
            match open.pop() {
                Some(outer) => top = outer,
                None => return Ok(()),
            }
            continue;
        }
        top.0 -= 1;
        let depth = deeper(top.1)?;
        let children = match rmp::decode::read_marker(rd)? {
            Marker::Null | Marker::True | Marker::False | Marker::Reserved => None,
            Marker::FixPos(_) | Marker::FixNeg(_) => None,
            Marker::U8 | Marker::I8 => rd.read_data_u8().map(|_| None)?,
            Marker::U16 | Marker::I16 => rd.read_data_u16().map(|_| None)?,
            Marker::U32 | Marker::I32 | Marker::F32 => rd.read_data_u32().map(|_| None)?,
            Marker::U64 | Marker::I64 | Marker::F64 => rd.read_data_u64().map(|_| None)?,
            Marker::FixStr(n) => string(rd, usize::from(n), depth).map(|_| None)?,
            Marker::Str8 => {
                let len = usize::from(rd.read_data_u8()?);
                string(rd, len, depth).map(|_| None)?
            }
            Marker::Str16 => {
                let len = usize::from(rd.read_data_u16()?);
                string(rd, len, depth).map(|_| None)?
            }
            Marker::Str32 => {
                let len = rd.read_data_u32()? as usize;
                string(rd, len, depth).map(|_| None)?
            }
            Marker::Bin8 => {
                let len = usize::from(rd.read_data_u8()?);
                bin(rd, len, depth).map(|_| None)?
            }
            Marker::Bin16 => {
                let len = usize::from(rd.read_data_u16()?);
                bin(rd, len, depth).map(|_| None)?
            }
            Marker::Bin32 => {
                let len = rd.read_data_u32()? as usize;
                bin(rd, len, depth).map(|_| None)?
            }
            Marker::FixExt1 => ext(rd, 1, depth).map(|_| None)?,
            Marker::FixExt2 => ext(rd, 2, depth).map(|_| None)?,
            Marker::FixExt4 => ext(rd, 4, depth).map(|_| None)?,
            Marker::FixExt8 => ext(rd, 8, depth).map(|_| None)?,
            Marker::FixExt16 => ext(rd, 16, depth).map(|_| None)?,
            Marker::Ext8 => {
                let len = usize::from(rd.read_data_u8()?);
                ext(rd, len, depth).map(|_| None)?
            }
            Marker::Ext16 => {
                let len = usize::from(rd.read_data_u16()?);
                ext(rd, len, depth).map(|_| None)?
            }
            Marker::Ext32 => {
                let len = rd.read_data_u32()? as usize;
                ext(rd, len, depth).map(|_| None)?
            }
            Marker::FixArray(n) => Some(u64::from(n)),
            Marker::Array16 => Some(u64::from(rd.read_data_u16()?)),
            Marker::Array32 => Some(u64::from(rd.read_data_u32()?)),
            Marker::FixMap(n) => Some(2 * u64::from(n)),
            Marker::Map16 => Some(2 * u64::from(rd.read_data_u16()?)),
            Marker::Map32 => Some(2 * u64::from(rd.read_data_u32()?)),
        };
        if let Some(n) = children {
            let inner = deeper(depth)?;
            open.push(top);
            top = (n, inner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_through_msgpack() {
        let weir = decode(Format::Json, Some(br#"{"auction": 7, "price": 12.5, "t": 1000}"#)).unwrap();
        assert_eq!(field_time(&weir, "t").unwrap(), 1000);
        let back = encode(Format::Json, &weir).unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&back).unwrap();
        assert_eq!(v["auction"], 7);
        assert!(decode(Format::Json, Some(b"{nope")).unwrap_err().to_string().contains("not JSON"));
        // The bytes of the `serde_json::Value` conversion (sorted keys, the last duplicate).
        let text =
            br#"{"z": [1, -2, 3.5, "\u00e9"], "a": {"y": null, "x": true}, "a": 18446744073709551615}"#;
        let value: serde_json::Value = serde_json::from_slice(text).unwrap();
        assert_eq!(&decode(Format::Json, Some(text)).unwrap()[..], &crate::record::to_msgpack(&value)[..]);
        // A string header promising 5 bytes with 1 after it.
        assert!(decode(Format::Msgpack, Some(&[0xa5, b'a'])).is_err());
        assert!(
            decode(Format::Msgpack, Some(&[0x01, 0x02]))
                .unwrap_err()
                .to_string()
                .contains("after its MessagePack value")
        );
        assert!(decode(Format::Raw, None).unwrap().is_empty());
        assert_eq!(encode(Format::Raw, b"").unwrap(), None);
        assert!(field_time(&weir, "missing").unwrap_err().to_string().contains("no field"));
    }

    /// The checks as they were, on `rmpv` value trees: what the walkers must match.
    mod before {
        use super::super::FormatError;

        pub fn decode_msgpack(b: &[u8]) -> Result<&[u8], FormatError> {
            let mut cursor = b;
            match rmpv::decode::read_value(&mut cursor) {
                Ok(_) if cursor.is_empty() => Ok(b),
                Ok(_) => Err(FormatError::TrailingBytes(cursor.len())),
                Err(e) => Err(FormatError::NotMsgpack(e.to_string())),
            }
        }

        pub fn encode_json(bytes: &[u8]) -> Result<Option<Vec<u8>>, FormatError> {
            if bytes.is_empty() {
                return Ok(None);
            }
            let mut cursor = bytes;
            match rmpv::decode::read_value(&mut cursor) {
                Ok(_) if cursor.is_empty() => {}
                _ => return Err(FormatError::NotJsonWritable),
            }
            let json = crate::record::msgpack_to_json(bytes);
            Ok(Some(serde_json::to_vec(&json).map_err(|e| FormatError::JsonEncoding(e.to_string()))?))
        }

        pub fn field_time(msgpack: &[u8], field: &str) -> Result<i64, FormatError> {
            let mut cursor = msgpack;
            let value =
                rmpv::decode::read_value(&mut cursor).map_err(|e| FormatError::NotMsgpack(e.to_string()))?;
            let rmpv::Value::Map(entries) = value else {
                return Err(FormatError::NotAMap(field.to_string()));
            };
            let found = entries.iter().find(|(k, _)| k.as_str() == Some(field)).map(|(_, v)| v);
            match found {
                Some(rmpv::Value::Integer(i)) => {
                    i.as_i64().ok_or_else(|| FormatError::FieldRange(field.to_string()))
                }
                Some(rmpv::Value::F64(f)) if f.fract() == 0.0 => Ok(*f as i64),
                Some(other) => {
                    // The one difference: what it holds is cut after 200 bytes.
                    let mut value = other.to_string();
                    if value.len() > 200 {
                        let mut end = 200;
                        while !value.is_char_boundary(end) {
                            end -= 1;
                        }
                        value.truncate(end);
                        value.push('…');
                    }
                    Err(FormatError::FieldNotInteger { field: field.to_string(), value })
                }
                None => Err(FormatError::NoField(field.to_string())),
            }
        }
    }

    /// splitmix64: a small seeded generator for the comparisons.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Random MessagePack-like bytes: every marker, lengths right and wrong, nesting, keys
    /// `t`, invalid UTF-8, duplicate keys; sometimes cut short or followed by more bytes.
    fn random_value(rng: &mut Rng, out: &mut Vec<u8>, depth: u32) {
        let pick = rng.below(if depth > 5 { 14 } else { 20 });
        let rand_bytes = |rng: &mut Rng, out: &mut Vec<u8>, n: usize| {
            for _ in 0..n {
                out.push(match rng.below(4) {
                    0 => 0xff,
                    1 => b't',
                    _ => b'a' + rng.below(3) as u8,
                });
            }
        };
        match pick {
            0 => out.push(0xc0),
            1 => out.push(0xc2 + rng.below(2) as u8),
            2 => out.push(rng.next() as u8), // any single byte, reserved 0xc1 included
            3 => {
                out.push([0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3][rng.below(8) as usize]);
                let n = [1, 2, 4, 8][rng.below(4) as usize];
                out.extend((0..n).map(|_| rng.next() as u8));
            }
            4 => {
                out.push(0xca + rng.below(2) as u8);
                let f =
                    [0.0f64, 1.0, -2.0, 0.5, 1e300, f64::NAN, f64::INFINITY, 1234.0][rng.below(8) as usize];
                if out[out.len() - 1] == 0xca {
                    out.extend((f as f32).to_be_bytes());
                } else {
                    out.extend(f.to_be_bytes());
                }
            }
            5 | 6 => {
                let n = rng.below(4) as usize;
                out.push(0xa0 | n as u8);
                rand_bytes(rng, out, n);
            }
            7 => {
                let n = rng.below(4) as usize;
                out.extend([0xd9, n as u8]);
                rand_bytes(rng, out, n);
            }
            8 => {
                let n = rng.below(3) as usize;
                out.extend([[0xc4, n as u8].as_slice(), &[0xc5, 0, n as u8]][rng.below(2) as usize]);
                rand_bytes(rng, out, n);
            }
            9 => {
                let (marker, n) = [(0xd4u8, 1usize), (0xd5, 2), (0xd6, 4), (0xc7, 3)][rng.below(4) as usize];
                out.push(marker);
                if marker == 0xc7 {
                    out.push(n as u8);
                }
                out.push(rng.next() as u8);
                rand_bytes(rng, out, n);
            }
            10..=13 => out.push(rng.below(0x80) as u8 | if rng.below(2) == 0 { 0 } else { 0xe0 }),
            14..=16 => {
                let n = rng.below(4);
                if rng.below(4) == 0 {
                    out.extend([0xdc, 0, n as u8]);
                } else {
                    out.push(0x90 | n as u8);
                }
                for _ in 0..n {
                    random_value(rng, out, depth + 1);
                }
            }
            _ => {
                let n = rng.below(4);
                if rng.below(4) == 0 {
                    out.extend([0xde, 0, n as u8]);
                } else {
                    out.push(0x80 | n as u8);
                }
                for _ in 0..n {
                    match rng.below(3) {
                        0 => out.extend([0xa1, b't']),
                        1 => random_value(rng, out, depth + 1),
                        _ => out.extend([0xa1, b'a' + rng.below(3) as u8]),
                    }
                    random_value(rng, out, depth + 1);
                }
            }
        }
    }

    #[test]
    fn the_walkers_accept_and_refuse_what_the_value_trees_did() {
        let seed = std::env::var("WEIR_FORMAT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64)
        });
        println!("seed {seed} (WEIR_FORMAT_SEED={seed} replays it)");
        let mut rng = Rng(seed);
        let (mut accepted, mut timed) = (0, 0);
        for case in 0..30_000 {
            let mut bytes = Vec::new();
            random_value(&mut rng, &mut bytes, 0);
            match rng.below(8) {
                0 => bytes.truncate(rng.below(bytes.len() as u64 + 1) as usize),
                1 => bytes.push(rng.next() as u8),
                2 if !bytes.is_empty() => {
                    let at = rng.below(bytes.len() as u64) as usize;
                    bytes[at] = rng.next() as u8;
                }
                _ => {}
            }
            let said = |what: &str| format!("seed {seed}, case {case}, {what} of {bytes:02x?}");
            let new = decode(Format::Msgpack, Some(&bytes)).map(|b| b.to_vec());
            assert_eq!(new, before::decode_msgpack(&bytes).map(|b| b.to_vec()), "{}", said("decode"));
            accepted += usize::from(new.is_ok());
            assert_eq!(encode(Format::Json, &bytes), before::encode_json(&bytes), "{}", said("encode"));
            let time = field_time(&bytes, "t");
            assert_eq!(time, before::field_time(&bytes, "t"), "{}", said("field_time"));
            timed += usize::from(time.is_ok());
        }
        // The inputs reach both sides of every check.
        assert!(accepted > 3_000 && timed > 100, "accepted {accepted}, timed {timed}");
    }

    #[test]
    fn the_depth_limit_falls_where_it_did() {
        // The old value trees recurse about 500 levels here: more than a 2 MiB test thread
        // (or a tokio worker's stack) holds in a debug build.
        std::thread::Builder::new().stack_size(256 << 20).spawn(depth_limit_cases).unwrap().join().unwrap();
    }

    fn depth_limit_cases() {
        for inner in [&[0xc0u8][..], &[0xa1, b'x'], &[0xc4, 0], &[0xd4, 1, 2], &[0x80]] {
            for n in 500..520 {
                let mut bytes = vec![0x91; n];
                bytes.extend_from_slice(inner);
                assert_eq!(
                    decode(Format::Msgpack, Some(&bytes)).map(|b| b.to_vec()),
                    before::decode_msgpack(&bytes).map(|b| b.to_vec()),
                    "{n} arrays around {inner:02x?}"
                );
                assert_eq!(encode(Format::Json, &bytes), before::encode_json(&bytes));
            }
        }
    }

    #[test]
    fn a_million_nested_containers_are_refused_without_recursion() {
        // On this thread's stack (2 MiB for a test), a recursive walk of a million levels
        // would overflow; the walkers stop at the depth limit.
        for open in [0x91u8, 0x81] {
            let mut bytes = vec![open; 1_000_000];
            bytes.push(0xc0);
            let refused = decode(Format::Msgpack, Some(&bytes)).unwrap_err();
            assert_eq!(refused.to_string(), "is not MessagePack (depth limit exceeded)");
            assert_eq!(encode(Format::Json, &bytes), Err(FormatError::NotJsonWritable));
            assert!(field_time(&bytes, "t").unwrap_err().to_string().contains("depth limit exceeded"));
        }
        let json = vec![b'['; 1_000_000];
        assert!(decode(Format::Json, Some(&json)).unwrap_err().to_string().contains("not JSON"));
    }

    #[test]
    fn a_long_map_gives_its_field_and_json_without_a_tree() {
        let map: Vec<(String, i64)> = (0..100_000).map(|i| (format!("f{i}"), i)).collect();
        let mut entries: Vec<(rmpv::Value, rmpv::Value)> =
            map.iter().map(|(k, v)| (k.as_str().into(), (*v).into())).collect();
        entries.push(("t".into(), 42.into()));
        entries.push(("t".into(), "later".into()));
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &rmpv::Value::Map(entries)).unwrap();
        assert_eq!(field_time(&bytes, "t"), Ok(42));
        assert_eq!(encode(Format::Json, &bytes), before::encode_json(&bytes));
        let long = rmpv::Value::Map(vec![("t".into(), rmpv::Value::Array(vec![7.into(); 1000]))]);
        let mut bytes = Vec::new();
        rmpv::encode::write_value(&mut bytes, &long).unwrap();
        let said = field_time(&bytes, "t").unwrap_err().to_string();
        assert!(said.starts_with("field `t` is [7, 7") && said.ends_with("…, not an integer (ms)"), "{said}");
    }
}
