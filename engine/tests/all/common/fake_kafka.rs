//! A fake transaction-capable Kafka broker, for the `transactional` sink's tests (Tansu, the
//! test broker, has no working EndTxn).
//!
//! One broker (node 0) on a loopback port serving one topic, in threads: every request is
//! decoded with `kafka_protocol` (header, then the body at the version asked) and answered at
//! that version. It keeps an in-memory log per partition where, as in Kafka, a transactional
//! batch gets its offsets when it is appended and stays pending until EndTxn (or a fencing
//! InitProducerId) writes a commit or abort marker after it. The epoch of a transactional id
//! goes up by one at each InitProducerId; fencing an ongoing transaction answers
//! CONCURRENT_TRANSACTIONS first, as Kafka's coordinator does. Fetch with `read_committed`
//! stops at the last stable offset and lists the aborted transactions, so the client's own
//! read_committed filter is exercised too. Every request is recorded ([`Seen`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{AbortedTransaction, FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes, decode_request_header_from_buffer};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// Kafka error codes the fake answers with.
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
pub const INVALID_PRODUCER_EPOCH: i16 = 47;
pub const INVALID_TXN_STATE: i16 = 48;
pub const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
pub const PRODUCER_FENCED: i16 = 90;
pub const CONCURRENT_TRANSACTIONS: i16 = 51;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const CORRUPT_MESSAGE: i16 = 2;

/// What the fake does with EndTxn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndTxnMode {
    /// Ends transactions.
    Serve,
    /// Advertises EndTxn but drops the connection when it comes (as Tansu 0.6 does).
    DropConnection,
    /// Does not advertise EndTxn (and drops the connection if it comes anyway).
    NotAdvertised,
}

/// One request the fake got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// API key.
    pub api_key: ApiKey,
    /// The version it came in.
    pub version: i16,
    /// Its transactional id, if it has one.
    pub transactional_id: Option<String>,
    /// Producer id and epoch (InitProducerId: the answer; AddPartitionsToTxn, EndTxn: the
    /// request's; Produce: the batch's).
    pub producer: Option<(i64, i16)>,
    /// EndTxn's commit flag.
    pub commit: Option<bool>,
    /// Produce: whether the batch is transactional, and its base sequence.
    pub batch: Option<(bool, i32)>,
    /// The error code answered (EndTxn, InitProducerId, AddPartitionsToTxn, Produce).
    pub code: Option<i16>,
}

