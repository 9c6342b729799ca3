//! Jobs on workers (issue 22): `weir serve` as the controller and `weir worker` processes,
//! real sockets. A job's operators run on the workers, its stream connectors in the
//! controller (they use its store); channels cross processes over the data plane, the
//! coordinator's controls and the subtasks' acks and storage calls over the sessions. The
//! output is exactly once, also when a worker is killed mid-stream and the job restarts on
//! the workers that remain. In the chaos trials the workers put their checkpoint chunks in a
//! real S3 server (moto) themselves and the controller only records them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::json;
use weir_store::{CheckpointStorage as _, ExternalChunks as _};

use weir::cluster::objects::ObjectStoreConfig;

use super::workers::{TOKEN, Worker, controller, find, registered_id, wait_workers};
use crate::common::s3::S3Server;
use crate::server::wordcount::{self, check_exactly_once, lines, push, wait_output};
use crate::server::{Api, TestServer};

const LONG: Duration = Duration::from_secs(120);

async fn completed_checkpoints(api: &Api, job: &str) -> u64 {
    let (status, h) = api.get(&format!("/api/v1/jobs/{job}/checkpoints")).await;
    assert_eq!(status, 200, "{h}");
    h["counts"]["completed"].as_u64().unwrap()
}

/// Two workers sharing the controller's chunk store (a directory): they put their chunks
/// there and, after a worker is killed, the other restores the job's state from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_workers_exactly_once_and_survives_a_killed_worker() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    let store = [
        ("WEIR_CHUNK_STORE__KIND".to_string(), "local".to_string()),
        ("WEIR_CHUNK_STORE__DIR".to_string(), objects.display().to_string()),
    ];
    let server = controller(
        &dir.path().join("data"),
        &store.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>(),
    );
    let addr = server.cluster.clone().unwrap();
    let w1 = Worker::spawn_with(&addr, "w1", TOKEN, &store);
    let w2 = Worker::spawn_with(&addr, "w2", TOKEN, &store);
    w1.wait_line("chunks go to file://");
    let id1 = registered_id(&w1.wait_line("registered as worker"));
    let id2 = registered_id(&w2.wait_line("registered as worker"));
    wait_workers(&server, "both live", |l| {
        [id1, id2].iter().all(|id| find(l, *id).is_some_and(|w| w["status"] == "live"))
    })
    .await;

    let (_, api) = server.tenant("acme").await;
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    push(&api, lines(0, 1000)).await;
    let job = api.create_job(&wordcount::spec("cluster-wordcount", "tokenizer", "wordcount")).await;
    // Parallelism 2 over two workers: one slot on each.
    let list = wait_workers(&server, "slots reserved", |l| {
        [id1, id2].iter().all(|id| find(l, *id).is_some_and(|w| w["used_slots"] == 1))
    })
    .await;
    assert_eq!(list.len(), 2, "{list:#?}");
    wait_output(&api, 1000).await;
    let deadline = std::time::Instant::now() + LONG;
    while completed_checkpoints(&api, &job).await < 2 {
        assert!(std::time::Instant::now() < deadline, "no checkpoints on workers");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A worker dies mid-stream: the job restarts from its latest checkpoint on the worker
    // that remains (two slots of three).
    push(&api, lines(1000, 2000)).await;
    let mut w2 = w2;
    w2.signal("-KILL");
    let _ = w2.exit_status();
    wait_workers(&server, "w1 holds the job", |l| {
        find(l, id1).is_some_and(|w| w["used_slots"] == 2)
            && find(l, id2).is_some_and(|w| w["status"] == "lost")
    })
    .await;
    push(&api, lines(2000, 3000)).await;
    wait_output(&api, 3000).await;
    let (_, detail) = api.get(&format!("/api/v1/jobs/{job}")).await;
    assert!(detail["restarts"].as_u64().unwrap() >= 1, "{detail}");
    // w1 read the restored counts from the objects, not through the controller.
    let line = w1.wait_line("from the object store");
    assert!(line.contains(", 0 through the controller") && !line.contains("restored 0 chains"), "{line}");
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/stop")).await;
    assert_eq!(status, 202);
    api.wait_status(&job, "stopped", LONG).await;
    check_exactly_once(&api, 3000).await;
    // The attempt's slots are given back when the job stops.
    wait_workers(&server, "slots free", |l| find(l, id1).is_some_and(|w| w["used_slots"] == 0)).await;
}

