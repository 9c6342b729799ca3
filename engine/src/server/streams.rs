//! The tenant's view of the built-in stream log: names scoped to the tenant, records given
//! and returned as JSON (stored as MessagePack, Weir's record encoding).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use weir_store::{LogRecord, Store, StoreError};

use super::error::{ServerError, ServerResult};
use super::ids::printable;
use super::msgpack::write_msgpack_as_json;
use crate::clock::unix_ms;
use crate::key_groups::key_group;

/// Longest stream name a tenant may use.
pub const MAX_STREAM_NAME: usize = 100;

/// Most records returned by one read.
pub const MAX_READ: usize = 10_000;

/// Records read from the store at a time while a page is filled.
const READ_BATCH: usize = 100;

/// Bytes of `value` as JSON (what a page of it costs the answer).
pub(crate) fn json_size(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamInfo {
    /// Its name.
    pub name: String,
    /// Number of partitions.
    pub partitions: u32,
    /// The next offset of every partition (records so far).
    pub end_offsets: Vec<u64>,
}

/// A record to append, its key and value already encoded as MessagePack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// The key's MessagePack (empty for none). Keyed records go to the partition of the
    /// key's hash.
    pub key: Vec<u8>,
    /// The value's MessagePack.
    pub value: Vec<u8>,
    /// Event time, unix ms (default: now).
    pub timestamp: Option<i64>,
    /// The partition (default: by key, or round robin).
    pub partition: Option<u32>,
}

/// A stored record, its key and value decoded from MessagePack to JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredRecord {
    /// Its partition.
    pub partition: u32,
    /// Its offset in the partition.
    pub offset: u64,
    /// The key as JSON text (null for none).
    pub key: Box<serde_json::value::RawValue>,
    /// The value as JSON text.
    pub value: Box<serde_json::value::RawValue>,
    /// Event time, unix ms.
    pub timestamp: i64,
}

/// Records read from one partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Records {
    /// The records, in offset order.
    pub records: Vec<StoredRecord>,
    /// The offset to read from next.
    pub next_offset: u64,
}

/// Where an appended record went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: u64,
}

/// Streams of tenants. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Streams {
    store: Store,
    round_robin: Arc<AtomicU64>,
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

impl Streams {
    /// The streams in `store`. Their records are charged to their tenant by the store
    /// (the tenant's stream namespace, see `super::ledger`).
    pub fn open(store: &Store) -> ServerResult<Self> {
        Ok(Streams { store: store.clone(), round_robin: Arc::default() })
    }

    /// Creates stream `name` of `tenant` (idempotent with the same partition count).
    pub async fn create(&self, tenant: &str, name: &str, partitions: u32) -> ServerResult<StreamInfo> {
        let (this, tenant, name) = (self.clone(), tenant.to_string(), name.to_string());
        tokio::task::spawn_blocking(move || this.create_blocking(&tenant, &name, partitions)).await?
    }

