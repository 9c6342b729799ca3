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
//! its range ([`KafkaConfigError`]).

mod checks;
mod connection;
mod error;
mod limits;
mod sink;
mod source;
#[cfg(test)]
mod tests;

pub use checks::check_topic;
pub use connection::{
    ANY_NAME, ConnectionConfig, KafkaAccess, SaslMechanism, Secret, SecurityProtocol, check_connection_name,
    prefix_covers, within_prefix,
};
pub use error::KafkaConfigError;
pub use limits::{MAX_BOOTSTRAP_SERVERS, MAX_GROUP_LEN, MAX_PATTERN_LEN, MAX_TOPIC_LEN, MAX_TOPICS};
pub use sink::{Delivery, KafkaSinkConfig, Partitioner};
pub use source::{EventTime, IsolationLevel, KafkaSourceConfig, StartFrom, pattern_prefixes, topic_regex};

pub use super::format::Format;
