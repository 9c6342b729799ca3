//! A real Kafka-protocol broker for the tests: Tansu 0.6.0 (docs/kafka-testing.md) as a child
//! process on a loopback port, storing its topics and records in a SQLite file in a data
//! directory, so that a restart (even after SIGKILL) keeps them. Also a minimal blocking
//! Kafka connection (`KafkaConn`, any `kafka_protocol` request) that does not depend on the
//! engine's Kafka client, for setting up and checking a broker from a test.
//!
//! The binary comes from `WEIR_TANSU`, else from `~/.cache/weir/tansu/0.6.0-libsql/bin/tansu`
//! (where `.ci/run` installs it).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ApiVersionsRequest, ApiVersionsResponse,
    BrokerId, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, EndTxnRequest, EndTxnResponse, FetchRequest, FetchResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, InitProducerIdRequest, InitProducerIdResponse,
    ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse, ProduceRequest,
    ProduceResponse, ProducerId, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, Record,
    RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// The Tansu release the tests are written against.
pub const TANSU_VERSION: &str = "0.6.0";

/// How long a start (or restart) may take before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The broker's SQLite file, relative to its data directory (its working directory).
pub const DB_FILE: &str = "tansu.db";

/// The Tansu binary: `WEIR_TANSU`, else the cache path `.ci/run` installs to. Panics saying
/// how to install it when neither exists.
pub fn tansu_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WEIR_TANSU") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "WEIR_TANSU={} is not a file; {}", path.display(), install_hint());
        return path;
    }
    let path = cache_path();
    assert!(path.is_file(), "no Tansu broker at {}; {}", path.display(), install_hint());
    path
}

fn cache_path() -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
    home.join(format!(".cache/weir/tansu/{TANSU_VERSION}-libsql/bin/tansu"))
}

fn install_hint() -> String {
    format!(
        "the Kafka tests need Tansu {TANSU_VERSION} built with SQLite storage: run \
         `bash .ci/run tansu` (about 10 minutes the first time), or `cargo install --locked tansu \
         --version {TANSU_VERSION} --features dynostore,libsql --root ~/.cache/weir/tansu/{TANSU_VERSION}-libsql`, \
         or set WEIR_TANSU to such a binary"
    )
}

/// Where a broker keeps its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// `sqlite://tansu.db` in the data directory: survives a restart and a SIGKILL.
    Sqlite,
    /// `memory://tansu/`: lost when the broker stops.
    Memory,
}

/// A Tansu broker process. Dropping it kills the process (SIGKILL) and reaps it; when the
/// thread is panicking (a failing test), the broker's log is printed first.
pub struct TansuBroker {
    binary: PathBuf,
    data_dir: PathBuf,
    storage: Storage,
    extra_args: Vec<String>,
    port: u16,
    child: Option<Child>,
    starts: u32,
}

impl TansuBroker {
    /// Starts a broker with SQLite storage in `data_dir` (created if missing) on a free
    /// loopback port, and waits until it answers an ApiVersions request.
    pub fn start(data_dir: &Path) -> TansuBroker {
        Self::start_with(data_dir, Storage::Sqlite, &[])
    }

    /// Like `start`, with a choice of storage and extra `tansu broker` arguments (such as
    /// `--authentication`).
    pub fn start_with(data_dir: &Path, storage: Storage, extra_args: &[&str]) -> TansuBroker {
        std::fs::create_dir_all(data_dir).expect("create the broker's data directory");
        let mut broker = TansuBroker {
            binary: tansu_binary(),
            data_dir: data_dir.to_path_buf(),
            storage,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            port: 0,
            child: None,
            starts: 0,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            broker.port = free_port();
            match broker.spawn(deadline) {
                Ok(()) => return broker,
                // Another process took the port between our probe and the broker's bind.
                Err(Collision) => assert!(
                    Instant::now() < deadline,
                    "Tansu did not find a free port in {START_TIMEOUT:?}; its log:\n{}",
                    broker.log()
                ),
            }
        }
    }

    /// The broker's address (what it also advertises in Metadata).
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// `host:port`, for a client's bootstrap servers.
    pub fn bootstrap(&self) -> String {
        self.addr().to_string()
    }

    /// The data directory (the broker's working directory, holding its log and SQLite file).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The file the broker's stdout and stderr go to (appended to by every start).
    pub fn log_path(&self) -> PathBuf {
        self.data_dir.join("tansu.log")
    }

