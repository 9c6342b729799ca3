//! `weir bench kafka`: Nexmark q1 from Kafka to Kafka with the `exactly_once` and
//! `at_least_once` sinks, beside the built-in stream log, through a real Kafka-protocol broker.
//!
//! The bench starts its own Tansu broker (`WEIR_TANSU`, else the cache path the tests use;
//! in-memory storage, a free loopback port, killed at the end), fills a topic and a stream with
//! the same Nexmark bids, then runs the three variants in turn, `runs` times each, every one a
//! bounded checkpointed job (checkpoints every second). A run's time is from the job's start
//! until its whole output is readable at the sink (for `exactly_once`, until the last
//! checkpoint's output is delivered). CPU time is read from `/proc` for this process and for
//! the broker apart.

use std::io::Read as _;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use weir_store::{CheckpointStatus, CheckpointStorage, LogRecord, Store};

use weir::connectors::kafka::client::{Client, ClientConfig, ProduceRecord, encode_batch};
use weir::guest::GuestHost;
use weir::modules::LocalModules;
use weir::plan::JobSpec;
use weir::runtime::{RunEnv, run_job_checkpointed};

/// The Tansu release the bench and the tests expect.
const TANSU_VERSION: &str = "0.6.0";
/// Partitions of the input and output topics and streams.
const PARTITIONS: i32 = 4;
/// Records per produce request while filling the input.
const FILL_CHUNK: usize = 2000;

/// Sizes of the Kafka benchmark.
#[derive(Debug, Clone)]
pub struct KafkaBenchOptions {
    /// Bids in the input.
    pub records: usize,
    /// Runs of each variant (the median is reported).
    pub runs: usize,
    /// Scratch directory (the store, the broker's log).
    pub dir: PathBuf,
}

/// What a variant reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Kafka → q1 → Kafka, `delivery: exactly_once`.
    ExactlyOnce,
    /// Kafka → q1 → Kafka, `delivery: at_least_once`.
    AtLeastOnce,
    /// Stream log → q1 → stream log (exactly once through the store).
    Stream,
}

impl Variant {
    /// The name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Variant::ExactlyOnce => "kafka exactly_once",
            Variant::AtLeastOnce => "kafka at_least_once",
            Variant::Stream => "stream log",
        }
    }
}

/// One variant's figures: medians over its runs.
#[derive(Debug, Clone)]
pub struct VariantResult {
    /// Which.
    pub variant: Variant,
    /// Records per second, start to output readable (median).
    pub rate: f64,
    /// Records per CPU-second of this process (median).
    pub per_cpu: f64,
    /// Records per CPU-second of this process and the broker together (median).
    pub per_cpu_with_broker: f64,
    /// Median and max checkpoint duration (ms) over every completed checkpoint of every run.
    pub checkpoint_median_ms: f64,
    /// See `checkpoint_median_ms`.
    pub checkpoint_max_ms: f64,
    /// Completed checkpoints per run (median).
    pub checkpoints: usize,
    /// Records per second of each run, in order.
    pub runs: Vec<f64>,
}

