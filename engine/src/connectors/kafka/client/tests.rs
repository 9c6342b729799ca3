//! The transactional producer's requests and responses, through `kafka_protocol`'s own
//! decoders: a scripted broker on a loopback port that offers every version the crate knows
//! records each request's bytes as the client put them on the wire, answers at the version
//! asked, and the test decodes the bytes as a broker would.

use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, decode_request_header_from_buffer};
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::conn::our_max;
use super::*;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;

/// The APIs the transactional producer uses.
const USED: [ApiKey; 7] = [
    ApiKey::ApiVersions,
    ApiKey::Metadata,
    ApiKey::FindCoordinator,
    ApiKey::InitProducerId,
    ApiKey::AddPartitionsToTxn,
    ApiKey::Produce,
    ApiKey::EndTxn,
];

const PRODUCER: ProducerIdentity = ProducerIdentity { id: 77, epoch: 5 };

/// The version the client must choose against a broker offering every version.
fn chosen(key: ApiKey) -> i16 {
    our_max(key).min(key.valid_versions().max)
}

/// One request as it crossed the wire: its header and the body's bytes.
type Frame = (RequestHeader, Bytes);

struct Scripted {
    addr: String,
    frames: Arc<Mutex<Vec<Frame>>>,
}

/// How long a trickling broker waits between the bytes of an answer.
type Trickle = Option<Duration>;

impl Scripted {
    fn start() -> Scripted {
        Self::start_with(None)
    }

    /// A broker that sends each answer a byte at a time, `trickle` apart (when given).
    fn start_with(trickle: Trickle) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let frames = Arc::new(Mutex::new(Vec::new()));
        let shared = frames.clone();
        // The thread ends with the test process.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let frames = shared.clone();
                std::thread::spawn(move || serve(stream, port, frames, trickle));
            }
        });
        Scripted { addr: format!("127.0.0.1:{port}"), frames }
    }

    /// The frames of `key` so far.
    fn of(&self, key: ApiKey) -> Vec<Frame> {
        self.frames.lock().unwrap().iter().filter(|(h, _)| h.request_api_key == key as i16).cloned().collect()
    }
}

fn serve(mut stream: TcpStream, port: u16, frames: Arc<Mutex<Vec<Frame>>>, trickle: Trickle) {
    use std::io::{Read, Write};
    loop {
        let mut len = [0u8; 4];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        stream.read_exact(&mut body).unwrap();
        let mut body = Bytes::from(body);
        let header = decode_request_header_from_buffer(&mut body).unwrap();
        frames.lock().unwrap().push((header.clone(), body.clone()));
        let key = ApiKey::try_from(header.request_api_key).unwrap();
        let version = header.request_api_version;
        let mut out = BytesMut::new();
        out.put_i32(0);
        ResponseHeader::default()
            .with_correlation_id(header.correlation_id)
            .encode(&mut out, key.response_header_version(version))
            .unwrap();
        respond(key, version, body, port, &mut out);
        let n = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&n.to_be_bytes());
        match trickle {
            None => stream.write_all(&out).unwrap(),
            Some(pause) => {
                for byte in out.iter() {
                    if stream.write_all(&[*byte]).is_err() {
                        return;
                    }
                    // The broker's behaviour under test, not a synchronisation.
                    std::thread::sleep(pause);
                }
            }
        }
    }
}