impl Seen {
    fn new(api_key: ApiKey, version: i16) -> Seen {
        Seen {
            api_key,
            version,
            transactional_id: None,
            producer: None,
            commit: None,
            batch: None,
            code: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// Not transactional.
    Plain,
    Pending,
    Committed,
    Aborted,
}

/// One batch of a partition's log.
#[derive(Debug, Clone)]
struct Entry {
    base: i64,
    records: Vec<Record>,
    status: Status,
    producer_id: i64,
    /// Which transaction (a number per transaction begun), for transactional batches.
    txn: u64,
    /// A commit (`true`) or abort marker.
    marker: Option<bool>,
}

impl Entry {
    fn end(&self) -> i64 {
        self.base + self.records.len() as i64
    }
}

/// A transactional id's state.
#[derive(Debug, Clone)]
struct TxnState {
    producer_id: i64,
    epoch: i16,
    /// The ongoing transaction: its number and partitions (`None`: none ongoing).
    ongoing: Option<(u64, BTreeSet<i32>)>,
}

struct State {
    topic: String,
    partitions: i32,
    port: u16,
    mode: EndTxnMode,
    next_producer_id: i64,
    next_txn: u64,
    txns: HashMap<String, TxnState>,
    /// (producer id, epoch, partition) → the next sequence number expected.
    sequences: HashMap<(i64, i16, i32), i32>,
    logs: Vec<Vec<Entry>>,
    seen: Vec<Seen>,
    /// While set, a commit (EndTxn committing) is not served: it waits, unanswered, until
    /// this is cleared and its connection is then dropped, as if it never arrived.
    hold_commits: bool,
    /// The commits held so far: (transactional id, producer id, epoch).
    held: Vec<(String, i64, i16)>,
    /// While set, no request is answered (as `hold_commits`): how many were not.
    stall: Option<usize>,
}

impl State {
    fn end_of(&self, partition: usize) -> i64 {
        self.logs[partition].last().map_or(0, Entry::end)
    }

    /// The first offset of a pending transaction (the log end when none is pending).
    fn stable_end(&self, partition: usize) -> i64 {
        self.logs[partition]
            .iter()
            .find(|e| e.status == Status::Pending)
            .map_or_else(|| self.end_of(partition), |e| e.base)
    }

    /// Ends the ongoing transaction of `id` (if any): marks its batches and writes a marker.
    fn end(&mut self, id: &str, commit: bool) {
        let Some(state) = self.txns.get_mut(id) else { return };
        let Some((txn, partitions)) = state.ongoing.take() else { return };
        let (producer_id, epoch) = (state.producer_id, state.epoch);
        for p in partitions {
            let log = &mut self.logs[p as usize];
            for e in log.iter_mut().filter(|e| e.txn == txn && e.status == Status::Pending) {
                e.status = if commit { Status::Committed } else { Status::Aborted };
            }
            let base = log.last().map_or(0, Entry::end);
            let mut key = Vec::new();
            key.put_i16(0);
            key.put_i16(commit as i16);
            let mut value = Vec::new();
            value.put_i16(0);
            value.put_i32(0);
            let marker = Record {
                transactional: true,
                control: true,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id,
                producer_epoch: epoch,
                timestamp_type: TimestampType::Creation,
                offset: base,
                sequence: -1,
                timestamp: 0,
                key: Some(Bytes::from(key)),
                value: Some(Bytes::from(value)),
                headers: IndexMap::new(),
            };
            log.push(Entry {
                base,
                records: vec![marker],
                status: if commit { Status::Committed } else { Status::Aborted },
                producer_id,
                txn,
                marker: Some(commit),
            });
        }
    }
}

/// The fake broker; stops when dropped.
pub struct FakeKafka {
    addr: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl FakeKafka {
    /// Starts a broker serving `topic` with `partitions` partitions.
    pub fn start(topic: &str, partitions: i32, mode: EndTxnMode) -> FakeKafka {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            topic: topic.to_string(),
            partitions,
            port,
            mode,
            next_producer_id: 1000,
            next_txn: 1,
            txns: HashMap::new(),
            sequences: HashMap::new(),
            logs: vec![Vec::new(); partitions as usize],
            seen: Vec::new(),
            hold_commits: false,
            held: Vec::new(),
            stall: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let state = state.clone();
                    std::thread::spawn(move || serve(stream, state));
                }
            })
        };
        FakeKafka { addr: format!("127.0.0.1:{port}"), state, stop, acceptor: Some(acceptor) }
    }

    /// `host:port` to bootstrap from.
    pub fn bootstrap(&self) -> String {
        self.addr.clone()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The requests of one API.
    pub fn requests_of(&self, key: ApiKey) -> Vec<Seen> {
        self.requests().into_iter().filter(|s| s.api_key == key).collect()
    }

    /// The values of the committed (and non-transactional) records of `partition`, in
    /// offset order: what a read_committed consumer sees.
    pub fn committed_values(&self, partition: i32) -> Vec<Vec<u8>> {
        self.values(partition, |s| matches!(s, Status::Committed | Status::Plain))
    }

    /// The values of the records still pending (in a transaction not yet ended).
    pub fn pending_values(&self, partition: i32) -> Vec<Vec<u8>> {
        self.values(partition, |s| s == Status::Pending)
    }

    /// The values of aborted records.
    pub fn aborted_values(&self, partition: i32) -> Vec<Vec<u8>> {
        self.values(partition, |s| s == Status::Aborted)
    }

    fn values(&self, partition: i32, wanted: impl Fn(Status) -> bool) -> Vec<Vec<u8>> {
        let state = self.state.lock().unwrap();
        state.logs[partition as usize]
            .iter()
            .filter(|e| e.marker.is_none() && wanted(e.status))
            .flat_map(|e| e.records.iter().map(|r| r.value.as_deref().unwrap_or_default().to_vec()))
            .collect()
    }

    /// Whether `id` has a transaction ongoing.
    pub fn is_ongoing(&self, id: &str) -> bool {
        self.state.lock().unwrap().txns.get(id).is_some_and(|t| t.ongoing.is_some())
    }

    /// Holds commits from now on (`true`) or no longer: see `State::hold_commits`.
    pub fn hold_commits(&self, hold: bool) {
        self.state.lock().unwrap().hold_commits = hold;
    }

    /// The commits held: (transactional id, producer id, epoch).
    pub fn held(&self) -> Vec<(String, i64, i16)> {
        self.state.lock().unwrap().held.clone()
    }

    /// While `stall`, answers nothing (a broker that stops answering); how many it did not.
    pub fn stall(&self, stall: bool) -> usize {
        let mut state = self.state.lock().unwrap();
        let n = state.stall.unwrap_or(0);
        state.stall = stall.then_some(n);
        n
    }

    /// `id`'s current producer id and epoch.
    pub fn producer_of(&self, id: &str) -> Option<(i64, i16)> {
        self.state.lock().unwrap().txns.get(id).map(|t| (t.producer_id, t.epoch))
    }
}

