//! A blocking Kafka-protocol client over the `kafka-protocol` crate's messages.
//!
//! Why our own and not librdkafka: the `transactional` sink must commit, after a crash, a
//! transaction that another process began (with the producer id and epoch stored in the
//! checkpoint — Flink's `resumeTransaction`), which librdkafka cannot do; and the `exactly_once`
//! sink needs to read back exactly what it produced. One small client speaks every request the
//! connectors use, with one timeout rule: every call returns or fails within the connection's
//! request timeout (retries included, bounded by `ClientConfig::retries`), never hangs.
//!
//! [`Client`] is a cluster: bootstrap connection, metadata (topics, partitions, leaders), one
//! `conn::Connection` per broker, group and transaction coordinators.

mod conn;
mod coordinated;
pub mod decompress;
mod error;
mod records;
mod scram;
#[cfg(test)]
mod tests;
mod tls;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

pub use error::KafkaError;
pub use records::{FETCH_DECODE_BYTES, FetchedRecord, ProduceRecord, decode_records, encode_batch};
pub use scram::ScramError;
pub use tls::Tls;

use conn::Connection;

/// SASL mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// PLAIN (send TLS with it: the password crosses in clear).
    Plain,
    /// SCRAM-SHA-256.
    ScramSha256,
    /// SCRAM-SHA-512.
    ScramSha512,
}

impl SaslMechanism {
    /// The mechanism's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// SASL credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Sasl {
    /// The mechanism.
    pub mechanism: SaslMechanism,
    /// User name.
    pub username: String,
    /// Password.
    pub password: String,
}

impl std::fmt::Debug for Sasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sasl")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// How the client connects.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `host:port` of one or more brokers.
    pub bootstrap: Vec<String>,
    /// The client id sent with every request.
    pub client_id: String,
    /// Opening a TCP connection.
    pub connect_timeout: Duration,
    /// One request's answer (socket read/write timeouts), and the bound on a call's retries.
    pub request_timeout: Duration,
    /// SASL, if any.
    pub sasl: Option<Sasl>,
    /// TLS, if any (the rustls config built from [`Tls`]).
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// The connection's name on a server, which errors name brokers by ("broker 2 of Kafka
    /// connection `main`"): a tenant names the connection, its addresses are the admin's and
    /// go only to the server's log. `None` (an inline connection, `weir run`): errors name
    /// the addresses, the job's own.
    pub connection: Option<String>,
}

impl PartialEq for ClientConfig {
    fn eq(&self, other: &Self) -> bool {
        self.bootstrap == other.bootstrap
            && self.client_id == other.client_id
            && self.connect_timeout == other.connect_timeout
            && self.request_timeout == other.request_timeout
            && self.sasl == other.sasl
            && self.tls.is_some() == other.tls.is_some()
            && self.connection == other.connection
    }
}

impl ClientConfig {
    /// Plaintext to `bootstrap`, default timeouts (5 s connect, 10 s per request).
    pub fn new(bootstrap: Vec<String>) -> Self {
        ClientConfig {
            bootstrap,
            client_id: "weir".into(),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            sasl: None,
            tls: None,
            connection: None,
        }
    }

    /// How errors a tenant may see name a broker: by its place in the connection, or by its
    /// address for an inline connection.
    pub(crate) fn name_of(&self, peer: Peer<'_>) -> String {
        match (&self.connection, peer) {
            (Some(c), Peer::Bootstrap(i, _)) => {
                format!("bootstrap broker {} of Kafka connection `{c}`", i + 1)
            }
            (Some(c), Peer::Node(id, _)) => format!("broker {id} of Kafka connection `{c}`"),
            (Some(c), Peer::Cluster) => format!("the cluster of Kafka connection `{c}`"),
            (None, Peer::Bootstrap(_, addr) | Peer::Node(_, addr)) => format!("the Kafka broker at {addr}"),
            (None, Peer::Cluster) => format!("the Kafka cluster at {}", self.bootstrap.join(", ")),
        }
    }
}

/// A broker as the client knows it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Peer<'a> {
    /// The `i`th bootstrap server (from 0), at this address.
    Bootstrap(usize, &'a str),
    /// The broker of this id in the cluster's metadata, at this address.
    Node(i32, &'a str),
    /// The cluster as a whole.
    Cluster,
}

/// Where a partition's reading starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The first offset still in the log.
    Earliest,
    /// The end of the log (the next offset to be written).
    Latest,
    /// The first offset whose timestamp is at or after this (ms); the end when none is.
    Timestamp(i64),
}