// ---------------------------------------------------------------------------------------
// Chaos on a cluster: Nexmark bids → stream `bids`, and stream `bids` → q17 (keyed,
// parallelism 3) → stream `out`, on 3 workers.

/// Bids of a trial's job.
const BIDS: u64 = 6_000;

/// The input job: Nexmark bids keyed by auction (the source on a worker) → stream `bids`
/// (in the controller: it writes the controller's store), exactly once; paced so that the
/// faults land mid-run.
fn bids_in(rate: u64) -> serde_json::Value {
    json!({
        "name": "cluster-bids",
        "nodes": [
            { "id": "bids", "kind": "source", "connector": "nexmark",
              "config": { "event_type": "bid", "count": BIDS, "key": "auction", "records_per_second": rate,
                          "batch_size": 50 } },
            { "id": "log", "kind": "sink", "connector": "stream", "config": { "stream": "bids" } }
        ],
        "edges": [{ "from": "bids", "to": "log", "partitioning": "forward" }],
        "settings": {
            "checkpoint": { "interval_ms": 100, "timeout_ms": 20000, "retained": 2, "tolerable_failures": 100 },
            "restart": { "attempts": 30, "delay_ms": 100 }
        }
    })
}

/// The query job: `input` → q17 (parallelism 3, hash, on the workers) → stream `out` (in
/// the controller). `input` is the Nexmark source itself (the reference) or stream `bids`,
/// followed as the input job appends to it (the stream source runs in the controller, so
/// every record crosses to a worker and back).
fn q17(module: &str, input: serde_json::Value) -> serde_json::Value {
    json!({
        "name": "cluster-q17",
        "nodes": [
            input,
            { "id": "q17", "kind": "operator", "module": module, "parallelism": 3 },
            { "id": "out", "kind": "sink", "connector": "stream", "parallelism": 3,
              "config": { "stream": "out", "partitions": 3 } }
        ],
        "edges": [
            { "from": "bids", "to": "q17", "partitioning": "hash" },
            { "from": "q17", "to": "out", "partitioning": "forward" }
        ],
        "settings": {
            "checkpoint": { "interval_ms": 100, "timeout_ms": 20000, "retained": 2, "tolerable_failures": 100 },
            "restart": { "attempts": 30, "delay_ms": 100 }
        }
    })
}

fn nexmark_bids() -> serde_json::Value {
    json!({ "id": "bids", "kind": "source", "connector": "nexmark",
            "config": { "event_type": "bid", "count": BIDS, "key": "auction", "batch_size": 50 } })
}

fn stream_bids() -> serde_json::Value {
    json!({ "id": "bids", "kind": "source", "connector": "stream", "parallelism": 3,
            "config": { "stream": "bids", "follow": true } })
}

/// Stream `name` as each key's values in the order they were written.
async fn per_key(api: &Api, name: &str) -> BTreeMap<String, Vec<serde_json::Value>> {
    let mut records = api.read_all(name).await;
    records.sort_by_key(|(p, o, _, _)| (*p, *o));
    let mut out: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    for (_, _, key, value) in records {
        out.entry(key.to_string()).or_default().push(value);
    }
    out
}

/// Records committed to stream `name` so far.
async fn committed(api: &Api, name: &str) -> u64 {
    let (status, info) = api.get(&format!("/api/v1/streams/{name}")).await;
    if status == 404 {
        return 0;
    }
    assert_eq!(status, 200, "{info}");
    info["end_offsets"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).sum()
}

/// Equal record for record: the same keys, each key's values in the same order.
fn same(
    expected: &BTreeMap<String, Vec<serde_json::Value>>,
    seen: &BTreeMap<String, Vec<serde_json::Value>>,
) -> Result<(), String> {
    if expected.len() != seen.len() {
        return Err(format!("{} keys instead of {}", seen.len(), expected.len()));
    }
    for (key, values) in expected {
        let got = seen.get(key).ok_or(format!("key {key} missing"))?;
        if got != values {
            let at = values.iter().zip(got).position(|(a, b)| a != b).unwrap_or(values.len().min(got.len()));
            return Err(format!(
                "key {key} differs at record {at} of {} (seen {}): expected {:?}, seen {:?}",
                values.len(),
                got.len(),
                values.get(at),
                got.get(at)
            ));
        }
    }
    Ok(())
}

