//! The Kafka source and sink end to end, through a real server and a real Kafka-protocol
//! broker (Tansu, docs/kafka-testing.md): rescaling through savepoints with `exactly_once`
//! output, partitions added while a job runs, idle partitions and event time, the errors a
//! tenant sees, SASL/SCRAM, consumer-group offsets for lag tools, and start positions.
//!
//! Input is produced and output read back with the engine's own client
//! (`common::kafka`). Every test has a broker and a server of its own; waits are on
//! conditions (output counts, job statuses, completed checkpoints) with generous timeouts.

use crate::common::kafka::{self as kc, msgpack, read_all};
use crate::common::tansu::TansuBroker;
use crate::server::{ADMIN, Api, TestServer};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weir::connectors::kafka::client::{
    self as kclient, Client, ClientConfig, FetchedRecord, ProduceRecord, Sasl,
};
use weir::connectors::kafka::{ConnectionConfig, SaslMechanism, Secret, SecurityProtocol};
use weir::runtime::TaskState;
use weir_store::CheckpointStorage as _;

const LONG: Duration = Duration::from_secs(90);

/// Runs blocking client calls on a worker of the (multi-threaded) test runtime.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// Waits until `check` (blocking) holds, checked every 50 ms, failing with `what` after `timeout`.
async fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !blocking(&mut check) {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A server whose connections are `connections`, and a tenant granted all of them (every
/// topic and group).
async fn server_with(connections: Vec<(&str, ConnectionConfig)>) -> (TestServer, Api) {
    let names: Vec<String> = connections.iter().map(|(n, _)| n.to_string()).collect();
    let server = TestServer::start(|c| {
        for (name, config) in connections {
            c.kafka_connections.insert(name.into(), config);
        }
    })
    .await;
    let (tenant, api) = server.tenant("acme").await;
    let grants: Vec<Value> = names
        .iter()
        .map(|n| json!({ "connection": n, "topic_prefixes": ["*"], "group_prefixes": ["*"] }))
        .collect();
    let (status, body) = server
        .client(ADMIN)
        .put(&format!("/api/v1/tenants/{tenant}/kafka"), &json!({ "grants": grants }))
        .await;
    assert_eq!(status, 200, "set grants: {body}");
    (server, api)
}

/// A broker in `dir` and a server with connection `main` to it.
async fn setup(dir: &std::path::Path) -> (TansuBroker, TestServer, Api, Client) {
    let broker = TansuBroker::start(&dir.join("broker"));
    let (server, api) = server_with(vec![("main", ConnectionConfig::plaintext([broker.bootstrap()]))]).await;
    let client = kc::client(&broker.bootstrap());
    (broker, server, api, client)
}

/// A Nexmark bid with the unique id `id` as its bidder; Kafka timestamp `time`.
fn bid(id: u64, time: i64) -> ProduceRecord {
    let value = json!({
        "auction": id % 10, "bidder": id, "price": 100 + id, "channel": "web",
        "url": "https://example.com/bid", "date_time": time, "extra": ""
    });
    ProduceRecord { key: None, value: Some(msgpack(&value)), timestamp: time, headers: vec![] }
}

fn bids(ids: std::ops::Range<u64>) -> Vec<ProduceRecord> {
    ids.map(|id| bid(id, 1_000_000 + id as i64)).collect()
}

/// Writes bids `ids` to `topic`, bid `i` to partition `i % partitions`.
fn produce_bids(client: &mut Client, topic: &str, partitions: u64, ids: std::ops::Range<u64>) {
    let mut by_partition: BTreeMap<i32, Vec<ProduceRecord>> = BTreeMap::new();
    for id in ids {
        by_partition.entry((id % partitions) as i32).or_default().push(bid(id, 1_000_000 + id as i64));
    }
    for (partition, records) in by_partition {
        kc::produce(client, topic, partition, &records);
    }
}

#[derive(serde::Deserialize)]
struct Q1Bid {
    bidder: u64,
    price: u64,
}

/// The bidder ids of q1's output records, sorted; checks each price was converted.
fn bidders(records: &[FetchedRecord]) -> Vec<u64> {
    let mut ids: Vec<u64> = records
        .iter()
        .map(|r| {
            let b: Q1Bid = rmp_serde::from_slice(r.value.as_deref().unwrap_or_default())
                .unwrap_or_else(|e| panic!("output record at offset {} is not a bid: {e}", r.offset));
            assert_eq!(b.price, (100 + b.bidder) * 908 / 1000, "q1's price of bidder {}", b.bidder);
            b.bidder
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// Asserts the output holds each of `expected` exactly once.
fn assert_exactly(records: &[FetchedRecord], expected: std::ops::Range<u64>, what: &str) {
    let ids = bidders(records);
    let want: Vec<u64> = expected.collect();
    if ids != want {
        let dupes = ids.windows(2).filter(|w| w[0] == w[1]).count();
        let missing = want.iter().filter(|i| ids.binary_search(i).is_err()).count();
        panic!(
            "{what}: {} output records for {} input records ({dupes} repeated, {missing} missing)",
            ids.len(),
            want.len()
        );
    }
}

fn source(topic: &str, extra: Value) -> Value {
    let mut config = json!({ "connection": "main", "topics": [topic], "value_format": "msgpack" });
    for (k, v) in extra.as_object().expect("an object") {
        config[k] = v.clone();
    }
    config
}

fn sink(topic: &str) -> Value {
    json!({ "connection": "main", "topic": topic, "delivery": "exactly_once",
            "value_format": "msgpack", "partitioner": "default" })
}

/// kafka source → `module` → `sink` (a kafka sink config, or a whole sink node with
/// `connector`), every node at `parallelism`, checkpoints every 100 ms.
fn job(source: Value, module: &str, sink: Value, parallelism: u32, restarts: u32) -> Value {
    let sink_node = if sink.get("connector").is_some() {
        json!({ "id": "out", "kind": "sink", "parallelism": parallelism, "connector": sink["connector"],
                "config": sink["config"] })
    } else {
        json!({ "id": "out", "kind": "sink", "connector": "kafka", "parallelism": parallelism, "config": sink })
    };
    json!({
        "name": "kafka",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "kafka", "parallelism": parallelism, "config": source },
            { "id": "op", "kind": "operator", "module": module, "parallelism": parallelism },
            sink_node
        ],
        "edges": [
            { "from": "in", "to": "op", "partitioning": "forward" },
            { "from": "op", "to": "out", "partitioning": "forward" }
        ],
        "settings": {
            "checkpoint": { "interval_ms": 100, "timeout_ms": 30000 },
            "restart": { "attempts": restarts, "delay_ms": 100 }
        }
    })
}

/// Takes a savepoint of `job` with `mode` and waits until it completed; returns its id.
async fn savepoint(api: &Api, job: &str, mode: &str) -> String {
    let (status, sp) = api.post(&format!("/api/v1/jobs/{job}/savepoints"), &json!({ "mode": mode })).await;
    assert_eq!(status, 202, "{sp}");
    let id = sp["id"].as_str().expect("savepoint id").to_string();
    let mut last = sp;
    let deadline = Instant::now() + LONG;
    while last["status"] == "pending" {
        assert!(Instant::now() < deadline, "savepoint {id} still pending: {last}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (status, now) = api.get(&format!("/api/v1/savepoints/{id}")).await;
        assert_eq!(status, 200, "{now}");
        last = now;
    }
    assert_eq!(last["status"], "completed", "savepoint failed: {last}");
    id
}

/// Creates a job from a savepoint; returns its id.
async fn create_from(api: &Api, spec: &Value, savepoint: &str) -> String {
    let (status, job) = api.post(&format!("/api/v1/jobs?from_savepoint={savepoint}"), spec).await;
    assert_eq!(status, 201, "create from savepoint: {job}");
    job["id"].as_str().expect("job id").to_string()
}

/// Stops `job` with a final checkpoint (its output is then complete and final).
async fn stop(api: &Api, job: &str) {
    savepoint(api, job, "stop").await;
}

/// Waits until `job` has completed a checkpoint (its sources have opened).
async fn wait_checkpoint(api: &Api, job: &str) {
    let deadline = Instant::now() + LONG;
    loop {
        let (status, page) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
        assert_eq!(status, 200, "{page}");
        if page["counts"]["completed"].as_u64().unwrap_or(0) >= 1 {
            return;
        }
        assert!(Instant::now() < deadline, "job {job} completed no checkpoint: {page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rescale_two_three_one_through_savepoints_is_exactly_once() {
    const PART: u64 = 1_200;
    let dir = tempfile::tempdir().unwrap();
    let (_broker, _server, api, mut client) = setup(dir.path()).await;
    blocking(|| {
        client.create_topic("bids", 4).unwrap();
        client.create_topic("q1-out", 3).unwrap();
        produce_bids(&mut client, "bids", 4, 0..PART);
    });
    // Throttled, so each phase stops in the middle of its input.
    let spec = |p: u32| {
        job(
            source("bids", json!({ "batch_size": 50, "records_per_second": 600 })),
            "builtin:nexmark-q1",
            sink("q1-out"),
            p,
            3,
        )
    };
    let first = api.create_job(&spec(2)).await;
    wait_until("output at parallelism 2", LONG, || kc::count(&mut client, "q1-out") > 0).await;
    let sp1 = savepoint(&api, &first, "stop").await;
    let at_sp1 = blocking(|| kc::count(&mut client, "q1-out"));

    blocking(|| produce_bids(&mut client, "bids", 4, PART..2 * PART));
    let second = create_from(&api, &spec(3), &sp1).await;
    wait_until("more output at parallelism 3", LONG, || kc::count(&mut client, "q1-out") > at_sp1).await;
    let sp2 = savepoint(&api, &second, "stop").await;

    blocking(|| produce_bids(&mut client, "bids", 4, 2 * PART..3 * PART));
    let third = create_from(&api, &spec(1), &sp2).await;
    wait_until("every bid's output at parallelism 1", LONG, || {
        kc::count(&mut client, "q1-out") >= 3 * PART as i64
    })
    .await;
    stop(&api, &third).await;
    let records = blocking(|| read_all(&mut client, "q1-out"));
    eprintln!("{} records; {at_sp1} at the first savepoint", records.len());
    assert_exactly(&records, 0..3 * PART, "after rescaling 2 → 3 → 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partition_added_while_running_is_read_from_its_beginning() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _server, api, mut client) = setup(dir.path()).await;
    blocking(|| {
        client.create_topic("grow", 2).unwrap();
        client.create_topic("grow-out", 2).unwrap();
        produce_bids(&mut client, "grow", 2, 0..40);
    });
    let spec = job(
        source("grow", json!({ "discovery_interval_ms": 200 })),
        "builtin:nexmark-q1",
        sink("grow-out"),
        2,
        3,
    );
    let id = api.create_job(&spec).await;
    wait_until("the first partitions' output", LONG, || kc::count(&mut client, "grow-out") >= 40).await;
    blocking(|| {
        broker.add_partitions("grow", 3);
        // Written at once: before the job's next discovery sees the partition.
        let mut fresh = kc::client(&broker.bootstrap());
        kc::produce(&mut fresh, "grow", 2, &bids(40..100));
    });
    wait_until("the new partition's output", LONG, || kc::count(&mut client, "grow-out") >= 100).await;
    stop(&api, &id).await;
    let records = blocking(|| read_all(&mut client, "grow-out"));
    assert_exactly(&records, 0..100, "with a partition added");
}

/// Window size and the time between fed records (idleness test).
const SIZE: i64 = 100;
const STEP: i64 = 10;
/// The first fed record's time (a window boundary).
const T0: i64 = 1_000_000;

/// Appends record `i` (key `k`, value `i`, time `T0 + STEP i`) to partition 0 of `topic`
/// every few milliseconds until dropped; partition 1 never gets a record.
struct Feeder {
    stop: Arc<AtomicBool>,
    fed: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Feeder {
    fn start(bootstrap: &str, topic: &str) -> Feeder {
        let stop = Arc::new(AtomicBool::new(false));
        let fed = Arc::new(AtomicU64::new(0));
        let mut client = kc::client(bootstrap);
        let (s, f, topic) = (stop.clone(), fed.clone(), topic.to_string());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let i = f.load(Ordering::SeqCst);
                let record = ProduceRecord {
                    key: Some(b"k".to_vec()),
                    value: Some(msgpack(&(i as i64))),
                    timestamp: T0 + STEP * i as i64,
                    headers: vec![],
                };
                kc::produce(&mut client, &topic, 0, &[record]);
                f.store(i + 1, Ordering::SeqCst);
                // Pacing, not synchronisation: event time moves on while the job runs.
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        Feeder { stop, fed, thread: Some(thread) }
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Debug, serde::Deserialize)]
struct Window {
    window_start: i64,
    count: u64,
    sum: i64,
}

/// The windows fired to `topic`, each checked against the fed records: (start, count, sum)
/// of every record of its time range (the feeder writes in time order, so a window closes
/// only after all of its records).
fn windows(client: &mut Client, topic: &str) -> Vec<Window> {
    let out: Vec<Window> = read_all(client, topic)
        .iter()
        .map(|r| rmp_serde::from_slice(r.value.as_deref().unwrap_or_default()).expect("a window result"))
        .collect();
    for w in &out {
        let first = (w.window_start - T0) / STEP;
        let ids = first..first + SIZE / STEP;
        assert_eq!((w.count, w.sum), (ids.clone().count() as u64, ids.sum::<i64>()), "window {w:?}");
    }
    out
}

fn idle_job(topic: &str, out: &str, idle_timeout_ms: Option<u64>) -> Value {
    json!({
        "name": "idle",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "kafka",
              "config": { "connection": "main", "topics": [topic], "key_format": "raw", "value_format": "msgpack",
                          "event_time": "kafka", "out_of_orderness_ms": 0, "idle_timeout_ms": idle_timeout_ms } },
            { "id": "window", "kind": "operator", "module": "builtin:tumbling-window", "config": { "size_ms": SIZE } },
            { "id": "out", "kind": "sink", "connector": "kafka",
              "config": { "connection": "main", "topic": out, "key_format": "raw", "value_format": "msgpack" } }
        ],
        "edges": [
            { "from": "in", "to": "window", "partitioning": "hash" },
            { "from": "window", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": 100 } }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_partitions_do_not_hold_event_time_back() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, server, api, mut client) = setup(dir.path()).await;
    blocking(|| {
        for t in ["idle-in", "idle-out", "busy-in", "busy-out"] {
            client.create_topic(t, 2).unwrap();
        }
    });

    // With idle_timeout_ms, partition 1 stops counting and windows fire while the job runs.
    let feeder = Feeder::start(&broker.bootstrap(), "idle-in");
    let id = api.create_job(&idle_job("idle-in", "idle-out", Some(300))).await;
    wait_until("four windows to fire", LONG, || windows(&mut client, "idle-out").len() >= 4).await;
    api.post_empty(&format!("/api/v1/jobs/{id}/cancel")).await;
    drop(feeder);

    // Without it: a completed checkpoint in which the source had read past three whole
    // windows and the window operator still held their timers (no watermark at all on its
    // input), and nothing fired.
    let feeder = Feeder::start(&broker.bootstrap(), "busy-in");
    let id = api.create_job(&idle_job("busy-in", "busy-out", None)).await;
    let store = server.service().store.clone();
    let closed = T0 + 3 * SIZE;
    let mut held = 0;
    wait_until("a checkpoint past three windows", LONG, || {
        let Some((_, manifest)) = store.latest_completed(&id).unwrap() else { return false };
        let decode = |node: &str| -> Vec<TaskState> {
            manifest[node].values().map(|s| TaskState::decode(&s.blob).expect("task state")).collect()
        };
        let read = decode("in")[0].position.as_ref().and_then(|p| p["offsets"]["busy-in"]["0"].as_i64());
        let window = decode("window");
        held = window[0].timers.iter().filter(|(t, _)| *t < closed).count();
        assert!(window[0].watermarks.iter().all(|w| *w == i64::MIN), "{:?}", window[0].watermarks);
        read.is_some_and(|r| r > (closed - T0) / STEP)
    })
    .await;
    assert_eq!(held, 3, "the three closed windows are still waiting");
    assert!(blocking(|| windows(&mut client, "busy-out")).is_empty(), "no window fired");
    assert!(feeder.fed.load(Ordering::SeqCst) > 30);
    assert_eq!(blocking(|| kc::end_offsets(&mut client, "busy-in"))[&1], 0, "partition 1 stayed empty");
    api.post_empty(&format!("/api/v1/jobs/{id}/cancel")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failures_are_reported_clearly_within_30_seconds() {
    let logs = kc::captured_logs();
    let dir = tempfile::tempdir().unwrap();
    let broker = TansuBroker::start(&dir.path().join("broker"));
    // A loopback port where nothing listens.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let (_server, api) = server_with(vec![
        ("main", ConnectionConfig::plaintext([broker.bootstrap()])),
        ("dead", ConnectionConfig::plaintext([dead.clone()])),
    ])
    .await;
    let mut client = kc::client(&broker.bootstrap());
    blocking(|| {
        client.create_topic("present", 1).unwrap();
        client.create_topic("badjson", 1).unwrap();
        let record =
            |v: &[u8]| ProduceRecord { key: None, value: Some(v.to_vec()), timestamp: 1, headers: vec![] };
        kc::produce(&mut client, "badjson", 0, &[record(br#""hello world""#), record(b"not json {")]);
    });
    let blackhole = json!({ "connector": "blackhole", "config": {} });
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "bad broker address",
            job(
                json!({ "connection": "dead", "topics": ["present"] }),
                "builtin:tokenizer",
                blackhole.clone(),
                1,
                0,
            ),
            // Named by the connection and the broker's place in it: the address is the
            // admin's, in the server's log only (checked below).
            vec!["cannot reach bootstrap broker 1 of Kafka connection `dead`".into()],
        ),
        (
            "unknown topic",
            job(source("no-such-topic", json!({})), "builtin:tokenizer", blackhole.clone(), 1, 0),
            vec!["the Kafka topic `no-such-topic` does not exist".into()],
        ),
        (
            "malformed record",
            job(
                source("badjson", json!({ "value_format": "json" })),
                "builtin:tokenizer",
                blackhole.clone(),
                1,
                0,
            ),
            vec!["the record at offset 1 of badjson/0 cannot be read: its value is not JSON".into()],
        ),
        (
            "transactional sink",
            job(
                source("present", json!({ "value_format": "raw" })),
                "builtin:tokenizer",
                json!({ "connection": "main", "topic": "present", "delivery": "transactional",
                        "transactional_id_prefix": "tx" }),
                1,
                0,
            ),
            vec![
                "the Kafka broker does not support transactions".into(),
                "use `exactly_once` delivery".into(),
            ],
        ),
    ];
    let mut jobs = Vec::new();
    for (what, spec, says) in cases {
        let created = Instant::now();
        jobs.push((what, api.create_job(&spec).await, says, created));
    }
    for (what, id, says, created) in jobs {
        let left = Duration::from_secs(30).saturating_sub(created.elapsed());
        let failed = api.wait_job(&id, left, |j| j["status"] == "failed").await;
        let error = failed["error"].as_str().unwrap_or_default();
        eprintln!("{what}: failed after {:?}: {error}", created.elapsed());
        for s in &says {
            assert!(error.contains(s.as_str()), "{what}: the error should say `{s}`: {failed}");
        }
        for addr in [&dead, &broker.bootstrap()] {
            assert!(!error.contains(addr.as_str()), "{what}: a tenant sees the address {addr}: {failed}");
        }
        if what == "bad broker address" {
            // The job's own record, as the API shows it, names no address either.
            let (_, job) = api.get(&format!("/api/v1/jobs/{id}")).await;
            assert!(!job.to_string().contains(&dead), "the job's record names the address: {job}");
            let logged = logs.text();
            assert!(
                logged.lines().any(|l| l.contains(&dead) && l.contains("bootstrap broker 1 of Kafka connection `dead`")),
                "the server's log should name the address of the broker it cannot reach: {logged}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sasl_scram_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = TansuBroker::start(&dir.path().join("broker"));
    let (user, password) = ("weir-user", "scram-secret-42");
    blocking(|| {
        let mut client = kc::client(&broker.bootstrap());
        client.create_topic("sasl-in", 2).unwrap();
        client.create_topic("sasl-out", 2).unwrap();
        produce_bids(&mut client, "sasl-in", 2, 0..100);
        broker.create_user(user, password);
        broker.restart_with(&["--authentication"]);
    });
    let sasl = Sasl {
        mechanism: kclient::SaslMechanism::ScramSha256,
        username: user.into(),
        password: password.into(),
    };
    let mut client = blocking(|| {
        Client::connect(ClientConfig { sasl: Some(sasl), ..ClientConfig::new(vec![broker.bootstrap()]) })
            .expect("a SASL client connects")
    });
    // Authentication is now required: a plain client gets no metadata.
    blocking(|| {
        let plain = ClientConfig {
            request_timeout: Duration::from_secs(2),
            ..ClientConfig::new(vec![broker.bootstrap()])
        };
        let refused = Client::connect(plain).and_then(|mut c| c.partitions(&["sasl-in".to_string()]));
        assert!(refused.is_err(), "a client without SASL was answered");
        produce_bids(&mut client, "sasl-in", 2, 100..200);
    });
    let connection = ConnectionConfig {
        security_protocol: SecurityProtocol::SaslPlaintext,
        sasl_mechanism: Some(SaslMechanism::ScramSha256),
        sasl_username: Some(user.into()),
        sasl_password: Some(Secret::new(password)),
        ..ConnectionConfig::plaintext([broker.bootstrap()])
    };
    let (_server, api) = server_with(vec![("main", connection)]).await;
    let id = api
        .create_job(&job(source("sasl-in", json!({})), "builtin:nexmark-q1", sink("sasl-out"), 1, 3))
        .await;
    wait_until("the output through SASL", LONG, || kc::count(&mut client, "sasl-out") >= 200).await;
    stop(&api, &id).await;
    let records = blocking(|| read_all(&mut client, "sasl-out"));
    assert_exactly(&records, 0..200, "through SASL/SCRAM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn committed_group_offsets_follow_checkpoints_and_start_a_group_job() {
    let dir = tempfile::tempdir().unwrap();
    let (_broker, _server, api, mut client) = setup(dir.path()).await;
    let group = "lag-group";
    blocking(|| {
        for t in ["g-in", "g-out", "g-out2"] {
            client.create_topic(t, 2).unwrap();
        }
        produce_bids(&mut client, "g-in", 2, 0..100);
    });
    let first = json!({ "group_id": group, "commit_offsets": true });
    let id = api.create_job(&job(source("g-in", first), "builtin:nexmark-q1", sink("g-out"), 1, 3)).await;
    wait_until("the first job's output", LONG, || kc::count(&mut client, "g-out") >= 100).await;
    let ends = blocking(|| kc::end_offsets(&mut client, "g-in"));
    let mut committed = BTreeMap::new();
    wait_until("the group's offsets at the input's end", LONG, || {
        committed = client.committed_offsets(group, "g-in", &[0, 1]).expect("committed offsets");
        committed.iter().all(|(p, o)| *o == Some(ends[p]))
    })
    .await;
    stop(&api, &id).await;
    assert_exactly(&blocking(|| read_all(&mut client, "g-out")), 0..100, "the first job");

    // A second job of the group starts at its committed offsets: only the new records.
    blocking(|| produce_bids(&mut client, "g-in", 2, 100..150));
    let second = json!({ "group_id": group, "start": "group" });
    let id = api.create_job(&job(source("g-in", second), "builtin:nexmark-q1", sink("g-out2"), 1, 3)).await;
    wait_until("the second job's output", LONG, || kc::count(&mut client, "g-out2") >= 50).await;
    stop(&api, &id).await;
    assert_exactly(
        &blocking(|| read_all(&mut client, "g-out2")),
        100..150,
        "the job started at the group's offsets",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn start_latest_and_at_a_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let (_broker, _server, api, mut client) = setup(dir.path()).await;
    const T: i64 = 2_000_000;
    blocking(|| {
        for t in ["late", "late-out", "ts", "ts-out"] {
            client.create_topic(t, 1).unwrap();
        }
        kc::produce(&mut client, "late", 0, &bids(0..20));
        // Separate batches: Tansu answers a timestamp lookup per batch.
        kc::produce(&mut client, "ts", 0, &bids(0..20));
        let after: Vec<ProduceRecord> = (20..40).map(|id| bid(id, T + id as i64 - 20)).collect();
        kc::produce(&mut client, "ts", 0, &after);
    });
    let latest = api
        .create_job(&job(
            source("late", json!({ "start": "latest" })),
            "builtin:nexmark-q1",
            sink("late-out"),
            1,
            0,
        ))
        .await;
    let at = api
        .create_job(&job(
            source("ts", json!({ "start": { "timestamp": T } })),
            "builtin:nexmark-q1",
            sink("ts-out"),
            1,
            0,
        ))
        .await;
    // The source has opened (it found the end) once a checkpoint completed.
    wait_checkpoint(&api, &latest).await;
    blocking(|| kc::produce(&mut client, "late", 0, &bids(20..40)));
    wait_until("output of the records after the start", LONG, || kc::count(&mut client, "late-out") >= 20)
        .await;
    wait_until("output of the records from T", LONG, || kc::count(&mut client, "ts-out") >= 20).await;
    stop(&api, &latest).await;
    stop(&api, &at).await;
    assert_exactly(&blocking(|| read_all(&mut client, "late-out")), 20..40, "start: latest");
    assert_exactly(&blocking(|| read_all(&mut client, "ts-out")), 20..40, "start: timestamp");
}