/// One partition's answer to a fetch.
#[derive(Debug, Clone)]
pub struct FetchedPartition {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// The end of the log (the offset the next record will get).
    pub high_watermark: i64,
    /// The first offset in the log.
    pub log_start_offset: i64,
    /// Records at or after the offset asked for, in order (control records left out; with
    /// `read_committed`, aborted ones too).
    pub records: Vec<FetchedRecord>,
    /// The offset to fetch next (past the last record or control batch seen).
    pub next_offset: i64,
    /// The partition's error, if any (the others may still have data).
    pub error: Option<KafkaError>,
}

/// A producer's identity: from InitProducerId.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProducerIdentity {
    /// Producer id.
    pub id: i64,
    /// Epoch.
    pub epoch: i16,
}

/// A topic's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPartitions {
    /// Topic.
    pub name: String,
    /// Partition ids, ascending.
    pub partitions: Vec<i32>,
}

/// A connection to a Kafka cluster.
pub struct Client {
    config: ClientConfig,
    /// Broker id → its connection (opened on first use).
    conns: HashMap<i32, Connection>,
    /// Any broker, for metadata (a bootstrap server first).
    any: Option<Connection>,
    /// Broker id → `host:port`.
    brokers: HashMap<i32, String>,
    /// (topic, partition) → leader broker id.
    leaders: HashMap<(String, i32), i32>,
    /// Coordinators: (key type, key) → broker id.
    coordinators: HashMap<(i8, String), i32>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("bootstrap", &self.config.bootstrap).finish_non_exhaustive()
    }
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

