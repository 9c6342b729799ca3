//! A blocking Kafka-protocol client (built on the `kafka-protocol` crate's messages).
