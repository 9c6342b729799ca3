//! Kafka source and sink, over a Kafka-protocol client of our own (`client`).

pub mod client;
pub mod format;
pub mod source;
