//! Why a Kafka call failed ([`KafkaError`]), and whether a retry can help. Errors name a
//! broker by its place in the connection (`ClientConfig::name_of`), never by the
//! address an admin configured.

use kafka_protocol::error::ResponseError;

use super::scram::ScramError;
use crate::retry::{Retry, RetryHint};

/// Why a Kafka call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KafkaError {
    /// No TCP connection (refused, unresolvable, reset).
    #[error("cannot reach {broker}: {reason}")]
    Unreachable {
        /// The broker, by its place in the connection (see `ClientConfig::connection`).
        broker: String,
        /// What the socket said.
        reason: String,
    },
    /// No answer within the request timeout.
    #[error("{broker} did not answer within the request timeout")]
    Timeout {
        /// The broker, by its place in the connection.
        broker: String,
    },
    /// The topic does not exist.
    #[error("the Kafka topic `{0}` does not exist")]
    UnknownTopic(String),
    /// The partition does not exist.
    #[error("the Kafka topic `{0}` has no partition {1}")]
    UnknownPartition(String, i32),
    /// The broker refused for lack of rights.
    #[error("the Kafka broker refused {what}: not authorized ({code})")]
    NotAuthorized {
        /// What was refused.
        what: String,
        /// The error name.
        code: String,
    },
    /// SASL failed, or the TLS files do not load.
    #[error("Kafka authentication failed: {0}")]
    Authentication(String),
    /// The SCRAM exchange failed.
    #[error("Kafka authentication failed: {0}")]
    Scram(ScramError),
    /// The broker does not offer an API the call needs.
    #[error("{broker} does not support {what}")]
    Unsupported {
        /// The broker, by its place in the connection.
        broker: String,
        /// The missing API.
        what: String,
    },
    /// The broker answered with an error code.
    #[error("Kafka error {name} (code {code}) from {context}")]
    Broker {
        /// Code.
        code: i16,
        /// Its name.
        name: String,
        /// The request and what it was about.
        context: String,
        /// Kafka says the request may be retried.
        retriable: bool,
    },
    /// The answer could not be decoded.
    #[error("malformed Kafka response: {0}")]
    Protocol(String),
    /// Fetches did not tell the end of some partitions within the request timeout.
    #[error(
        "the broker did not tell the end of {topic} partitions {partitions:?} within the request timeout"
    )]
    EndUnknown {
        /// The topic.
        topic: String,
        /// The partitions whose end is unknown.
        partitions: Vec<i32>,
    },
}

/// Kafka's THROTTLING_QUOTA_EXCEEDED: retriable to Kafka, but a quota needs a person.
const THROTTLING_QUOTA_EXCEEDED: i16 = 89;
/// Kafka's CORRUPT_MESSAGE: a record the broker will not take as it is.
const CORRUPT_MESSAGE: i16 = 2;

impl Retry for KafkaError {
    /// Transient: a broker unreachable or slow, an error code Kafka marks retriable (a leader
    /// election, a coordinator loading, ...). Final: authorization and authentication, a
    /// missing topic or partition (topics are never created automatically), an API the broker
    /// lacks, a quota, a corrupt record, a malformed answer.
    fn retry_hint(&self) -> RetryHint {
        match self {
            KafkaError::Unreachable { .. } | KafkaError::Timeout { .. } | KafkaError::EndUnknown { .. } => {
                RetryHint::Transient
            }
            KafkaError::Broker { code: THROTTLING_QUOTA_EXCEEDED | CORRUPT_MESSAGE, .. } => RetryHint::Final,
            KafkaError::Broker { retriable: true, .. } => RetryHint::Transient,
            KafkaError::Broker { retriable: false, .. }
            | KafkaError::UnknownTopic(_)
            | KafkaError::UnknownPartition(..)
            | KafkaError::NotAuthorized { .. }
            | KafkaError::Authentication(_)
            | KafkaError::Scram(_)
            | KafkaError::Unsupported { .. }
            | KafkaError::Protocol(_) => RetryHint::Final,
        }
    }
}

impl KafkaError {
    /// An error for a response's error code.
    pub fn from_code(code: i16, context: impl Into<String>) -> KafkaError {
        let context = context.into();
        let e = ResponseError::try_from_code(code).unwrap_or(ResponseError::Unknown(code));
        match e {
            ResponseError::TopicAuthorizationFailed
            | ResponseError::GroupAuthorizationFailed
            | ResponseError::ClusterAuthorizationFailed
            | ResponseError::TransactionalIdAuthorizationFailed => {
                KafkaError::NotAuthorized { what: context, code: format!("{e:?}") }
            }
            // Kafka's transaction coordinator answers CONCURRENT_TRANSACTIONS while it finishes
            // ending a transaction (InitProducerId fencing an open one, a request right after
            // EndTxn) and expects a retry, as Java's TransactionManager does; the crate marks
            // it final.
            _ => KafkaError::Broker {
                code,
                name: format!("{e:?}"),
                context,
                retriable: e.is_retriable() || matches!(e, ResponseError::ConcurrentTransactions),
            },
        }
    }

    /// Worth retrying after a metadata refresh or a reconnect.
    pub fn retriable(&self) -> bool {
        match self {
            KafkaError::Unreachable { .. } | KafkaError::Timeout { .. } => true,
            KafkaError::Broker { retriable, .. } => *retriable,
            _ => false,
        }
    }

    /// The error code, for broker errors.
    pub fn code(&self) -> Option<i16> {
        match self {
            KafkaError::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }
}