/// A Tansu broker owned by the bench: killed and reaped when dropped.
struct Broker {
    child: Child,
    addr: String,
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tansu_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("WEIR_TANSU") {
        let path = PathBuf::from(path);
        anyhow::ensure!(path.is_file(), "WEIR_TANSU names {}, which is not a file", path.display());
        return Ok(path);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
    let path = home.join(format!(".cache/weir/tansu/{TANSU_VERSION}-libsql/bin/tansu"));
    anyhow::ensure!(
        path.is_file(),
        "`weir bench kafka` needs the Tansu {TANSU_VERSION} broker and found none at {}: run \
         `bash .ci/run tansu`, or `cargo install --locked tansu --version {TANSU_VERSION} --features \
         dynostore,libsql --root ~/.cache/weir/tansu/{TANSU_VERSION}-libsql`, or set WEIR_TANSU to \
         such a binary",
        path.display()
    );
    Ok(path)
}

/// Starts Tansu with in-memory storage on a free loopback port and waits until it answers.
fn start_broker(dir: &Path) -> anyhow::Result<Broker> {
    let binary = tansu_binary()?;
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
    let url = format!("tcp://127.0.0.1:{port}");
    let log_path = dir.join("tansu.log");
    let log = std::fs::File::create(&log_path)?;
    let child = Command::new(&binary)
        .arg("broker")
        .args(["--listener-url", &url, "--advertised-listener-url", &url])
        .args(["--storage-engine", "memory://tansu/"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("could not start {}", binary.display()))?;
    let mut broker = Broker { child, addr: format!("127.0.0.1:{port}") };
    let deadline = Instant::now() + Duration::from_secs(30);
    let log_text = || {
        let mut s = String::new();
        let _ = std::fs::File::open(&log_path).and_then(|mut f| f.read_to_string(&mut s));
        s
    };
    // "ready in" is printed once the listener is bound; before that another process could
    // answer on the port.
    while !log_text().contains("ready in") {
        if let Some(status) = broker.child.try_wait()? {
            anyhow::bail!("Tansu exited ({status}) while starting; its log:\n{}", log_text());
        }
        anyhow::ensure!(Instant::now() < deadline, "Tansu did not start in 30 s; its log:\n{}", log_text());
        std::thread::sleep(Duration::from_millis(20));
    }
    loop {
        match Client::connect(ClientConfig::new(vec![broker.addr.clone()])) {
            Ok(_) => return Ok(broker),
            Err(e) if Instant::now() > deadline => {
                anyhow::bail!("Tansu did not answer in 30 s ({e}); its log:\n{}", log_text())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// User plus system CPU seconds of process `pid` (`self` for this one), from `/proc`.
pub(super) fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // Fields after the parenthesised command name: state is field 3; utime 14, stime 15.
    let rest: Vec<&str> =
        stat.rsplit_once(')').map(|(_, r)| r.split_whitespace().collect()).unwrap_or_default();
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // USER_HZ is 100 on the Linux targets Weir builds for.
    (field(14) + field(15)) as f64 / 100.0
}

/// Fills `topic` (created with [`PARTITIONS`]) and the stream of the same name with `records`
/// Nexmark bids, round robin over the partitions in chunks.
fn fill(client: &mut Client, store: &Store, topic: &str, records: usize) -> anyhow::Result<()> {
    client.create_topic(topic, PARTITIONS)?;
    store.create_stream(topic, PARTITIONS as u32)?;
    let batches = super::nexmark::bid_batches(records, FILL_CHUNK, None);
    for (i, batch) in batches.iter().enumerate() {
        let partition = (i % PARTITIONS as usize) as i32;
        let kafka: Vec<ProduceRecord> = batch
            .iter()
            .map(|r| ProduceRecord {
                key: None,
                value: Some(r.value.to_vec()),
                timestamp: r.timestamp,
                headers: vec![],
            })
            .collect();
        let encoded = encode_batch(&kafka, None, false, kafka_protocol::records::Compression::None)?;
        client.produce(topic, partition, encoded, None)?;
        let log: Vec<LogRecord> = batch
            .iter()
            .map(|r| LogRecord { key: vec![], value: r.value.to_vec(), timestamp: r.timestamp })
            .collect();
        store.append(topic, partition as u32, &log)?;
    }
    Ok(())
}

fn job(variant: Variant, broker: &str, input: &str, output: &str) -> anyhow::Result<JobSpec> {
    let brokers = serde_json::json!({ "bootstrap_servers": [broker] });
    let (source, sink) = match variant {
        Variant::Stream => (
            serde_json::json!({ "id": "in", "kind": "source", "connector": "stream",
                                "config": { "stream": input, "batch_size": 1024 } }),
            serde_json::json!({ "id": "out", "kind": "sink", "connector": "stream",
                                "config": { "stream": output, "partitions": PARTITIONS } }),
        ),
        Variant::ExactlyOnce | Variant::AtLeastOnce => (
            serde_json::json!({ "id": "in", "kind": "source", "connector": "kafka",
                                "config": { "brokers": brokers, "topics": [input], "bounded": true,
                                            "value_format": "msgpack", "batch_size": 1024 } }),
            serde_json::json!({ "id": "out", "kind": "sink", "connector": "kafka",
                                "config": { "brokers": brokers, "topic": output, "value_format": "msgpack",
                                            "delivery": if variant == Variant::ExactlyOnce {
                                                "exactly_once" } else { "at_least_once" } } }),
        ),
    };
    let spec = serde_json::json!({
        "name": "bench-kafka",
        "nodes": [
            source,
            { "id": "q1", "kind": "operator", "module": "builtin:nexmark-q1" },
            sink
        ],
        "edges": [
            { "from": "in", "to": "q1", "partitioning": "forward" },
            { "from": "q1", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": 1000, "timeout_ms": 600000 } }
    });
    Ok(serde_json::from_value(spec)?)
}

/// Records in `output` so far.
fn output_len(variant: Variant, client: &mut Client, store: &Store, output: &str) -> anyhow::Result<u64> {
    Ok(match variant {
        Variant::Stream => {
            (0..PARTITIONS as u32).map(|p| store.end_offset(output, p)).sum::<Result<u64, _>>()?
        }
        _ => client.end_offsets(output, &(0..PARTITIONS).collect::<Vec<_>>())?.values().sum::<i64>() as u64,
    })
}

/// One run's figures.
struct Run {
    seconds: f64,
    cpu: f64,
    broker_cpu: f64,
    checkpoint_ms: Vec<f64>,
}

async fn run_once(
    host: &Arc<GuestHost>,
    variant: Variant,
    broker: &Broker,
    store: &Store,
    records: usize,
    tag: &str,
) -> anyhow::Result<Run> {
    let output = format!("q1-{tag}");
    let mut client = Client::connect(ClientConfig::new(vec![broker.addr.clone()]))?;
    if variant != Variant::Stream {
        client.create_topic(&output, PARTITIONS)?;
    }
    let plan = weir::plan::plan(
        &job(variant, &broker.addr, "bids", &output)?,
        &LocalModules::new(host.clone(), "."),
    )?;
    let env = RunEnv::new(tag.to_string(), store.clone());
    let broker_pid = broker.child.id().to_string();
    let (cpu0, broker0, start) = (cpu_seconds("self"), cpu_seconds(&broker_pid), Instant::now());
    run_job_checkpointed(&plan, &env).await?;
    // The job may end before the sink's thread has delivered the last checkpoint's output.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let n = output_len(variant, &mut client, store, &output)?;
        if n >= records as u64 {
            anyhow::ensure!(
                n == records as u64,
                "{}: {n} records written for {records} read",
                variant.name()
            );
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{}: only {n} of {records} records reached the output within 120 s of the job's end",
            variant.name()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let seconds = start.elapsed().as_secs_f64();
    let (cpu, broker_cpu) = (cpu_seconds("self") - cpu0, cpu_seconds(&broker_pid) - broker0);
    let checkpoint_ms = store
        .history(tag)?
        .into_iter()
        .filter(|c| c.status == CheckpointStatus::Completed)
        .filter_map(|c| c.duration_ms)
        .collect();
    Ok(Run { seconds, cpu, broker_cpu, checkpoint_ms })
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the benchmark: the three variants in turn, `runs` rounds.
pub async fn run(host: &Arc<GuestHost>, o: &KafkaBenchOptions) -> anyhow::Result<Vec<VariantResult>> {
    let _ = std::fs::remove_dir_all(&o.dir);
    std::fs::create_dir_all(&o.dir)?;
    let broker = start_broker(&o.dir)?;
    let store = Store::open(&o.dir.join("weir.redb"))?;
    let mut client = Client::connect(ClientConfig::new(vec![broker.addr.clone()]))?;
    let filled = Instant::now();
    fill(&mut client, &store, "bids", o.records)?;
    eprintln!(
        "  broker {} (Tansu, memory storage); {} bids in `bids` ({PARTITIONS} partitions) and the stream, {:.1} s",
        broker.addr,
        o.records,
        filled.elapsed().as_secs_f64()
    );
    let variants = [Variant::ExactlyOnce, Variant::AtLeastOnce, Variant::Stream];
    let mut runs: Vec<Vec<Run>> = variants.iter().map(|_| Vec::new()).collect();
    for round in 0..o.runs {
        // Round robin, so that drift of the machine hits every variant alike.
        for (i, variant) in variants.iter().enumerate() {
            let tag = format!("{}-{round}", ["eo", "alo", "stream"][i]);
            let r = run_once(host, *variant, &broker, &store, o.records, &tag).await?;
            eprintln!(
                "  run {round} {:<20} {:>8.0} records/s, {:.2} s CPU here + {:.2} s broker, {} checkpoints",
                variant.name(),
                o.records as f64 / r.seconds,
                r.cpu,
                r.broker_cpu,
                r.checkpoint_ms.len()
            );
            runs[i].push(r);
        }
    }
    let n = o.records as f64;
    Ok(variants
        .iter()
        .zip(runs)
        .map(|(variant, runs)| {
            let all_checkpoints: Vec<f64> = runs.iter().flat_map(|r| r.checkpoint_ms.clone()).collect();
            VariantResult {
                variant: *variant,
                rate: median(runs.iter().map(|r| n / r.seconds).collect()),
                per_cpu: median(runs.iter().map(|r| n / r.cpu.max(0.01)).collect()),
                per_cpu_with_broker: median(
                    runs.iter().map(|r| n / (r.cpu + r.broker_cpu).max(0.01)).collect(),
                ),
                checkpoint_median_ms: median(all_checkpoints.clone()),
                checkpoint_max_ms: all_checkpoints.iter().copied().fold(0.0, f64::max),
                checkpoints: median(runs.iter().map(|r| r.checkpoint_ms.len() as f64).collect()) as usize,
                runs: runs.iter().map(|r| n / r.seconds).collect(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_of_this_process_grows_with_busy_work() {
        // A fresh test process may not have used a tick yet: only growth is asserted.
        let before = cpu_seconds("self");
        // Busy until the clock-tick counter moves (10 ms of CPU), at most 10 s of wall time.
        let start = Instant::now();
        let mut x = 0u64;
        while cpu_seconds("self") <= before {
            assert!(start.elapsed() < Duration::from_secs(10), "10 s busy and CPU time stayed at {before} s");
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        assert_eq!(cpu_seconds("no-such-process"), 0.0);
    }
}