impl Drop for FakeKafka {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor.
        let _ = TcpStream::connect(&self.addr);
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

/// Serves one connection until the peer closes it (or the fake decides to drop it).
fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    loop {
        let mut len = [0u8; 4];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let len = i32::from_be_bytes(len);
        if !(0..=(512 << 20)).contains(&len) {
            return;
        }
        let mut body = vec![0u8; len as usize];
        if stream.read_exact(&mut body).is_err() {
            return;
        }
        let mut body = Bytes::from(body);
        let Ok(header) = decode_request_header_from_buffer(&mut body) else { return };
        let Ok(key) = ApiKey::try_from(header.request_api_key) else { return };
        let version = header.request_api_version;
        if state.lock().unwrap().stall.as_mut().map(|n| *n += 1).is_some() {
            while state.lock().unwrap().stall.is_some() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            return;
        }
        if key == ApiKey::EndTxn {
            let request: EndTxnRequest = decoded(&mut body.clone(), version);
            let mut held = false;
            {
                let mut state = state.lock().unwrap();
                if state.hold_commits && request.committed {
                    let id = txn_id(&request.transactional_id);
                    state.held.push((id, request.producer_id.0, request.producer_epoch));
                    held = true;
                }
            }
            if held {
                while state.lock().unwrap().hold_commits {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                return;
            }
        }
        let answer = {
            let mut state = state.lock().unwrap();
            handle(&mut state, key, version, &mut body)
        };
        let Some(answer) = answer else { return };
        let mut out = BytesMut::new();
        out.put_i32(0);
        let response_header = ResponseHeader::default().with_correlation_id(header.correlation_id);
        if response_header.encode(&mut out, key.response_header_version(version)).is_err() {
            return;
        }
        out.extend_from_slice(&answer);
        let n = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&n.to_be_bytes());
        if stream.write_all(&out).is_err() {
            return;
        }
    }
}

fn encoded<T: Encodable>(response: T, version: i16) -> Option<Bytes> {
    let mut buf = BytesMut::new();
    response.encode(&mut buf, version).expect("the fake's response encodes");
    Some(buf.freeze())
}

fn decoded<T: Decodable>(body: &mut Bytes, version: i16) -> T {
    T::decode(body, version).expect("the client's request decodes")
}

fn txn_id(t: &TransactionalId) -> String {
    t.0.to_string()
}

/// The APIs the fake serves.
const SERVED: [ApiKey; 9] = [
    ApiKey::ApiVersions,
    ApiKey::Metadata,
    ApiKey::FindCoordinator,
    ApiKey::InitProducerId,
    ApiKey::AddPartitionsToTxn,
    ApiKey::Produce,
    ApiKey::EndTxn,
    ApiKey::ListOffsets,
    ApiKey::Fetch,
];

