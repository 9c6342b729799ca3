//! Kafka → Nexmark q17 (keyed state) → Kafka with `exactly_once`, against a real broker
//! (Tansu), while the `weir` process is killed with SIGKILL at random points.
//!
//! Each trial writes seeded bids to a 4-partition input topic, runs the job with `weir run`
//! (a bounded read: the job ends at the input's end), kills the process at least twice —
//! after a random number of completed checkpoints, or (`delivery` trials) in the middle of
//! producing a completed checkpoint's output, the window the outbox and its read-back exist
//! for — and runs it again until it finishes. One trial also restarts the broker while the
//! job runs. Then a plain consumer reads the whole output topic: per auction, every running
//! count 1..n appears exactly once, and the last statistics equal a reference computed here.
//!
//! `WEIR_KAFKA_TRIALS` (per test, default 5; four tests) and `WEIR_KAFKA_SEED` make a longer
//! run; a failure names its seed; `WEIR_KAFKA_REPLAY=<seed>` replays one trial.

use crate::common;
use crate::common::kafka::{self, msgpack, read_all};
use crate::common::tansu::TansuBroker;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use weir::connectors::kafka::client::{Client, ClientConfig, ProduceRecord};

const BIDS: u64 = 8_000;
const AUCTIONS: u64 = 40;

/// One seeded bid: (auction, price, time).
pub(crate) fn bids(seed: u64) -> Vec<(u64, u64, i64)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..BIDS)
        .map(|i| {
            let auction = rng.gen_range(0..AUCTIONS);
            let price = match rng.gen_range(0..10) {
                0 => rng.gen_range(1_000_000..5_000_000),
                1..=3 => rng.gen_range(10_000..1_000_000),
                _ => rng.gen_range(1..10_000),
            };
            (auction, price, 1_000_000 + i as i64)
        })
        .collect()
}

/// Writes the bids to `topic` (partition = auction % 4), keyed by auction (MessagePack).
pub(crate) fn produce_input(client: &mut Client, topic: &str, bids: &[(u64, u64, i64)]) {
    let mut by_partition: BTreeMap<i32, Vec<ProduceRecord>> = BTreeMap::new();
    for (auction, price, time) in bids {
        let value = msgpack(
            &serde_json::json!({ "auction": auction, "bidder": 1, "price": price, "date_time": time }),
        );
        by_partition.entry((*auction % 4) as i32).or_default().push(ProduceRecord {
            key: Some(msgpack(auction)),
            value: Some(value),
            timestamp: *time,
            headers: vec![],
        });
    }
    for (partition, records) in by_partition {
        kafka::produce(client, topic, partition, &records);
    }
}

#[derive(Debug, serde::Deserialize)]
struct Stats {
    auction: u64,
    total_bids: u64,
    min_price: u64,
    max_price: u64,
    sum_price: u64,
}

/// The output against the reference: per auction, running counts 1..n each exactly once, and
/// the statistics after the last bid.
pub(crate) fn check(
    records: &[weir::connectors::kafka::client::FetchedRecord],
    bids: &[(u64, u64, i64)],
) -> Result<(), String> {
    let mut expected: BTreeMap<u64, (u64, u64, u64, u64)> = BTreeMap::new();
    for (a, p, _) in bids {
        let e = expected.entry(*a).or_insert((0, u64::MAX, 0, 0));
        e.0 += 1;
        e.1 = e.1.min(*p);
        e.2 = e.2.max(*p);
        e.3 += p;
    }
    let mut seen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut last: BTreeMap<u64, Stats> = BTreeMap::new();
    for r in records {
        let stats: Stats = rmp_serde::from_slice(r.value.as_deref().unwrap_or_default())
            .map_err(|e| format!("an output record at offset {} does not decode: {e}", r.offset))?;
        seen.entry(stats.auction).or_default().push(stats.total_bids);
        let keep = last.get(&stats.auction).is_none_or(|s| s.total_bids < stats.total_bids);
        if keep {
            last.insert(stats.auction, stats);
        }
    }
    for (auction, (n, min, max, sum)) in &expected {
        let mut counts = seen.remove(auction).unwrap_or_default();
        counts.sort_unstable();
        let want: Vec<u64> = (1..=*n).collect();
        if counts != want {
            let dupes = counts.windows(2).filter(|w| w[0] == w[1]).count();
            return Err(format!(
                "auction {auction}: {} running counts for {n} bids ({dupes} repeated; first differences: {:?})",
                counts.len(),
                counts.iter().zip(&want).find(|(a, b)| a != b)
            ));
        }
        let s = &last[auction];
        if (s.min_price, s.max_price, s.sum_price) != (*min, *max, *sum) {
            return Err(format!(
                "auction {auction}: final stats {s:?}, expected min {min} max {max} sum {sum}"
            ));
        }
    }
    if !seen.is_empty() {
        return Err(format!("output for auctions that had no bids: {:?}", seen.keys().collect::<Vec<_>>()));
    }
    Ok(())
}

