//! Kafka: the source and sink end to end against a real Kafka-protocol broker (Tansu), the
//! `exactly_once` chaos trials, the `transactional` sink's protocol against a fake
//! transaction-capable broker, connections and tenants' grants, a broker that stops answering,
//! and what the tests' broker itself does.

mod access;
mod connectors;
mod dead_letters;
pub(crate) mod exactly_once;
mod lag;
mod slow_broker;
mod tansu;
mod transactional;
