//! Kafka source and sink, over a Kafka-protocol client of our own (`client`).

pub mod client;
pub mod config;

pub use config::{
    ConnectionConfig, Delivery, EventTime, Format, KafkaAccess, KafkaSinkConfig, KafkaSourceConfig,
    Partitioner, SaslMechanism, Secret, SecurityProtocol, StartFrom,
};

use super::{ConnectorEnv, ConnectorError, Sink, Source};

/// The connection a node opens with: resolved by the server's plan, or written inline.
fn access(
    connection: Option<&str>,
    access: Option<&std::sync::Arc<KafkaAccess>>,
) -> Result<(), ConnectorError> {
    match access {
        Some(_) => Ok(()),
        None => Err(ConnectorError::Config(format!(
            "Kafka connection `{}` is not resolved: named connections exist only on a server (`weir serve`); \
             with `weir run`, write the connection inline under `brokers`",
            connection.unwrap_or_default()
        ))),
    }
}

/// Opens subtask `index` of `parallelism` of a Kafka source reading `batch_size` records
/// per batch.
pub fn open_source(
    config: &KafkaSourceConfig,
    batch_size: usize,
    index: u32,
    parallelism: u32,
    env: ConnectorEnv<'_>,
) -> Result<Box<dyn Source>, ConnectorError> {
    let _ = (batch_size, index, parallelism, env);
    access(config.connection.as_deref(), config.access.as_ref())?;
    Err(ConnectorError::Config("the Kafka source is not built yet".into()))
}

/// Opens subtask `index` of `parallelism` of a Kafka sink.
pub fn open_sink(
    config: &KafkaSinkConfig,
    index: u32,
    parallelism: u32,
    env: ConnectorEnv<'_>,
) -> Result<Box<dyn Sink>, ConnectorError> {
    let _ = (index, parallelism, env);
    access(config.connection.as_deref(), config.access.as_ref())?;
    Err(ConnectorError::Config("the Kafka sink is not built yet".into()))
}
