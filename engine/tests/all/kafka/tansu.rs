//! The tests' Kafka broker, Tansu 0.6.0 (common::tansu, docs/kafka-testing.md): topics and
//! records survive a restart and a SIGKILL, the API versions it advertises (the table the
//! Kafka client negotiates from), how a test adds a partition, and what it does with
//! idempotent-producer sequences, transactions, SASL and TLS.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiKey, CreatePartitionsRequest, EndTxnRequest, InitProducerIdRequest,
    MetadataRequest, ProduceRequest, ProducerId, SaslAuthenticateRequest, SaslHandshakeRequest,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};

use crate::common::tansu::{KafkaConn, TansuBroker, decode_records, record, topic_name};

fn values(records: &[kafka_protocol::records::Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

#[test]
fn topics_and_records_survive_restart_and_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = TansuBroker::start(dir.path());
    broker.create_topic("orders", 3);
    assert_eq!(broker.partitions("orders"), Some(3));
    let batch: Vec<_> = (0..5).map(|i| record(i, b"k", format!("v{i}").as_bytes())).collect();
    assert_eq!(broker.produce("orders", 1, &batch), Ok(0));
    let port = broker.addr();

    broker.restart();
    assert_eq!(broker.addr(), port, "a restart keeps the port");
    assert_eq!(broker.partitions("orders"), Some(3), "topics after a restart: {:?}", broker.topics());
    assert_eq!(broker.latest_offset("orders", 1), 5);
    assert_eq!(values(&broker.fetch("orders", 1, 0)), ["v0", "v1", "v2", "v3", "v4"]);

    // An acknowledged produce survives SIGKILL.
    assert_eq!(broker.produce("orders", 1, &[record(0, b"k", b"v5")]), Ok(5));
    broker.kill();
    assert!(!broker.is_running());
    broker.restart();
    assert_eq!(broker.partitions("orders"), Some(3));
    assert_eq!(values(&broker.fetch("orders", 1, 3)), ["v3", "v4", "v5"]);
    assert_eq!(broker.latest_offset("orders", 0), 0);
    // A topic that was never created stays unknown (no auto-creation).
    assert_eq!(broker.partitions("missing"), None);
}

/// The versions Tansu 0.6.0 advertises for the APIs the Kafka source and sink use
/// (docs/kafka-testing.md has the whole table).
#[test]
fn advertised_api_versions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = TansuBroker::start(dir.path());
    let versions = broker.api_versions();
    let expected = [
        (ApiKey::Produce, Some((0, 11))),
        (ApiKey::Fetch, Some((0, 17))),
        (ApiKey::ListOffsets, Some((0, 9))),
        (ApiKey::Metadata, Some((0, 12))),
        (ApiKey::OffsetCommit, Some((0, 9))),
        (ApiKey::OffsetFetch, Some((0, 9))),
        (ApiKey::FindCoordinator, Some((0, 6))),
        (ApiKey::InitProducerId, Some((0, 5))),
        (ApiKey::AddPartitionsToTxn, Some((0, 5))),
        (ApiKey::EndTxn, None),
        (ApiKey::CreateTopics, Some((0, 7))),
        (ApiKey::DeleteTopics, Some((0, 6))),
        (ApiKey::CreatePartitions, None),
    ];
    let mut table = String::new();
    for (key, _) in &expected {
        table.push_str(&format!("{key:?}: {:?}\n", versions.get(&(*key as i16))));
    }
    for (key, range) in expected {
        assert_eq!(versions.get(&(key as i16)).copied(), range, "{key:?}; advertised:\n{table}");
    }
}

