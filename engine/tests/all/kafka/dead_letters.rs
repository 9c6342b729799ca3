//! Bad input at a Kafka source (issue 41), through `weir serve` and a real broker (Tansu):
//! 100,000 bids of which 1 in 1,000 is broken — a value that is not JSON, a key that is
//! truncated MessagePack, an event-time field that is a string — read by a job with
//! `on_error: dead_letter` into a stream, while the server is killed with SIGKILL (seeded
//! points; the seed is printed) and started again. The output stream holds every good bid
//! exactly once, the dead-letter stream exactly the broken ones with their topic, partition,
//! offset and raw bytes, and the job never restarted because of them.

use crate::common::kafka::{client, msgpack, produce};
use crate::common::tansu::TansuBroker;
use crate::server::{ADMIN, TestServer};

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use weir::connectors::kafka::client::ProduceRecord;

const BIDS: u64 = 100_000;
const PARTITIONS: u64 = 4;
const TOPIC: &str = "acme.bids";
const LONG: Duration = Duration::from_secs(240);

/// How bid `i` is broken, if it is.
fn broken(i: u64) -> Option<&'static str> {
    if i % 1000 != 500 {
        return None;
    }
    Some(["bad_json", "bad_key", "bad_event_time"][(i / 1000 % 3) as usize])
}