/// Appends the answer to one request, encoded at `version` as a broker would.
fn respond(key: ApiKey, version: i16, mut body: Bytes, port: u16, out: &mut BytesMut) {
    match key {
        ApiKey::ApiVersions => ApiVersionsResponse::default()
            .with_api_keys(
                USED.iter()
                    .map(|k| {
                        let v = k.valid_versions();
                        ApiVersion::default()
                            .with_api_key(*k as i16)
                            .with_min_version(v.min)
                            .with_max_version(v.max)
                    })
                    .collect(),
            )
            .encode(out, version),
        ApiKey::Metadata => {
            let request = MetadataRequest::decode(&mut body, version).unwrap();
            let topics = request
                .topics
                .unwrap_or_default()
                .into_iter()
                .map(|t| {
                    MetadataResponseTopic::default().with_name(t.name).with_partitions(
                        (0..2)
                            .map(|p| {
                                MetadataResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_leader_id(BrokerId(0))
                            })
                            .collect(),
                    )
                })
                .collect();
            metadata_response(port, topics).encode(out, version)
        }
        ApiKey::FindCoordinator => find_coordinator_response(port).encode(out, version),
        ApiKey::InitProducerId => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(PRODUCER.id))
            .with_producer_epoch(PRODUCER.epoch)
            .encode(out, version),
        ApiKey::AddPartitionsToTxn => {
            let request = AddPartitionsToTxnRequest::decode(&mut body, version).unwrap();
            // A stale epoch is fenced.
            let code = if request.v3_and_below_producer_epoch < PRODUCER.epoch { 90 } else { 0 };
            add_partitions_response(&request.v3_and_below_topics, code).encode(out, version)
        }
        ApiKey::Produce => {
            let request = ProduceRequest::decode(&mut body, version).unwrap();
            let responses = request
                .topic_data
                .iter()
                .map(|t| {
                    TopicProduceResponse::default().with_name(t.name.clone()).with_partition_responses(
                        t.partition_data
                            .iter()
                            .map(|p| {
                                PartitionProduceResponse::default().with_index(p.index).with_base_offset(42)
                            })
                            .collect(),
                    )
                })
                .collect();
            ProduceResponse::default().with_responses(responses).encode(out, version)
        }
        ApiKey::EndTxn => {
            let request = EndTxnRequest::decode(&mut body, version).unwrap();
            let code = if request.transactional_id.0.as_str() == "tx-done" { 48 } else { 0 };
            EndTxnResponse::default().with_error_code(code).encode(out, version)
        }
        other => panic!("the scripted broker got {other:?}"),
    }
    .unwrap();
}

fn metadata_response(port: u16, topics: Vec<MetadataResponseTopic>) -> MetadataResponse {
    MetadataResponse::default()
        .with_brokers(vec![
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(0))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(port as i32),
        ])
        .with_topics(topics)
}

fn find_coordinator_response(port: u16) -> FindCoordinatorResponse {
    FindCoordinatorResponse::default()
        .with_node_id(BrokerId(0))
        .with_host(StrBytes::from_static_str("127.0.0.1"))
        .with_port(port as i32)
}

fn add_partitions_response(topics: &[AddPartitionsToTxnTopic], code: i16) -> AddPartitionsToTxnResponse {
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(
        topics
            .iter()
            .map(|t| {
                AddPartitionsToTxnTopicResult::default().with_name(t.name.clone()).with_results_by_partition(
                    t.partitions
                        .iter()
                        .map(|p| {
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(*p)
                                .with_partition_error_code(code)
                        })
                        .collect(),
                )
            })
            .collect(),
    )
}

/// Decodes a frame's body as `R` at the header's version: checks the version is the one the
/// client must choose, that every byte is read, and that encoding it again gives the same bytes.
fn decode<R: Decodable + Encodable + HeaderVersion>(frame: &Frame, key: ApiKey) -> R {
    let (header, body) = frame;
    assert_eq!(header.request_api_key, key as i16);
    assert_eq!(header.request_api_version, chosen(key), "{key:?} went in another version");
    assert_eq!(header.client_id.as_ref().map(|c| c.as_str()), Some("weir"));
    assert!(header.correlation_id > 0);
    let mut rest = body.clone();
    let request = R::decode(&mut rest, header.request_api_version).unwrap();
    assert_eq!(rest.remaining(), 0, "{key:?}: {} bytes left after decoding", rest.remaining());
    let mut again = BytesMut::new();
    request.encode(&mut again, header.request_api_version).unwrap();
    assert_eq!(&again[..], &body[..], "{key:?} does not re-encode to the same bytes");
    request
}

