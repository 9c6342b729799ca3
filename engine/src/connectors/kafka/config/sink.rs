//! The `kafka` sink's settings: the topic, the delivery guarantee, formats, partitioning
//! and the producer's limits.

use std::ops::RangeInclusive;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::checks::{check_group, check_topic, in_range};
use super::connection::{ConnectionConfig, KafkaAccess, check_connection};
use super::error::KafkaConfigError;
use crate::connectors::kafka::format::Format;

const TRANSACTION_TIMEOUT_MS: RangeInclusive<u64> = 1000..=900_000;
const MAX_REQUEST_BYTES: RangeInclusive<u64> = 1024..=(64 << 20);
const LINGER_MS: RangeInclusive<u64> = 0..=60_000;

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

impl KafkaSinkConfig {
    /// Checks the settings (at plan time); an inline connection becomes the `access`.
    pub fn validate(&mut self) -> Result<(), KafkaConfigError> {
        let inline = check_connection(self.connection.as_deref(), self.brokers.as_ref())?;
        check_topic(&self.topic)?;
        if let Some(prefix) = &self.transactional_id_prefix {
            check_group("transactional_id_prefix", prefix)?;
            if !self.delivery.uses_transactional_ids() {
                return Err(KafkaConfigError::PrefixNeedsTransactions);
            }
        }
        in_range("transaction_timeout_ms", self.transaction_timeout_ms, &TRANSACTION_TIMEOUT_MS)?;
        in_range("max_request_bytes", self.max_request_bytes, &MAX_REQUEST_BYTES)?;
        in_range("linger_ms", self.linger_ms, &LINGER_MS)?;
        self.access = inline;
        Ok(())
    }
}