/// Tansu has no CreatePartitions: the test support adds partitions by writing the rows its
/// CreateTopics writes into the SQLite file, and the running broker serves them at once.
#[test]
fn partitions_added_while_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = TansuBroker::start(dir.path());
    broker.create_topic("events", 2);
    assert_eq!(broker.produce("events", 1, &[record(0, b"a", b"one")]), Ok(0));

    // CreatePartitions is not advertised; sent anyway, the broker closes the connection.
    let topic = CreatePartitionsTopic::default().with_name(topic_name("events")).with_count(3);
    let request = CreatePartitionsRequest::default().with_topics(vec![topic]).with_timeout_ms(10_000);
    let answer = broker.connect().request(&request, 3);
    eprintln!("CreatePartitions: {answer:?}");
    assert!(answer.is_err(), "CreatePartitions answered: {answer:?}");
    assert_eq!(broker.partitions("events"), Some(2));

    broker.add_partitions("events", 3);
    assert_eq!(broker.partitions("events"), Some(3));
    assert_eq!(broker.produce("events", 2, &[record(0, b"b", b"two")]), Ok(0));
    assert_eq!(values(&broker.fetch("events", 2, 0)), ["two"]);
    assert_eq!(values(&broker.fetch("events", 1, 0)), ["one"], "the old partitions keep their records");
    broker.restart();
    assert_eq!(broker.partitions("events"), Some(3));
    assert_eq!(values(&broker.fetch("events", 2, 0)), ["two"]);
}

/// What Tansu does with an idempotent producer's retry: the same batch (producer id,
/// epoch, base sequence) sent twice.
#[test]
fn idempotent_producer_retry() {
    let dir = tempfile::tempdir().unwrap();
    let broker = TansuBroker::start(dir.path());
    broker.create_topic("idem", 1);
    let (producer_id, epoch) = broker.init_producer_id();
    let batch: Vec<_> = (0..3)
        .map(|i| {
            let mut r = record(i, b"k", format!("v{i}").as_bytes());
            r.producer_id = producer_id;
            r.producer_epoch = epoch;
            r.sequence = i as i32;
            r
        })
        .collect();
    assert_eq!(broker.produce("idem", 0, &batch), Ok(0));
    // The retry of the same batch is refused with DUPLICATE_SEQUENCE_NUMBER (46), not
    // appended (Kafka would answer success with the first append's offset).
    assert_eq!(broker.produce("idem", 0, &batch), Err(46));
    // A gap in the sequence: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
    let gap: Vec<_> = batch
        .iter()
        .cloned()
        .map(|r| kafka_protocol::records::Record { sequence: r.sequence + 10, ..r })
        .collect();
    assert_eq!(broker.produce("idem", 0, &gap), Err(45));
    assert_eq!(values(&broker.fetch("idem", 0, 0)), ["v0", "v1", "v2"]);
    // The next sequence is accepted.
    let next: Vec<_> = batch
        .iter()
        .cloned()
        .map(|r| kafka_protocol::records::Record { sequence: r.sequence + 3, ..r })
        .collect();
    assert_eq!(broker.produce("idem", 0, &next), Ok(3));
    assert_eq!(broker.fetch("idem", 0, 0).len(), 6);
}

/// Transactions (SQLite storage): InitProducerId with a transactional id, AddPartitionsToTxn
/// and a transactional Produce are answered, but EndTxn is neither advertised nor answered (the
/// connection closes), so a transaction cannot be committed or aborted; and its records are
/// returned at once, to read-committed fetches too (no last stable offset held back).
#[test]
fn transactions_end_txn_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let broker = TansuBroker::start(dir.path());
    broker.create_topic("txn", 1);
    let mut conn = broker.connect();
    let tid = || TransactionalId(StrBytes::from_static_str("weir-t"));
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(tid()))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let init = conn.request(&request, 4).unwrap();
    assert_eq!(init.error_code, 0, "{init:?}");
    let (pid, epoch) = (init.producer_id, init.producer_epoch);
    for (sequence, (commit, value)) in [(true, "open")].into_iter().enumerate() {
        let add = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(tid())
            .with_v3_and_below_producer_id(pid)
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default().with_name(topic_name("txn")).with_partitions(vec![0]),
            ]);
        let added = conn.request(&add, 3).unwrap();
        let result = &added.results_by_topic_v3_and_below[0].results_by_partition[0];
        assert_eq!((added.error_code, result.partition_error_code), (0, 0), "{added:?}");
        let mut r = record(0, b"k", value.as_bytes());
        r.transactional = true;
        r.producer_id = pid.0;
        r.producer_epoch = epoch;
        r.sequence = sequence as i32;
        assert_eq!(produce_transactional(&mut conn, &r), Ok(2 * sequence as i64));
        let end = EndTxnRequest::default()
            .with_transactional_id(tid())
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_committed(commit);
        let ended = conn.request(&end, 3);
        assert!(ended.is_err(), "EndTxn answered: {ended:?}");
        conn = broker.connect();
    }
    for isolation in [0, 1] {
        let mut p = broker.fetch_partition("txn", 0, 0, isolation);
        let records = decode_records(p.records.take().unwrap_or_default());
        assert_eq!(p.aborted_transactions.as_deref().map(<[_]>::len).unwrap_or(0), 0, "{p:?}");
        // (offset, control, the value, or the control type: 0 abort, 1 commit)
        let seen: Vec<_> = records
            .iter()
            .map(|r| {
                let key = r.key.as_deref().unwrap_or_default();
                let what = if r.control {
                    format!("marker {}", key.get(3).copied().unwrap_or(9))
                } else {
                    values(std::slice::from_ref(r))[0].clone()
                };
                (r.offset, what)
            })
            .collect();
        assert_eq!((p.high_watermark, p.last_stable_offset), (1, 1), "isolation {isolation}: {p:?}");
        let expected = [(0, "open")];
        assert_eq!(seen, expected.map(|(o, w)| (o, w.to_string())), "isolation {isolation}");
    }
}

