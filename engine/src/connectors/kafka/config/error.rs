//! Why a Kafka connection, source or sink config is refused. Each message names the setting
//! and what to write instead; none of them is worth retrying.

use std::ops::RangeInclusive;

use super::limits::{MAX_BOOTSTRAP_SERVERS, MAX_PATTERN_LEN, MAX_TOPIC_LEN, MAX_TOPICS};
use crate::retry::{Retry, RetryHint};

/// Why a Kafka setting is refused (at plan time, or when a node opens).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KafkaConfigError {
    /// A number outside its range.
    #[error("{name} must be from {} to {}, got {value}", range.start(), range.end())]
    OutOfRange {
        /// The setting.
        name: &'static str,
        /// The value given.
        value: u64,
        /// What it may be.
        range: RangeInclusive<u64>,
    },
    /// A name of the wrong length.
    #[error("{what} must be 1 to {max} bytes long, got {len} bytes")]
    TextLength {
        /// The setting.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The longest allowed.
        max: usize,
    },
    /// A name with control characters or spaces at an end.
    #[error("{what} must not hold control characters or start or end with spaces")]
    TextCharacters {
        /// The setting.
        what: &'static str,
    },
    /// A bootstrap server that is not `host:port` (the address, escaped).
    #[error("bootstrap server `{0}` must be host:port (a port from 1 to 65535)")]
    Address(String),
    /// Too few or too many bootstrap servers.
    #[error("bootstrap_servers must list 1 to {MAX_BOOTSTRAP_SERVERS} host:port, got {0}")]
    ServerCount(usize),
    /// Not a Kafka topic name (the name, escaped).
    #[error("topic `{0}` is not a Kafka topic name: 1 to {MAX_TOPIC_LEN} of A-Z a-z 0-9 . _ -")]
    TopicName(String),
    /// Not a connection name (the name, escaped).
    #[error("connection name `{0}` must be 1 to 128 of A-Z a-z 0-9 . _ -")]
    ConnectionName(String),
    /// A SASL protocol without one of its fields.
    #[error("security_protocol {protocol} needs {field}")]
    SaslFieldMissing {
        /// The protocol.
        protocol: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// A SASL field with a protocol that does not use it.
    #[error("{field} needs security_protocol sasl_plaintext or sasl_ssl (it is {protocol})")]
    SaslFieldUnused {
        /// The field.
        field: &'static str,
        /// The protocol.
        protocol: &'static str,
    },
    /// An empty SASL password.
    #[error("sasl_password must not be empty")]
    EmptyPassword,
    /// A TLS field with a protocol that does not use it.
    #[error("{field} needs security_protocol ssl or sasl_ssl (it is {protocol})")]
    TlsFieldUnused {
        /// The field.
        field: &'static str,
        /// The protocol.
        protocol: &'static str,
    },
    /// A client certificate without its key, or a key without its certificate.
    #[error("ssl_certificate_location and ssl_key_location go together: give both or neither")]
    CertificateWithoutKey,
    /// A SASL connection without a mechanism (found when the node opens).
    #[error("a SASL connection needs `sasl_mechanism`")]
    NoSaslMechanism,
    /// Both `connection` and `brokers`.
    #[error(
        "give either `connection` (a connection the server's admin configured) or `brokers` (an \
         inline connection), not both"
    )]
    ConnectionAndBrokers,
    /// Neither `connection` nor `brokers`.
    #[error(
        "name a `connection` (a connection the server's admin configured), or, with `weir run`, \
         write one inline under `brokers`"
    )]
    NoConnection,
    /// The inline connection is refused.
    #[error("brokers: {0}")]
    Brokers(Box<KafkaConfigError>),
    /// A named connection that no server plan resolved (`weir run` has none).
    #[error(
        "Kafka connection `{0}` is not resolved: named connections exist only on a server (`weir \
         serve`); with `weir run`, write the connection inline under `brokers`"
    )]
    Unresolved(String),
    /// Both `topics` and `topic_pattern`.
    #[error("give either `topics` or `topic_pattern`, not both")]
    TopicsAndPattern,
    /// Neither `topics` nor `topic_pattern`.
    #[error("give `topics` (a list of topic names) or `topic_pattern`")]
    NoTopics,
    /// Too many topics.
    #[error("topics must list 1 to {MAX_TOPICS} topics, got {0}")]
    TopicCount(usize),
    /// A topic listed twice.
    #[error("topic `{0}` is listed twice")]
    TopicTwice(String),
    /// A `topic_pattern` that is too long.
    #[error("topic_pattern must be at most {MAX_PATTERN_LEN} bytes, got {0}")]
    PatternLength(usize),
    /// A `topic_pattern` that does not compile (what the regex parser said).
    #[error("topic_pattern is not a regular expression: {0}")]
    Pattern(String),
    /// A setting that needs a `group_id` (`start "group"`, `commit_offsets`).
    #[error("{0} needs a `group_id`")]
    NeedsGroup(&'static str),
    /// A negative start timestamp.
    #[error("start timestamp must be a unix time in ms (0 or more), got {0}")]
    StartTimestamp(i64),
    /// An event-time field in a raw value.
    #[error("event_time {{\"field\": ...}} needs value_format json or msgpack")]
    EventTimeNeedsFormat,
    /// A per-partition fetch larger than the whole fetch.
    #[error("max_partition_fetch_bytes ({partition}) must be at most fetch_max_bytes ({fetch})")]
    PartitionFetchBytes {
        /// `max_partition_fetch_bytes`.
        partition: u64,
        /// `fetch_max_bytes`.
        fetch: u64,
    },
    /// A transactional id prefix for a delivery that uses no transactional ids.
    #[error("transactional_id_prefix needs delivery exactly_once or transactional")]
    PrefixNeedsTransactions,
}

impl Retry for KafkaConfigError {
    /// A config never works on a retry: a person must change it.
    fn retry_hint(&self) -> RetryHint {
        RetryHint::Final
    }
}