fn tid(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_string()))
}

#[test]
fn the_versions_chosen_carry_the_fields_the_client_sets() {
    // The client fills AddPartitionsToTxn's v3-and-below fields and FindCoordinator's single
    // key: later versions move them elsewhere, so the cap must stay below those versions.
    assert!(chosen(ApiKey::AddPartitionsToTxn) <= 3);
    assert!(chosen(ApiKey::FindCoordinator) <= 3);
    // Transactional ids in Produce and InitProducerId, producer id/epoch in InitProducerId.
    assert!(chosen(ApiKey::Produce) >= 3);
    assert!(chosen(ApiKey::InitProducerId) >= 3);
    for key in USED {
        let v = key.valid_versions();
        assert!(chosen(key) >= v.min, "{key:?}: no version both speak");
    }
}

#[test]
fn the_transactional_producer_requests_decode_as_sent() {
    let broker = Scripted::start();
    let mut client = Client::connect(ClientConfig::new(vec![broker.addr.clone()])).unwrap();

    // ApiVersions.
    let versions = broker.of(ApiKey::ApiVersions);
    let request: ApiVersionsRequest = decode(&versions[0], ApiKey::ApiVersions);
    assert_eq!(request.client_software_name.as_str(), "weir");
    assert_eq!(request.client_software_version.as_str(), env!("CARGO_PKG_VERSION"));
    assert_eq!(client.bootstrap().unwrap().versions.len(), USED.len(), "the answer decodes");

    // Metadata.
    let topics = client.partitions(&["t".to_string()]).unwrap();
    assert_eq!(topics, vec![TopicPartitions { name: "t".into(), partitions: vec![0, 1] }]);
    let request: MetadataRequest = decode(&broker.of(ApiKey::Metadata)[0], ApiKey::Metadata);
    assert_eq!(
        request,
        MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(name("t")))]))
            .with_allow_auto_topic_creation(false)
    );

    // FindCoordinator (a transaction's: key type 1), then InitProducerId with the id.
    let producer = client.init_producer_id(Some("tx-1"), 60_000).unwrap();
    assert_eq!(producer, PRODUCER);
    let request: FindCoordinatorRequest =
        decode(&broker.of(ApiKey::FindCoordinator)[0], ApiKey::FindCoordinator);
    assert_eq!(
        request,
        FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("tx-1")).with_key_type(1)
    );
    let request: InitProducerIdRequest =
        decode(&broker.of(ApiKey::InitProducerId)[0], ApiKey::InitProducerId);
    assert_eq!(
        request,
        InitProducerIdRequest::default()
            .with_transactional_id(Some(tid("tx-1")))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    );

    // AddPartitionsToTxn, in its v3-and-below fields; a fenced answer is an error with its code.
    client.add_partitions_to_txn("tx-1", producer, "t", &[0, 1]).unwrap();
    let request: AddPartitionsToTxnRequest =
        decode(&broker.of(ApiKey::AddPartitionsToTxn)[0], ApiKey::AddPartitionsToTxn);
    assert_eq!(
        request,
        AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(tid("tx-1"))
            .with_v3_and_below_producer_id(ProducerId(77))
            .with_v3_and_below_producer_epoch(5)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default().with_name(name("t")).with_partitions(vec![0, 1])
            ])
    );
    let stale = ProducerIdentity { id: 77, epoch: 4 };
    let e = client.add_partitions_to_txn("tx-1", stale, "t", &[1]).unwrap_err();
    assert_eq!(e.code(), Some(90), "{e}");

    // Produce with a transactional batch.
    let records: Vec<ProduceRecord> = (0..3u8)
        .map(|i| ProduceRecord {
            key: (i != 1).then(|| vec![b'k', i]),
            value: Some(vec![b'v', i, i]),
            timestamp: 1_700_000_000_000 + i as i64,
            headers: vec![("h".into(), vec![i])],
        })
        .collect();
    let batch = encode_batch(&records, Some((producer, 7)), true, Compression::None).unwrap();
    assert_eq!(client.produce("t", 1, batch.clone(), Some("tx-1")).unwrap(), 42);
    let request: ProduceRequest = decode(&broker.of(ApiKey::Produce)[0], ApiKey::Produce);
    assert_eq!(request.transactional_id, Some(tid("tx-1")));
    assert_eq!(request.acks, -1);
    assert_eq!(request.topic_data.len(), 1);
    assert_eq!(request.topic_data[0].name, name("t"));
    let partition = &request.topic_data[0].partition_data;
    assert_eq!(partition.len(), 1);
    assert_eq!(partition[0].index, 1);
    let mut sent = partition[0].records.clone().expect("records");
    assert_eq!(sent, batch);
    let set = RecordBatchDecoder::decode(&mut sent).unwrap();
    assert_eq!(sent.remaining(), 0);
    assert_eq!(set.records.len(), 3);
    for (i, (r, want)) in set.records.iter().zip(&records).enumerate() {
        assert!(r.transactional && !r.control, "record {i}");
        assert_eq!((r.producer_id, r.producer_epoch), (77, 5), "record {i}");
        assert_eq!(r.sequence, 7 + i as i32);
        assert_eq!(r.offset, i as i64);
        assert_eq!(r.timestamp, want.timestamp);
        assert_eq!(r.key.as_deref(), want.key.as_deref());
        assert_eq!(r.value.as_deref(), want.value.as_deref());
        let headers: Vec<(String, Option<Vec<u8>>)> =
            r.headers.iter().map(|(k, v)| (k.as_str().to_string(), v.as_ref().map(|b| b.to_vec()))).collect();
        assert_eq!(headers, vec![("h".to_string(), Some(vec![i as u8]))]);
    }

    // EndTxn, commit and abort; a decided transaction's answer keeps its code.
    client.end_txn("tx-1", producer, true).unwrap();
    client.end_txn("tx-1", producer, false).unwrap();
    let e = client.end_txn("tx-done", producer, true).unwrap_err();
    assert_eq!(e.code(), Some(48), "{e}");
    let ends = broker.of(ApiKey::EndTxn);
    assert_eq!(ends.len(), 3);
    for (frame, (id, commit)) in ends.iter().zip([("tx-1", true), ("tx-1", false), ("tx-done", true)]) {
        let request: EndTxnRequest = decode(frame, ApiKey::EndTxn);
        assert_eq!(
            request,
            EndTxnRequest::default()
                .with_transactional_id(tid(id))
                .with_producer_id(ProducerId(77))
                .with_producer_epoch(5)
                .with_committed(commit)
        );
    }
}

