//! Kafka source and sink, over a Kafka-protocol client of our own (`client`). The design
//! and the argument for `exactly_once` are in docs/design.md §12.

pub mod client;
pub mod config;
pub mod format;
pub mod sink;
pub mod source;
pub mod transactional;

use std::sync::Arc;
use std::time::Duration;

pub use config::{
    ANY_NAME, ConnectionConfig, Delivery, EventTime, IsolationLevel, KafkaAccess, KafkaConfigError,
    KafkaSinkConfig, KafkaSourceConfig, Partitioner, SaslMechanism, Secret, SecurityProtocol, StartFrom,
    prefix_covers, within_prefix,
};
pub use format::Format;

use super::{BatchLimit, ConnectorEnv, ConnectorError, Sink, Source};
use crate::record::Batch;

/// The connection a node opens with: resolved by the server's plan, or written inline.
fn access(
    connection: Option<&str>,
    access: Option<&Arc<KafkaAccess>>,
) -> Result<Arc<KafkaAccess>, ConnectorError> {
    access
        .cloned()
        .ok_or_else(|| KafkaConfigError::Unresolved(connection.unwrap_or_default().to_string()).into())
}

/// The client settings of a connection; `name`, the connection's name on a server, is how
/// errors name its brokers (their addresses only in the server's log).
pub fn client_config(
    connection: &ConnectionConfig,
    name: Option<&str>,
) -> Result<client::ClientConfig, ConnectorError> {
    let mut config = client::ClientConfig::new(connection.bootstrap_servers.clone());
    config.connection = name.map(str::to_string);
    if let Some(id) = &connection.client_id {
        config.client_id = id.clone();
    }
    config.connect_timeout = Duration::from_millis(connection.connect_timeout_ms);
    config.request_timeout = Duration::from_millis(connection.request_timeout_ms);
    if connection.security_protocol.is_sasl() {
        let mechanism = match connection.sasl_mechanism {
            Some(SaslMechanism::Plain) => client::SaslMechanism::Plain,
            Some(SaslMechanism::ScramSha256) => client::SaslMechanism::ScramSha256,
            Some(SaslMechanism::ScramSha512) => client::SaslMechanism::ScramSha512,
            None => return Err(KafkaConfigError::NoSaslMechanism.into()),
        };
        config.sasl = Some(client::Sasl {
            mechanism,
            username: connection.sasl_username.clone().unwrap_or_default(),
            password: connection.sasl_password.as_ref().map(|p| p.expose().to_string()).unwrap_or_default(),
        });
    }
    if connection.security_protocol.is_tls() {
        let tls = client::Tls {
            ca: connection.ssl_ca_location.clone(),
            certificate: connection.ssl_certificate_location.clone(),
            key: connection.ssl_key_location.clone(),
        };
        config.tls = Some(tls.config()?);
    }
    Ok(config)
}

/// Opens subtask `index` of `parallelism` of a Kafka source cutting batches at `batch`,
/// with watermarks `out_of_orderness_ms` behind each partition's event time.
pub fn open_source(
    config: &KafkaSourceConfig,
    batch: BatchLimit,
    out_of_orderness_ms: Option<i64>,
    index: u32,
    parallelism: u32,
) -> Result<Box<dyn Source>, ConnectorError> {
    let access = access(config.connection.as_deref(), config.access.as_ref())?;
    let topics = match config.pattern()? {
        Some(regex) => {
            let access = access.clone();
            source::Topics::Matching(Arc::new(move |t: &str| regex.is_match(t) && access.topic_allowed(t)))
        }
        None => source::Topics::Names(config.topics.clone()),
    };
    let settings = source::SourceSettings {
        client: client_config(&access.connection, access.name.as_deref())?,
        topics,
        start: match config.start {
            StartFrom::Earliest => source::Start::Earliest,
            StartFrom::Latest => source::Start::Latest,
            StartFrom::Group => source::Start::Group,
            StartFrom::Timestamp(t) => source::Start::Timestamp(t),
        },
        group_id: config.group_id.clone(),
        commit_offsets: config.commit_offsets,
        key_format: config.key_format,
        value_format: config.value_format,
        event_time: config.event_time.clone(),
        idle_timeout: config.idle_timeout_ms.map(Duration::from_millis),
        discovery_interval: config.discovery_interval_ms.map(Duration::from_millis),
        fetch_max_wait: Duration::from_millis(config.fetch_max_wait_ms),
        fetch_max_bytes: config.fetch_max_bytes.min(i32::MAX as u64) as i32,
        partition_max_bytes: config.max_partition_fetch_bytes.min(i32::MAX as u64) as i32,
        read_committed: config.isolation_level == IsolationLevel::ReadCommitted,
        bounded: config.bounded,
        batch,
        out_of_orderness_ms,
    };
    Ok(Box::new(source::KafkaSource::open(settings, index, parallelism)?))
}

