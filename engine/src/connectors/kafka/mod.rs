//! Kafka source and sink, over a Kafka-protocol client of our own (`client`).

pub mod client;
pub mod format;
pub mod sink;
pub mod source;
pub mod transactional;
