//! The Kafka connectors' settings: a connection (brokers and security), a source's and a
//! sink's options, and what a server plan resolved a node's connection to.
//!
//! A node names a connection the server's admin configured (`connection`), or, for
//! `weir run` only, writes one inline under `brokers` (a [`ConnectionConfig`]). The server
//! refuses inline connections in a tenant's spec and resolves a named one, once per plan,
//! into a [`KafkaAccess`]: the connection plus the topic and group prefixes the tenant was
//! granted. The connectors open with that access and nothing else: a field of a job spec can
//! never reach it (it is not deserialised), and its secrets never show in `Debug`.
//!
//! Every setting is checked when the job is planned; a range error names the setting and
//! its range.

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Most bootstrap servers of one connection.
pub const MAX_BOOTSTRAP_SERVERS: usize = 64;
/// Most topics a source lists.
pub const MAX_TOPICS: usize = 1000;
/// Longest `topic_pattern`, in bytes.
pub const MAX_PATTERN_LEN: usize = 1000;
/// Longest group id or transactional id prefix, in bytes.
pub const MAX_GROUP_LEN: usize = 255;
/// Kafka's longest topic name.
pub const MAX_TOPIC_LEN: usize = 249;

const CONNECT_TIMEOUT_MS: RangeInclusive<u64> = 1..=300_000;
const REQUEST_TIMEOUT_MS: RangeInclusive<u64> = 1..=600_000;
const IDLE_TIMEOUT_MS: RangeInclusive<u64> = 1..=86_400_000;
const DISCOVERY_INTERVAL_MS: RangeInclusive<u64> = 100..=86_400_000;
const FETCH_MAX_WAIT_MS: RangeInclusive<u64> = 0..=30_000;
const FETCH_MAX_BYTES: RangeInclusive<u64> = 1024..=(64 << 20);
const MAX_PARTITION_FETCH_BYTES: RangeInclusive<u64> = 1024..=(16 << 20);
const TRANSACTION_TIMEOUT_MS: RangeInclusive<u64> = 1000..=900_000;
const MAX_REQUEST_BYTES: RangeInclusive<u64> = 1024..=(64 << 20);
const LINGER_MS: RangeInclusive<u64> = 0..=60_000;

/// A string that is never shown: `Debug` prints `"***"`. It serialises as itself (the
/// server's config is read from and written to TOML); the API never serialises a
/// connection.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// A secret holding `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// How the client talks to the brokers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecurityProtocol {
    /// TCP, no TLS, no authentication.
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL authentication over plain TCP.
    SaslPlaintext,
    /// SASL authentication over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// The protocol authenticates with SASL.
    pub fn is_sasl(self) -> bool {
        matches!(self, SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
    }

    /// The protocol runs over TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }
}

/// A SASL mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SaslMechanism {
    /// User name and password in the clear (use with `sasl_ssl`).
    #[serde(rename = "PLAIN")]
    Plain,
    /// SCRAM with SHA-256.
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    /// SCRAM with SHA-512.
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
}

fn default_connect_timeout_ms() -> u64 {
    5000
}
fn default_request_timeout_ms() -> u64 {
    10_000
}

/// How to reach a Kafka cluster: what the server's admin writes per named connection
/// (`kafka_connections`), and what a `weir run` job file may write inline (`brokers`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionConfig {
    /// `host:port` of one or more brokers (at most [`MAX_BOOTSTRAP_SERVERS`]).
    pub bootstrap_servers: Vec<String>,
    /// `plaintext` (default), `ssl`, `sasl_plaintext` or `sasl_ssl`.
    #[serde(default)]
    pub security_protocol: SecurityProtocol,
    /// `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`; required by the `sasl_*` protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sasl_mechanism: Option<SaslMechanism>,
    /// The SASL user; required by the `sasl_*` protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sasl_username: Option<String>,
    /// The SASL password; required by the `sasl_*` protocols. Never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sasl_password: Option<Secret>,
    /// A PEM file of the CA certificates to trust (TLS protocols; default: the system's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_ca_location: Option<PathBuf>,
    /// A PEM client certificate (TLS protocols; with `ssl_key_location`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_certificate_location: Option<PathBuf>,
    /// The PEM private key of the client certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_key_location: Option<PathBuf>,
    /// The client id the brokers see (default: chosen by the connector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Time to open a connection to a broker, in ms (1 to 300000, default 5000).
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// Time to wait for a broker's answer, in ms (1 to 600000, default 10000).
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
}

