//! Hostile guests fail their own jobs only. One tenant runs a guest that loops, exhausts its
//! memory, overflows its stack, panics and floods its output, each in its own job, while
//! another tenant's word count runs on the same server (instances from the pool) and ends with
//! exactly the right counts, and the server keeps answering. A full instance pool and a job's
//! memory limit above the pool's slot size get errors that name the server's settings.

use crate::server;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use server::wordcount::{check_exactly_once, lines, push, wait_output};
use server::{TestServer, wordcount};

const LONG: Duration = Duration::from_secs(180);

/// generator → faulty (configured to misbehave) → blackhole.
fn faulty_job(name: &str, parallelism: u32, config: Value, settings: Value) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": 100, "batch_size": 10 } },
            { "id": "op", "kind": "operator", "module": "faulty", "parallelism": parallelism, "config": config },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "op" }, { "from": "op", "to": "out" } ],
        "settings": settings
    })
}

/// Small limits and one restart (a fresh instance that fails again), no periodic checkpoints.
fn hostile_settings(cpu_limit_ms: u64, extra: Value) -> Value {
    let mut s = json!({
        "cpu_limit_ms": cpu_limit_ms,
        "memory_limit_mb": 64,
        "restart": { "attempts": 1, "delay_ms": 0 },
        "checkpoint": { "interval_ms": null }
    });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    s
}

/// Asks `/healthz` again and again until stopped; counts the answers and fails on any error
/// or on an answer slower than 5 s.
struct HealthProbe {
    stop: Arc<AtomicBool>,
    answers: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<Duration>,
}

impl HealthProbe {
    fn start(url: &str) -> HealthProbe {
        let (stop, answers) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (s, a, url) = (stop.clone(), answers.clone(), format!("{url}/healthz"));
        let task = tokio::spawn(async move {
            let http = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
            let mut slowest = Duration::ZERO;
            while !s.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = http.get(&url).send().await.expect("/healthz answers within 5 s");
                assert_eq!(r.status(), 200, "/healthz");
                slowest = slowest.max(t.elapsed());
                a.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            slowest
        });
        HealthProbe { stop, answers, task }
    }