/// Answers one request (`None`: drop the connection).
fn handle(state: &mut State, key: ApiKey, version: i16, body: &mut Bytes) -> Option<Bytes> {
    let mut seen = Seen::new(key, version);
    let answer = match key {
        ApiKey::ApiVersions => {
            let _: ApiVersionsRequest = decoded(body, version);
            let api_keys = SERVED
                .iter()
                .filter(|k| !(**k == ApiKey::EndTxn && state.mode == EndTxnMode::NotAdvertised))
                .map(|k| {
                    let v = k.valid_versions();
                    ApiVersion::default()
                        .with_api_key(*k as i16)
                        .with_min_version(v.min)
                        .with_max_version(v.max)
                })
                .collect();
            encoded(ApiVersionsResponse::default().with_api_keys(api_keys), version)
        }
        ApiKey::Metadata => {
            let request: MetadataRequest = decoded(body, version);
            let names: Vec<String> = match request.topics {
                None => vec![state.topic.clone()],
                Some(ts) => ts.iter().filter_map(|t| t.name.as_ref().map(|n| n.0.to_string())).collect(),
            };
            let topics = names
                .into_iter()
                .map(|n| {
                    let t = MetadataResponseTopic::default()
                        .with_name(Some(TopicName(StrBytes::from_string(n.clone()))));
                    if n != state.topic {
                        return t.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                    }
                    t.with_partitions(
                        (0..state.partitions)
                            .map(|p| {
                                MetadataResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_leader_id(BrokerId(0))
                                    .with_replica_nodes(vec![BrokerId(0)])
                                    .with_isr_nodes(vec![BrokerId(0)])
                            })
                            .collect(),
                    )
                })
                .collect();
            let response = MetadataResponse::default()
                .with_brokers(vec![
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(0))
                        .with_host(StrBytes::from_static_str("127.0.0.1"))
                        .with_port(state.port as i32),
                ])
                .with_controller_id(BrokerId(0))
                .with_topics(topics);
            encoded(response, version)
        }
        ApiKey::FindCoordinator => {
            let request: FindCoordinatorRequest = decoded(body, version);
            let host = StrBytes::from_static_str("127.0.0.1");
            let port = state.port as i32;
            let mut response = FindCoordinatorResponse::default()
                .with_node_id(BrokerId(0))
                .with_host(host.clone())
                .with_port(port);
            if version >= 4 {
                response.coordinators = request
                    .coordinator_keys
                    .iter()
                    .map(|k| {
                        Coordinator::default()
                            .with_key(k.clone())
                            .with_node_id(BrokerId(0))
                            .with_host(host.clone())
                            .with_port(port)
                    })
                    .collect();
            } else {
                seen.transactional_id = (request.key_type == 1).then(|| request.key.to_string());
            }
            encoded(response, version)
        }
        ApiKey::InitProducerId => {
            let request: InitProducerIdRequest = decoded(body, version);
            let (producer_id, epoch) = match &request.transactional_id {
                None => {
                    state.next_producer_id += 1;
                    (state.next_producer_id, 0)
                }
                Some(t) => {
                    let id = txn_id(t);
                    seen.transactional_id = Some(id.clone());
                    // Fencing, as Kafka's coordinator does it: an ongoing transaction is
                    // aborted under a bumped epoch and the caller is told to retry.
                    if state.txns.get(&id).is_some_and(|t| t.ongoing.is_some()) {
                        state.txns.get_mut(&id).expect("checked").epoch += 1;
                        state.end(&id, false);
                        seen.code = Some(CONCURRENT_TRANSACTIONS);
                        state.seen.push(seen);
                        return encoded(
                            InitProducerIdResponse::default()
                                .with_error_code(CONCURRENT_TRANSACTIONS)
                                .with_producer_id(ProducerId(-1))
                                .with_producer_epoch(-1),
                            version,
                        );
                    }
                    let fresh = state.next_producer_id + 1;
                    let entry = state.txns.entry(id).or_insert(TxnState {
                        producer_id: fresh,
                        epoch: -1,
                        ongoing: None,
                    });
                    entry.epoch += 1;
                    let answer = (entry.producer_id, entry.epoch);
                    if answer.0 == fresh {
                        state.next_producer_id = fresh;
                    }
                    answer
                }
            };
            seen.producer = Some((producer_id, epoch));
            seen.code = Some(0);
            encoded(
                InitProducerIdResponse::default()
                    .with_producer_id(ProducerId(producer_id))
                    .with_producer_epoch(epoch),
                version,
            )
        }
        ApiKey::AddPartitionsToTxn => {
            let request: AddPartitionsToTxnRequest = decoded(body, version);
            let id = txn_id(&request.v3_and_below_transactional_id);
            let producer = (request.v3_and_below_producer_id.0, request.v3_and_below_producer_epoch);
            seen.transactional_id = Some(id.clone());
            seen.producer = Some(producer);
            let code = match state.txns.get(&id) {
                None => INVALID_PRODUCER_ID_MAPPING,
                Some(t) if t.producer_id != producer.0 => INVALID_PRODUCER_ID_MAPPING,
                Some(t) if t.epoch > producer.1 => PRODUCER_FENCED,
                Some(t) if t.epoch < producer.1 => INVALID_PRODUCER_EPOCH,
                Some(_) => 0,
            };
            let mut results = Vec::new();
            for topic in &request.v3_and_below_topics {
                let known = topic.name.0.as_str() == state.topic;
                let mut partitions = Vec::new();
                for &p in &topic.partitions {
                    let code = if !known || p < 0 || p >= state.partitions {
                        UNKNOWN_TOPIC_OR_PARTITION
                    } else {
                        code
                    };
                    if code == 0 {
                        let t = state.txns.get_mut(&id).expect("checked above");
                        if t.ongoing.is_none() {
                            t.ongoing = Some((state.next_txn, BTreeSet::new()));
                            state.next_txn += 1;
                        }
                        t.ongoing.as_mut().expect("set above").1.insert(p);
                    }
                    seen.code = Some(seen.code.unwrap_or(0).max(code));
                    partitions.push(
                        AddPartitionsToTxnPartitionResult::default()
                            .with_partition_index(p)
                            .with_partition_error_code(code),
                    );
                }
                results.push(
                    AddPartitionsToTxnTopicResult::default()
                        .with_name(topic.name.clone())
                        .with_results_by_partition(partitions),
                );
            }
            encoded(
                AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results),
                version,
            )
        }
        ApiKey::Produce => {
            let request: ProduceRequest = decoded(body, version);
            seen.transactional_id = request.transactional_id.as_ref().map(txn_id);
            let mut responses = Vec::new();
            for topic in &request.topic_data {
                let mut partitions = Vec::new();
                for data in &topic.partition_data {
                    let (code, base) =
                        produce(state, &mut seen, topic.name.0.as_str(), data.index, data.records.clone());
                    seen.code = Some(code);
                    partitions.push(
                        PartitionProduceResponse::default()
                            .with_index(data.index)
                            .with_error_code(code)
                            .with_base_offset(base)
                            .with_log_append_time_ms(-1),
                    );
                }
                responses.push(
                    TopicProduceResponse::default()
                        .with_name(topic.name.clone())
                        .with_partition_responses(partitions),
                );
            }
            encoded(ProduceResponse::default().with_responses(responses), version)
        }
        ApiKey::EndTxn => {
            let request: EndTxnRequest = decoded(body, version);
            let id = txn_id(&request.transactional_id);
            let producer = (request.producer_id.0, request.producer_epoch);
            seen.transactional_id = Some(id.clone());
            seen.producer = Some(producer);
            seen.commit = Some(request.committed);
            if state.mode != EndTxnMode::Serve {
                state.seen.push(seen);
                return None;
            }
            let code = match state.txns.get(&id) {
                None => INVALID_PRODUCER_ID_MAPPING,
                Some(t) if t.producer_id != producer.0 => INVALID_PRODUCER_ID_MAPPING,
                Some(t) if t.epoch > producer.1 => PRODUCER_FENCED,
                Some(t) if t.epoch < producer.1 => INVALID_PRODUCER_EPOCH,
                Some(t) if t.ongoing.is_none() => INVALID_TXN_STATE,
                Some(_) => 0,
            };
            if code == 0 {
                state.end(&id, request.committed);
            }
            seen.code = Some(code);
            encoded(EndTxnResponse::default().with_error_code(code), version)
        }
        ApiKey::ListOffsets => {
            let request: ListOffsetsRequest = decoded(body, version);
            let mut topics = Vec::new();
            for t in &request.topics {
                let known = t.name.0.as_str() == state.topic;
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let r =
                            ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
                        if !known || p.partition_index < 0 || p.partition_index >= state.partitions {
                            return r.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                        }
                        let i = p.partition_index as usize;
                        let offset = match p.timestamp {
                            -2 => 0,
                            -1 if request.isolation_level == 1 => state.stable_end(i),
                            -1 => state.end_of(i),
                            t => state.logs[i]
                                .iter()
                                .flat_map(|e| e.records.iter())
                                .find(|r| !r.control && r.timestamp >= t)
                                .map_or(-1, |r| r.offset),
                        };
                        r.with_offset(offset).with_timestamp(-1)
                    })
                    .collect();
                topics.push(
                    ListOffsetsTopicResponse::default().with_name(t.name.clone()).with_partitions(partitions),
                );
            }
            encoded(ListOffsetsResponse::default().with_topics(topics), version)
        }
        ApiKey::Fetch => {
            let request: FetchRequest = decoded(body, version);
            let read_committed = request.isolation_level == 1;
            let mut responses = Vec::new();
            for t in &request.topics {
                let known = t.topic.0.as_str() == state.topic;
                let partitions = t
                    .partitions
                    .iter()
                    .map(|p| fetch(state, known, p.partition, p.fetch_offset, read_committed))
                    .collect();
                responses.push(
                    FetchableTopicResponse::default().with_topic(t.topic.clone()).with_partitions(partitions),
                );
            }
            encoded(FetchResponse::default().with_responses(responses), version)
        }
        _ => None,
    };
    state.seen.push(seen);
    answer
}

