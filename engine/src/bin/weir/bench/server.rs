//! `weir bench server`: what hosting costs. Operator instantiation and idle memory per
//! instance, API latency listing a long checkpoint history, and a quiet tenant's throughput
//! beside a noisy one — all through a real server on a temporary data directory.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use weir::guest::{GuestHost, HostOptions, InstanceLimits, OperatorInstance, PoolingOptions};
use weir::server::{Server, ServerConfig};

/// What to measure.
#[derive(Debug, Clone)]
pub struct ServerBenchOptions {
    /// Scratch directory (removed and recreated).
    pub dir: PathBuf,
    /// Instances created in the instantiation and memory benchmark.
    pub instances: usize,
    /// Checkpoints in the history listed over the API.
    pub checkpoints: u64,
    /// Requests per latency figure.
    pub requests: usize,
    /// Seconds of each throughput measurement.
    pub seconds: f64,
    /// Lines per second of the quiet tenant's job.
    pub quiet_rate: u64,
}

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// Instantiation time and idle memory of `n` word-count instances on `host`:
/// (µs per instance kept alive, µs per instantiate-and-drop, bytes of RSS per idle instance).
pub async fn instances(host: &GuestHost, n: usize) -> anyhow::Result<(f64, f64, f64)> {
    let module =
        host.load("builtin:wordcount", weir::builtin::get("wordcount").context("wordcount builtin")?)?;
    let limits = InstanceLimits { memory_bytes: 64 << 20, ..InstanceLimits::default() };
    // Warm up (first instantiation maps code).
    drop(OperatorInstance::new(&module, "warm", 0, limits).await?);
    let before = rss_bytes();
    let start = Instant::now();
    let mut alive = Vec::with_capacity(n);
    for i in 0..n {
        alive.push(OperatorInstance::new(&module, "count", i as u32, limits).await?);
    }
    let per_instance = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let memory = rss_bytes().saturating_sub(before) as f64 / n as f64;
    drop(alive);
    let start = Instant::now();
    for i in 0..n {
        drop(OperatorInstance::new(&module, "count", i as u32, limits).await?);
    }
    let churn = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    Ok((per_instance, churn, memory))
}

async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    token: &str,
    body: Option<Value>,
) -> anyhow::Result<Value> {
    let mut r = client.request(method, url).bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let response = r.send().await?;
    let status = response.status();
    let value: Value = response.json().await.unwrap_or(Value::Null);
    ensure!(status.is_success(), "{url}: {status} {value}");
    Ok(value)
}

/// A running bench server with two tenants.
struct Bench {
    url: String,
    http: reqwest::Client,
    quiet: String,
    noisy: String,
    server: Arc<Server>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(dir: &std::path::Path) -> anyhow::Result<Bench> {
    let config = ServerConfig {
        listen: "127.0.0.1:0".into(),
        data_dir: dir.to_path_buf(),
        admin_token: Some("bench-admin".into()),
        ..ServerConfig::default()
    };
    let server = Server::open(config).await?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    let s = server.clone();
    let task = tokio::spawn(async move {
        let _ = weir::api::serve(s, move |a| {
            let _ = tx.send(a);
        })
        .await;
    });
    let url = format!("http://{}", rx.await?);
    let http = reqwest::Client::new();
    let mut tokens = Vec::new();
    for name in ["quiet", "noisy"] {
        let t = call(
            &http,
            reqwest::Method::POST,
            &format!("{url}/api/v1/tenants"),
            "bench-admin",
            Some(json!({ "name": name })),
        )
        .await?;
        tokens.push(t["token"].as_str().context("token")?.to_string());
    }
    let noisy = tokens.pop().context("token")?;
    let quiet = tokens.pop().context("token")?;
    Ok(Bench { url, http, quiet, noisy, server, task })
}

fn wordcount_job(name: &str, rate: Option<u64>, parallelism: u32) -> Value {
    let mut source = json!({ "mode": "words", "lines": 1_000_000_000u64, "words_per_line": 8, "vocabulary": 1000, "seed": 3 });
    if let Some(r) = rate {
        source["records_per_second"] = json!(r);
    }
    json!({
        "name": name,
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "generator", "config": source },
            { "id": "split", "kind": "operator", "module": "builtin:tokenizer", "parallelism": parallelism },
            { "id": "count", "kind": "operator", "module": "builtin:wordcount", "parallelism": parallelism },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "lines", "to": "split", "partitioning": "rebalance" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "rebalance" }
        ],
        "settings": { "checkpoint": { "interval_ms": 2000 } }
    })
}

impl Bench {
    async fn get(&self, path: &str, token: &str) -> anyhow::Result<Value> {
        call(&self.http, reqwest::Method::GET, &format!("{}{path}", self.url), token, None).await
    }

    async fn post(&self, path: &str, token: &str, body: Option<Value>) -> anyhow::Result<Value> {
        call(&self.http, reqwest::Method::POST, &format!("{}{path}", self.url), token, body).await
    }

    /// Lines the source of `job` emitted, from the live figures.
    async fn source_records(&self, job: &str, token: &str) -> anyhow::Result<u64> {
        let j = self.get(&format!("/api/v1/jobs/{job}"), token).await?;
        Ok(j["vertices"][0]["records_out"].as_u64().unwrap_or(0))
    }

    /// Lines per second of `job` over `seconds`, from the job's own counters.
    async fn throughput(&self, job: &str, token: &str, seconds: f64) -> anyhow::Result<f64> {
        // The live counters are sampled every second: measure between two samples.
        let a = self.source_records(job, token).await?;
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        let b = self.source_records(job, token).await?;
        Ok(b.saturating_sub(a) as f64 / t0.elapsed().as_secs_f64())
    }
}