    /// The broker's log so far.
    pub fn log(&self) -> String {
        std::fs::read(self.log_path()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
    }

    /// The process id of the running broker (panics when it is not running).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the broker is running").id()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.try_wait().expect("poll the broker").is_none())
    }

    /// Kills the broker with SIGKILL (no shutdown of any kind) and reaps it. No-op when it
    /// is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            child.wait().expect("reap the broker");
        }
    }

    /// Stops the broker (SIGKILL: SQLite commits are durable, so nothing acknowledged is
    /// lost) and reaps it.
    pub fn stop(&mut self) {
        self.kill();
    }

    /// Kills the broker if it runs and starts it again on the same port and data, waiting
    /// until it answers. (With `Storage::Memory` its topics and records are gone.)
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + START_TIMEOUT;
        // The port is ours to take again; a collision here is a short-lived outgoing
        // connection on it, or a listener that will not go: retry until the deadline.
        while self.spawn(deadline).is_err() {
            assert!(
                Instant::now() < deadline,
                "Tansu could not take its port {} again in {START_TIMEOUT:?}; its log:\n{}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Restarts the broker (as `restart`) with other extra `tansu broker` arguments.
    pub fn restart_with(&mut self, extra_args: &[&str]) {
        self.extra_args = extra_args.iter().map(|a| a.to_string()).collect();
        self.restart();
    }

    /// Creates a SCRAM-SHA-256 user with `tansu user create` (its default 8192 iterations).
    /// The broker must run without `--authentication`, which refuses this before a client
    /// authenticates: create users, then `restart_with(&["--authentication"])`.
    pub fn create_user(&self, name: &str, password: &str) {
        let output = Command::new(&self.binary)
            .args([
                "user",
                "create",
                "--broker",
                &format!("tcp://{}", self.addr()),
                "--mechanism",
                "scram256",
            ])
            .args([name, password])
            .env("NO_COLOR", "1")
            .output()
            .expect("run tansu user create");
        assert!(
            output.status.success(),
            "tansu user create {name} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// A new connection to the broker.
    pub fn connect(&self) -> KafkaConn {
        KafkaConn::connect(self.addr()).unwrap_or_else(|e| panic!("connect to Tansu at {}: {e}", self.addr()))
    }

    /// The API versions the broker advertises: api key → (min, max).
    pub fn api_versions(&self) -> BTreeMap<i16, (i16, i16)> {
        let response = self.connect().request(&ApiVersionsRequest::default(), 3).expect("ApiVersions");
        assert_eq!(response.error_code, 0, "ApiVersions failed: {response:?}");
        response.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect()
    }

    /// Creates `name` with `partitions` partitions (CreateTopics v7); panics on any error.
    pub fn create_topic(&self, name: &str, partitions: i32) {
        let topic = CreatableTopic::default()
            .with_name(topic_name(name))
            .with_num_partitions(partitions)
            .with_replication_factor(1);
        let request = CreateTopicsRequest::default().with_topics(vec![topic]).with_timeout_ms(30_000);
        let response = self.connect().request(&request, 7).expect("CreateTopics");
        let result = response.topics.first().expect("a CreateTopics result");
        assert_eq!(result.error_code, 0, "creating topic {name} failed: {result:?}");
    }

    /// Metadata (v12) for `topics`, or for every topic when `None`.
    pub fn metadata(&self, topics: Option<&[&str]>) -> MetadataResponse {
        let topics = topics.map(|names| {
            names.iter().map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n)))).collect()
        });
        let request = MetadataRequest::default().with_topics(topics).with_allow_auto_topic_creation(false);
        self.connect().request(&request, 12).expect("Metadata")
    }

    /// The topics the broker knows, with their partition counts.
    pub fn topics(&self) -> BTreeMap<String, usize> {
        self.metadata(None)
            .topics
            .iter()
            .filter(|t| t.error_code == 0)
            .filter_map(|t| Some((t.name.as_ref()?.to_string(), t.partitions.len())))
            .collect()
    }

    /// The partition count of `topic`, or `None` when the broker does not know it.
    pub fn partitions(&self, topic: &str) -> Option<usize> {
        self.topics().get(topic).copied()
    }

    /// Grows `topic` to `partitions` partitions, while the broker runs. Tansu 0.6.0 has no
    /// CreatePartitions, so this writes the rows its own CreateTopics writes (topic.partitions,
    /// topition, watermark) into the SQLite file, through python3's sqlite3 module, in one
    /// transaction. Only for `Storage::Sqlite`; the broker reads these tables on every
    /// Metadata, Produce and Fetch (no cache), so the new partitions are live at once.
    pub fn add_partitions(&self, topic: &str, partitions: i32) {
        assert_eq!(self.storage, Storage::Sqlite, "add_partitions needs the SQLite storage");
        const SCRIPT: &str = r#"
import sqlite3, sys
db, topic, wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(db, timeout=30, isolation_level=None)
con.execute("begin immediate")
row = con.execute("select id, partitions from topic where name = ?", (topic,)).fetchone()
if row is None:
    sys.exit("no topic %s" % topic)
tid, have = row
if wanted <= have:
    sys.exit("topic %s has %d partitions, not fewer than %d" % (topic, have, wanted))
for p in range(have, wanted):
    tp = con.execute("insert into topition (topic, partition) values (?, ?) returning id", (tid, p)).fetchone()[0]
    con.execute("insert into watermark (topition) values (?)", (tp,))
con.execute("update topic set partitions = ?, last_updated = current_timestamp where id = ?", (wanted, tid))
con.execute("commit")
"#;
        let output = Command::new("python3")
            .args(["-c", SCRIPT])
            .arg(self.data_dir.join(DB_FILE))
            .arg(topic)
            .arg(partitions.to_string())
            .output()
            .expect("run python3 (the partition rows are written with its sqlite3 module)");
        assert!(
            output.status.success(),
            "adding partitions to {topic} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Appends `records` as one batch to `topic`/`partition` (Produce v9, acks all).
    /// Returns the batch's base offset, or the partition's error code.
    pub fn produce(&self, topic: &str, partition: i32, records: &[Record]) -> Result<i64, i16> {
        let mut conn = self.connect();
        conn.produce(topic, partition, records)
    }

    /// The partition's next offset (ListOffsets v7, latest).
    pub fn latest_offset(&self, topic: &str, partition: i32) -> i64 {
        let partitions =
            vec![ListOffsetsPartition::default().with_partition_index(partition).with_timestamp(-1)];
        let request = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
            ListOffsetsTopic::default().with_name(topic_name(topic)).with_partitions(partitions),
        ]);
        let response = self.connect().request(&request, 7).expect("ListOffsets");
        let p = &response.topics.first().expect("a topic").partitions.first().expect("a partition");
        assert_eq!(p.error_code, 0, "ListOffsets on {topic}/{partition} failed: {p:?}");
        p.offset
    }

    /// The records of `topic`/`partition` from `offset` on, up to what one Fetch (v11,
    /// read uncommitted, 8 MiB) returns; control records left out.
    pub fn fetch(&self, topic: &str, partition: i32, offset: i64) -> Vec<Record> {
        let p = self.fetch_partition(topic, partition, offset, 0);
        assert_eq!(p.error_code, 0, "Fetch of {topic}/{partition} failed: {p:?}");
        decode_records(p.records.clone().unwrap_or_default())
            .into_iter()
            .filter(|r| r.offset >= offset && !r.control)
            .collect()
    }

    /// One Fetch (v11: Tansu's v12 answers carry a tagged field v12 does not have, which
    /// kafka-protocol refuses; v13 on needs topic ids; 8 MiB) of `topic`/`partition` from `offset`, at `isolation_level`
    /// (0 read uncommitted, 1 read committed): the partition's answer as it came.
    pub fn fetch_partition(
        &self,
        topic: &str,
        partition: i32,
        offset: i64,
        isolation_level: i8,
    ) -> PartitionData {
        let fetch_partition = FetchPartition::default()
            .with_partition(partition)
            .with_fetch_offset(offset)
            .with_partition_max_bytes(8 << 20);
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(100)
            .with_min_bytes(1)
            .with_session_epoch(-1)
            .with_max_bytes(8 << 20)
            .with_isolation_level(isolation_level)
            .with_topics(vec![
                FetchTopic::default().with_topic(topic_name(topic)).with_partitions(vec![fetch_partition]),
            ]);
        let mut response = self.connect().request(&request, 11).expect("Fetch");
        let mut topic_response = response.responses.pop().expect("a topic");
        topic_response.partitions.pop().expect("a partition")
    }

    /// A new idempotent producer id and epoch (InitProducerId v4, no transactional id).
    pub fn init_producer_id(&self) -> (i64, i16) {
        let request = InitProducerIdRequest::default()
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let response = self.connect().request(&request, 4).expect("InitProducerId");
        assert_eq!(response.error_code, 0, "InitProducerId failed: {response:?}");
        (response.producer_id.0, response.producer_epoch)
    }

    /// Starts the process on `self.port` and waits until it answers ApiVersions. Err when
    /// the port was taken.
    fn spawn(&mut self, deadline: Instant) -> Result<(), Collision> {
        self.starts += 1;
        let log_path = self.log_path();
        let mut log =
            OpenOptions::new().create(true).append(true).open(&log_path).expect("open the broker log");
        let url = format!("tcp://127.0.0.1:{}", self.port);
        writeln!(log, "=== start {} on {url}", self.starts).expect("write the broker log");
        let offset = log.metadata().expect("log metadata").len();
        let storage = match self.storage {
            Storage::Sqlite => format!("sqlite://{DB_FILE}"),
            Storage::Memory => "memory://tansu/".to_string(),
        };
        let child = Command::new(&self.binary)
            .arg("broker")
            .args(["--listener-url", &url, "--advertised-listener-url", &url])
            .args(["--storage-engine", &storage])
            .args(&self.extra_args)
            .current_dir(&self.data_dir)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}; {}", self.binary.display(), install_hint()));
        self.child = Some(child);
        // "ready in" is printed once the listener is bound; until then a connection could
        // reach another process on the port.
        loop {
            let text = read_from(&log_path, offset);
            if text.contains("ready in") {
                break;
            }
            if !self.is_running() {
                self.kill();
                if text.contains("AddrInUse") || text.contains("Address in use") {
                    return Err(Collision);
                }
                panic!("Tansu exited while starting; its log:\n{text}");
            }
            assert!(Instant::now() < deadline, "Tansu did not start in {START_TIMEOUT:?}; its log:\n{text}");
            std::thread::sleep(Duration::from_millis(20));
        }
        loop {
            let answer = KafkaConn::connect(self.addr())
                .and_then(|mut c| c.request(&ApiVersionsRequest::default(), 3).map_err(Into::into));
            match answer {
                Ok(r) if r.error_code == 0 => return Ok(()),
                other => assert!(
                    Instant::now() < deadline && self.is_running(),
                    "Tansu did not answer ApiVersions in {START_TIMEOUT:?} ({other:?}); its log:\n{}",
                    read_from(&log_path, offset)
                ),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TansuBroker {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!(
                "--- Tansu broker log ({}):\n{}--- end of the Tansu log",
                self.log_path().display(),
                self.log()
            );
        }
    }
}

