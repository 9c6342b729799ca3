//! Kafka on workers (issue 22): Kafka in → Nexmark q17 (keyed state) → Kafka out with
//! `exactly_once`, every subtask on three `weir worker` processes, against a real broker
//! (Tansu). The tenant names a connection the admin configured; the controller resolves it
//! and ships it with the deploy, so the workers reach the broker themselves. The sinks
//! stage their output in the controller's outbox over the session and produce from the
//! worker; seeded trials SIGKILL random workers at random points (a killed worker may hold a
//! checkpoint's output half produced), and the output topic must hold every running count
//! exactly once with the final statistics of a reference computed here.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::json;
use weir::connectors::kafka::client::{Client, ClientConfig};

use crate::cluster_workers::{TOKEN, Worker, controller};
use crate::common::kafka::read_all;
use crate::common::tansu::TansuBroker;
use crate::kafka_exactly_once::{bids, check, produce_input};
use crate::server::{ADMIN, Api};

const LONG: Duration = Duration::from_secs(180);

fn job(module: &str, input: &str, output: &str) -> serde_json::Value {
    json!({
        "name": "cluster-kafka-q17",
        "nodes": [
            { "id": "bids", "kind": "source", "connector": "kafka", "parallelism": 2,
              "config": { "connection": "main", "topics": [input], "start": "earliest", "bounded": true,
                          "value_format": "msgpack", "batch_size": 50, "records_per_second": 500 } },
            { "id": "q17", "kind": "operator", "module": module, "parallelism": 3 },
            { "id": "stats", "kind": "sink", "connector": "kafka", "parallelism": 3,
              "config": { "connection": "main", "topic": output, "delivery": "exactly_once",
                          "value_format": "msgpack" } }
        ],
        "edges": [
            { "from": "bids", "to": "q17", "partitioning": "hash" },
            { "from": "q17", "to": "stats", "partitioning": "forward" }
        ],
        "settings": {
            "checkpoint": { "interval_ms": 100, "timeout_ms": 20000, "retained": 2, "tolerable_failures": 100 },
            "restart": { "attempts": 30, "delay_ms": 100 }
        }
    })
}

async fn completed_checkpoints(api: &Api, job: &str) -> u64 {
    let (status, h) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert_eq!(status, 200, "{h}");
    h["counts"]["completed"].as_u64().unwrap()
}

async fn trial(seed: u64) -> Result<String, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    // A broker per trial: a shared one grew slow to read back after a few trials.
    let broker = TansuBroker::start(&dir.path().join("broker"));
    let (input, output) = (format!("acme.bids-{seed}"), format!("acme.stats-{seed}"));
    let mut client =
        Client::connect(ClientConfig::new(vec![broker.bootstrap()])).map_err(|e| e.to_string())?;
    client.create_topic(&input, 4).map_err(|e| e.to_string())?;
    client.create_topic(&output, 3).map_err(|e| e.to_string())?;
    let bids = bids(seed);
    produce_input(&mut client, &input, &bids);

    // The admin's connection `main` leads to the broker; the tenant is granted `acme.`.
    let servers = format!("[\"{}\"]", broker.bootstrap());
    let server = controller(
        &dir.path().join("data"),
        &[("WEIR_KAFKA_CONNECTIONS__MAIN__BOOTSTRAP_SERVERS", &servers)],
    );
    let addr = server.cluster.clone().unwrap();
    let mut workers: Vec<Worker> = (0..3).map(|i| Worker::spawn(&addr, &format!("k{i}"), TOKEN)).collect();
    for w in &workers {
        w.wait_line("registered as worker");
    }
    let (tenant, api) = server.tenant("acme").await;
    let grants = json!({ "grants": [{ "connection": "main", "topic_prefixes": ["acme."], "group_prefixes": ["acme-"] }] });
    let (status, body) = server.client(ADMIN).put(&format!("/api/v1/tenants/{tenant}/kafka"), &grants).await;
    assert_eq!(status, 200, "grant: {body}");
    let module = api.upload_guest("nexmark-q17").await;
    let job = api.create_job(&job(&module, &input, &output)).await;
    // Every subtask runs on a worker: the sinks too.
    api.wait_job(&job, LONG, |j| {
        j["vertices"].as_array().is_some_and(|v| {
            v.iter().all(|v| v["subtasks"].as_array().is_some_and(|s| s.iter().all(|s| s["worker"].is_u64())))
        })
    })
    .await;
    let mut kills = Vec::new();
    for _ in 0..rng.gen_range(1..=2) {
        let at = completed_checkpoints(&api, &job).await + rng.gen_range(2..12);
        let deadline = std::time::Instant::now() + LONG;
        while completed_checkpoints(&api, &job).await < at {
            let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
            if j["status"] != "running" && j["status"] != "restarting" {
                return Err(format!("the job ended {} before its kill after checkpoint {at}", j["status"]));
            }
            if std::time::Instant::now() > deadline {
                return Err(format!("checkpoint {at} did not complete in {LONG:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
        let restarts = j["restarts"].as_u64().unwrap_or(0);
        let i = rng.gen_range(0..3);
        workers[i].signal("-KILL");
        let _ = workers[i].exit_status();
        api.wait_job(&job, LONG, |j| {
            j["restarts"].as_u64().unwrap_or(0) > restarts || j["status"] == "finished"
        })
        .await;
        workers[i] = Worker::spawn(&addr, &format!("k{i}"), TOKEN);
        workers[i].wait_line("registered as worker");
        kills.push((i, at));
    }
    let j = api.wait_job(&job, LONG, |j| j["status"] != "running" && j["status"] != "restarting").await;
    if j["status"] != "finished" {
        return Err(format!("the job ended {}: {j}", j["status"]));
    }
    let records = read_all(&mut client, &output);
    check(&records, &bids)?;
    Ok(format!(
        "{} records; killed (worker, after checkpoint) {kills:?}, restarts {}",
        records.len(),
        j["restarts"]
    ))
}

/// Seeded trials (`WEIR_CLUSTER_KAFKA_TRIALS`, default 2; `WEIR_CLUSTER_KAFKA_SEED`); a
/// failure names its seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_to_kafka_on_workers_is_exactly_once_across_killed_workers() {
    let trials: u64 =
        std::env::var("WEIR_CLUSTER_KAFKA_TRIALS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    let first: u64 =
        std::env::var("WEIR_CLUSTER_KAFKA_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(22_100);
    for seed in first..first + trials {
        match trial(seed).await {
            Ok(summary) => eprintln!("cluster kafka trial {seed}: {summary}"),
            Err(e) => panic!(
                "cluster kafka trial {seed} failed (replay with WEIR_CLUSTER_KAFKA_SEED={seed} \
                 WEIR_CLUSTER_KAFKA_TRIALS=1): {e}"
            ),
        }
    }
}