/// Runs every part and prints the figures.
pub async fn run_and_print(options: &ServerBenchOptions) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(&options.dir);
    std::fs::create_dir_all(&options.dir)?;

    println!("Operator instantiation (word count, InstancePre; {} instances):", options.instances);
    for pooled in [false, true] {
        let pooling = pooled.then(|| PoolingOptions {
            max_instances: u32::try_from(options.instances + 1).unwrap_or(u32::MAX),
            max_memory_bytes: 64 << 20,
        });
        let host = GuestHost::with_options(HostOptions { cache_dir: None, pooling })?;
        let (alive, churn, memory) = instances(&host, options.instances).await?;
        println!(
            "  {:<21} {alive:7.1} µs per instance kept alive, {churn:7.1} µs instantiate+drop, {:6.0} KiB RSS per idle instance",
            if pooled { "pooling allocator:" } else { "on-demand allocator:" },
            memory / 1024.0
        );
    }

    let bench = start(&options.dir.join("server")).await?;
    api_latency(&bench, options).await?;
    fairness(&bench, options).await?;
    bench.server.jobs.abort_all();
    bench.task.abort();
    let _ = std::fs::remove_dir_all(&options.dir);
    Ok(())
}

async fn api_latency(bench: &Bench, options: &ServerBenchOptions) -> anyhow::Result<()> {
    // A job whose history is long: a real job, then history rows imported after it.
    let mut spec = wordcount_job("history", None, 1);
    spec["nodes"][0]["config"]["lines"] = json!(100);
    let job = bench.post("/api/v1/jobs", &bench.quiet, Some(spec)).await?;
    let id = job["id"].as_str().context("job id")?.to_string();
    let deadline = Instant::now() + Duration::from_secs(120);
    while bench.get(&format!("/api/v1/jobs/{id}"), &bench.quiet).await?["status"] != "finished" {
        ensure!(Instant::now() < deadline, "the history job did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let template = {
        let store = bench.server.store.clone();
        let job = id.clone();
        tokio::task::spawn_blocking(move || weir_store::CheckpointStorage::history(&store, &job))
            .await??
            .into_iter()
            .find(|m| m.status == weir_store::CheckpointStatus::Completed)
            .context("a completed checkpoint")?
    };
    let first = template.id + 1;
    let metas: Vec<_> = (first..first + options.checkpoints)
        .map(|n| weir_store::CheckpointMeta { id: n, is_final: false, retained: false, ..template.clone() })
        .collect();
    let store = bench.server.store.clone();
    tokio::task::spawn_blocking(move || store.import_history(&metas)).await??;

    println!(
        "API latency, {} checkpoints of {} subtasks each in the history ({} requests each):",
        options.checkpoints,
        template.subtasks.len(),
        options.requests
    );
    for (what, path) in [
        ("list all", format!("/api/v1/jobs/{id}/checkpoints?limit={}", options.checkpoints + 10)),
        ("list newest 100 + summary", format!("/api/v1/jobs/{id}/checkpoints")),
        ("one checkpoint", format!("/api/v1/jobs/{id}/checkpoints/{first}")),
        ("job detail", format!("/api/v1/jobs/{id}")),
    ] {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..options.requests {
            let t = Instant::now();
            let r = bench.http.get(format!("{}{path}", bench.url)).bearer_auth(&bench.quiet).send().await?;
            ensure!(r.status().is_success(), "{path}: {}", r.status());
            bytes = r.bytes().await?.len();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "  {what:<26} p50 {:7.2} ms  p99 {:7.2} ms  ({} KiB)",
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            bytes / 1024
        );
    }
    Ok(())
}

async fn fairness(bench: &Bench, options: &ServerBenchOptions) -> anyhow::Result<()> {
    let quiet = bench
        .post("/api/v1/jobs", &bench.quiet, Some(wordcount_job("quiet", Some(options.quiet_rate), 1)))
        .await?;
    let quiet = quiet["id"].as_str().context("job id")?.to_string();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let solo = bench.throughput(&quiet, &bench.quiet, options.seconds).await?;
    let mut noisy = Vec::new();
    for n in 0..2 {
        let j = bench
            .post("/api/v1/jobs", &bench.noisy, Some(wordcount_job(&format!("noisy-{n}"), None, 2)))
            .await?;
        noisy.push(j["id"].as_str().context("job id")?.to_string());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let beside = bench.throughput(&quiet, &bench.quiet, options.seconds).await?;
    let mut noisy_rate = 0.0;
    for j in &noisy {
        let a = bench.source_records(j, &bench.noisy).await?;
        noisy_rate += a as f64;
    }
    println!(
        "Fairness: the quiet tenant's job (word count paced at {} lines/s) alone and beside the noisy tenant's 2 unpaced word counts (parallelism 2):",
        options.quiet_rate
    );
    println!(
        "  quiet alone {solo:.0} lines/s, beside noisy {beside:.0} lines/s: ratio {:.3} (target >= 0.9); noisy jobs emitted {noisy_rate:.0} lines so far",
        beside / solo.max(1e-9)
    );
    for j in noisy.iter().chain([&quiet]) {
        let token = if *j == quiet { &bench.quiet } else { &bench.noisy };
        bench.post(&format!("/api/v1/jobs/{j}/cancel"), token, None).await?;
    }
    Ok(())
}
