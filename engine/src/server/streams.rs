//! The tenant's view of the built-in stream log: names scoped to the tenant, records given
//! and returned as JSON (stored as MessagePack, Weir's record encoding).

use std::sync::atomic::{AtomicU64, Ordering};

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use weir_store::{LogRecord, Store, StoreError};

use super::error::{ServerError, ServerResult};
use super::tenants::printable;
use crate::key_groups::key_group;

/// tenant → bytes of records appended through the API.
const STREAM_USAGE: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.stream_usage");

/// Longest stream name a tenant may use.
pub const MAX_STREAM_NAME: usize = 100;

/// Most records returned by one read.
pub const MAX_READ: usize = 10_000;

/// The store's name of a tenant's stream: `<tenant>.<name>`. Checks the name.
pub fn internal_stream_name(tenant: &str, name: &str) -> ServerResult<String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_STREAM_NAME
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !ok {
        return Err(ServerError::BadRequest(format!(
            "invalid stream name `{}` (allowed: 1 to {MAX_STREAM_NAME} characters of A-Z a-z 0-9 . _ -, not starting with '.')",
            printable(name)
        )));
    }
    Ok(format!("{tenant}.{name}"))
}

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

/// A record to append.
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
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

/// A stored record.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct StoredRecord {
    /// Its partition.
    pub partition: u32,
    /// Its offset in the partition.
    pub offset: u64,
    /// The key as JSON (null for none).
    #[schema(value_type = Object, nullable)]
    pub key: serde_json::Value,
    /// The value as JSON.
    #[schema(value_type = Object)]
    pub value: serde_json::Value,
    /// Event time, unix ms.
    pub timestamp: i64,
}

/// Where an appended record went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct Appended {
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: u64,
}

/// Streams of tenants.
#[derive(Debug)]
pub struct Streams {
    store: Store,
    round_robin: AtomicU64,
}

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

/// A store error about a tenant's stream, with the tenant's name for it.
fn user_err(e: StoreError, internal: &str, name: &str) -> ServerError {
    let message = e.to_string().replace(internal, name);
    match ServerError::from(e) {
        ServerError::BadRequest(_) => ServerError::BadRequest(message),
        ServerError::NotFound(_) => ServerError::NotFound(message),
        ServerError::Conflict(_) => ServerError::Conflict(message),
        other => other,
    }
}

/// Deepest nesting of arrays and maps accepted in MessagePack (JSON's parser stops at 128
/// too): serde's decoders recurse once per level, and a deeper value would overflow a
/// worker's stack and abort the whole server.
pub const MAX_MSGPACK_DEPTH: usize = 128;