/// Encodes `response` at `version` as a broker would and decodes it as the client does.
fn response_round_trip<T: Encodable + Decodable + PartialEq + std::fmt::Debug>(response: T, key: ApiKey) {
    let version = chosen(key);
    let mut buf = BytesMut::new();
    response.encode(&mut buf, version).unwrap();
    let mut bytes = buf.freeze();
    let back = T::decode(&mut bytes, version).unwrap();
    assert_eq!(bytes.remaining(), 0, "{key:?}");
    assert_eq!(back, response, "{key:?} v{version}");
}

#[test]
fn the_responses_the_client_reads_round_trip() {
    response_round_trip(
        ApiVersionsResponse::default().with_api_keys(vec![
            ApiVersion::default().with_api_key(26).with_min_version(0).with_max_version(5),
        ]),
        ApiKey::ApiVersions,
    );
    let topic = MetadataResponseTopic::default().with_name(Some(name("t"))).with_partitions(vec![
        MetadataResponsePartition::default().with_partition_index(3).with_leader_id(BrokerId(2)),
    ]);
    response_round_trip(metadata_response(9092, vec![topic]), ApiKey::Metadata);
    response_round_trip(find_coordinator_response(9093), ApiKey::FindCoordinator);
    response_round_trip(
        InitProducerIdResponse::default().with_producer_id(ProducerId(1 << 40)).with_producer_epoch(300),
        ApiKey::InitProducerId,
    );
    let topics = [AddPartitionsToTxnTopic::default().with_name(name("t")).with_partitions(vec![0, 4])];
    response_round_trip(add_partitions_response(&topics, 90), ApiKey::AddPartitionsToTxn);
    response_round_trip(
        ProduceResponse::default().with_responses(vec![
            TopicProduceResponse::default().with_name(name("t")).with_partition_responses(vec![
                PartitionProduceResponse::default().with_index(1).with_error_code(47).with_base_offset(-1),
            ]),
        ]),
        ApiKey::Produce,
    );
    for code in [0, 47, 48, 90] {
        response_round_trip(EndTxnResponse::default().with_error_code(code), ApiKey::EndTxn);
    }
}