fn job(broker: &str, input: &str, output: &str) -> serde_json::Value {
    let q17 = common::guest_path("nexmark-q17");
    serde_json::json!({
        "name": "kafka-q17",
        "nodes": [
            { "id": "bids", "kind": "source", "connector": "kafka", "parallelism": 2,
              "config": { "brokers": { "bootstrap_servers": [broker] }, "topics": [input],
                          "start": "earliest", "bounded": true, "value_format": "msgpack",
                          "batch_size": 50, "records_per_second": 600 } },
            { "id": "q17", "kind": "operator", "module": q17, "parallelism": 2 },
            { "id": "stats", "kind": "sink", "connector": "kafka", "parallelism": 2,
              "config": { "brokers": { "bootstrap_servers": [broker] }, "topic": output,
                          "delivery": "exactly_once", "value_format": "msgpack" } }
        ],
        "edges": [
            { "from": "bids", "to": "q17", "partitioning": "hash" },
            { "from": "q17", "to": "stats", "partitioning": "forward" }
        ],
        "settings": {
            "checkpoint": { "interval_ms": 100, "timeout_ms": 20000, "retained": 2, "tolerable_failures": 100 },
            "restart": { "attempts": 20, "delay_ms": 100 }
        }
    })
}

/// What ends a run early.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// SIGKILL after this many completed checkpoints.
    AfterCheckpoints(u32),
    /// SIGKILL while the output of a completed checkpoint is half produced (the sink pauses
    /// there when `WEIR_TEST_PAUSE_KAFKA_DELIVERY` names that delivery).
    InDelivery(u32),
}

fn spawn(job_file: &Path, data: &Path, pause: Option<u32>) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command
        .args(["run", job_file.to_str().unwrap(), "--job-id", "kq17", "--data-dir", data.to_str().unwrap()])
        .env("RUST_LOG", "weir=warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(n) = pause {
        command.env("WEIR_TEST_PAUSE_KAFKA_DELIVERY", n.to_string());
    }
    command.spawn().expect("start weir")
}

/// Runs until `kill` happens (then SIGKILLs the process) or the job ends; true if killed.
fn run_until(
    job_file: &Path,
    data: &Path,
    kill: Kill,
    broker: Option<&mut TansuBroker>,
) -> Result<bool, String> {
    let pause = match kill {
        Kill::InDelivery(n) => Some(n),
        Kill::AfterCheckpoints(_) => None,
    };
    let mut child = spawn(job_file, data, pause);
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut completed = 0;
    let mut broker = broker;
    let mut log = Vec::new();
    loop {
        let line = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(line) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no progress for 120 s; output:\n{}", log.join("\n")));
            }
        };
        log.push(line.clone());
        if line.starts_with("checkpoint ") && line.contains(" completed") {
            completed += 1;
            // The broker restart: once, after the first checkpoint of this run.
            if completed == 1
                && let Some(b) = broker.take()
            {
                b.kill();
                b.restart();
            }
            if let Kill::AfterCheckpoints(n) = kill
                && completed == n
            {
                child.kill().unwrap();
                child.wait().unwrap();
                return Ok(true);
            }
        }
        if line.contains("weir-test: paused delivering") {
            child.kill().unwrap();
            child.wait().unwrap();
            return Ok(true);
        }
    }
    let status = child.wait().unwrap();
    // Shown with a failing test's output (nextest captures it otherwise).
    eprintln!("run ended by itself ({completed} checkpoints, waiting for {kill:?}):\n{}", log.join("\n"));
    if !status.success() {
        return Err(format!("weir run failed ({status}):\n{}", log.join("\n")));
    }
    Ok(false)
}