/// The failure-free output, from a server without workers (every subtask in process).
async fn reference() -> BTreeMap<String, Vec<serde_json::Value>> {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("reference").await;
    let module = api.upload_guest("nexmark-q17").await;
    let job = api.create_job(&q17(&module, nexmark_bids())).await;
    let j = api.wait_job(&job, LONG, |j| j["status"] != "running").await;
    assert_eq!(j["status"], "finished", "{j}");
    per_key(&api, "out").await
}

/// A port free now (the controller listens there again after it was killed).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// What a trial does to the cluster, once the output passed a seeded point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// SIGKILL a worker (a new one of the same name starts once it is lost).
    KillWorker(usize),
    /// SIGSTOP a worker until the job ran on without it, then SIGCONT: a zombie.
    PauseWorker(usize),
    /// SIGKILL the controller and start it again on the same data and address.
    KillController,
}

struct Cluster {
    dir: std::path::PathBuf,
    env: Vec<(String, String)>,
    server: TestServer,
    workers: Vec<Worker>,
    addr: String,
}

impl Cluster {
    /// A controller and three workers sharing the chunk store `objects` (an S3 server).
    fn start(dir: &std::path::Path, objects: &ObjectStoreConfig) -> Cluster {
        let port = free_port();
        let ObjectStoreConfig::S3 {
            bucket, endpoint: Some(endpoint), access_key_id, secret_access_key, ..
        } = objects
        else {
            panic!("an S3 server's config")
        };
        let mut env = vec![("WEIR_CLUSTER__LISTEN".to_string(), format!("127.0.0.1:{port}"))];
        for (key, value) in [
            ("KIND", "s3"),
            ("BUCKET", bucket),
            ("ENDPOINT", endpoint),
            ("ACCESS_KEY_ID", access_key_id),
            ("SECRET_ACCESS_KEY", secret_access_key),
            ("ALLOW_HTTP", "true"),
        ] {
            env.push((format!("WEIR_CHUNK_STORE__{key}"), value.to_string()));
        }
        let server = Self::controller(dir, &env);
        let addr = server.cluster.clone().unwrap();
        // The workers share the controller's chunk store: they put their chunks themselves.
        let workers =
            (0..3).map(|i| Worker::spawn_with(&addr, &format!("w{i}"), TOKEN, &env[1..])).collect::<Vec<_>>();
        for w in &workers {
            w.wait_line("chunks go to s3://");
        }
        for w in &workers {
            w.wait_line("registered as worker");
        }
        Cluster { dir: dir.to_path_buf(), env, server, workers, addr }
    }

    fn controller(dir: &std::path::Path, env: &[(String, String)]) -> TestServer {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        controller(dir, &env)
    }

    async fn live_workers(&self) -> usize {
        let (_, body) = self.server.client(crate::server::ADMIN).get("/api/v1/workers").await;
        body["data"].as_array().unwrap().iter().filter(|w| w["status"] == "live").count()
    }
}