/// Appends one produced batch; returns (error code, base offset).
fn produce(
    state: &mut State,
    seen: &mut Seen,
    topic: &str,
    partition: i32,
    records: Option<Bytes>,
) -> (i16, i64) {
    if topic != state.topic || partition < 0 || partition >= state.partitions {
        return (UNKNOWN_TOPIC_OR_PARTITION, -1);
    }
    let Some(mut bytes) = records else { return (CORRUPT_MESSAGE, -1) };
    let Ok(set) = RecordBatchDecoder::decode(&mut bytes) else { return (CORRUPT_MESSAGE, -1) };
    if bytes.has_remaining() || set.records.is_empty() {
        return (CORRUPT_MESSAGE, -1);
    }
    let first = &set.records[0];
    let (producer_id, epoch, transactional, sequence) =
        (first.producer_id, first.producer_epoch, first.transactional, first.sequence);
    seen.producer = (producer_id >= 0).then_some((producer_id, epoch));
    seen.batch = Some((transactional, sequence));
    let mut txn = 0;
    let status = if transactional {
        let Some(id) = &seen.transactional_id else { return (INVALID_TXN_STATE, -1) };
        match state.txns.get(id) {
            Some(t) if t.producer_id != producer_id => return (INVALID_PRODUCER_ID_MAPPING, -1),
            Some(t) if t.epoch > epoch => return (PRODUCER_FENCED, -1),
            Some(t) if t.epoch < epoch => return (INVALID_PRODUCER_EPOCH, -1),
            Some(TxnState { ongoing: Some((n, parts)), .. }) if parts.contains(&partition) => txn = *n,
            _ => return (INVALID_TXN_STATE, -1),
        }
        Status::Pending
    } else {
        Status::Plain
    };
    if producer_id >= 0 {
        let expected = state.sequences.get(&(producer_id, epoch, partition)).copied().unwrap_or(0);
        if sequence != expected {
            return (OUT_OF_ORDER_SEQUENCE_NUMBER, -1);
        }
        state
            .sequences
            .insert((producer_id, epoch, partition), sequence.wrapping_add(set.records.len() as i32));
    }
    let base = state.end_of(partition as usize);
    let mut records = set.records;
    for (i, r) in records.iter_mut().enumerate() {
        r.offset = base + i as i64;
    }
    state.logs[partition as usize].push(Entry { base, records, status, producer_id, txn, marker: None });
    (0, base)
}