/// The broker's port was taken by another process.
#[derive(Debug)]
struct Collision;

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

fn read_from(path: &Path, offset: u64) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    String::from_utf8_lossy(bytes.get(offset as usize..).unwrap_or_default()).into_owned()
}

/// A plain record (no producer id) with `key` and `value`; `offset_delta` is its place in its
/// batch.
pub fn record(offset_delta: i64, key: &[u8], value: &[u8]) -> Record {
    Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        timestamp_type: TimestampType::Creation,
        offset: offset_delta,
        sequence: NO_SEQUENCE,
        timestamp: 1_700_000_000_000 + offset_delta,
        key: Some(bytes::Bytes::copy_from_slice(key)),
        value: Some(bytes::Bytes::copy_from_slice(value)),
        headers: Default::default(),
    }
}

/// Every record of the record batches in `bytes` (a Fetch answer's `records`), control
/// records included.
pub fn decode_records(mut bytes: bytes::Bytes) -> Vec<Record> {
    let mut records = Vec::new();
    while !bytes.is_empty() {
        let set = RecordBatchDecoder::decode(&mut bytes).expect("decode a fetched record batch");
        records.extend(set.records);
    }
    records
}

/// A topic name for a request.
pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

/// A request `KafkaConn` sends: its API key and its response. (kafka-protocol's own `Request`
/// trait needs its `broker` feature, which the engine does not enable.)
pub trait KafkaRequest: Encodable + HeaderVersion {
    /// The request's API key.
    const KEY: ApiKey;
    /// The response it gets.
    type Response: Decodable + HeaderVersion;
}