impl std::fmt::Debug for ConnectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Spelled out so that a field added later is not printed by accident.
        f.debug_struct("ConnectionConfig")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("security_protocol", &self.security_protocol)
            .field("sasl_mechanism", &self.sasl_mechanism)
            .field("sasl_username", &self.sasl_username)
            .field("sasl_password", &self.sasl_password)
            .field("ssl_ca_location", &self.ssl_ca_location)
            .field("ssl_certificate_location", &self.ssl_certificate_location)
            .field("ssl_key_location", &self.ssl_key_location)
            .field("client_id", &self.client_id)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("request_timeout_ms", &self.request_timeout_ms)
            .finish()
    }
}

fn in_range(name: &str, value: u64, range: &RangeInclusive<u64>) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!("{name} must be from {} to {}, got {value}", range.start(), range.end()))
    }
}

/// A printable name of 1 to `max` bytes (no control characters, no spaces at either end).
fn check_text(what: &str, value: &str, max: usize) -> Result<(), String> {
    if value.is_empty() || value.len() > max {
        return Err(format!("{what} must be 1 to {max} bytes long, got {} bytes", value.len()));
    }
    if value.chars().any(char::is_control) || value.trim() != value {
        return Err(format!("{what} must not hold control characters or start or end with spaces"));
    }
    Ok(())
}

/// Checks a `host:port` address.
fn check_address(address: &str) -> Result<(), String> {
    let bad = || {
        format!("bootstrap server `{}` must be host:port (a port from 1 to 65535)", address.escape_debug())
    };
    let (host, port) = address.rsplit_once(':').ok_or_else(bad)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let port_ok = port.parse::<u16>().is_ok_and(|p| p > 0);
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    if port_ok && host_ok { Ok(()) } else { Err(bad()) }
}

/// Checks a Kafka topic name: 1 to 249 of `A-Z a-z 0-9 . _ -`, not `.` or `..`.
pub fn check_topic(topic: &str) -> Result<(), String> {
    let ok = !topic.is_empty()
        && topic.len() <= MAX_TOPIC_LEN
        && topic != "."
        && topic != ".."
        && topic.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "topic `{}` is not a Kafka topic name: 1 to {MAX_TOPIC_LEN} of A-Z a-z 0-9 . _ -",
            topic.escape_debug()
        ))
    }
}

/// Checks a connection name (as the server's `kafka_connections` keys and a node's
/// `connection`): 1 to 128 of `A-Z a-z 0-9 . _ -`.
pub fn check_connection_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!("connection name `{}` must be 1 to 128 of A-Z a-z 0-9 . _ -", name.escape_debug()))
    }
}

impl ConnectionConfig {
    /// A plaintext connection to `servers` with default timeouts.
    pub fn plaintext(servers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        ConnectionConfig {
            bootstrap_servers: servers.into_iter().map(Into::into).collect(),
            security_protocol: SecurityProtocol::Plaintext,
            sasl_mechanism: None,
            sasl_username: None,
            sasl_password: None,
            ssl_ca_location: None,
            ssl_certificate_location: None,
            ssl_key_location: None,
            client_id: None,
            connect_timeout_ms: default_connect_timeout_ms(),
            request_timeout_ms: default_request_timeout_ms(),
        }
    }

