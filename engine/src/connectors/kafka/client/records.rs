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
use super::decompress::{self, BatchRefused, MAX_BATCH_BYTES, RECORD_OVERHEAD_BYTES};
use super::{FetchedPartition, KafkaError, ProducerIdentity};

/// Bytes one fetch response may decode to, its records' bytes plus
/// [`RECORD_OVERHEAD_BYTES`] each: a batch past what is left is put off to the next fetch
/// (the first batch of a fetch always fits: the budget is above [`MAX_BATCH_BYTES`]).
pub const FETCH_DECODE_BYTES: usize = 128 << 20;

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

/// What the record bytes of one partition of a fetch response decode to, from offset
/// `asked` on, within one fetch's budget: the fetch path without a broker (the `kafka_batch`
/// fuzz target feeds it).
pub fn decode_records(
    records: Bytes,
    asked: i64,
    read_committed: bool,
) -> Result<Vec<FetchedRecord>, KafkaError> {
    let data = PartitionData::default().with_records(Some(records));
    Ok(decode_partition("t", data, asked, read_committed, &mut FETCH_DECODE_BYTES.clone())?.records)
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
/// dropped, and with `read_committed` the records of aborted transactions dropped too. Each
/// batch is checked and decompressed within its bounds (`decompress`) and counted against
/// `budget`, what is left of the fetch's [`FETCH_DECODE_BYTES`]: the batches past it are
/// left for the next fetch.
pub(super) fn decode_partition(
    topic: &str,
    p: PartitionData,
    asked: i64,
    read_committed: bool,
    budget: &mut usize,
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
        if *budget == 0 {
            // This fetch decoded all it may: the rest comes with the next one.
            break;
        }
        let base = i64::from_be_bytes(batch[0..8].try_into().expect("12 bytes at least"));
        let magic = batch.get(16).copied().unwrap_or(0);
        let last_delta = if magic >= 2 && batch.len() >= 27 {
            Some(i32::from_be_bytes(batch[23..27].try_into().expect("checked")) as i64)
        } else {
            None
        };
        let refused = |e: BatchRefused| {
            KafkaError::Protocol(format!("a record batch of {topic}/{} at offset {base} {e}", out.partition))
        };
        decompress::check_count(&batch).map_err(refused)?;
        let count = decompress::header(&batch).map_or(0, |(count, _)| count);
        let limit = MAX_BATCH_BYTES.min(*budget);
        let refusal = std::cell::RefCell::new(None);
        let decompressor = |records: &mut Bytes, codec: Compression| -> anyhow::Result<Bytes> {
            let taken = records.split_to(records.len());
            let out = match codec {
                // Already in memory: decoding it adds only the records (counted below).
                Compression::None => Ok(taken),
                _ => decompress::decompress(&taken, codec, limit, count),
            };
            // The refusal is kept typed; the decoder only passes the error on.
            out.map_err(|e| {
                let message = e.to_string();
                *refusal.borrow_mut() = Some(e);
                anyhow::anyhow!(message)
            })
        };
        let decoded = RecordBatchDecoder::decode_with_custom_compression(&mut batch, Some(decompressor));
        let set = match (decoded, refusal.into_inner()) {
            (Ok(set), _) => set,
            // Past what is left of this fetch: fetched again next time.
            (Err(_), Some(BatchRefused::Decompress { limit: l, .. })) if l < MAX_BATCH_BYTES => {
                *budget = 0;
                break;
            }
            (Err(_), Some(refusal)) => return Err(refused(refusal)),
            (Err(e), None) => {
                return Err(KafkaError::Protocol(format!(
                    "a record batch of {topic}/{} at offset {base} does not decode: {e}",
                    out.partition
                )));
            }
        };
        let decoded_bytes: usize = set
            .records
            .iter()
            .map(|r| {
                r.key.as_ref().map_or(0, Bytes::len)
                    + r.value.as_ref().map_or(0, Bytes::len)
                    + RECORD_OVERHEAD_BYTES
            })
            .sum();
        *budget = budget.saturating_sub(decoded_bytes);
        let mut last = base.saturating_sub(1);
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
            Some(d) => base.saturating_add(d),
            None => last,
        };
        out.next_offset = out.next_offset.max(end.saturating_add(1));
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
        let fetched = decode_partition("t", data, 102, false, &mut FETCH_DECODE_BYTES.clone()).unwrap();
        assert_eq!(fetched.next_offset, 105);
        assert_eq!(fetched.records.len(), 3, "records before the offset asked are dropped");
        assert_eq!(fetched.records[0].offset, 102);
        assert_eq!(fetched.records[0].value.as_deref(), Some(&b"v2"[..]));
        assert_eq!(fetched.records[0].header("weir.origin"), Some(&[2u8, 2, 2][..]));
        assert_eq!(fetched.records[1].key, None);
        assert_eq!(fetched.records[2].timestamp, 1004);
    }

    /// A batch of one record of `bytes` zeros at `offset`, compressed with `codec`.
    fn zeros(offset: i64, bytes: usize, codec: Compression) -> Bytes {
        let record = ProduceRecord { key: None, value: Some(vec![0; bytes]), timestamp: 1, headers: vec![] };
        let mut batch = BytesMut::from(&encode_batch(&[record], None, false, codec).unwrap()[..]);
        batch[0..8].copy_from_slice(&offset.to_be_bytes());
        batch.freeze()
    }

    #[test]
    fn a_decompression_bomb_is_refused_before_it_is_inflated() {
        // 64 MiB of zeros: ~64 KiB as gzip, past the 32 MiB a batch may decompress to.
        let bomb = zeros(0, 64 << 20, Compression::Gzip);
        assert!(bomb.len() < 1 << 20, "{}", bomb.len());
        let data = PartitionData::default().with_records(Some(bomb));
        let e =
            decode_partition("t", data, 0, false, &mut FETCH_DECODE_BYTES.clone()).unwrap_err().to_string();
        assert!(
            e.contains("a record batch of t/0 at offset 0 does not decompress within 33554432 bytes (gzip)"),
            "{e}"
        );
        // A record count past what the batch's bytes hold is refused before decoding.
        let mut lying = BytesMut::from(&zeros(0, 10, Compression::None)[..]);
        lying[57..61].copy_from_slice(&100_000i32.to_be_bytes());
        let data = PartitionData::default().with_records(Some(lying.freeze()));
        let e =
            decode_partition("t", data, 0, false, &mut FETCH_DECODE_BYTES.clone()).unwrap_err().to_string();
        assert!(e.contains("claims 100000 records, more than"), "{e}");
    }

    /// The seeds of the `kafka_batch` fuzz target (a mode byte, then a fetch's record bytes):
    /// a batch in each codec, and a zstd bomb. `WEIR_WRITE_FUZZ_SEEDS=1` writes them; the
    /// committed ones must decode as described.
    #[test]
    fn the_fuzz_seeds_decode_as_described() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/kafka_batch");
        let records = |codec| {
            let records: Vec<ProduceRecord> = (0..3)
                .map(|i| ProduceRecord {
                    key: (i > 0).then(|| vec![i as u8]),
                    value: Some(format!("value {i}").into_bytes()),
                    timestamp: 1000 + i,
                    headers: vec![("h".into(), vec![i as u8])],
                })
                .collect();
            encode_batch(&records, None, false, codec).unwrap()
        };
        let seeds = [
            ("plain", records(Compression::None), Some(3)),
            ("gzip", records(Compression::Gzip), Some(3)),
            ("snappy", records(Compression::Snappy), Some(3)),
            ("lz4", records(Compression::Lz4), Some(3)),
            ("zstd", records(Compression::Zstd), Some(3)),
            ("zstd-bomb", zeros(0, 40 << 20, Compression::Zstd), None),
        ];
        // What the fuzzer found: a batch with a base offset of i64::MIN (offsets computed from
        // it overflowed) among well-formed ones.
        let found = std::fs::read(dir.join("crash-base-offset-min")).unwrap();
        assert!(decode_records(Bytes::copy_from_slice(&found[1..]), 0, false).is_ok());
        for (name, batch, decodes_to) in seeds {
            let path = dir.join(name);
            if std::env::var_os("WEIR_WRITE_FUZZ_SEEDS").is_some() {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, [&[0u8][..], &batch[..]].concat()).unwrap();
            }
            let seed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(seed.len() < 4096, "{name}: a seed of {} bytes", seed.len());
            let decoded = decode_records(Bytes::copy_from_slice(&seed[1..]), 0, false);
            match decodes_to {
                Some(n) => assert_eq!(decoded.map(|r| r.len()).ok(), Some(n), "{name}"),
                None => assert!(decoded.is_err(), "{name}: refused"),
            }
        }
    }

    #[test]
    fn batches_past_the_fetch_budget_wait_for_the_next_fetch() {
        // Three batches of 20 MiB each once decompressed; a budget of 50 MiB decodes two.
        let mut all = BytesMut::new();
        for offset in 0..3 {
            all.extend_from_slice(&zeros(offset, 20 << 20, Compression::Zstd));
        }
        let data = PartitionData::default().with_records(Some(all.freeze()));
        let mut budget = 50 << 20;
        let fetched = decode_partition("t", data, 0, false, &mut budget).unwrap();
        assert_eq!((fetched.records.len(), fetched.next_offset, fetched.error), (2, 2, None));
        assert_eq!(budget, 0, "the rest of this fetch decodes nothing");
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
        let fetched = decode_partition("t", data, 0, false, &mut FETCH_DECODE_BYTES.clone()).unwrap();
        assert_eq!(fetched.records.len(), 1);
        assert_eq!(fetched.next_offset, 1);
    }
}