macro_rules! kafka_requests {
    ($($key:ident: $request:ident => $response:ident,)*) => {$(
        impl KafkaRequest for $request {
            const KEY: ApiKey = ApiKey::$key;
            type Response = $response;
        }
    )*};
}

kafka_requests! {
    AddPartitionsToTxn: AddPartitionsToTxnRequest => AddPartitionsToTxnResponse,
    ApiVersions: ApiVersionsRequest => ApiVersionsResponse,
    CreatePartitions: CreatePartitionsRequest => CreatePartitionsResponse,
    CreateTopics: CreateTopicsRequest => CreateTopicsResponse,
    DeleteTopics: DeleteTopicsRequest => DeleteTopicsResponse,
    EndTxn: EndTxnRequest => EndTxnResponse,
    Fetch: FetchRequest => FetchResponse,
    FindCoordinator: FindCoordinatorRequest => FindCoordinatorResponse,
    InitProducerId: InitProducerIdRequest => InitProducerIdResponse,
    ListOffsets: ListOffsetsRequest => ListOffsetsResponse,
    Metadata: MetadataRequest => MetadataResponse,
    Produce: ProduceRequest => ProduceResponse,
    SaslAuthenticate: SaslAuthenticateRequest => SaslAuthenticateResponse,
    SaslHandshake: SaslHandshakeRequest => SaslHandshakeResponse,
}

