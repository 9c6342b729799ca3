//! Key and value formats: how Kafka's bytes become a Weir record's bytes and back.
//!
//! Weir's convention is MessagePack (a record's key and value are MessagePack; an empty key is
//! no key). `raw` passes bytes through untouched both ways; `json` converts JSON text to
//! MessagePack on the way in and MessagePack to JSON on the way out; `msgpack` checks that the
//! bytes are one MessagePack value and passes them through.

use std::borrow::Cow;

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

/// Kafka bytes (`None`: null) → Weir bytes. A null becomes empty bytes in `raw` (no key, or
/// an empty value) and MessagePack nil otherwise.
/// Borrows the bytes where no conversion is needed (`raw`, `msgpack`): no copy per record.
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
            match rmpv::decode::read_value(&mut cursor) {
                Ok(_) if cursor.is_empty() => Ok(Cow::Borrowed(b)),
                Ok(_) => Err(FormatError::TrailingBytes(cursor.len())),
                Err(e) => Err(FormatError::NotMsgpack(e.to_string())),
            }
        }
    }
}

/// Weir bytes → Kafka bytes (`None`: null, for an empty key or value in `raw`).
pub fn encode(format: Format, bytes: &[u8]) -> Result<Option<Vec<u8>>, FormatError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    match format {
        Format::Raw | Format::Msgpack => Ok(Some(bytes.to_vec())),
        Format::Json => {
            let mut cursor = bytes;
            match rmpv::decode::read_value(&mut cursor) {
                Ok(_) if cursor.is_empty() => {}
                _ => return Err(FormatError::NotJsonWritable),
            }
            let json = crate::record::msgpack_to_json(bytes);
            Ok(Some(serde_json::to_vec(&json).map_err(|e| FormatError::JsonEncoding(e.to_string()))?))
        }
    }
}

/// The integer field `field` of a MessagePack map (an event time in ms).
pub fn field_time(msgpack: &[u8], field: &str) -> Result<i64, FormatError> {
    let mut cursor = msgpack;
    let value = rmpv::decode::read_value(&mut cursor).map_err(|e| FormatError::NotMsgpack(e.to_string()))?;
    let rmpv::Value::Map(entries) = value else {
        return Err(FormatError::NotAMap(field.to_string()));
    };
    let found = entries.iter().find(|(k, _)| k.as_str() == Some(field)).map(|(_, v)| v);
    match found {
        Some(rmpv::Value::Integer(i)) => i.as_i64().ok_or_else(|| FormatError::FieldRange(field.to_string())),
        Some(rmpv::Value::F64(f)) if f.fract() == 0.0 => Ok(*f as i64),
        Some(other) => {
            Err(FormatError::FieldNotInteger { field: field.to_string(), value: other.to_string() })
        }
        None => Err(FormatError::NoField(field.to_string())),
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
}