/// Checks that the MessagePack in `bytes` nests arrays and maps at most `max` deep, without
/// recursion. Truncated or malformed input passes: the decoder reports it.
pub fn check_msgpack_depth(bytes: &[u8], max: usize) -> Result<(), String> {
    use rmp::Marker;
    let be = |at: usize, n: usize| -> Option<u64> {
        let b = bytes.get(at..at.checked_add(n)?)?;
        Some(b.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    };
    let mut pos = 0usize;
    // Items still to read at each open level; the bottom one is the top-level value.
    let mut stack: Vec<u64> = vec![1];
    while let Some(top) = stack.last_mut() {
        if *top == 0 {
            stack.pop();
            continue;
        }
        *top -= 1;
        let Some(&byte) = bytes.get(pos) else { return Ok(()) };
        pos += 1;
        let (children, skip): (Option<u64>, Option<u64>) = match Marker::from_u8(byte) {
            Marker::FixArray(n) => (Some(u64::from(n)), Some(0)),
            Marker::FixMap(n) => (Some(2 * u64::from(n)), Some(0)),
            Marker::Array16 => (be(pos, 2), Some(2)),
            Marker::Array32 => (be(pos, 4), Some(4)),
            Marker::Map16 => (be(pos, 2).map(|n| 2 * n), Some(2)),
            Marker::Map32 => (be(pos, 4).map(|n| 2 * n), Some(4)),
            Marker::FixStr(n) => (None, Some(u64::from(n))),
            Marker::Str8 | Marker::Bin8 => (None, be(pos, 1).map(|n| 1 + n)),
            Marker::Str16 | Marker::Bin16 => (None, be(pos, 2).map(|n| 2 + n)),
            Marker::Str32 | Marker::Bin32 => (None, be(pos, 4).map(|n| 4 + n)),
            Marker::U8 | Marker::I8 => (None, Some(1)),
            Marker::U16 | Marker::I16 => (None, Some(2)),
            Marker::U32 | Marker::I32 | Marker::F32 => (None, Some(4)),
            Marker::U64 | Marker::I64 | Marker::F64 => (None, Some(8)),
            Marker::FixExt1 => (None, Some(2)),
            Marker::FixExt2 => (None, Some(3)),
            Marker::FixExt4 => (None, Some(5)),
            Marker::FixExt8 => (None, Some(9)),
            Marker::FixExt16 => (None, Some(17)),
            Marker::Ext8 => (None, be(pos, 1).map(|n| 2 + n)),
            Marker::Ext16 => (None, be(pos, 2).map(|n| 3 + n)),
            Marker::Ext32 => (None, be(pos, 4).map(|n| 5 + n)),
            _ => (None, Some(0)),
        };
        let Some(skip) = skip else { return Ok(()) };
        pos = pos.saturating_add(usize::try_from(skip).unwrap_or(usize::MAX));
        if let Some(n) = children {
            // The bottom entry is not a level of nesting; an empty container is one.
            if stack.len() > max {
                return Err(format!("it nests arrays and maps more than {max} deep"));
            }
            // A length bigger than the rest of the input ends the walk at the input's end.
            stack.push(n);
        }
        if pos > bytes.len() {
            return Ok(());
        }
    }
    Ok(())
}

/// Encodes a JSON value as MessagePack.
pub fn json_to_msgpack(value: &serde_json::Value) -> ServerResult<Vec<u8>> {
    rmp_serde::to_vec(value).map_err(|e| ServerError::BadRequest(format!("cannot encode the record: {e}")))
}

/// Decodes MessagePack as JSON where it can (binary becomes an array of bytes); bytes that
/// are not MessagePack, or nest deeper than [`MAX_MSGPACK_DEPTH`] (a job's sink may write
/// anything), come back as `{"hex": "<their hex>"}`.
pub fn msgpack_to_json(bytes: &[u8]) -> serde_json::Value {
    if bytes.is_empty() {
        return serde_json::Value::Null;
    }
    if check_msgpack_depth(bytes, MAX_MSGPACK_DEPTH).is_err() {
        return serde_json::json!({ "hex": hex::encode(bytes) });
    }
    let mut slice = bytes;
    match rmpv::decode::read_value(&mut slice) {
        Ok(v) if slice.is_empty() => serde_json::to_value(&v).unwrap_or(serde_json::Value::Null),
        _ => serde_json::json!({ "hex": hex::encode(bytes) }),
    }
}

impl Streams {
    /// The streams in `store` (creates the usage table).
    pub fn open(store: &Store) -> ServerResult<Self> {
        let txn = store.database().begin_write().map_err(db_err)?;
        txn.open_table(STREAM_USAGE).map_err(db_err)?;
        txn.commit().map_err(db_err)?;
        Ok(Streams { store: store.clone(), round_robin: AtomicU64::new(0) })
    }

    /// Creates stream `name` of `tenant` (idempotent with the same partition count).
    pub fn create(&self, tenant: &str, name: &str, partitions: u32) -> ServerResult<StreamInfo> {
        let internal = internal_stream_name(tenant, name)?;
        self.store.create_stream(&internal, partitions).map_err(|e| user_err(e, &internal, name))?;
        self.get(tenant, name)
    }

    /// Stream `name` of `tenant`.
    pub fn get(&self, tenant: &str, name: &str) -> ServerResult<StreamInfo> {
        let internal = internal_stream_name(tenant, name)?;
        let partitions = self.store.stream_partitions(&internal).map_err(|e| user_err(e, &internal, name))?;
        let end_offsets = (0..partitions)
            .map(|p| self.store.end_offset(&internal, p).map_err(|e| user_err(e, &internal, name)))
            .collect::<ServerResult<_>>()?;
        Ok(StreamInfo { name: name.to_string(), partitions, end_offsets })
    }

    /// The streams of `tenant`, by name.
    pub fn list(&self, tenant: &str) -> ServerResult<Vec<StreamInfo>> {
        let prefix = format!("{tenant}.");
        let mut out = Vec::new();
        for (internal, _) in self.store.streams()? {
            if let Some(name) = internal.strip_prefix(&prefix) {
                out.push(self.get(tenant, name)?);
            }
        }
        Ok(out)
    }

    /// Bytes appended by `tenant` through the API.
    pub fn usage(&self, tenant: &str) -> ServerResult<u64> {
        let txn = self.store.database().begin_read().map_err(db_err)?;
        let t = txn.open_table(STREAM_USAGE).map_err(db_err)?;
        Ok(t.get(tenant).map_err(db_err)?.map(|v| v.value()).unwrap_or(0))
    }

    /// Appends `records` to stream `name` of `tenant`; the whole request or nothing.
    pub fn append(&self, tenant: &str, name: &str, records: Vec<NewRecord>) -> ServerResult<Vec<Appended>> {
        let internal = internal_stream_name(tenant, name)?;
        let partitions = self.store.stream_partitions(&internal).map_err(|e| user_err(e, &internal, name))?;
        let now = crate::clock::unix_ms() as i64;
        let mut by_partition: std::collections::BTreeMap<u32, Vec<(usize, LogRecord)>> = Default::default();
        let mut bytes = 0u64;
        for (i, r) in records.into_iter().enumerate() {
            let key = match &r.key {
                None | Some(serde_json::Value::Null) => Vec::new(),
                Some(k) => json_to_msgpack(k)?,
            };
            let value = json_to_msgpack(&r.value)?;
            let partition = match r.partition {
                Some(p) if p >= partitions => {
                    return Err(ServerError::BadRequest(format!(
                        "record {i}: stream `{name}` has {partitions} partition(s); partition {p} does not exist"
                    )));
                }
                Some(p) => p,
                None if !key.is_empty() => key_group(&key, partitions),
                None => (self.round_robin.fetch_add(1, Ordering::Relaxed) % u64::from(partitions)) as u32,
            };
            bytes += (key.len() + value.len() + 8) as u64;
            by_partition
                .entry(partition)
                .or_default()
                .push((i, LogRecord { key, value, timestamp: r.timestamp.unwrap_or(now) }));
        }
        let count = by_partition.values().map(Vec::len).sum();
        let mut out = vec![Appended { partition: 0, offset: 0 }; count];
        let mut groups = Vec::new();
        let mut positions = Vec::new();
        for (p, rs) in by_partition {
            let (indices, records): (Vec<usize>, Vec<LogRecord>) = rs.into_iter().unzip();
            groups.push((p, records));
            positions.push((p, indices));
        }
        let firsts = self
            .store
            .append_partitions(&internal, &groups.iter().map(|(p, r)| (*p, r.as_slice())).collect::<Vec<_>>())
            .map_err(|e| user_err(e, &internal, name))?;
        for ((p, indices), first) in positions.into_iter().zip(firsts) {
            for (k, i) in indices.into_iter().enumerate() {
                out[i] = Appended { partition: p, offset: first + k as u64 };
            }
        }
        let txn = self.store.database().begin_write().map_err(db_err)?;
        {
            let mut t = txn.open_table(STREAM_USAGE).map_err(db_err)?;
            let used = t.get(tenant).map_err(db_err)?.map(|v| v.value()).unwrap_or(0);
            t.insert(tenant, used + bytes).map_err(db_err)?;
        }
        txn.commit().map_err(db_err)?;
        Ok(out)
    }

    /// Reads up to `limit` records of partition `partition` from `offset`.
    pub fn read(
        &self,
        tenant: &str,
        name: &str,
        partition: u32,
        offset: u64,
        limit: usize,
    ) -> ServerResult<Vec<(u64, LogRecord)>> {
        let internal = internal_stream_name(tenant, name)?;
        let partitions = self.store.stream_partitions(&internal).map_err(|e| user_err(e, &internal, name))?;
        if partition >= partitions {
            return Err(ServerError::BadRequest(format!(
                "stream `{name}` has {partitions} partition(s); partition {partition} does not exist"
            )));
        }
        self.store
            .read(&internal, partition, offset, limit.clamp(1, MAX_READ))
            .map_err(|e| user_err(e, &internal, name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> Vec<u8> {
        let mut v = vec![0x91; depth];
        v.push(0xc0);
        v
    }

    #[test]
    fn msgpack_depth_is_counted_without_recursion() {
        assert!(check_msgpack_depth(&nested(128), 128).is_ok());
        assert!(check_msgpack_depth(&nested(129), 128).is_err());
        assert!(check_msgpack_depth(&nested(1_000_000), 128).is_err());
        // Maps count too; scalars, strings and binaries of every width are skipped.
        let mut map = vec![0x81, 0xa1, b'k'];
        map.extend(nested(127));
        assert!(check_msgpack_depth(&map, 128).is_ok());
        let value = serde_json::json!({ "a": [1, -1, 300, -300, 70000, 1.5, "s", null, true, { "b": [[[]]] }], "c": "x".repeat(300) });
        let bytes = json_to_msgpack(&value).unwrap();
        assert!(check_msgpack_depth(&bytes, 6).is_ok());
        assert!(check_msgpack_depth(&bytes, 5).is_err());
        // Truncated and empty input is left to the decoder.
        assert!(check_msgpack_depth(&[0xdd, 0xff, 0xff, 0xff, 0xff], 128).is_ok());
        assert!(check_msgpack_depth(&[], 128).is_ok());
    }

    #[test]
    fn deep_stored_values_read_back_as_hex() {
        let deep = nested(100_000);
        assert_eq!(msgpack_to_json(&deep), serde_json::json!({ "hex": hex::encode(&deep) }));
        assert_eq!(msgpack_to_json(&nested(3)), serde_json::json!([[[null]]]));
    }
}