    /// Checks the addresses, the ranges and that the security fields fit the protocol.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.bootstrap_servers.len();
        if n == 0 || n > MAX_BOOTSTRAP_SERVERS {
            return Err(format!(
                "bootstrap_servers must list 1 to {MAX_BOOTSTRAP_SERVERS} host:port, got {n}"
            ));
        }
        for address in &self.bootstrap_servers {
            check_address(address)?;
        }
        let protocol = self.security_protocol;
        let sasl_fields = [
            ("sasl_mechanism", self.sasl_mechanism.is_some()),
            ("sasl_username", self.sasl_username.is_some()),
            ("sasl_password", self.sasl_password.is_some()),
        ];
        for (field, given) in sasl_fields {
            if protocol.is_sasl() && !given {
                return Err(format!("security_protocol {} needs {field}", protocol_name(protocol)));
            }
            if !protocol.is_sasl() && given {
                return Err(format!(
                    "{field} needs security_protocol sasl_plaintext or sasl_ssl (it is {})",
                    protocol_name(protocol)
                ));
            }
        }
        if let Some(user) = &self.sasl_username {
            check_text("sasl_username", user, 1024)?;
        }
        if let Some(password) = &self.sasl_password
            && password.expose().is_empty()
        {
            return Err("sasl_password must not be empty".into());
        }
        let tls_fields = [
            ("ssl_ca_location", self.ssl_ca_location.is_some()),
            ("ssl_certificate_location", self.ssl_certificate_location.is_some()),
            ("ssl_key_location", self.ssl_key_location.is_some()),
        ];
        for (field, given) in tls_fields {
            if given && !protocol.is_tls() {
                return Err(format!(
                    "{field} needs security_protocol ssl or sasl_ssl (it is {})",
                    protocol_name(protocol)
                ));
            }
        }
        if self.ssl_certificate_location.is_some() != self.ssl_key_location.is_some() {
            return Err(
                "ssl_certificate_location and ssl_key_location go together: give both or neither".into()
            );
        }
        if let Some(id) = &self.client_id {
            check_text("client_id", id, 255)?;
        }
        in_range("connect_timeout_ms", self.connect_timeout_ms, &CONNECT_TIMEOUT_MS)?;
        in_range("request_timeout_ms", self.request_timeout_ms, &REQUEST_TIMEOUT_MS)
    }
}

fn protocol_name(p: SecurityProtocol) -> &'static str {
    match p {
        SecurityProtocol::Plaintext => "plaintext",
        SecurityProtocol::Ssl => "ssl",
        SecurityProtocol::SaslPlaintext => "sasl_plaintext",
        SecurityProtocol::SaslSsl => "sasl_ssl",
    }
}

/// What a node's connection resolved to, with what the job may touch through it. Set by
/// the server's plan (a named connection and the tenant's grant) or by parsing an inline
/// `brokers` (`weir run`: no restriction); never read from a spec. Serialised only for the
/// controller's deploy to a worker (the cluster session), secrets included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KafkaAccess {
    /// The connection's name on the server; `None` for an inline connection.
    pub name: Option<String>,
    /// How to reach the brokers.
    pub connection: ConnectionConfig,
    /// Topics the job may read or write: those starting with one of these. `None`: any.
    /// A `topic_pattern` source filters the topics it matches to these at run time.
    pub topic_prefixes: Option<Vec<String>>,
    /// Consumer group ids and transactional ids the job may use: those starting with one
    /// of these. `None`: any.
    pub group_prefixes: Option<Vec<String>>,
}

impl KafkaAccess {
    /// An inline connection, unrestricted.
    pub fn inline(connection: ConnectionConfig) -> Self {
        KafkaAccess { name: None, connection, topic_prefixes: None, group_prefixes: None }
    }

    /// The job may read or write `topic`.
    pub fn topic_allowed(&self, topic: &str) -> bool {
        self.topic_prefixes.as_ref().is_none_or(|ps| ps.iter().any(|p| topic.starts_with(p.as_str())))
    }

    /// The job may use group (or transactional) id `id`.
    pub fn group_allowed(&self, id: &str) -> bool {
        self.group_prefixes.as_ref().is_none_or(|ps| ps.iter().any(|p| id.starts_with(p.as_str())))
    }
}

/// How a key or value is encoded in Kafka.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// The bytes as they are.
    #[default]
    Raw,
    /// JSON text (a sink converts the record's MessagePack to JSON; a source the JSON to
    /// MessagePack).
    Json,
    /// MessagePack, as Weir's records are.
    Msgpack,
}

/// Where a source starts reading a partition that its checkpoint has no offset for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartFrom {
    /// The partition's first record.
    #[default]
    Earliest,
    /// After the partition's last record when the job starts.
    Latest,
    /// The offsets the consumer group (`group_id`) committed; earliest where it has none.
    Group,
    /// The first record at or after this time (unix ms).
    Timestamp(i64),
}

