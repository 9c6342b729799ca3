//! Streams and their records.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::server::msgpack::{Encoded, MAX_MSGPACK_DEPTH, check_msgpack_depth, json_to_msgpack};
use crate::server::{self, ServerError};

/// A stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StreamInfo {
    /// Its name.
    pub name: String,
    /// Number of partitions.
    pub partitions: u32,
    /// The next offset of every partition (records so far).
    pub end_offsets: Vec<u64>,
}

impl From<server::streams::StreamInfo> for StreamInfo {
    fn from(s: server::streams::StreamInfo) -> Self {
        StreamInfo { name: s.name, partitions: s.partitions, end_offsets: s.end_offsets }
    }
}

/// A new stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewStream {
    /// Its name: 1 to 100 characters of A-Z a-z 0-9 . _ -, not starting with `.`.
    #[schema(pattern = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$", min_length = 1, max_length = 100)]
    pub name: String,
    /// Its number of partitions (1 to 1024, default 1).
    #[serde(default = "one")]
    #[schema(minimum = 1, maximum = 1024)]
    pub partitions: u32,
}

fn one() -> u32 {
    1
}

/// A record to append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRecord {
    /// The key (any JSON value; absent or null for none). Keyed records go to the partition
    /// of the key's hash.
    #[serde(default)]
    #[schema(value_type = Object, nullable)]
    pub key: Option<serde_json::Value>,
    /// The value (any JSON value).
    #[schema(value_type = Object)]
    pub value: serde_json::Value,
    /// Event time, unix ms (default: now).
    #[serde(default)]
    pub timestamp: Option<i64>,
    /// The partition (default: by key, or round robin).
    #[serde(default)]
    pub partition: Option<u32>,
}

impl TryFrom<NewRecord> for server::streams::NewRecord {
    type Error = ServerError;

    fn try_from(r: NewRecord) -> Result<Self, ServerError> {
        let key = match &r.key {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(k) => json_to_msgpack(k)?,
        };
        Ok(server::streams::NewRecord {
            key,
            value: json_to_msgpack(&r.value)?,
            timestamp: r.timestamp,
            partition: r.partition,
        })
    }
}

/// Records to append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendBody {
    /// The records, in order.
    pub records: Vec<NewRecord>,
}

impl AppendBody {
    /// Reads an append body, JSON or (`msgpack`) MessagePack, as the append route does: each
    /// key and value is encoded as MessagePack while the body is parsed ([`Encoded`]: the
    /// bytes a `serde_json::Value` of it would encode to, without building one), so the
    /// records take about what the body takes. A MessagePack body nested deeper than
    /// [`MAX_MSGPACK_DEPTH`] is refused before serde's recursive decoder sees it. What the
    /// route runs on every body (and the fuzz target `append_msgpack` of `engine/fuzz`).
    pub fn encoded(body: &[u8], msgpack: bool) -> Result<Vec<server::streams::NewRecord>, ServerError> {
        let body: EncodedBody = if msgpack {
            // The body's own map, list and record take three levels.
            check_msgpack_depth(body, MAX_MSGPACK_DEPTH + 3).map_err(|_| {
                ServerError::BadRequest(format!(
                    "invalid MessagePack body: a record nests arrays and maps more than {MAX_MSGPACK_DEPTH} deep"
                ))
            })?;
            rmp_serde::from_slice(body)
                .map_err(|e| ServerError::BadRequest(format!("invalid MessagePack body: {e}")))?
        } else {
            crate::api::parse_json(body)?
        };
        Ok(body
            .records
            .into_iter()
            .map(|r| server::streams::NewRecord {
                // No key, or a null one: none.
                key: r.key.filter(|k| k.0 != [0xc0]).map(|k| k.0).unwrap_or_default(),
                value: r.value.0,
                timestamp: r.timestamp,
                partition: r.partition,
            })
            .collect())
    }
}

/// [`AppendBody`] with its keys and values encoded as they are read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EncodedBody {
    records: Vec<EncodedRecord>,
}

/// [`NewRecord`] with its key and value encoded as they are read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EncodedRecord {
    #[serde(default)]
    key: Option<Encoded>,
    value: Encoded,
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default)]
    partition: Option<u32>,
}

/// Where an appended record went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Appended {
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: u64,
}

impl From<server::streams::Appended> for Appended {
    fn from(a: server::streams::Appended) -> Self {
        Appended { partition: a.partition, offset: a.offset }
    }
}

/// A stored record.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct StoredRecord {
    /// Its partition.
    pub partition: u32,
    /// Its offset in the partition.
    pub offset: u64,
    /// The key as JSON (null for none).
    #[schema(value_type = Object, nullable)]
    pub key: Box<serde_json::value::RawValue>,
    /// The value as JSON.
    #[schema(value_type = Object)]
    pub value: Box<serde_json::value::RawValue>,
    /// Event time, unix ms.
    pub timestamp: i64,
}

impl From<server::streams::StoredRecord> for StoredRecord {
    fn from(r: server::streams::StoredRecord) -> Self {
        StoredRecord {
            partition: r.partition,
            offset: r.offset,
            key: r.key,
            value: r.value,
            timestamp: r.timestamp,
        }
    }
}

/// Records read.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReadBody {
    /// The records, keys and values decoded from MessagePack to JSON.
    pub data: Vec<StoredRecord>,
    /// The offset to read from next.
    pub next_offset: u64,
}

impl From<server::streams::Records> for ReadBody {
    fn from(r: server::streams::Records) -> Self {
        ReadBody { data: r.records.into_iter().map(Into::into).collect(), next_offset: r.next_offset }
    }
}

/// What to read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
pub struct ReadQuery {
    /// The partition (default 0).
    pub partition: Option<u32>,
    /// The first offset (default 0).
    pub offset: Option<u64>,
    /// Most records (default 1000, at most 10000).
    pub limit: Option<usize>,
}