async fn trial(seed: u64, reference: &BTreeMap<String, Vec<serde_json::Value>>) -> Result<String, String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let s3 = S3Server::start();
    s3.create_bucket("weir").await;
    let objects = s3.config("weir");
    let mut cluster = Cluster::start(&dir.path().join("data"), &objects);
    let (_, mut api) = cluster.server.tenant("chaos").await;
    let module = api.upload_guest("nexmark-q17").await;
    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "bids", "partitions": 3 })).await;
    assert_eq!(status, 201, "{v}");
    let input = api.create_job(&bids_in(800)).await;
    let job = api.create_job(&q17(&module, stream_bids())).await;
    // The workers share the controller's chunk store: they put their chunks there.
    cluster.workers[0].wait_line("puts its chunks in the object store and reads");
    let faults: Vec<Fault> = (0..rng.gen_range(1..=2))
        .map(|_| match rng.gen_range(0..10) {
            0..=1 => Fault::KillController,
            2..=3 => Fault::PauseWorker(rng.gen_range(0..3)),
            _ => Fault::KillWorker(rng.gen_range(0..3)),
        })
        .collect();
    for &fault in &faults {
        let at = committed(&api, "out").await + rng.gen_range(200..1_500);
        crate::server::wait_for(&format!("{at} records"), LONG, || async {
            committed(&api, "out").await >= at
        })
        .await;
        if committed(&api, "out").await >= BIDS {
            return Err(format!("the job ended before fault {fault:?}"));
        }
        let (_, before) = api.get(&format!("/api/v1/jobs/{job}")).await;
        let restarts = before["restarts"].as_u64().unwrap_or(0);
        match fault {
            Fault::KillWorker(i) => {
                cluster.workers[i].signal("-KILL");
                let _ = cluster.workers[i].exit_status();
                // The job restarts without it; then a new process of the same name joins.
                api.wait_job(&job, LONG, |j| j["restarts"].as_u64().unwrap_or(0) > restarts).await;
                cluster.workers[i] =
                    Worker::spawn_with(&cluster.addr, &format!("w{i}"), TOKEN, &cluster.env[1..]);
                cluster.workers[i].wait_line("registered as worker");
            }
            Fault::PauseWorker(i) => {
                cluster.workers[i].signal("-STOP");
                // Lost by its heartbeats; the job restarts on the other two and goes on.
                api.wait_job(&job, LONG, |j| j["restarts"].as_u64().unwrap_or(0) > restarts).await;
                let more = committed(&api, "out").await + 100;
                crate::server::wait_for("progress without the paused worker", LONG, || async {
                    committed(&api, "out").await >= more.min(BIDS)
                })
                .await;
                // Resumed, it is a zombie: its session is gone, it registers again anew.
                cluster.workers[i].signal("-CONT");
                cluster.workers[i].wait_line("session ended");
                cluster.workers[i].wait_line("registered as worker");
            }
            Fault::KillController => {
                cluster.server.kill9();
                cluster.server = Cluster::controller(&cluster.dir, &cluster.env);
                api = api.at(&cluster.server.url);
                for w in &cluster.workers {
                    w.wait_line("registered as worker");
                }
                // The controller waited for its workers: the job resumed on them.
                api.wait_job(&job, LONG, |j| {
                    j["status"] == "finished"
                        || j["vertices"][1]["subtasks"]
                            .as_array()
                            .is_some_and(|s| s.iter().all(|s| s["worker"].is_u64()))
                })
                .await;
            }
        }
        let _ = cluster.live_workers().await;
    }
    let i = api.wait_job(&input, LONG, |j| j["status"] != "running" && j["status"] != "restarting").await;
    if i["status"] != "finished" {
        return Err(format!("the input job ended {}: {i}", i["status"]));
    }
    // The query job follows `bids` for ever: it is done when its output holds every bid.
    let deadline = std::time::Instant::now() + LONG;
    while committed(&api, "out").await < BIDS {
        let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
        if j["status"] != "running" && j["status"] != "restarting" {
            return Err(format!("the query job ended {}: {j}", j["status"]));
        }
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "{} of {BIDS} records in `out` after {LONG:?}",
                committed(&api, "out").await
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if committed(&api, "bids").await != BIDS {
        return Err(format!("stream `bids` holds {} records, not {BIDS}", committed(&api, "bids").await));
    }
    same(reference, &per_key(&api, "out").await)?;
    let (_, j) = api.get(&format!("/api/v1/jobs/{job}")).await;
    // No orphaned objects: after the recovery a next start does, the bucket holds exactly
    // the chunks the retained checkpoints reference.
    cluster.server.kill9();
    let store = weir_store::Store::open(&cluster.dir.join("weir.redb")).map_err(|e| e.to_string())?;
    let chunks = weir::cluster::objects::ChunkObjects::open(&objects, "weir").map_err(|e| e.to_string())?;
    let chunks = Arc::new(weir::cluster::objects::BlockingChunks::new(chunks).map_err(|e| e.to_string())?);
    store.set_external_chunks(chunks.clone());
    let query = job;
    for job in [&input, &query] {
        store.recover(job).map_err(|e| e.to_string())?;
        let mut referenced = BTreeSet::new();
        for meta in store.history(job).map_err(|e| e.to_string())? {
            if let Some((_, Some(manifest))) = store.checkpoint(job, meta.id).map_err(|e| e.to_string())? {
                for state in manifest.values().flat_map(|subtasks| subtasks.values()) {
                    referenced.extend(state.chains.values().flatten().copied());
                    referenced.extend(state.channel.iter().copied());
                }
            }
        }
        let stored: BTreeSet<u64> = chunks.list(job).map_err(|e| e.to_string())?.into_iter().collect();
        // (The input job keeps no keyed state: only the query's chunks must be there.)
        if (job == &query && referenced.is_empty()) || stored != referenced {
            return Err(format!(
                "job {job}: the objects hold chunks {stored:?}, the retained checkpoints reference {referenced:?}"
            ));
        }
    }
    Ok(format!("faults {faults:?}, restarts {} and {}", i["restarts"], j["restarts"]))
}