/// Where a source's records take their event time from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventTime {
    /// The Kafka record's timestamp.
    #[default]
    Kafka,
    /// An integer field (ms) of the JSON or MessagePack value (a map).
    Field(String),
}

fn default_discovery_interval_ms() -> Option<u64> {
    Some(10_000)
}
fn default_fetch_max_wait_ms() -> u64 {
    500
}
fn default_fetch_max_bytes() -> u64 {
    8 << 20
}
fn default_max_partition_fetch_bytes() -> u64 {
    1 << 20
}

/// The `kafka` source's settings (besides the common `batch_size`, `out_of_orderness_ms`
/// and `records_per_second`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSourceConfig {
    /// A connection the server's admin configured (`kafka_connections`). Exactly one of
    /// `connection` and `brokers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    /// An inline connection: `weir run` only (the server refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brokers: Option<ConnectionConfig>,
    /// The topics to read. Exactly one of `topics` and `topic_pattern`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<String>,
    /// A regular expression (Rust `regex` syntax) that a whole topic name must match;
    /// topics are matched at run time, and again at each partition discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_pattern: Option<String>,
    /// Where to start a partition that the checkpoint has no offset for.
    #[serde(default)]
    pub start: StartFrom,
    /// The consumer group: required by `start: "group"` and by `commit_offsets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Commit the offsets of each completed checkpoint to the group, for lag tools only:
    /// the checkpoint's offsets are what the job resumes from.
    #[serde(default)]
    pub commit_offsets: bool,
    /// How record keys are encoded.
    #[serde(default)]
    pub key_format: Format,
    /// How record values are encoded.
    #[serde(default)]
    pub value_format: Format,
    /// Where event times come from.
    #[serde(default)]
    pub event_time: EventTime,
    /// A subtask that receives nothing for this long is idle (its watermark does not hold
    /// the job back); `None`: never idle.
    #[serde(default)]
    pub idle_timeout_ms: Option<u64>,
    /// How often to look for new partitions and (with a pattern) new topics; `None`: never.
    #[serde(default = "default_discovery_interval_ms")]
    pub discovery_interval_ms: Option<u64>,
    /// Longest a fetch waits at the broker for records, in ms.
    #[serde(default = "default_fetch_max_wait_ms")]
    pub fetch_max_wait_ms: u64,
    /// Most bytes one fetch returns.
    #[serde(default = "default_fetch_max_bytes")]
    pub fetch_max_bytes: u64,
    /// Most bytes one fetch returns per partition.
    #[serde(default = "default_max_partition_fetch_bytes")]
    pub max_partition_fetch_bytes: u64,
    /// End at the offsets that were each partition's end when the job started (a bounded
    /// read: the job finishes), instead of reading forever.
    #[serde(default)]
    pub bounded: bool,
    /// `read_uncommitted` (default: every record) or `read_committed` (records of committed
    /// transactions only, up to the last stable offset).
    #[serde(default)]
    pub isolation_level: IsolationLevel,
    /// What the connection resolved to (never deserialised: see [`KafkaAccess`]).
    #[serde(skip)]
    pub access: Option<Arc<KafkaAccess>>,
}

/// Which records a source reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationLevel {
    /// Every record.
    #[default]
    ReadUncommitted,
    /// Committed transactions only.
    ReadCommitted,
}

/// How a sink's records reach the topic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Each record once, made visible when the checkpoint that covers it completes.
    #[default]
    ExactlyOnce,
    /// Through Kafka transactions committed when a checkpoint completes (the broker must
    /// support transactions; readers use `read_committed`).
    Transactional,
    /// Flushed at every checkpoint; a failure may write records again.
    AtLeastOnce,
    /// Produced as records come; nothing waits for acknowledgements; a failure may lose records.
    None,
}

impl Delivery {
    /// The mode may use transactional ids.
    pub fn uses_transactional_ids(self) -> bool {
        matches!(self, Delivery::ExactlyOnce | Delivery::Transactional)
    }
}

/// How a sink picks a record's partition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Partitioner {
    /// Kafka's murmur2 of the key bytes, as the Java client (unkeyed records: as `default`).
    #[default]
    Key,
    /// Every record of subtask `i` to partition `i` mod the partition count.
    Default,
}