    fn create_blocking(&self, tenant: &str, name: &str, partitions: u32) -> ServerResult<StreamInfo> {
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

    /// Appends `records` to stream `name` of `tenant` in one durable transaction; the whole
    /// request or nothing. The store refuses it with the storage quota error when the
    /// tenant's ledger would pass its limit.
    pub async fn append(
        &self,
        tenant: &str,
        name: &str,
        records: Vec<NewRecord>,
    ) -> ServerResult<Vec<Appended>> {
        let (this, tenant, name) = (self.clone(), tenant.to_string(), name.to_string());
        tokio::task::spawn_blocking(move || this.append_blocking(&tenant, &name, records)).await?
    }

    fn append_blocking(
        &self,
        tenant: &str,
        name: &str,
        records: Vec<NewRecord>,
    ) -> ServerResult<Vec<Appended>> {
        let internal = internal_stream_name(tenant, name)?;
        let partitions = self.store.stream_partitions(&internal).map_err(|e| user_err(e, &internal, name))?;
        let now = unix_ms() as i64;
        let mut by_partition: std::collections::BTreeMap<u32, Vec<(usize, LogRecord)>> = Default::default();
        for (i, r) in records.into_iter().enumerate() {
            let (key, value) = (r.key, r.value);
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
        Ok(out)
    }

    /// Reads up to `limit` records (at most [`MAX_READ`]) of partition `partition` of stream
    /// `name` of `tenant`, from `offset`, and at most `max_bytes` of them as JSON: a page ends
    /// before the record that would pass it (`next_offset` continues after the last record
    /// returned). Keys and values are transcoded straight to JSON text within the room left
    /// (`write_msgpack_as_json`), so a page never takes more than `max_bytes` of JSON, nor a
    /// value tree; a first record that alone passes it answers 413, naming its offset.
    pub async fn read(
        &self,
        tenant: &str,
        name: &str,
        partition: u32,
        offset: u64,
        limit: usize,
        max_bytes: usize,
    ) -> ServerResult<Records> {
        let internal = internal_stream_name(tenant, name)?;
        let (store, name) = (self.store.clone(), name.to_string());
        tokio::task::spawn_blocking(move || {
            let partitions = store.stream_partitions(&internal).map_err(|e| user_err(e, &internal, &name))?;
            if partition >= partitions {
                return Err(ServerError::BadRequest(format!(
                    "stream `{name}` has {partitions} partition(s); partition {partition} does not exist"
                )));
            }
            let limit = limit.clamp(1, MAX_READ);
            let (mut records, mut bytes, mut next_offset) = (Vec::new(), 0usize, offset);
            // Read in small batches so that a page of large records is never all in memory.
            while records.len() < limit {
                let want = (limit - records.len()).min(READ_BATCH);
                let batch = store
                    .read(&internal, partition, next_offset, want)
                    .map_err(|e| user_err(e, &internal, &name))?;
                let short = batch.len() < want;
                for (o, r) in batch {
                    // The record's JSON: its key and value, and the fields around them.
                    let room = max_bytes.saturating_sub(bytes).saturating_sub(RECORD_FIELDS_BYTES);
                    let Some((key, value)) = as_json(&r.key, &r.value, room) else {
                        if records.is_empty() {
                            return Err(ServerError::TooLarge(format!(
                                "the record at offset {o} of partition {partition} takes more than the server's \
                                 max_page_bytes ({max_bytes}) as JSON; read on from offset {}",
                                o + 1
                            )));
                        }
                        return Ok(Records { records, next_offset });
                    };
                    bytes += key.get().len() + value.get().len() + RECORD_FIELDS_BYTES;
                    next_offset = o + 1;
                    records.push(StoredRecord { partition, offset: o, key, value, timestamp: r.timestamp });
                }
                if short {
                    break;
                }
            }
            Ok(Records { records, next_offset })
        })
        .await?
    }
}

/// What a record's JSON takes besides its key and value: the field names, the partition, the
/// offset and the timestamp at their longest, and the separators.
const RECORD_FIELDS_BYTES: usize =
    r#"{"partition":,"offset":,"key":,"value":,"timestamp":},"#.len() + 10 + 20 + 20;

/// A record's key and value as JSON text within `room` bytes together, or None.
fn as_json(
    key: &[u8],
    value: &[u8],
    room: usize,
) -> Option<(Box<serde_json::value::RawValue>, Box<serde_json::value::RawValue>)> {
    let mut key_text = Vec::new();
    write_msgpack_as_json(key, &mut key_text, room).ok()?;
    let mut value_text = Vec::new();
    write_msgpack_as_json(value, &mut value_text, room - key_text.len()).ok()?;
    let raw = |text: Vec<u8>| {
        let text = String::from_utf8(text).expect("serde_json writes UTF-8");
        serde_json::value::RawValue::from_string(text).expect("serde_json writes JSON")
    };
    Some((raw(key_text), raw(value_text)))
}