#[test]
fn concurrent_transactions_is_retried() {
    // Kafka answers it while a fencing abort completes; the caller must try again.
    assert!(KafkaError::from_code(51, "InitProducerId").retriable());
    assert!(!KafkaError::from_code(90, "EndTxn").retriable());
}

#[test]
fn errors_say_whether_a_retry_can_help() {
    use crate::retry::{Retry, RetryHint};
    let transient = [
        KafkaError::Unreachable {
            broker: "broker 1 of Kafka connection `main`".into(),
            reason: "refused".into(),
        },
        KafkaError::Timeout { broker: "broker 1 of Kafka connection `main`".into() },
        // NOT_LEADER_OR_FOLLOWER: a leader election.
        KafkaError::from_code(6, "produce to t/0"),
        // COORDINATOR_LOAD_IN_PROGRESS.
        KafkaError::from_code(14, "offset fetch"),
        // CONCURRENT_TRANSACTIONS, which Kafka's own producer retries.
        KafkaError::from_code(51, "init producer id"),
    ];
    for e in &transient {
        assert_eq!(e.retry_hint(), RetryHint::Transient, "{e}");
    }
    let last = [
        // TOPIC_AUTHORIZATION_FAILED.
        KafkaError::from_code(29, "metadata of topic `t`"),
        KafkaError::UnknownTopic("t".into()),
        KafkaError::Authentication("the broker refused the credentials".into()),
        // THROTTLING_QUOTA_EXCEEDED (retriable to Kafka) and CORRUPT_MESSAGE.
        KafkaError::from_code(89, "create topics"),
        KafkaError::from_code(2, "produce to t/0"),
        // MESSAGE_TOO_LARGE.
        KafkaError::from_code(10, "produce to t/0"),
        KafkaError::Protocol("the produce response for t/0 is empty".into()),
    ];
    for e in &last {
        assert_eq!(e.retry_hint(), RetryHint::Final, "{e}");
    }
}

#[test]
fn a_broker_that_trickles_its_answer_cannot_stretch_a_call_past_the_request_timeout() {
    // Each byte comes well within the request timeout, so a socket timeout per read never
    // fires: the answer to ApiVersions (over 60 bytes) once took 60 × 150 ms. The call's
    // deadline covers all its reads.
    let broker = Scripted::start_with(Some(Duration::from_millis(150)));
    let timeout = Duration::from_millis(1000);
    let started = Instant::now();
    let config = ClientConfig { request_timeout: timeout, ..ClientConfig::new(vec![broker.addr.clone()]) };
    let err = Client::connect(config).and_then(|mut c| c.bootstrap().map(drop)).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, KafkaError::Timeout { .. }), "{err}");
    // The client tries again within the timeout (its own retries are bounded by it too).
    assert!(took < 3 * timeout, "the call took {took:?}");
}