/// One blocking connection to a Kafka broker, sending `kafka_protocol` requests one at a time
/// (frame: a 4-byte big-endian length, the request header, the body).
#[derive(Debug)]
pub struct KafkaConn {
    stream: TcpStream,
    correlation_id: i32,
}

/// A failed request: the connection failed or closed (as Tansu does on a request it refuses),
/// or an answer did not decode.
#[derive(Debug)]
pub enum ConnError {
    Io(std::io::Error),
    Decode(String),
}

impl From<std::io::Error> for ConnError {
    fn from(e: std::io::Error) -> Self {
        ConnError::Io(e)
    }
}

impl From<ConnError> for std::io::Error {
    fn from(e: ConnError) -> Self {
        match e {
            ConnError::Io(e) => e,
            ConnError::Decode(d) => std::io::Error::other(d),
        }
    }
}

impl KafkaConn {
    /// Connects to `addr` (10 s connect, 30 s read and write timeouts).
    pub fn connect(addr: SocketAddr) -> std::io::Result<KafkaConn> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        stream.set_write_timeout(Some(Duration::from_secs(30)))?;
        stream.set_nodelay(true)?;
        Ok(KafkaConn { stream, correlation_id: 0 })
    }

    /// Sends `request` at `version` and reads its response.
    pub fn request<R: KafkaRequest>(&mut self, request: &R, version: i16) -> Result<R::Response, ConnError> {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("weir-tests")));
        let mut body = bytes::BytesMut::new();
        header.encode(&mut body, R::header_version(version)).map_err(|e| ConnError::Decode(e.to_string()))?;
        request.encode(&mut body, version).map_err(|e| ConnError::Decode(e.to_string()))?;
        self.send_frame(&body)?;
        let mut answer = bytes::Bytes::from(self.read_frame()?);
        let header = ResponseHeader::decode(&mut answer, R::Response::header_version(version))
            .map_err(|e| ConnError::Decode(format!("response header: {e}")))?;
        if header.correlation_id != self.correlation_id {
            return Err(ConnError::Decode(format!(
                "correlation id {} answered request {}",
                header.correlation_id, self.correlation_id
            )));
        }
        R::Response::decode(&mut answer, version)
            .map_err(|e| ConnError::Decode(format!("response body: {e}")))
    }

    /// Appends `records` as one batch (Produce v9, acks all); the base offset, or the
    /// partition's error code.
    pub fn produce(&mut self, topic: &str, partition: i32, records: &[Record]) -> Result<i64, i16> {
        let mut batch = bytes::BytesMut::new();
        let options = RecordEncodeOptions { version: 2, compression: Compression::None };
        RecordBatchEncoder::encode(&mut batch, records, &options).expect("encode a record batch");
        let data = PartitionProduceData::default().with_index(partition).with_records(Some(batch.freeze()));
        let request = ProduceRequest::default().with_acks(-1).with_timeout_ms(30_000).with_topic_data(vec![
            TopicProduceData::default().with_name(topic_name(topic)).with_partition_data(vec![data]),
        ]);
        let response = self.request(&request, 9).expect("Produce");
        let p =
            &response.responses.first().expect("a topic").partition_responses.first().expect("a partition");
        if p.error_code == 0 { Ok(p.base_offset) } else { Err(p.error_code) }
    }

    /// Writes one frame: its length, then `body`.
    pub fn send_frame(&mut self, body: &[u8]) -> std::io::Result<()> {
        let len = u32::try_from(body.len()).expect("a frame under 4 GiB");
        self.stream.write_all(&len.to_be_bytes())?;
        self.stream.write_all(body)
    }

    /// Reads one frame's body.
    pub fn read_frame(&mut self) -> std::io::Result<Vec<u8>> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len)?;
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut body)?;
        Ok(body)
    }
}
