//! How to reach a Kafka cluster ([`ConnectionConfig`]: brokers and security) and what a
//! node's connection resolved to ([`KafkaAccess`]: the connection and the tenant's grant).

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::checks::{check_text, in_range};
use super::error::KafkaConfigError;
use super::limits::MAX_BOOTSTRAP_SERVERS;

const CONNECT_TIMEOUT_MS: RangeInclusive<u64> = 1..=300_000;
const REQUEST_TIMEOUT_MS: RangeInclusive<u64> = 1..=600_000;

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

/// Checks a `host:port` address.
fn check_address(address: &str) -> Result<(), KafkaConfigError> {
    let bad = || KafkaConfigError::Address(address.escape_debug().to_string());
    let (host, port) = address.rsplit_once(':').ok_or_else(bad)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let port_ok = port.parse::<u16>().is_ok_and(|p| p > 0);
    let host_ok = !host.is_empty()
        && host.len() <= 253
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    if port_ok && host_ok { Ok(()) } else { Err(bad()) }
}

/// Checks a connection name (as the server's `kafka_connections` keys and a node's
/// `connection`): 1 to 128 of `A-Z a-z 0-9 . _ -`.
pub fn check_connection_name(name: &str) -> Result<(), KafkaConfigError> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok { Ok(()) } else { Err(KafkaConfigError::ConnectionName(name.escape_debug().to_string())) }
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
    pub fn validate(&self) -> Result<(), KafkaConfigError> {
        let n = self.bootstrap_servers.len();
        if n == 0 || n > MAX_BOOTSTRAP_SERVERS {
            return Err(KafkaConfigError::ServerCount(n));
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
                return Err(KafkaConfigError::SaslFieldMissing { protocol: protocol_name(protocol), field });
            }
            if !protocol.is_sasl() && given {
                return Err(KafkaConfigError::SaslFieldUnused { field, protocol: protocol_name(protocol) });
            }
        }
        if let Some(user) = &self.sasl_username {
            check_text("sasl_username", user, 1024)?;
        }
        if let Some(password) = &self.sasl_password
            && password.expose().is_empty()
        {
            return Err(KafkaConfigError::EmptyPassword);
        }
        let tls_fields = [
            ("ssl_ca_location", self.ssl_ca_location.is_some()),
            ("ssl_certificate_location", self.ssl_certificate_location.is_some()),
            ("ssl_key_location", self.ssl_key_location.is_some()),
        ];
        for (field, given) in tls_fields {
            if given && !protocol.is_tls() {
                return Err(KafkaConfigError::TlsFieldUnused { field, protocol: protocol_name(protocol) });
            }
        }
        if self.ssl_certificate_location.is_some() != self.ssl_key_location.is_some() {
            return Err(KafkaConfigError::CertificateWithoutKey);
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
    /// Topics the job may read or write: those within one of these grant prefixes
    /// ([`within_prefix`]). `None`: any. A `topic_pattern` source filters the topics it
    /// matches to these at run time.
    pub topic_prefixes: Option<Vec<String>>,
    /// Consumer group ids and transactional ids the job may use: those within one of these
    /// grant prefixes. `None`: any.
    pub group_prefixes: Option<Vec<String>>,
}

impl KafkaAccess {
    /// An inline connection, unrestricted.
    pub fn inline(connection: ConnectionConfig) -> Self {
        KafkaAccess { name: None, connection, topic_prefixes: None, group_prefixes: None }
    }

    /// The job may read or write `topic`.
    pub fn topic_allowed(&self, topic: &str) -> bool {
        self.topic_prefixes.as_ref().is_none_or(|ps| ps.iter().any(|p| within_prefix(p, topic)))
    }

    /// The job may read or write every topic that starts with `literal` (a `topic_pattern`
    /// whose matches all start with it).
    pub fn topics_starting_with_allowed(&self, literal: &str) -> bool {
        self.topic_prefixes.as_ref().is_none_or(|ps| ps.iter().any(|p| prefix_covers(p, literal)))
    }

    /// The job may use group (or transactional) id `id`.
    pub fn group_allowed(&self, id: &str) -> bool {
        self.group_prefixes.as_ref().is_none_or(|ps| ps.iter().any(|p| within_prefix(p, id)))
    }
}

/// What separates the parts of a topic name or group id (`acme.orders`, `acme-etl`).
const SEPARATORS: [char; 3] = ['.', '-', '_'];

/// The grant prefix that stands for every name (Kafka names have no `*`).
pub const ANY_NAME: &str = "*";

/// Whether `name` is within grant prefix `prefix`. A prefix ends at a separator: one that
/// ends in `.`, `-` or `_` covers the names that start with it; any other covers itself and
/// the names that continue it after a separator — `acme` covers `acme` and `acme.orders`,
/// never `acme2` (another tenant's name). `*` covers every name; the empty prefix none.
pub fn within_prefix(prefix: &str, name: &str) -> bool {
    prefix == ANY_NAME || name == prefix && !prefix.is_empty() || prefix_covers(prefix, name)
}

/// Whether every name that starts with `literal` is within grant prefix `prefix`.
pub fn prefix_covers(prefix: &str, literal: &str) -> bool {
    if prefix == ANY_NAME {
        return true;
    }
    if prefix.is_empty() {
        return false;
    }
    if prefix.ends_with(SEPARATORS) {
        return literal.starts_with(prefix);
    }
    literal.strip_prefix(prefix).is_some_and(|rest| rest.starts_with(SEPARATORS))
}

/// Checks `connection` XOR `brokers`; returns the access an inline connection gives.
pub(super) fn check_connection(
    connection: Option<&str>,
    brokers: Option<&ConnectionConfig>,
) -> Result<Option<Arc<KafkaAccess>>, KafkaConfigError> {
    match (connection, brokers) {
        (Some(_), Some(_)) => Err(KafkaConfigError::ConnectionAndBrokers),
        (None, None) => Err(KafkaConfigError::NoConnection),
        (Some(name), None) => check_connection_name(name).map(|()| None),
        (None, Some(brokers)) => {
            brokers.validate().map_err(|e| KafkaConfigError::Brokers(Box::new(e)))?;
            Ok(Some(Arc::new(KafkaAccess::inline(brokers.clone()))))
        }
    }
}
