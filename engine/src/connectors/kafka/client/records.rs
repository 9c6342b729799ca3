//! Record batches: encoding what the sink produces, decoding what a fetch returns.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::conn::whole_batches;
use super::{FetchedPartition, KafkaError, ProducerIdentity};

/// A record as a fetch returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedRecord {
    /// Offset in its partition.
    pub offset: i64,
    /// Timestamp (ms): creation or log-append time, as the topic is configured.
    pub timestamp: i64,
    /// Key (`None`: null).
    pub key: Option<Bytes>,
    /// Value (`None`: a tombstone).
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<(String, Option<Bytes>)>,
}

impl FetchedRecord {
    /// The value of header `name` (the first one of that name).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers.iter().find(|(n, _)| n == name).and_then(|(_, v)| v.as_deref())
    }
}

/// A record to produce.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProduceRecord {
    /// Key (`None`: null).
    pub key: Option<Vec<u8>>,
    /// Value.
    pub value: Option<Vec<u8>>,
    /// Timestamp (ms).
    pub timestamp: i64,
    /// Headers.
    pub headers: Vec<(String, Vec<u8>)>,
}

impl ProduceRecord {
    /// Bytes the record takes in a batch, roughly (for sizing requests).
    pub fn size(&self) -> usize {
        24 + self.key.as_ref().map_or(0, Vec::len)
            + self.value.as_ref().map_or(0, Vec::len)
            + self.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum::<usize>()
    }
}

/// Encodes `records` as one record batch (format v2). With `producer`, the batch carries the
/// producer id, epoch and `base_sequence` (idempotent or transactional produce).
pub fn encode_batch(
    records: &[ProduceRecord],
    producer: Option<(ProducerIdentity, i32)>,
    transactional: bool,
    compression: Compression,
) -> Result<Bytes, KafkaError> {
    let (id, epoch, base) = match producer {
        Some((p, s)) => (p.id, p.epoch, s),
        None => (-1, -1, -1),
    };
    let list: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: id,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: if base < 0 { -1 } else { base.wrapping_add(i as i32) },
            timestamp: r.timestamp,
            key: r.key.clone().map(Bytes::from),
            value: r.value.clone().map(Bytes::from),
            headers: r
                .headers
                .iter()
                .map(|(n, v)| (StrBytes::from_string(n.clone()), Some(Bytes::from(v.clone()))))
                .collect::<IndexMap<_, _>>(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, &list, &RecordEncodeOptions { version: 2, compression })
        .map_err(|e| KafkaError::Protocol(format!("cannot encode a record batch: {e}")))?;
    Ok(buf.freeze())
}

pub(super) fn failed(topic: &str, partition: i32, offset: i64, error: KafkaError) -> FetchedPartition {
    FetchedPartition {
        topic: topic.to_string(),
        partition,
        high_watermark: -1,
        log_start_offset: -1,
        records: Vec::new(),
        next_offset: offset,
        error: Some(error),
    }
}