/// Seeded trials: each kills or pauses workers (or kills the controller) at random points
/// of a paced q17 job on three workers; the output must equal the failure-free run record
/// for record. `WEIR_CLUSTER_TRIALS` (default 3) and `WEIR_CLUSTER_SEED` make a longer run;
/// a failure names its seed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_trials_on_three_workers() {
    let trials: u64 = std::env::var("WEIR_CLUSTER_TRIALS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let first: u64 = std::env::var("WEIR_CLUSTER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(22_000);
    let reference = reference().await;
    assert_eq!(reference.values().map(Vec::len).sum::<usize>() as u64, BIDS);
    for seed in first..first + trials {
        match trial(seed, &reference).await {
            Ok(summary) => eprintln!("cluster trial {seed}: {summary}"),
            Err(e) => panic!(
                "cluster trial {seed} failed (replay with WEIR_CLUSTER_SEED={seed} WEIR_CLUSTER_TRIALS=1): {e}"
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Across a real network stack: workers in network namespaces.

/// A bridge in this namespace and network namespaces attached to it by veth pairs, on the
/// subnet `10.99.<n>.0/24` (the bridge is `.1`, namespace `k` is `.k+1`). Removed on drop.
struct Net {
    bridge: String,
    namespaces: Vec<String>,
    subnet: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Net {
    fn create(count: usize) -> Result<Net, String> {
        let tag = std::process::id() % 100_000;
        let subnet = format!("10.99.{}", tag % 250);
        let mut net = Net { bridge: format!("wb{tag}"), namespaces: Vec::new(), subnet };
        ip(&["link", "add", &net.bridge, "type", "bridge"])?;
        ip(&["addr", "add", &format!("{}.1/24", net.subnet), "dev", &net.bridge])?;
        ip(&["link", "set", &net.bridge, "up"])?;
        for k in 1..=count {
            let ns = format!("weir-{tag}-{k}");
            ip(&["netns", "add", &ns])?;
            net.namespaces.push(ns.clone());
            let (host_end, ns_end) = (format!("wv{tag}{k}"), format!("wp{tag}{k}"));
            ip(&["link", "add", &host_end, "type", "veth", "peer", "name", &ns_end])?;
            ip(&["link", "set", &ns_end, "netns", &ns])?;
            ip(&["link", "set", &host_end, "master", &net.bridge])?;
            ip(&["link", "set", &host_end, "up"])?;
            ip(&[
                "netns",
                "exec",
                &ns,
                "ip",
                "addr",
                "add",
                &format!("{}/24", net.address(k)),
                "dev",
                &ns_end,
            ])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", &ns_end, "up"])?;
            ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    /// Namespace `k`'s address (k from 1); `0` is the bridge's, in this namespace.
    fn address(&self, k: usize) -> String {
        format!("{}.{}", self.subnet, k + 1)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// Two workers, each in a network namespace of its own, linked to the controller's by veth
/// pairs on a bridge: the control sessions and every channel between the workers cross a
/// real network stack (the tokenizer's hash shuffle to the word count goes worker to
/// worker). Needs root (network namespaces), as the CI machine and this one have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_in_network_namespaces_run_a_job_exactly_once() {
    let net =
        Net::create(2).unwrap_or_else(|e| panic!("cannot create network namespaces (root needed): {e}"));
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("{}:0", net.address(0));
    // Plain TCP across the bridge: the network is this test's own.
    let server = controller(
        dir.path(),
        &[("WEIR_CLUSTER__LISTEN", listen.as_str()), ("WEIR_CLUSTER__INSECURE_PLAINTEXT", "true")],
    );
    let plaintext = [("WEIR_CLUSTER_INSECURE_PLAINTEXT".to_string(), "true".to_string())];
    let addr = server.cluster.clone().unwrap();
    assert!(addr.starts_with(&net.address(0)), "{addr}");
    let workers: Vec<Worker> = (1..=2)
        .map(|k| {
            let listen = format!("{}:0", net.address(k));
            Worker::spawn_in(
                Some(&net.namespaces[k - 1]),
                &listen,
                &addr,
                &format!("ns{k}"),
                TOKEN,
                &plaintext,
            )
        })
        .collect();
    let ids: Vec<u64> = workers.iter().map(|w| registered_id(&w.wait_line("registered as worker"))).collect();
    let list = wait_workers(&server, "both live", |l| {
        ids.iter().all(|id| find(l, *id).is_some_and(|w| w["status"] == "live"))
    })
    .await;
    for (k, id) in ids.iter().enumerate() {
        let data = find(&list, *id).unwrap()["data_addr"].as_str().unwrap().to_string();
        assert!(data.starts_with(&format!("{}:", net.address(k + 1))), "worker {id} advertises {data}");
    }

    let (_, api) = server.tenant("acme").await;
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    push(&api, lines(0, 1500)).await;
    let job = api.create_job(&wordcount::spec("netns-wordcount", "tokenizer", "wordcount")).await;
    wait_output(&api, 1500).await;
    // The job detail names the worker of each operator subtask: one on each.
    let detail = api
        .wait_job(&job, LONG, |j| {
            j["vertices"][2]["records_in"].as_u64().unwrap_or(0) > 0
                && j["vertices"][2]["subtasks"].as_array().unwrap().iter().all(|s| s["worker"].is_u64())
        })
        .await;
    let placed: BTreeSet<u64> = detail["vertices"][2]["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["worker"].as_u64().unwrap())
        .collect();
    assert_eq!(placed, ids.iter().copied().collect(), "{detail}");
    assert!(
        detail["vertices"][0]["subtasks"][0].get("worker").is_none(),
        "the stream source runs in the controller: {detail}"
    );
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/stop")).await;
    assert_eq!(status, 202);
    api.wait_status(&job, "stopped", LONG).await;
    check_exactly_once(&api, 1500).await;
    drop(workers);
    drop(server);
}

// ---------------------------------------------------------------------------------------
// Backpressure across the wire.

/// Resident memory of process `pid`, bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// A generator (on one worker) feeds two slow sinks round robin, one on its own worker and
/// one on the other: the remote sink's credits throttle the source across the wire. The
/// source is held back (its backpressure, reported by its worker, is high) instead of
/// running ahead: neither worker's memory grows (without credits the generator would queue
/// millions of records at the receiving end within seconds), and checkpoints still
/// complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_sink_on_one_worker_throttles_the_source_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let server = controller(dir.path(), &[]);
    let addr = server.cluster.clone().unwrap();
    let workers = [Worker::spawn(&addr, "a", TOKEN), Worker::spawn(&addr, "b", TOKEN)];
    let ids: Vec<u64> = workers.iter().map(|w| registered_id(&w.wait_line("registered as worker"))).collect();
    let (_, api) = server.tenant("acme").await;
    let job = api
        .create_job(&json!({
            "name": "slow-remote-sink",
            "nodes": [
                { "id": "in", "kind": "source", "connector": "generator",
                  "config": { "mode": "sequence", "count": 1_000_000_000u64, "batch_size": 64 } },
                { "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": 2,
                  "config": { "pause_ms_per_batch": 20 } }
            ],
            "edges": [{ "from": "in", "to": "out", "partitioning": "rebalance" }],
            "settings": { "channel_capacity": 8, "checkpoint": { "interval_ms": 500 } }
        }))
        .await;
    let j = api
        .wait_job(&job, LONG, |j| {
            j["vertices"][0]["backpressure"].as_f64().unwrap_or(0.0) > 0.5
                && j["vertices"][1]["subtasks"].as_array().unwrap().iter().all(|s| s["worker"].is_u64())
        })
        .await;
    // The source and one sink share a worker; the other sink is on the other worker.
    let source = j["vertices"][0]["subtasks"][0]["worker"].as_u64().unwrap();
    let sinks: Vec<u64> = j["vertices"][1]["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["worker"].as_u64().unwrap())
        .collect();
    assert!(sinks.contains(&source) && sinks.iter().any(|w| *w != source), "placement {source} {sinks:?}");
    assert!(ids.contains(&source));
    let before: Vec<u64> = workers.iter().map(|w| rss(w.pid())).collect();
    let checkpoints = completed_checkpoints(&api, &job).await;
    let start = std::time::Instant::now();
    crate::server::wait_for("two more checkpoints under backpressure", LONG, || async {
        completed_checkpoints(&api, &job).await >= checkpoints + 2
            && start.elapsed() >= Duration::from_secs(5)
    })
    .await;
    let after: Vec<u64> = workers.iter().map(|w| rss(w.pid())).collect();
    let j = api.get(&format!("/api/v1/jobs/{job}")).await.1;
    let sink_rate = j["vertices"][1]["records_in_per_second"].as_f64().unwrap();
    let source_out = j["vertices"][0]["records_out"].as_u64().unwrap();
    eprintln!(
        "backpressure across the wire: RSS before {before:?}, after {after:?} bytes; sink {sink_rate:.0} records/s; \
         source emitted {source_out}; source backpressure {}",
        j["vertices"][0]["backpressure"]
    );
    for (b, a) in before.iter().zip(&after) {
        assert!(a.saturating_sub(*b) < 64 << 20, "a worker's memory grew from {b} to {a} bytes");
    }
    // Two sinks of 64 records every 20 ms at most (with room for the sampling window).
    assert!(sink_rate > 0.0 && sink_rate < 2.0 * 64.0 * 50.0 * 1.5, "sink rate {sink_rate}");
    assert!(j["vertices"][0]["backpressure"].as_f64().unwrap() > 0.5, "{j}");

    // Metrics per worker: the source's worker runs two subtasks, one of them backpressured;
    // the other runs one. The API says the same.
    let other = *sinks.iter().find(|w| **w != source).unwrap();
    let series = |name: &str, worker: u64, w: &str| format!("{name}{{worker=\"{worker}\",name=\"{w}\"}}");
    let names: BTreeMap<u64, &str> = ids.iter().copied().zip(["a", "b"]).collect();
    let metrics = crate::api::tokens::scrape(&server).await;
    let figure = |name: &str, worker: u64| {
        let key = series(name, worker, names[&worker]);
        *metrics.get(&key).unwrap_or_else(|| panic!("no {key} in {metrics:?}"))
    };
    for w in [source, other] {
        assert_eq!(figure("weir_worker_up", w), 1.0);
        assert!(figure("weir_worker_slots", w) >= 1.0);
        assert!(figure("weir_worker_heartbeat_age_seconds", w) < 30.0);
    }
    assert_eq!((figure("weir_worker_subtasks", source), figure("weir_worker_subtasks", other)), (2.0, 1.0));
    assert_eq!(figure("weir_worker_backpressured_subtasks", source), 1.0);
    assert!(figure("weir_worker_records_in_per_second", other) > 0.0);
    let (_, listed) = server.client(crate::server::ADMIN).get("/api/v1/workers").await;
    let subtasks: BTreeMap<u64, u64> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["id"].as_u64().unwrap(), w["subtasks"].as_u64().unwrap()))
        .collect();
    assert_eq!((subtasks[&source], subtasks[&other]), (2, 1), "{listed}");

    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/cancel")).await;
    assert_eq!(status, 200);
}