/// One partition's fetch answer: whole batches from the one holding `offset`, up to the high
/// watermark (read_uncommitted) or the last stable offset (read_committed).
fn fetch(state: &State, known: bool, partition: i32, offset: i64, read_committed: bool) -> PartitionData {
    let data = PartitionData::default().with_partition_index(partition);
    if !known || partition < 0 || partition >= state.partitions {
        return data.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
    }
    let i = partition as usize;
    let (end, stable) = (state.end_of(i), state.stable_end(i));
    let limit = if read_committed { stable } else { end };
    let mut buf = BytesMut::new();
    let mut aborted: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
    for e in state.logs[i].iter().filter(|e| e.end() > offset && e.base < limit) {
        if e.status == Status::Aborted && e.marker.is_none() {
            aborted.entry(e.txn).or_insert((e.producer_id, e.base));
        }
        let options = RecordEncodeOptions { version: 2, compression: Compression::None };
        RecordBatchEncoder::encode(&mut buf, &e.records, &options).expect("a logged batch encodes");
    }
    let aborted_transactions = read_committed.then(|| {
        aborted
            .values()
            .map(|(pid, first)| {
                AbortedTransaction::default().with_producer_id(ProducerId(*pid)).with_first_offset(*first)
            })
            .collect()
    });
    data.with_high_watermark(end)
        .with_last_stable_offset(stable)
        .with_log_start_offset(0)
        .with_aborted_transactions(aborted_transactions)
        .with_records(Some(buf.freeze()))
}