/// Decodes one partition of a fetch response: records at or after `asked`, control records
/// dropped, and with `read_committed` the records of aborted transactions dropped too.
pub(super) fn decode_partition(
    topic: &str,
    p: PartitionData,
    asked: i64,
    read_committed: bool,
) -> Result<FetchedPartition, KafkaError> {
    let mut out = FetchedPartition {
        topic: topic.to_string(),
        partition: p.partition_index,
        high_watermark: p.high_watermark,
        log_start_offset: p.log_start_offset,
        records: Vec::new(),
        next_offset: asked,
        error: None,
    };
    // Aborted transactions by producer id: the first offset of each.
    let mut aborted: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    if read_committed {
        for a in p.aborted_transactions.iter().flatten() {
            aborted.entry(a.producer_id.0).or_default().insert(a.first_offset);
        }
    }
    let mut aborting: BTreeSet<i64> = BTreeSet::new();
    let Some(bytes) = p.records else { return Ok(out) };
    for mut batch in whole_batches(bytes) {
        let base = i64::from_be_bytes(batch[0..8].try_into().expect("12 bytes at least"));
        let magic = batch.get(16).copied().unwrap_or(0);
        let last_delta = if magic >= 2 && batch.len() >= 27 {
            Some(i32::from_be_bytes(batch[23..27].try_into().expect("checked")) as i64)
        } else {
            None
        };
        let set = RecordBatchDecoder::decode(&mut batch).map_err(|e| {
            KafkaError::Protocol(format!(
                "a record batch of {topic}/{} at offset {base} does not decode: {e}",
                out.partition
            ))
        })?;
        let mut last = base - 1;
        for r in set.records {
            last = last.max(r.offset);
            if r.control {
                // An abort (or commit) marker ends the producer's transaction.
                aborting.remove(&r.producer_id);
                continue;
            }
            if r.offset < asked {
                continue;
            }
            if read_committed && r.transactional {
                if let Some(firsts) = aborted.get_mut(&r.producer_id)
                    && let Some(first) = firsts.first().copied()
                    && first <= r.offset
                {
                    firsts.remove(&first);
                    aborting.insert(r.producer_id);
                }
                if aborting.contains(&r.producer_id) {
                    continue;
                }
            }
            out.records.push(FetchedRecord {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r.headers.into_iter().map(|(k, v)| (k.as_str().to_string(), v)).collect(),
            });
        }
        let end = match last_delta {
            Some(d) => base + d,
            None => last,
        };
        out.next_offset = out.next_offset.max(end + 1);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_round_trips_with_headers_and_producer() {
        let records: Vec<ProduceRecord> = (0..5)
            .map(|i| ProduceRecord {
                key: (i % 2 == 0).then(|| vec![i as u8]),
                value: Some(format!("v{i}").into_bytes()),
                timestamp: 1000 + i,
                headers: vec![("weir.origin".into(), vec![i as u8; 3])],
            })
            .collect();
        let producer = ProducerIdentity { id: 42, epoch: 3 };
        let bytes = encode_batch(&records, Some((producer, 7)), false, Compression::None).unwrap();
        let mut data = PartitionData::default().with_partition_index(2).with_high_watermark(105);
        // As a broker returns it: at base offset 100.
        let mut placed = BytesMut::from(&bytes[..]);
        placed[0..8].copy_from_slice(&100i64.to_be_bytes());
        data.records = Some(placed.freeze());
        let fetched = decode_partition("t", data, 102, false).unwrap();
        assert_eq!(fetched.next_offset, 105);
        assert_eq!(fetched.records.len(), 3, "records before the offset asked are dropped");
        assert_eq!(fetched.records[0].offset, 102);
        assert_eq!(fetched.records[0].value.as_deref(), Some(&b"v2"[..]));
        assert_eq!(fetched.records[0].header("weir.origin"), Some(&[2u8, 2, 2][..]));
        assert_eq!(fetched.records[1].key, None);
        assert_eq!(fetched.records[2].timestamp, 1004);
    }

    #[test]
    fn a_batch_cut_short_is_left_for_the_next_fetch() {
        let records =
            vec![ProduceRecord { key: None, value: Some(vec![1; 100]), timestamp: 0, headers: vec![] }];
        let one = encode_batch(&records, None, false, Compression::None).unwrap();
        let mut two = BytesMut::from(&one[..]);
        let mut second = BytesMut::from(&one[..]);
        second[0..8].copy_from_slice(&1i64.to_be_bytes());
        two.extend_from_slice(&second[..second.len() - 10]);
        let data = PartitionData::default().with_records(Some(two.freeze()));
        let fetched = decode_partition("t", data, 0, false).unwrap();
        assert_eq!(fetched.records.len(), 1);
        assert_eq!(fetched.next_offset, 1);
    }
}