fn produce_transactional(conn: &mut KafkaConn, r: &kafka_protocol::records::Record) -> Result<i64, i16> {
    let mut batch = bytes::BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut batch, std::iter::once(r), &options).unwrap();
    let data = PartitionProduceData::default().with_index(0).with_records(Some(batch.freeze()));
    let topic = TopicProduceData::default().with_name(topic_name("txn")).with_partition_data(vec![data]);
    let request = ProduceRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("weir-t"))))
        .with_acks(-1)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![topic]);
    let response = conn.request(&request, 9).unwrap();
    let p = &response.responses[0].partition_responses[0];
    if p.error_code == 0 { Ok(p.base_offset) } else { Err(p.error_code) }
}

/// SASL: users are created with `tansu user create` (AlterUserScramCredentials) on a broker
/// without `--authentication` (one with it refuses that request before authentication), then
/// the broker restarts with `--authentication`. Only SCRAM is offered; an unauthenticated
/// request other than ApiVersions and the SASL ones gets the connection closed.
#[test]
fn sasl_scram_users() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = TansuBroker::start(dir.path());
    broker.create_user("alice", "secret");
    broker.restart_with(&["--authentication"]);

    let metadata = broker.connect().request(&MetadataRequest::default(), 12);
    assert!(metadata.is_err(), "an unauthenticated Metadata was answered: {metadata:?}");
    assert!(!broker.api_versions().is_empty());
    let plain = handshake(&broker, "PLAIN");
    assert!(plain.is_err(), "PLAIN was offered: {:?}", plain.map(|(_, answer)| answer));

    // SCRAM-SHA-256's first round: the server's answer carries the stored credential's
    // iteration count, 8192 (`tansu user create`'s default) for alice; an unknown user gets a
    // made-up one.
    let first = |user: &str| {
        let (mut conn, answer) = handshake(&broker, "SCRAM-SHA-256").expect("the SCRAM-SHA-256 handshake");
        assert_eq!(answer.error_code, 0, "{answer:?}");
        let client_first = format!("n,,n={user},r=weirtestnonce0123456789");
        let auth = SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from(client_first));
        let server_first = conn.request(&auth, 2).expect("SaslAuthenticate");
        assert_eq!(server_first.error_code, 0, "{server_first:?}");
        String::from_utf8_lossy(&server_first.auth_bytes).into_owned()
    };
    let alice = first("alice");
    assert!(alice.starts_with("r=weirtestnonce0123456789") && alice.ends_with(",i=8192"), "{alice}");
    let nobody = first("nobody");
    assert!(!nobody.ends_with(",i=8192"), "{nobody}");
}

fn handshake(
    broker: &TansuBroker,
    mechanism: &'static str,
) -> Result<(KafkaConn, kafka_protocol::messages::SaslHandshakeResponse), crate::common::tansu::ConnError> {
    let mut conn = broker.connect();
    let answer = conn
        .request(&SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism)), 1)?;
    Ok((conn, answer))
}