fn trial(seed: u64, shared: Option<&TansuBroker>) -> Result<String, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    // The trial that restarts the broker has one of its own.
    let restart_broker = seed % 20 == 7;
    let mut own =
        (restart_broker || shared.is_none()).then(|| TansuBroker::start(&dir.path().join("broker")));
    let broker_addr = own.as_ref().or(shared).unwrap().bootstrap();
    let input = format!("bids-{seed}");
    let output = format!("stats-{seed}");
    let mut client =
        Client::connect(ClientConfig::new(vec![broker_addr.clone()])).map_err(|e| e.to_string())?;
    client.create_topic(&input, 4).map_err(|e| e.to_string())?;
    client.create_topic(&output, 3).map_err(|e| e.to_string())?;
    let bids = bids(seed);
    produce_input(&mut client, &input, &bids);
    let job_file = dir.path().join("job.json");
    std::fs::write(&job_file, job(&broker_addr, &input, &output).to_string()).unwrap();
    let data = dir.path().join("data");
    let delivery_trial = seed % 4 == 1;
    let mut kills = Vec::new();
    for k in 0..2 {
        // The second kill comes early in its run (its run may be short: what the first left).
        let kill = if delivery_trial && k == 0 {
            Kill::InDelivery(rng.gen_range(2..=4))
        } else if k == 0 {
            Kill::AfterCheckpoints(rng.gen_range(1..=3))
        } else {
            Kill::AfterCheckpoints(rng.gen_range(1..=2))
        };
        let broker = if k == 0 { own.as_mut().filter(|_| restart_broker) } else { None };
        if !run_until(&job_file, &data, kill, broker)? {
            break;
        }
        kills.push(kill);
    }
    if kills.len() < 2 {
        return Err(format!("the job ended before it could be killed twice (kills: {kills:?})"));
    }
    // To the end, without kills.
    while run_until(&job_file, &data, Kill::AfterCheckpoints(u32::MAX), None)? {}
    let records = read_all(&mut client, &output);
    check(&records, &bids)?;
    Ok(format!(
        "{} records; kills {kills:?}{}",
        records.len(),
        if restart_broker { "; broker restarted" } else { "" }
    ))
}

fn trials(first: u64) {
    if let Some(seed) = std::env::var("WEIR_KAFKA_REPLAY").ok().and_then(|v| v.parse::<u64>().ok()) {
        if first == 0 {
            trial(seed, None).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        }
        return;
    }
    let count: u64 = std::env::var("WEIR_KAFKA_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let base: u64 = std::env::var("WEIR_KAFKA_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    for t in 0..count {
        let seed = base + first * count + t;
        // A broker per trial (it starts in ~150 ms): a Tansu broker that served a few trials
        // was seen to stop answering fetches of a later trial's topic.
        match trial(seed, None) {
            Ok(what) => eprintln!("kafka trial seed {seed}: ok ({what})"),
            Err(e) => panic!(
                "kafka exactly-once trial with seed {seed} failed — replay with WEIR_KAFKA_REPLAY={seed}: {e}"
            ),
        }
    }
}

#[test]
fn kafka_q17_trials_a() {
    trials(0);
}

#[test]
fn kafka_q17_trials_b() {
    trials(1);
}

#[test]
fn kafka_q17_trials_c() {
    trials(2);
}

#[test]
fn kafka_q17_trials_d() {
    trials(3);
}
