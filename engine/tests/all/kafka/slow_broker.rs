//! A broker that stops answering holds only the Kafka sink that waits on it (design.md §11,
//! T7): on a real server whose tokio runtime has a single worker thread, a job writes to the
//! fake broker (`common::fake_kafka`), the broker stops answering, and while the sink is stuck
//! the API keeps answering at once; the job then fails with the request timeout, naming the
//! connection and not the broker's address.
//!
//! Before the sink's calls moved to a thread of its own (waited on with `block_in_place`),
//! the sink task blocked the runtime's only worker here, and the API with it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weir::connectors::kafka::ConnectionConfig;

use crate::common::fake_kafka::{EndTxnMode, FakeKafka};
use crate::server::{ADMIN, TestServer};

/// The connection's request timeout: how long one unanswered call waits.
const REQUEST_TIMEOUT_MS: u64 = 2000;

/// generator → Kafka sink (`delivery`) to the fake's topic, checkpoints every 100 ms, no restart.
fn job(delivery: &str) -> Value {
    let mut sink = json!({ "connection": "main", "topic": "out", "delivery": delivery, "linger_ms": 0 });
    if delivery == "transactional" {
        sink["transactional_id_prefix"] = json!("acme-slow");
    }
    json!({
        "name": "slow-broker",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": 100_000_000u64, "batch_size": 50,
                          "records_per_second": 2000 } },
            { "id": "out", "kind": "sink", "connector": "kafka", "config": sink }
        ],
        "edges": [ { "from": "in", "to": "out", "partitioning": "forward" } ],
        "settings": {
            "checkpoint": { "interval_ms": 100, "timeout_ms": 60000 },
            "restart": { "attempts": 0, "delay_ms": 100 }
        }
    })
}

/// Waits until `check` holds, every 50 ms, failing with `what` after `timeout`.
async fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_stalled_broker_holds_only_its_sink(delivery: &str) {
    let fake = FakeKafka::start("out", 2, EndTxnMode::Serve);
    let connection = ConnectionConfig {
        request_timeout_ms: REQUEST_TIMEOUT_MS,
        connect_timeout_ms: 1000,
        ..ConnectionConfig::plaintext([fake.bootstrap()])
    };
    let server = TestServer::start(|c| {
        c.kafka_connections.insert("main".into(), connection);
    })
    .await;
    let (tenant, api) = server.tenant("acme").await;
    let grants =
        json!({ "grants": [ { "connection": "main", "topic_prefixes": ["*"], "group_prefixes": ["*"] } ] });
    let (status, body) = server.client(ADMIN).put(&format!("/api/v1/tenants/{tenant}/kafka"), &grants).await;
    assert_eq!(status, 200, "set grants: {body}");

    let id = api.create_job(&job(delivery)).await;
    wait_until("the sink to produce", Duration::from_secs(60), || {
        !fake.requests_of(kafka_protocol::messages::ApiKey::Produce).is_empty()
    })
    .await;
    // The broker stops answering. From then on, rounds of an API request and a 50 ms pause
    // (each needs the runtime's one worker) go on until a call of the sink has waited on the
    // broker and ten more rounds passed: each round is quick, however stuck the sink.
    fake.stall(true);
    let stalled = Instant::now();
    let (mut slowest, mut after) = (Duration::ZERO, 0);
    while after < 10 {
        let round = Instant::now();
        let (status, job) = api.get(&format!("/api/v1/jobs/{id}")).await;
        assert_eq!(status, 200, "{job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        slowest = slowest.max(round.elapsed());
        if fake.stall(true) > 0 {
            after += 1;
        }
        assert!(stalled.elapsed() < Duration::from_secs(60), "no call of the sink reached the broker");
    }
    eprintln!("{delivery}: the slowest round while the broker was stalled took {slowest:?}");
    // Generous (a round takes about 50 ms) yet below the request timeout for which the old,
    // runtime-blocking sink held the worker.
    assert!(slowest < Duration::from_millis(REQUEST_TIMEOUT_MS / 2), "the runtime stalled for {slowest:?}");

    // The job fails with the timeout, naming the connection, never the broker's address.
    let failed = api.wait_job(&id, Duration::from_secs(120), |j| j["status"] == "failed").await;
    let error = failed["error"].as_str().unwrap_or_default();
    eprintln!("{delivery}: {error}");
    assert!(error.contains("did not answer within the request timeout"), "{failed}");
    assert!(error.contains("Kafka connection `main`"), "{failed}");
    assert!(!error.contains(&fake.bootstrap()), "a tenant sees the broker's address: {failed}");
    fake.stall(false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_broker_that_stops_answering_stalls_no_runtime_thread_at_least_once() {
    a_stalled_broker_holds_only_its_sink("at_least_once").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_broker_that_stops_answering_stalls_no_runtime_thread_transactional() {
    a_stalled_broker_holds_only_its_sink("transactional").await;
}