/// Bid `i` as produced: key and value bytes. Bid `i` goes to partition `i % 4` at offset
/// `i / 4`.
fn bid(i: u64) -> (Vec<u8>, Vec<u8>) {
    let auction = i % 97;
    let good =
        json!({ "auction": auction, "bidder": i, "price": 100 + i % 1000, "date_time": 1_000_000 + i });
    match broken(i) {
        None => (msgpack(&auction), good.to_string().into_bytes()),
        Some("bad_json") => {
            (msgpack(&auction), format!(r#"{{"auction": {auction}, "bidder": {i}, "pri"#).into_bytes())
        }
        // A uint16 marker with one of its two bytes.
        Some("bad_key") => (vec![0xcd, 0x01], good.to_string().into_bytes()),
        Some(_) => {
            let v = json!({ "auction": auction, "bidder": i, "price": 1, "date_time": "yesterday" });
            (msgpack(&auction), v.to_string().into_bytes())
        }
    }
}

fn spec() -> Value {
    json!({
        "name": "bids-with-dead-letters",
        "nodes": [
            { "id": "bids", "kind": "source", "connector": "kafka", "parallelism": 2, "on_error": "dead_letter",
              "config": { "connection": "main", "topics": [TOPIC], "start": "earliest", "bounded": true,
                          "key_format": "msgpack", "value_format": "json",
                          "event_time": { "field": "date_time" },
                          "batch_size": 200, "records_per_second": 8000 } },
            { "id": "out", "kind": "sink", "connector": "stream", "parallelism": 2,
              "config": { "stream": "good-bids", "partitions": 2 } }
        ],
        "edges": [ { "from": "bids", "to": "out", "partitioning": "forward" } ],
        "dead_letter": { "connector": "stream", "config": { "stream": "bad-bids", "partitions": 1 } },
        "settings": { "checkpoint": { "interval_ms": 100, "timeout_ms": 20000 } }
    })
}

/// Binary as the stream API shows it: an array of bytes.
fn bytes(v: &Value) -> Vec<u8> {
    v.as_array()
        .unwrap_or_else(|| panic!("not bytes: {v}"))
        .iter()
        .map(|b| b.as_u64().unwrap() as u8)
        .collect()
}

async fn completed_checkpoints(api: &crate::server::Api, job: &str) -> u64 {
    let (status, v) = api.get(&format!("/api/v1/jobs/{job}/checkpoints?limit=1")).await;
    if status != 200 {
        return 0;
    }
    v["counts"]["completed"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn broken_kafka_records_go_to_the_dead_letters_exactly_once_through_server_kills() {
    let seed: u64 = std::env::var("WEIR_DEAD_LETTER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(4141);
    eprintln!("seed {seed} (WEIR_DEAD_LETTER_SEED replays it)");
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let broker = TansuBroker::start(&dir.path().join("broker"));
    let bootstrap = broker.bootstrap();
    {
        let bootstrap = bootstrap.clone();
        tokio::task::spawn_blocking(move || {
            let mut c = client(&bootstrap);
            c.create_topic(TOPIC, PARTITIONS as i32).unwrap();
            let mut by_partition: BTreeMap<i32, Vec<ProduceRecord>> = BTreeMap::new();
            for i in 0..BIDS {
                let (key, value) = bid(i);
                by_partition.entry((i % PARTITIONS) as i32).or_default().push(ProduceRecord {
                    key: Some(key),
                    value: Some(value),
                    timestamp: 1_000_000 + i as i64,
                    headers: vec![],
                });
            }
            for (p, records) in by_partition {
                for chunk in records.chunks(2000) {
                    produce(&mut c, TOPIC, p, chunk);
                }
            }
        })
        .await
        .unwrap();
    }

    let data = dir.path().join("data");
    let env = [("WEIR_KAFKA_CONNECTIONS__MAIN__BOOTSTRAP_SERVERS", format!(r#"["{bootstrap}"]"#))];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut server = TestServer::spawn_process_with(&data, &env);
    let (tenant, api) = server.tenant("acme").await;
    let grants = json!({ "grants": [ { "connection": "main", "topic_prefixes": ["acme."] } ] });
    let (status, v) = server.client(ADMIN).put(&format!("/api/v1/tenants/{tenant}/kafka"), &grants).await;
    assert_eq!(status, 200, "{v}");
    let job = api.create_job(&spec()).await;

    // SIGKILLs at seeded points of the run, each after some more completed checkpoints.
    let mut api = api;
    let mut target = 0;
    let mut kills = Vec::new();
    for _ in 0..3 {
        target += rng.gen_range(2..=8);
        let deadline = std::time::Instant::now() + LONG;
        let reached = loop {
            let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
            if j["status"] == "finished" {
                break false;
            }
            if completed_checkpoints(&api, &job).await >= target {
                break true;
            }
            assert!(std::time::Instant::now() < deadline, "no checkpoint {target} in {LONG:?}: {j}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        if !reached {
            break;
        }
        server.kill9();
        kills.push(target);
        server = TestServer::spawn_process_with(&data, &env);
        api = api.at(&server.url);
    }
    eprintln!("killed after checkpoints {kills:?}");
    let finished = api.wait_status(&job, "finished", LONG).await;
    assert!(!kills.is_empty(), "the job finished before the first kill");
    assert_eq!(finished["restarts"], 0, "the broken records restarted the job: {finished}");

    // Every good bid exactly once.
    let mut bidders: Vec<u64> =
        api.read_all("good-bids").await.iter().map(|(_, _, _, v)| v["bidder"].as_u64().unwrap()).collect();
    bidders.sort_unstable();
    let good: Vec<u64> = (0..BIDS).filter(|i| broken(*i).is_none()).collect();
    let dup = bidders.windows(2).filter(|w| w[0] == w[1]).count();
    assert!(bidders == good, "{} good bids out of {} ({dup} duplicated)", bidders.len(), good.len());

    // Exactly the broken ones, with where they came from and their bytes.
    let mut found = BTreeSet::new();
    for (_, _, _, letter) in api.read_all("bad-bids").await {
        let origin = &letter["origin"];
        assert_eq!((&origin["kind"], &origin["topic"]), (&json!("kafka"), &json!(TOPIC)), "{letter}");
        let (p, offset) = (origin["partition"].as_u64().unwrap(), origin["offset"].as_u64().unwrap());
        let i = offset * PARTITIONS + p;
        let kind = broken(i).unwrap_or_else(|| panic!("bid {i} is not broken: {letter}"));
        let (key, value) = bid(i);
        assert_eq!(letter["reason"], kind, "{letter}");
        assert_eq!(bytes(&letter["key"]), key, "{letter}");
        assert_eq!(bytes(&letter["value"]), value, "{letter}");
        assert!(
            letter["error"].as_str().unwrap().contains(&format!("offset {offset} of {TOPIC}/{p}")),
            "{letter}"
        );
        assert_eq!((letter["node"].as_str(), letter["job"].as_str()), (Some("bids"), Some(job.as_str())));
        assert!(found.insert(i), "bid {i} is in the dead letters twice");
    }
    let want: BTreeSet<u64> = (0..BIDS).filter(|i| broken(*i).is_some()).collect();
    assert_eq!(found, want, "the dead letters are not exactly the broken bids");

    // Counted per node and reason.
    let metrics = server.client(ADMIN).text("/metrics").await;
    assert!(
        metrics.lines().any(|l| l.starts_with("weir_dead_letters_total")
            && l.contains(&job)
            && l.contains(r#"reason="bad_json""#)
            && l.contains(r#"node="bids""#)),
        "no dead-letter series for the job:\n{}",
        metrics.lines().filter(|l| l.contains("dead_letter")).collect::<Vec<_>>().join("\n")
    );
}

/// The dead-letter destination as a Kafka topic: only a topic the tenant is granted, written
/// exactly once as JSON; another node's data path is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_go_to_a_granted_kafka_topic_and_nowhere_else() {
    const FEW: u64 = 3_000;
    let dir = tempfile::tempdir().unwrap();
    let broker = TansuBroker::start(&dir.path().join("broker"));
    let bootstrap = broker.bootstrap();
    let mut c = client(&bootstrap);
    c.create_topic("acme.few", 1).unwrap();
    c.create_topic("acme.dead", 1).unwrap();
    let records: Vec<ProduceRecord> = (0..FEW)
        .map(|i| {
            let (key, value) = bid(i);
            ProduceRecord {
                key: Some(key),
                value: Some(value),
                timestamp: 1_000_000 + i as i64,
                headers: vec![],
            }
        })
        .collect();
    produce(&mut c, "acme.few", 0, &records);
    let (_server, api) = super::server_granting_acme(&bootstrap).await;
    let mut spec = spec();
    spec["nodes"][0]["config"]["topics"] = json!(["acme.few"]);
    spec["nodes"][0]["config"]["records_per_second"] = json!(null);
    spec["dead_letter"] = json!({ "connector": "kafka", "config": { "connection": "main", "topic": "other.dead", "value_format": "json" } });
    let (status, v) = api.post("/api/v1/jobs", &spec).await;
    assert_eq!(status, 403, "a topic outside the grant is refused: {v}");
    spec["dead_letter"]["config"]["topic"] = json!("acme.dead");
    let job = api.create_job(&spec).await;
    api.wait_status(&job, "finished", LONG).await;

    let letters = tokio::task::spawn_blocking(move || {
        let mut c = client(&bootstrap);
        crate::common::kafka::read_all(&mut c, "acme.dead")
    })
    .await
    .unwrap();
    let mut found = BTreeSet::new();
    for r in &letters {
        let letter: Value = serde_json::from_slice(r.value.as_deref().unwrap()).unwrap();
        let offset = letter["origin"]["offset"].as_u64().unwrap();
        assert_eq!(letter["reason"], broken(offset).unwrap(), "{letter}");
        // Binary is `{"hex": …}` in JSON.
        assert_eq!(letter["value"]["hex"], hex::encode(bid(offset).1), "{letter}");
        assert!(found.insert(offset), "offset {offset} twice");
    }
    assert_eq!(found, (0..FEW).filter(|i| broken(*i).is_some()).collect::<BTreeSet<_>>());
    assert_eq!(api.read_all("good-bids").await.len() as u64, FEW - found.len() as u64);
}