impl Source for source::KafkaSource {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        self.poll_batch()
    }

    fn position(&self) -> serde_json::Value {
        source::KafkaSource::position(self)
    }

    fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError> {
        source::KafkaSource::seek(self, position)
    }

    fn watermark(&self) -> Option<i64> {
        self.current_watermark()
    }

    fn idle(&self) -> bool {
        self.all_idle()
    }

    fn checkpoint_completed(&mut self, _id: u64, position: &serde_json::Value) -> Result<(), ConnectorError> {
        self.completed(position);
        Ok(())
    }

    fn reject_bad_records(&mut self) {
        source::KafkaSource::reject_bad_records(self);
    }

    fn lag(&self) -> Vec<(String, i32, i64)> {
        source::KafkaSource::lag(self)
    }

    fn take_rejected(&mut self) -> Vec<crate::connectors::Rejected> {
        source::KafkaSource::take_rejected(self)
    }
}

/// Opens subtask `index` of a Kafka sink.
pub fn open_sink(
    config: &KafkaSinkConfig,
    index: u32,
    env: ConnectorEnv<'_>,
) -> Result<Box<dyn Sink>, ConnectorError> {
    let access = access(config.connection.as_deref(), config.access.as_ref())?;
    let writer = format!("{}/{}/{index}", env.job, env.node);
    let settings = sink::SinkSettings {
        client: client_config(&access.connection, access.name.as_deref())?,
        topic: config.topic.clone(),
        delivery: config.delivery,
        key_format: config.key_format,
        value_format: config.value_format,
        partitioner: config.partitioner,
        transactional_id_prefix: config
            .transactional_id_prefix
            .clone()
            .unwrap_or_else(|| format!("weir-{}-{}", env.job, env.node)),
        transaction_timeout: Duration::from_millis(config.transaction_timeout_ms),
        max_request_bytes: config.max_request_bytes as usize,
        linger: Duration::from_millis(config.linger_ms),
    };
    // Without checkpoints (`weir run` without a data directory) there is nothing to stage
    // against: output goes out as with `at_least_once`.
    let store = env.outbox.cloned().or_else(|| env.store.map(|s| Arc::new(s.clone()) as sink::SharedOutbox));
    Ok(match settings.delivery {
        Delivery::Transactional if env.transactional => {
            Box::new(transactional::TransactionalSink::open(settings, store, writer, index)?)
        }
        Delivery::ExactlyOnce | Delivery::Transactional if !env.transactional => {
            tracing::warn!(
                node = env.node,
                "the job is not checkpointed (no data directory): the Kafka sink delivers at least once"
            );
            let settings = sink::SinkSettings { delivery: Delivery::AtLeastOnce, ..settings };
            Box::new(sink::KafkaSink::open(settings, None, writer, index)?)
        }
        _ => Box::new(sink::KafkaSink::open(settings, store, writer, index)?),
    })
}