fn default_transaction_timeout_ms() -> u64 {
    60_000
}
fn default_max_request_bytes() -> u64 {
    1 << 20
}
fn default_linger_ms() -> u64 {
    5
}

/// The `kafka` sink's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSinkConfig {
    /// A connection the server's admin configured. Exactly one of `connection` and `brokers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    /// An inline connection: `weir run` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brokers: Option<ConnectionConfig>,
    /// The topic to write.
    pub topic: String,
    /// The delivery guarantee.
    #[serde(default)]
    pub delivery: Delivery,
    /// How record keys are written.
    #[serde(default)]
    pub key_format: Format,
    /// How record values are written.
    #[serde(default)]
    pub value_format: Format,
    /// How a record's partition is chosen.
    #[serde(default)]
    pub partitioner: Partitioner,
    /// The start of the sink's transactional ids (`exactly_once`, `transactional`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id_prefix: Option<String>,
    /// The brokers abort a transaction left open this long, in ms.
    #[serde(default = "default_transaction_timeout_ms")]
    pub transaction_timeout_ms: u64,
    /// Largest produce request, in bytes.
    #[serde(default = "default_max_request_bytes")]
    pub max_request_bytes: u64,
    /// Longest a record waits for its batch to fill before it is sent, in ms.
    #[serde(default = "default_linger_ms")]
    pub linger_ms: u64,
    /// What the connection resolved to (never deserialised: see [`KafkaAccess`]).
    #[serde(skip)]
    pub access: Option<Arc<KafkaAccess>>,
}

/// Checks `connection` XOR `brokers`; returns the access an inline connection gives.
fn check_connection(
    connection: Option<&str>,
    brokers: Option<&ConnectionConfig>,
) -> Result<Option<Arc<KafkaAccess>>, String> {
    match (connection, brokers) {
        (Some(_), Some(_)) => Err("give either `connection` (a connection the server's admin configured) \
                                   or `brokers` (an inline connection), not both"
            .into()),
        (None, None) => Err("name a `connection` (a connection the server's admin configured), or, \
                             with `weir run`, write one inline under `brokers`"
            .into()),
        (Some(name), None) => check_connection_name(name).map(|()| None),
        (None, Some(brokers)) => {
            brokers.validate().map_err(|e| format!("brokers: {e}"))?;
            Ok(Some(Arc::new(KafkaAccess::inline(brokers.clone()))))
        }
    }
}

fn check_group(what: &str, id: &str) -> Result<(), String> {
    check_text(what, id, MAX_GROUP_LEN)
}

/// The anchored regular expression of a `topic_pattern` (a whole topic name must match).
pub fn topic_regex(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(format!("topic_pattern must be at most {MAX_PATTERN_LEN} bytes, got {}", pattern.len()));
    }
    regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("topic_pattern is not a regular expression: {e}"))
}

/// Literal prefixes that every topic `pattern` matches starts with, or `None` when no
/// literal bounds them (`.*`, `a|.*`). A grant check holds each of them to the allowed
/// prefixes (the source filters matched topics to them again at run time).
pub fn pattern_prefixes(pattern: &str) -> Option<Vec<String>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
    let literals = seq.literals()?;
    if literals.is_empty() {
        // Matches nothing: nothing to allow or refuse.
        return Some(Vec::new());
    }
    literals.iter().map(|l| String::from_utf8(l.as_bytes().to_vec()).ok()).collect()
}