impl Client {
    /// Connects to the first bootstrap server that answers.
    pub fn connect(config: ClientConfig) -> Result<Client, KafkaError> {
        let mut client = Client {
            config,
            conns: HashMap::new(),
            any: None,
            brokers: HashMap::new(),
            leaders: HashMap::new(),
            coordinators: HashMap::new(),
        };
        client.bootstrap()?;
        Ok(client)
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    fn bootstrap(&mut self) -> Result<&mut Connection, KafkaError> {
        if self.any.as_ref().is_some_and(Connection::is_broken) {
            self.any = None;
        }
        if self.any.is_none() {
            let mut last = None;
            for (i, addr) in self.config.bootstrap.iter().enumerate() {
                match Connection::open(Peer::Bootstrap(i, addr), &self.config) {
                    Ok(c) => {
                        self.any = Some(c);
                        break;
                    }
                    Err(e) => last = Some(e),
                }
            }
            if self.any.is_none() {
                let cluster = self.config.name_of(Peer::Cluster);
                return Err(match last {
                    // None answered: the tenant hears of the connection; each address is
                    // in the server's log.
                    Some(KafkaError::Unreachable { reason, .. }) if self.config.bootstrap.len() > 1 => {
                        KafkaError::Unreachable {
                            broker: match &self.config.connection {
                                Some(c) => format!("any bootstrap broker of Kafka connection `{c}`"),
                                None => format!(
                                    "any of the Kafka brokers at {}",
                                    self.config.bootstrap.join(", ")
                                ),
                            },
                            reason: format!("the last said: {reason}"),
                        }
                    }
                    Some(e) => e,
                    None => KafkaError::Unreachable {
                        broker: cluster,
                        reason: "no bootstrap servers are configured".into(),
                    },
                });
            }
        }
        Ok(self.any.as_mut().expect("set above"))
    }

    /// Drops every connection (the next call reconnects) and the cached metadata.
    pub fn reset(&mut self) {
        self.any = None;
        self.conns.clear();
        self.leaders.clear();
        self.coordinators.clear();
    }

    /// Whether the cluster (the bootstrap broker) offers `key`.
    pub fn supports(&mut self, key: ApiKey) -> Result<bool, KafkaError> {
        Ok(self.bootstrap()?.supports(key))
    }

    /// Runs `f` until it succeeds, fails for good, or the request timeout has passed; drops
    /// the connections and metadata between tries of retriable errors.
    fn retrying<T>(
        &mut self,
        mut f: impl FnMut(&mut Client) -> Result<T, KafkaError>,
    ) -> Result<T, KafkaError> {
        let deadline = Instant::now() + self.config.request_timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            match f(self) {
                Err(e) if e.retriable() && Instant::now() + pause < deadline => {
                    self.reset();
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return other,
            }
        }
    }

    fn broker(&mut self, id: i32) -> Result<&mut Connection, KafkaError> {
        if self.conns.get(&id).is_some_and(Connection::is_broken) {
            self.conns.remove(&id);
        }
        if !self.conns.contains_key(&id) {
            let addr = self.brokers.get(&id).cloned().ok_or_else(|| KafkaError::Broker {
                code: 8,
                name: "BrokerNotAvailable".into(),
                context: format!("broker {id} is not in the cluster's metadata"),
                retriable: true,
            })?;
            let conn = Connection::open(Peer::Node(id, &addr), &self.config)?;
            self.conns.insert(id, conn);
        }
        Ok(self.conns.get_mut(&id).expect("inserted above"))
    }

    /// Metadata of `topics` (all topics when `None`), refreshing brokers and leaders.
    fn metadata(&mut self, topics: Option<&[String]>) -> Result<MetadataResponse, KafkaError> {
        let request = MetadataRequest::default()
            .with_topics(topics.map(|t| {
                t.iter().map(|n| MetadataRequestTopic::default().with_name(Some(name(n)))).collect()
            }))
            .with_allow_auto_topic_creation(false);
        let response = self.bootstrap()?.call(&request)?;
        for b in &response.brokers {
            self.brokers.insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
        }
        for t in &response.topics {
            let Some(topic) = &t.name else { continue };
            for p in &t.partitions {
                if p.error_code == 0 || p.leader_id.0 >= 0 {
                    self.leaders.insert((topic.0.to_string(), p.partition_index), p.leader_id.0);
                }
            }
        }
        Ok(response)
    }

    /// The partitions of each of `topics`; an error names the first that does not exist.
    pub fn partitions(&mut self, topics: &[String]) -> Result<Vec<TopicPartitions>, KafkaError> {
        let topics = topics.to_vec();
        self.retrying(|c| {
            let response = c.metadata(Some(&topics))?;
            let mut out = Vec::new();
            for t in &response.topics {
                let topic = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
                match ResponseError::try_from_code(t.error_code) {
                    None => {}
                    Some(ResponseError::UnknownTopicOrPartition) => {
                        return Err(KafkaError::UnknownTopic(topic));
                    }
                    Some(_) => {
                        return Err(KafkaError::from_code(
                            t.error_code,
                            format!("metadata of topic `{topic}`"),
                        ));
                    }
                }
                let mut partitions: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
                partitions.sort_unstable();
                out.push(TopicPartitions { name: topic, partitions });
            }
            Ok(out)
        })
    }

    /// Every topic of the cluster (internal ones left out).
    pub fn all_topics(&mut self) -> Result<Vec<TopicPartitions>, KafkaError> {
        self.retrying(|c| {
            let response = c.metadata(None)?;
            let mut out: Vec<TopicPartitions> = response
                .topics
                .iter()
                .filter(|t| t.error_code == 0 && !t.is_internal)
                .filter_map(|t| {
                    let mut partitions: Vec<i32> = t.partitions.iter().map(|p| p.partition_index).collect();
                    partitions.sort_unstable();
                    Some(TopicPartitions { name: t.name.as_ref()?.0.to_string(), partitions })
                })
                .collect();
            out.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(out)
        })
    }

    fn leader(&mut self, topic: &str, partition: i32) -> Result<i32, KafkaError> {
        if let Some(l) = self.leaders.get(&(topic.to_string(), partition)) {
            return Ok(*l);
        }
        let response = self.metadata(Some(&[topic.to_string()]))?;
        if let Some(t) = response.topics.first()
            && t.error_code == ResponseError::UnknownTopicOrPartition.code()
        {
            return Err(KafkaError::UnknownTopic(topic.to_string()));
        }
        match self.leaders.get(&(topic.to_string(), partition)) {
            Some(l) if *l >= 0 => Ok(*l),
            Some(_) => Err(KafkaError::Broker {
                code: 5,
                name: "LeaderNotAvailable".into(),
                context: format!("{topic}/{partition}"),
                retriable: true,
            }),
            None => Err(KafkaError::UnknownPartition(topic.to_string(), partition)),
        }
    }

    /// The offsets of `partitions` of `topic` at `spec`.
    pub fn list_offsets(
        &mut self,
        topic: &str,
        partitions: &[i32],
        spec: OffsetSpec,
    ) -> Result<BTreeMap<i32, i64>, KafkaError> {
        let timestamp = match spec {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::Timestamp(t) => t,
        };
        self.retrying(|c| {
            let mut by_leader: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            for &p in partitions {
                by_leader.entry(c.leader(topic, p)?).or_default().push(p);
            }
            let mut out = BTreeMap::new();
            let mut missing = Vec::new();
            for (leader, parts) in by_leader {
                let request = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
                    ListOffsetsTopic::default().with_name(name(topic)).with_partitions(
                        parts
                            .iter()
                            .map(|p| {
                                ListOffsetsPartition::default()
                                    .with_partition_index(*p)
                                    .with_timestamp(timestamp)
                                    .with_current_leader_epoch(-1)
                            })
                            .collect(),
                    ),
                ]);
                let response = c.broker(leader)?.call(&request)?;
                for t in response.topics {
                    for p in t.partitions {
                        if p.error_code != 0 {
                            return Err(KafkaError::from_code(
                                p.error_code,
                                format!("list offsets of {topic}/{}", p.partition_index),
                            ));
                        }
                        // No record at or after the timestamp: start at the end.
                        if p.offset < 0 {
                            missing.push(p.partition_index);
                        } else {
                            out.insert(p.partition_index, p.offset);
                        }
                    }
                }
            }
            if !missing.is_empty() {
                let ends = c.list_offsets(topic, &missing, OffsetSpec::Latest)?;
                out.extend(ends);
            }
            Ok(out)
        })
    }

    /// The end of each of `partitions` of `topic` (the offset the next record will get), read
    /// from a fetch's high watermark. Preferred to ListOffsets `latest`, which some brokers
    /// answer per batch rather than per record (Tansu 0.6: the last batch's base offset + 1).
    pub fn end_offsets(&mut self, topic: &str, partitions: &[i32]) -> Result<BTreeMap<i32, i64>, KafkaError> {
        let starts = self.list_offsets(topic, partitions, OffsetSpec::Earliest)?;
        let deadline = Instant::now() + self.config.request_timeout;
        let mut out = BTreeMap::new();
        let mut wanted: BTreeMap<(String, i32), i64> =
            starts.iter().map(|(p, o)| ((topic.to_string(), *p), *o)).collect();
        while !wanted.is_empty() {
            // A short wait, not none: some brokers answer a zero wait with no partitions.
            for part in self.fetch(&wanted, Duration::from_millis(10), 1, 1, false)? {
                match part.error {
                    None if part.high_watermark >= 0 => {
                        wanted.remove(&(part.topic.clone(), part.partition));
                        out.insert(part.partition, part.high_watermark);
                    }
                    Some(e) if !e.retriable() => return Err(e),
                    _ => {}
                }
            }
            if !wanted.is_empty() {
                if Instant::now() > deadline {
                    let missing: Vec<i32> = wanted.keys().map(|(_, p)| *p).collect();
                    return Err(KafkaError::EndUnknown { topic: topic.to_string(), partitions: missing });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(out)
    }

    /// One fetch of `wanted` ((topic, partition) → offset), grouped by leader; waits at most
    /// `max_wait` for data. A partition's error is reported in its entry (and its leader is
    /// looked up again next time), not as the call's error.
    pub fn fetch(
        &mut self,
        wanted: &BTreeMap<(String, i32), i64>,
        max_wait: Duration,
        max_bytes: i32,
        partition_max_bytes: i32,
        read_committed: bool,
    ) -> Result<Vec<FetchedPartition>, KafkaError> {
        let mut by_leader: BTreeMap<i32, Vec<(&String, i32, i64)>> = BTreeMap::new();
        let mut out = Vec::new();
        for ((topic, partition), offset) in wanted {
            match self.leader(topic, *partition) {
                Ok(l) => by_leader.entry(l).or_default().push((topic, *partition, *offset)),
                Err(e) if e.retriable() => {
                    self.leaders.clear();
                    out.push(records::failed(topic, *partition, *offset, e));
                }
                Err(e) => return Err(e),
            }
        }
        let many = by_leader.len().max(1) as u32;
        for (leader, parts) in by_leader {
            let mut topics: BTreeMap<&String, Vec<FetchPartition>> = BTreeMap::new();
            for (t, p, o) in &parts {
                topics.entry(*t).or_default().push(
                    FetchPartition::default()
                        .with_partition(*p)
                        .with_fetch_offset(*o)
                        .with_current_leader_epoch(-1)
                        .with_last_fetched_epoch(-1)
                        .with_log_start_offset(-1)
                        .with_partition_max_bytes(partition_max_bytes),
                );
            }
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms((max_wait / many).as_millis() as i32)
                .with_min_bytes(1)
                .with_max_bytes(max_bytes)
                .with_isolation_level(read_committed as i8)
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(
                    topics
                        .into_iter()
                        .map(|(t, ps)| FetchTopic::default().with_topic(name(t)).with_partitions(ps))
                        .collect(),
                );
            let response = match self.broker(leader).and_then(|b| b.call(&request)) {
                Ok(r) => r,
                Err(e) if e.retriable() => {
                    self.conns.remove(&leader);
                    self.leaders.clear();
                    for (t, p, o) in parts {
                        out.push(records::failed(t, p, o, e.clone()));
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            if response.error_code != 0 {
                return Err(KafkaError::from_code(response.error_code, "fetch"));
            }
            let mut budget = FETCH_DECODE_BYTES;
            for t in response.responses {
                let topic = t.topic.0.to_string();
                for p in t.partitions {
                    let asked = wanted.get(&(topic.clone(), p.partition_index)).copied().unwrap_or(0);
                    if p.error_code != 0 {
                        self.leaders.remove(&(topic.clone(), p.partition_index));
                        let e = match ResponseError::try_from_code(p.error_code) {
                            Some(ResponseError::UnknownTopicOrPartition) => {
                                KafkaError::UnknownTopic(topic.clone())
                            }
                            _ => KafkaError::from_code(
                                p.error_code,
                                format!("fetch of {topic}/{} at offset {asked}", p.partition_index),
                            ),
                        };
                        out.push(records::failed(&topic, p.partition_index, asked, e));
                        continue;
                    }
                    out.push(records::decode_partition(&topic, p, asked, read_committed, &mut budget)?);
                }
            }
        }
        Ok(out)
    }

    /// Produces one batch to `topic`/`partition` and waits for all in-sync replicas
    /// (`acks = -1`); returns the batch's base offset. `batch` comes from [`encode_batch`].
    /// One attempt: an error may leave the batch written or not (the caller decides how to
    /// find out, e.g. by reading the partition back).
    pub fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        batch: Bytes,
        transactional_id: Option<&str>,
    ) -> Result<i64, KafkaError> {
        let leader = self.leader(topic, partition)?;
        let request = ProduceRequest::default()
            .with_transactional_id(
                transactional_id.map(|t| TransactionalId(StrBytes::from_string(t.to_string()))),
            )
            .with_acks(-1)
            .with_timeout_ms(self.config.request_timeout.as_millis().min(i32::MAX as u128) as i32)
            .with_topic_data(vec![TopicProduceData::default().with_name(name(topic)).with_partition_data(
                vec![PartitionProduceData::default().with_index(partition).with_records(Some(batch))],
            )]);
        let response = match self.broker(leader).and_then(|b| b.call(&request)) {
            Ok(r) => r,
            Err(e) => {
                self.conns.remove(&leader);
                self.leaders.clear();
                return Err(e);
            }
        };
        let p = response.responses.first().and_then(|t| t.partition_responses.first()).ok_or_else(|| {
            KafkaError::Protocol(format!("the produce response for {topic}/{partition} is empty"))
        })?;
        // DUPLICATE_SEQUENCE_NUMBER: a retried batch the broker already has (Kafka itself
        // answers success; Tansu answers this).
        if p.error_code == ResponseError::DuplicateSequenceNumber.code() {
            return Ok(p.base_offset);
        }
        if p.error_code != 0 {
            self.leaders.remove(&(topic.to_string(), partition));
            if p.error_code == ResponseError::UnknownTopicOrPartition.code() {
                return Err(KafkaError::UnknownTopic(topic.to_string()));
            }
            let detail = p.error_message.as_ref().map(|m| format!(": {}", m.as_str())).unwrap_or_default();
            return Err(KafkaError::from_code(
                p.error_code,
                format!("produce to {topic}/{partition}{detail}"),
            ));
        }
        Ok(p.base_offset)
    }
}