    /// Stops the probe; returns (answers, slowest answer).
    async fn finish(self) -> (u64, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        let slowest = self.task.await.expect("the probe saw every answer");
        (self.answers.load(Ordering::Relaxed), slowest)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_guests_fail_their_own_jobs_only() {
    // The default configuration: instances come from a pool of 1,000.
    let server = TestServer::start(|c| assert!(c.pooling && c.max_instances == 1000)).await;
    let (_, good) = server.tenant("good").await;
    let (_, evil) = server.tenant("evil").await;

    good.upload_guest("tokenizer").await;
    good.upload_guest("wordcount").await;
    let (status, v) = good.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    assert_eq!(status, 201, "{v}");
    push(&good, lines(0, 1000)).await;
    let wordcount = good.create_job(&wordcount::spec("good-wordcount", "tokenizer", "wordcount")).await;
    wait_output(&good, 1000).await;

    let probe = HealthProbe::start(&server.url);
    evil.upload_guest("faulty").await;
    // (name, faulty config, CPU limit, extra settings, what the error must say)
    let hostile: [(&str, Value, u64, Value, &[&str]); 5] = [
        (
            "loop",
            json!({ "loop_at": 13 }),
            200,
            json!({}),
            &["exceeded its CPU limit of 200 ms in one process call"],
        ),
        (
            "memory-bomb",
            json!({ "alloc_at": 23 }),
            5000,
            json!({}),
            &["trapped in process: it reached its memory limit of 64 MiB", "memory_limit_mb"],
        ),
        (
            "stack-overflow",
            json!({ "stack_at": 31 }),
            5000,
            json!({}),
            &["trapped in process", "overflowed its stack"],
        ),
        ("panic", json!({ "panic_at": 37 }), 5000, json!({}), &["trapped in process", "poison record 37"]),
        (
            "flood",
            json!({ "flood_at": 41, "flood_records": 100_000 }),
            5000,
            json!({ "max_output_bytes_per_call": 1 << 20 }),
            &[
                "returned more than 1048576 bytes of output from one process call",
                "max_output_bytes_per_call",
            ],
        ),
    ];
    let mut jobs = Vec::new();
    for (name, config, cpu, extra, _) in &hostile {
        jobs.push(
            evil.create_job(&faulty_job(name, 1, config.clone(), hostile_settings(*cpu, extra.clone())))
                .await,
        );
    }
    // The good tenant keeps feeding its job meanwhile.
    push(&good, lines(1000, 2000)).await;

    for ((name, _, _, _, says), id) in hostile.iter().zip(&jobs) {
        let job = evil.wait_job(id, LONG, |j| j["status"] == "failed").await;
        let error = job["error"].as_str().unwrap_or_default();
        eprintln!("{name}: {error}");
        assert!(error.contains("job failed after 1 restart(s)"), "{name}: {error}");
        assert!(error.contains("node `op` subtask 0: operator `op` (subtask 0)"), "{name}: {error}");
        for s in *says {
            assert!(error.contains(s), "{name}: the error should say `{s}`: {error}");
        }
        assert_eq!(job["restarts"], 1, "{name}: {job}");
    }

    // The good job was never disturbed: still running, no restart, every word counted once.
    let (status, job) = good.get(&format!("/api/v1/jobs/{wordcount}")).await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["status"], "running", "{job}");
    assert_eq!(job["restarts"], 0, "{job}");
    push(&good, lines(2000, 3000)).await;
    wait_output(&good, 3000).await;
    let (status, v) = good.post_empty(&format!("/api/v1/jobs/{wordcount}/stop")).await;
    assert_eq!(status, 202, "{v}");
    good.wait_status(&wordcount, "stopped", LONG).await;
    check_exactly_once(&good, 3000).await;

    let (answers, slowest) = probe.finish().await;
    assert!(answers > 0, "/healthz was asked");
    eprintln!("/healthz answered {answers} times, the slowest in {slowest:?}");
    // The tenants see only their own jobs.
    let (_, list) = good.get("/api/v1/jobs").await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instance_pool_and_its_memory_cap_are_enforced_with_clear_errors() {
    let server = TestServer::start(|c| {
        c.max_instances = 3;
        c.max_instance_memory_mb = 32;
    })
    .await;
    let (_, api) = server.tenant("acme").await;
    api.upload_guest("faulty").await;
    let once = json!({ "restart": { "attempts": 0 }, "checkpoint": { "interval_ms": null } });

    // Four instances do not fit in a pool of three.
    let id = api.create_job(&faulty_job("too-wide", 4, json!({}), once.clone())).await;
    let job = api.wait_status(&id, "failed", LONG).await;
    let error = job["error"].as_str().unwrap();
    assert!(error.contains("cannot instantiate operator `op`"), "{error}");
    assert!(error.contains("the instance pool is full"), "{error}");
    assert!(error.contains("at most 3 operator instances at once (max_instances)"), "{error}");

    // Three do, once the failed job's instances are gone; a job asking for more memory than
    // a pool slot holds runs with the slot's size and its error names both settings.
    let mut settings = once.clone();
    settings["memory_limit_mb"] = json!(64);
    let id = api.create_job(&faulty_job("bomb", 3, json!({ "alloc_at": 5 }), settings)).await;
    let job = api.wait_status(&id, "failed", LONG).await;
    let error = job["error"].as_str().unwrap();
    assert!(error.contains("trapped in process: it reached its memory limit of 32 MiB"), "{error}");
    assert!(error.contains("memory_limit_mb asks for 64 MiB"), "{error}");
    assert!(error.contains("max_instance_memory_mb caps an instance at 32 MiB"), "{error}");

    let id = api.create_job(&faulty_job("fits", 3, json!({}), once)).await;
    api.wait_status(&id, "finished", LONG).await;
}
