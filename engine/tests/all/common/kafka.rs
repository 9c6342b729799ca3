//! Producing test input to and reading output back from a Kafka-protocol broker (Tansu), with
//! the engine's own blocking client. Shared by the Kafka test modules.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use weir::connectors::kafka::client::{Client, ClientConfig, FetchedRecord, ProduceRecord, encode_batch};

/// A plain client of `bootstrap` (no TLS, no SASL).
pub(crate) fn client(bootstrap: &str) -> Client {
    Client::connect(ClientConfig::new(vec![bootstrap.to_string()])).expect("connect to the broker")
}

/// MessagePack with named fields (maps), as the connectors' `msgpack` format.
pub(crate) fn msgpack<T: serde::Serialize>(v: &T) -> Vec<u8> {
    rmp_serde::to_vec_named(v).expect("MessagePack encodes")
}

/// Writes `records` to `topic`/`partition`, in batches of at most 500 (each batch one
/// Produce request); returns each batch's base offset.
pub(crate) fn produce(
    client: &mut Client,
    topic: &str,
    partition: i32,
    records: &[ProduceRecord],
) -> Vec<i64> {
    records
        .chunks(500)
        .map(|chunk| {
            let batch = encode_batch(chunk, None, false, kafka_protocol::records::Compression::None)
                .expect("batch encodes");
            client
                .produce(topic, partition, batch, None)
                .unwrap_or_else(|e| panic!("produce to {topic}/{partition}: {e}"))
        })
        .collect()
}

/// The end offset of every partition of `topic` (from fetch high watermarks: Tansu answers
/// ListOffsets `latest` per batch).
pub(crate) fn end_offsets(client: &mut Client, topic: &str) -> BTreeMap<i32, i64> {
    let partitions = client.partitions(&[topic.to_string()]).expect("topic metadata")[0].partitions.clone();
    client.end_offsets(topic, &partitions).unwrap_or_else(|e| panic!("end offsets of `{topic}`: {e}"))
}

/// How many records `topic` holds (the sum of its end offsets: no deletions in the tests,
/// and no control records unless a sink is `transactional`).
pub(crate) fn count(client: &mut Client, topic: &str) -> i64 {
    end_offsets(client, topic).values().sum()
}

/// Reads every record of every partition of `topic` up to its current end (a plain
/// read_uncommitted consumer).
pub(crate) fn read_all(client: &mut Client, topic: &str) -> Vec<FetchedRecord> {
    let ends = end_offsets(client, topic);
    let mut at: BTreeMap<(String, i32), i64> =
        ends.iter().filter(|(_, end)| **end > 0).map(|(p, _)| ((topic.to_string(), *p), 0)).collect();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !at.is_empty() {
        assert!(Instant::now() < deadline, "reading `{topic}` back took over 120 s");
        // A loaded broker may time out or answer out of step: a new connection, again.
        let fetched = match client.fetch(&at, Duration::from_millis(100), 8 << 20, 4 << 20, false) {
            Ok(f) => f,
            Err(e) if e.retriable() => {
                eprintln!("reading `{topic}` back: {e}; again");
                client.reset();
                continue;
            }
            Err(e) => panic!("reading `{topic}` back: {e}"),
        };
        for part in fetched {
            match &part.error {
                None => {}
                Some(e) if e.retriable() => {
                    eprintln!("reading `{topic}` back: {e}; again");
                    client.reset();
                    continue;
                }
                Some(e) => panic!("fetch {}/{}: {e}", part.topic, part.partition),
            }
            let end = ends[&part.partition];
            out.extend(part.records.into_iter().filter(|r| r.offset < end));
            let key = (part.topic, part.partition);
            if part.next_offset >= end {
                at.remove(&key);
            } else {
                at.insert(key, part.next_offset);
            }
        }
    }
    out
}

/// What the process logs at `warn` and above from now on (a process-wide subscriber, set once:
/// nextest runs each test in a process of its own).
pub(crate) fn captured_logs() -> super::Logs {
    static LOGS: std::sync::OnceLock<super::Logs> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = super::Logs::default();
        let writer = logs.clone();
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        logs
    })
    .clone()
}