impl KafkaSourceConfig {
    /// Checks the settings (at plan time); an inline connection becomes the `access`.
    pub fn validate(&mut self) -> Result<(), String> {
        let inline = check_connection(self.connection.as_deref(), self.brokers.as_ref())?;
        match (self.topics.is_empty(), &self.topic_pattern) {
            (false, Some(_)) => return Err("give either `topics` or `topic_pattern`, not both".into()),
            (true, None) => return Err("give `topics` (a list of topic names) or `topic_pattern`".into()),
            (false, None) => {
                if self.topics.len() > MAX_TOPICS {
                    return Err(format!(
                        "topics must list 1 to {MAX_TOPICS} topics, got {}",
                        self.topics.len()
                    ));
                }
                let mut seen = std::collections::BTreeSet::new();
                for t in &self.topics {
                    check_topic(t)?;
                    if !seen.insert(t) {
                        return Err(format!("topic `{t}` is listed twice"));
                    }
                }
            }
            (true, Some(p)) => {
                topic_regex(p)?;
            }
        }
        if let Some(g) = &self.group_id {
            check_group("group_id", g)?;
        }
        if self.group_id.is_none() {
            if self.start == StartFrom::Group {
                return Err("start \"group\" needs a `group_id`".into());
            }
            if self.commit_offsets {
                return Err("commit_offsets needs a `group_id`".into());
            }
        }
        if let StartFrom::Timestamp(ms) = self.start
            && ms < 0
        {
            return Err(format!("start timestamp must be a unix time in ms (0 or more), got {ms}"));
        }
        if let EventTime::Field(field) = &self.event_time {
            check_text("event_time field", field, 256)?;
            if self.value_format == Format::Raw {
                return Err("event_time {\"field\": ...} needs value_format json or msgpack".into());
            }
        }
        if let Some(ms) = self.idle_timeout_ms {
            in_range("idle_timeout_ms", ms, &IDLE_TIMEOUT_MS)?;
        }
        if let Some(ms) = self.discovery_interval_ms {
            in_range("discovery_interval_ms", ms, &DISCOVERY_INTERVAL_MS)?;
        }
        in_range("fetch_max_wait_ms", self.fetch_max_wait_ms, &FETCH_MAX_WAIT_MS)?;
        in_range("fetch_max_bytes", self.fetch_max_bytes, &FETCH_MAX_BYTES)?;
        in_range("max_partition_fetch_bytes", self.max_partition_fetch_bytes, &MAX_PARTITION_FETCH_BYTES)?;
        if self.max_partition_fetch_bytes > self.fetch_max_bytes {
            return Err(format!(
                "max_partition_fetch_bytes ({}) must be at most fetch_max_bytes ({})",
                self.max_partition_fetch_bytes, self.fetch_max_bytes
            ));
        }
        self.access = inline;
        Ok(())
    }

    /// The anchored `topic_pattern`, if the source has one.
    pub fn pattern(&self) -> Result<Option<regex::Regex>, String> {
        self.topic_pattern.as_deref().map(topic_regex).transpose()
    }
}

impl KafkaSinkConfig {
    /// Checks the settings (at plan time); an inline connection becomes the `access`.
    pub fn validate(&mut self) -> Result<(), String> {
        let inline = check_connection(self.connection.as_deref(), self.brokers.as_ref())?;
        check_topic(&self.topic)?;
        if let Some(prefix) = &self.transactional_id_prefix {
            check_group("transactional_id_prefix", prefix)?;
            if !self.delivery.uses_transactional_ids() {
                return Err(
                    "transactional_id_prefix needs delivery exactly_once or transactional".to_string()
                );
            }
        }
        in_range("transaction_timeout_ms", self.transaction_timeout_ms, &TRANSACTION_TIMEOUT_MS)?;
        in_range("max_request_bytes", self.max_request_bytes, &MAX_REQUEST_BYTES)?;
        in_range("linger_ms", self.linger_ms, &LINGER_MS)?;
        self.access = inline;
        Ok(())
    }
}

/// Kafka positions (`{"offsets": {"<topic>": {"<partition>": next_offset}}}`, one per
/// subtask) merged into one map. After a rescale every subtask carries every partition's
/// offset and advances only its own, so copies of one partition's offset may differ: the
/// largest is the owner's (offsets only grow), and it wins.
pub fn merge_offsets<'a>(
    positions: impl IntoIterator<Item = &'a serde_json::Value>,
) -> Result<std::collections::BTreeMap<String, std::collections::BTreeMap<i32, i64>>, String> {
    type Offsets = std::collections::BTreeMap<String, std::collections::BTreeMap<i32, i64>>;
    let mut merged = Offsets::new();
    for position in positions {
        let part: Offsets = position
            .get("offsets")
            .and_then(|o| serde_json::from_value(o.clone()).ok())
            .ok_or_else(|| format!("the saved Kafka position {position} is not readable"))?;
        for (topic, partitions) in part {
            let mine = merged.entry(topic).or_default();
            for (partition, offset) in partitions {
                let slot = mine.entry(partition).or_insert(offset);
                *slot = (*slot).max(offset);
            }
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests;
