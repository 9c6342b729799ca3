//! `weir bench backpressure`: checkpoints of a job under full backpressure, aligned versus
//! unaligned versus aligned with a short aligned timeout, and what unaligned mode costs a job
//! without backpressure.
//!
//! 1. **Under backpressure**: generator (parallelism 2, as fast as it can) → hash → the keyed
//!    `counter` operator (parallelism 2) → blackhole sink (parallelism 2) that pauses after
//!    every batch, so every channel between source and sink stays full. Per mode, the job runs
//!    into a fresh redb store; after a warm-up the bench triggers a checkpoint, waits until it
//!    completes or fails (the checkpoint timeout), waits `interval`, triggers the next, until
//!    `checkpoints` completed or the time cap is reached; then the job is cancelled. Reported
//!    from the store's checkpoint history: duration p50/p99/max of the completed checkpoints,
//!    how many timed out, persisted in-flight bytes, how many subtasks went unaligned; and,
//!    sampled from the job's live counters, the records in flight between source and sink and
//!    the sink's rate, whose quotient is the data buffered in seconds.
//! 2. **Without backpressure**: the same job without the pause and with periodic checkpoints,
//!    aligned and unaligned alternately `runs` times each: records per CPU-second of this
//!    process (median) and the median of the paired ratios unaligned / aligned.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage, Store};

use weir::guest::GuestHost;
use weir::modules::LocalModules;
use weir::plan::JobSpec;
use weir::runtime::{JobEvent, RunEnv, run_job_checkpointed};

/// The job id every run uses (each in its own store).
const JOB: &str = "bench";
/// Node order of [`job`]: source, operator, sink (indexes of the live metrics).
const SOURCE: usize = 0;
const SINK: usize = 2;

/// Sizes of the backpressure benchmark.
#[derive(Debug, Clone)]
pub struct BackpressureBenchOptions {
    /// Time cap per mode under backpressure.
    pub cap: Duration,
    /// Stop a mode once this many checkpoints completed.
    pub checkpoints: usize,
    /// Time after the start before the first checkpoint (the channels fill up).
    pub warmup: Duration,
    /// `settings.channel_capacity`, in batches.
    pub channel_capacity: usize,
    /// Records per source batch.
    pub batch_size: usize,
    /// The sink's pause after each batch.
    pub pause_ms: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Wait between the end of one checkpoint and the trigger of the next.
    pub interval: Duration,
    /// `settings.checkpoint.timeout_ms`.
    pub timeout_ms: u64,
    /// `aligned_timeout_ms` of the third mode.
    pub aligned_timeout_ms: u64,
    /// Records of each run without backpressure.
    pub records: u64,
    /// Runs of each mode without backpressure.
    pub runs: usize,
    /// Checkpoint interval of the runs without backpressure.
    pub throughput_interval_ms: u64,
    /// Where the stores go.
    pub dir: PathBuf,
}

/// A checkpoint mode of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `mode: aligned`, no aligned timeout.
    Aligned,
    /// `mode: unaligned`.
    Unaligned,
    /// `mode: aligned` with `aligned_timeout_ms`.
    AlignedTimeout(u64),
}

impl Mode {
    /// How the results name it.
    pub fn name(self) -> String {
        match self {
            Mode::Aligned => "aligned".into(),
            Mode::Unaligned => "unaligned".into(),
            Mode::AlignedTimeout(ms) => format!("aligned, {ms} ms timeout"),
        }
    }

    fn settings(self) -> serde_json::Value {
        match self {
            Mode::Aligned => serde_json::json!({ "mode": "aligned" }),
            Mode::Unaligned => serde_json::json!({ "mode": "unaligned" }),
            Mode::AlignedTimeout(ms) => serde_json::json!({ "mode": "aligned", "aligned_timeout_ms": ms }),
        }
    }
}

/// One mode under backpressure.
#[derive(Debug, Clone)]
pub struct ModeResult {
    /// The mode.
    pub mode: Mode,
    /// Durations of the completed checkpoints, ms, ascending.
    pub durations_ms: Vec<f64>,
    /// Checkpoints that expired (the checkpoint timeout).
    pub timed_out: usize,
    /// Checkpoints that failed otherwise.
    pub failed: usize,
    /// A checkpoint still in progress when the cap ended the run.
    pub unfinished: bool,
    /// Persisted in-flight bytes per completed checkpoint (sum over its subtasks), ascending.
    pub in_flight_bytes: Vec<u64>,
    /// Subtask acks of completed checkpoints that were unaligned, and all acks.
    pub unaligned_acks: (usize, usize),
    /// Median of the records in flight between source and sink (sampled every 500 ms).
    pub records_in_flight: f64,
    /// The sink's records per second over the run.
    pub sink_rate: f64,
    /// Seconds the run took.
    pub seconds: f64,
}

impl ModeResult {
    /// Data buffered between source and sink, in seconds of the sink's work.
    pub fn buffered_seconds(&self) -> f64 {
        self.records_in_flight / self.sink_rate.max(1e-9)
    }
}

/// The runs without backpressure.
#[derive(Debug, Clone)]
pub struct ThroughputResult {
    /// Records per CPU-second, aligned, per run.
    pub aligned: Vec<f64>,
    /// Records per CPU-second, unaligned, per run.
    pub unaligned: Vec<f64>,
    /// Median of the per-pair ratios unaligned / aligned.
    pub paired_ratio: f64,
    /// Completed periodic checkpoints per run (median), aligned and unaligned.
    pub checkpoints: (usize, usize),
}

fn job(
    o: &BackpressureBenchOptions,
    mode: Mode,
    pause_ms: u64,
    records: u64,
    periodic: Option<u64>,
) -> JobSpec {
    let mut checkpoint = mode.settings();
    checkpoint["interval_ms"] = periodic.into();
    checkpoint["timeout_ms"] = o.timeout_ms.into();
    checkpoint["tolerable_failures"] = 1_000_000.into();
    let spec = serde_json::json!({
        "name": "bench",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": records, "keys": o.keys, "batch_size": o.batch_size,
                          "out_of_orderness_ms": null } },
            { "id": "count", "kind": "operator", "module": "builtin:counter", "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": 2,
              "config": { "pause_ms_per_batch": pause_ms } }
        ],
        "edges": [
            { "from": "in", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "channel_capacity": o.channel_capacity, "memory_limit_mb": 1024,
                      "checkpoint": checkpoint }
    });
    serde_json::from_value(spec).expect("the benchmark's job spec is valid")
}

/// Sink batches queued ahead of one sink subtask when every channel is full: the operator
/// subtask's two input channels (each source batch is split in two by the hash edge, and
/// each half becomes one output batch), its output channel, and the batch each stage holds.
pub fn queued_sink_batches(channel_capacity: usize) -> usize {
    3 * channel_capacity + 2
}

/// Runs `f` on a fresh two-worker runtime on its own thread and drops the runtime after: a
/// job cancelled at the cap leaves nothing running behind.
fn on_own_runtime<T: Send>(f: impl Future<Output = T> + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            let out = rt.block_on(f);
            rt.shutdown_timeout(Duration::from_secs(30));
            out
        })
        .join()
        .expect("benchmark thread")
    })
}

fn fresh_store(dir: &Path) -> anyhow::Result<Store> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    Ok(Store::open(&dir.join("weir.redb"))?)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Records out of the sources and into the sinks so far.
fn counts(env: &RunEnv) -> Option<(u64, u64)> {
    let m = env.live_metrics()?;
    let sum = |node: usize, f: fn(&weir::runtime::SubtaskMetrics) -> u64| -> u64 {
        m.subtasks.get(node).map_or(0, |s| s.iter().map(|x| f(x)).sum())
    };
    use std::sync::atomic::Ordering::Relaxed;
    Some((sum(SOURCE, |x| x.records_out.load(Relaxed)), sum(SINK, |x| x.records_in.load(Relaxed))))
}

/// Triggers checkpoints one after the other until `o.checkpoints` completed or `deadline`.
async fn drive(env: &RunEnv, o: &BackpressureBenchOptions, deadline: Instant) {
    let mut events = env.subscribe();
    let trigger = env.trigger_handle();
    tokio::time::sleep(o.warmup).await;
    let mut completed = 0;
    while completed < o.checkpoints && Instant::now() < deadline {
        let Ok(id) = trigger.trigger().await else { return };
        loop {
            match events.recv().await {
                Ok(JobEvent::CheckpointCompleted { id: c, .. }) if c == id => {
                    completed += 1;
                    break;
                }
                Ok(JobEvent::CheckpointFailed { id: c, .. }) if c == id => break,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
        tokio::time::sleep(o.interval).await;
    }
}

/// Samples the records in flight every 500 ms until cancelled; returns nothing (the samples
/// land in `samples`).
async fn sample(
    env: &RunEnv,
    o: &BackpressureBenchOptions,
    samples: &std::sync::Mutex<Vec<(f64, u64, u64)>>,
) {
    let started = Instant::now();
    tokio::time::sleep(o.warmup).await;
    loop {
        if let Some((out, sunk)) = counts(env) {
            samples.lock().expect("samples").push((started.elapsed().as_secs_f64(), out, sunk));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// One mode under backpressure.
pub async fn under_backpressure(
    host: &Arc<GuestHost>,
    o: &BackpressureBenchOptions,
    mode: Mode,
) -> anyhow::Result<ModeResult> {
    let spec = job(o, mode, o.pause_ms, 1_000_000_000_000, None);
    let plan = weir::plan::plan(&spec, &LocalModules::new(host.clone(), "."))?;
    let store = fresh_store(&o.dir.join(format!("bp-{}", mode.name().replace([' ', ','], ""))))?;
    let env = RunEnv::new(JOB, store.clone());
    let samples = std::sync::Mutex::new(Vec::new());
    let started = Instant::now();
    let deadline = started + o.cap;
    let outcome = on_own_runtime(async {
        tokio::select! {
            r = run_job_checkpointed(&plan, &env) => Some(r),
            _ = drive(&env, o, deadline) => None,
            _ = sample(&env, o, &samples) => None,
            _ = tokio::time::sleep_until(deadline.into()) => None,
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    match outcome {
        Some(Ok(report)) => anyhow::bail!("the job ended by itself after {seconds:.1} s: {report:?}"),
        Some(Err(e)) => anyhow::bail!("the job failed: {e}"),
        None => {}
    }
    let history: Vec<CheckpointMeta> = store.history(JOB)?.into_iter().filter(|c| !c.is_final).collect();
    let completed: Vec<&CheckpointMeta> =
        history.iter().filter(|c| c.status == CheckpointStatus::Completed).collect();
    let failures = history.iter().filter(|c| c.status == CheckpointStatus::Failed);
    let timed_out =
        failures.clone().filter(|c| c.failure.as_deref().is_some_and(|f| f.contains("expired"))).count();
    let failed = failures.count() - timed_out;
    let unfinished =
        history.iter().any(|c| !matches!(c.status, CheckpointStatus::Completed | CheckpointStatus::Failed));
    let mut durations_ms: Vec<f64> = completed.iter().filter_map(|c| c.duration_ms).collect();
    durations_ms.sort_by(f64::total_cmp);
    let mut in_flight_bytes: Vec<u64> =
        completed.iter().map(|c| c.subtasks.iter().map(|s| s.persisted_in_flight_bytes).sum()).collect();
    in_flight_bytes.sort_unstable();
    let acks = completed.iter().flat_map(|c| &c.subtasks);
    let unaligned_acks = (acks.clone().filter(|s| s.unaligned).count(), acks.count());
    let samples = samples.into_inner().expect("samples");
    let records_in_flight =
        median(samples.iter().map(|(_, out, sunk)| out.saturating_sub(*sunk) as f64).collect());
    let sink_rate = match (samples.first(), samples.last()) {
        (Some(a), Some(b)) if b.0 > a.0 => (b.2 - a.2) as f64 / (b.0 - a.0),
        _ => f64::NAN,
    };
    Ok(ModeResult {
        mode,
        durations_ms,
        timed_out,
        failed,
        unfinished,
        in_flight_bytes,
        unaligned_acks,
        records_in_flight,
        sink_rate,
        seconds,
    })
}

/// Records per CPU-second without backpressure, aligned and unaligned alternately.
pub fn without_backpressure(
    host: &Arc<GuestHost>,
    o: &BackpressureBenchOptions,
) -> anyhow::Result<ThroughputResult> {
    let (mut aligned, mut unaligned, mut counts) = (Vec::new(), Vec::new(), (Vec::new(), Vec::new()));
    for run in 0..o.runs {
        let mut pair = [0.0; 2];
        for (i, mode) in [Mode::Aligned, Mode::Unaligned].into_iter().enumerate() {
            let spec = job(o, mode, 0, o.records, Some(o.throughput_interval_ms));
            let plan = weir::plan::plan(&spec, &LocalModules::new(host.clone(), "."))?;
            let store = fresh_store(&o.dir.join(format!("tp-{run}-{i}")))?;
            let env = RunEnv::new(JOB, store.clone());
            let (cpu0, started) = (super::kafka::cpu_seconds("self"), Instant::now());
            let report = on_own_runtime(run_job_checkpointed(&plan, &env))?;
            let cpu = super::kafka::cpu_seconds("self") - cpu0;
            let sunk = report.nodes.iter().find(|n| n.id == "out").map_or(0, |n| n.records_in);
            anyhow::ensure!(
                sunk == o.records,
                "the {} run sank {sunk} records instead of {}",
                mode.name(),
                o.records
            );
            let periodic = store
                .history(JOB)?
                .iter()
                .filter(|c| c.status == CheckpointStatus::Completed && !c.is_final)
                .count();
            pair[i] = o.records as f64 / cpu.max(0.01);
            eprintln!(
                "  run {run} {}: {:.0} k records/CPU-s, {:.0} k records/s, {periodic} checkpoints",
                mode.name(),
                pair[i] / 1e3,
                o.records as f64 / started.elapsed().as_secs_f64() / 1e3
            );
            if i == 0 {
                counts.0.push(periodic as f64);
            } else {
                counts.1.push(periodic as f64);
            }
        }
        aligned.push(pair[0]);
        unaligned.push(pair[1]);
    }
    let paired_ratio = median(unaligned.iter().zip(&aligned).map(|(u, a)| u / a).collect());
    Ok(ThroughputResult {
        aligned,
        unaligned,
        paired_ratio,
        checkpoints: (median(counts.0) as usize, median(counts.1) as usize),
    })
}

/// Runs every part and prints the results.
pub async fn run_and_print(host: &Arc<GuestHost>, o: &BackpressureBenchOptions) -> anyhow::Result<()> {
    let queued = queued_sink_batches(o.channel_capacity);
    println!(
        "job: generator (parallelism 2, {} records per batch, {} keys) → hash → builtin:counter (2) → blackhole (2, {} ms pause per batch); channel capacity {}",
        o.batch_size, o.keys, o.pause_ms, o.channel_capacity
    );
    println!(
        "expected buffer when every channel is full: {queued} sink batches per sink subtask × {} ms = {:.1} s",
        o.pause_ms,
        queued as f64 * o.pause_ms as f64 / 1e3
    );
    let modes = [Mode::Aligned, Mode::Unaligned, Mode::AlignedTimeout(o.aligned_timeout_ms)];
    let mut results = Vec::new();
    for mode in modes {
        eprintln!("  under backpressure, {} (at most {:.0} s) …", mode.name(), o.cap.as_secs_f64());
        let r = under_backpressure(host, o, mode).await?;
        eprintln!(
            "    {} completed in {:.0} s: {:?} ms; {} timed out",
            r.durations_ms.len(),
            r.seconds,
            r.durations_ms.iter().map(|d| d.round() as u64).collect::<Vec<_>>(),
            r.timed_out
        );
        results.push(r);
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED).set_header([
        "mode",
        "completed",
        "p50 ms",
        "p99 ms",
        "max ms",
        "timed out",
        "other failures",
        "in-flight bytes p50 / max",
        "unaligned acks",
        "buffered s (measured)",
        "run s",
    ]);
    for r in &results {
        let d = &r.durations_ms;
        let bytes: Vec<f64> = r.in_flight_bytes.iter().map(|b| *b as f64).collect();
        table.add_row([
            r.mode.name(),
            d.len().to_string(),
            format!("{:.0}", percentile(d, 50.0)),
            format!("{:.0}", percentile(d, 99.0)),
            format!("{:.0}", d.last().copied().unwrap_or(f64::NAN)),
            format!("{}{}", r.timed_out, if r.unfinished { " (+1 at the cap)" } else { "" }),
            r.failed.to_string(),
            format!("{:.0} / {:.0}", percentile(&bytes, 50.0), bytes.last().copied().unwrap_or(f64::NAN)),
            format!("{} / {}", r.unaligned_acks.0, r.unaligned_acks.1),
            format!(
                "{:.1} ({:.0} records at {:.0}/s)",
                r.buffered_seconds(),
                r.records_in_flight,
                r.sink_rate
            ),
            format!("{:.0}", r.seconds),
        ]);
    }
    println!(
        "checkpoints under full backpressure (checkpoint timeout {} ms, {} ms between checkpoints, first after {:.0} s):",
        o.timeout_ms,
        o.interval.as_millis(),
        o.warmup.as_secs_f64()
    );
    println!("{table}");
    let t = without_backpressure(host, o)?;
    println!(
        "without backpressure ({} records, checkpoints every {} ms, {} runs each, records per CPU-second of this process):",
        o.records, o.throughput_interval_ms, o.runs
    );
    println!(
        "  aligned {:.0} k (median; {} checkpoints/run), unaligned {:.0} k ({} checkpoints/run); unaligned / aligned: medians {:.3}, median of paired runs {:.3} (goal ≥ 0.95)",
        median(t.aligned.clone()) / 1e3,
        t.checkpoints.0,
        median(t.unaligned.clone()) / 1e3,
        t.checkpoints.1,
        median(t.unaligned.clone()) / median(t.aligned.clone()),
        t.paired_ratio
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 10.0);
        assert_eq!(percentile(&v, 99.0), 20.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn every_mode_makes_a_valid_job() {
        let o = BackpressureBenchOptions {
            cap: Duration::from_secs(1),
            checkpoints: 1,
            warmup: Duration::ZERO,
            channel_capacity: 4,
            batch_size: 10,
            pause_ms: 1,
            keys: 10,
            interval: Duration::ZERO,
            timeout_ms: 1000,
            aligned_timeout_ms: 100,
            records: 100,
            runs: 1,
            throughput_interval_ms: 100,
            dir: PathBuf::new(),
        };
        for mode in [Mode::Aligned, Mode::Unaligned, Mode::AlignedTimeout(100)] {
            let spec = job(&o, mode, 1, 100, None);
            let c = &spec.settings.checkpoint;
            assert_eq!(c.interval_ms, None);
            match mode {
                Mode::Aligned => assert_eq!(c.effective_aligned_timeout(), None),
                Mode::Unaligned => assert_eq!(c.effective_aligned_timeout(), Some(Duration::ZERO)),
                Mode::AlignedTimeout(ms) => {
                    assert_eq!(c.effective_aligned_timeout(), Some(Duration::from_millis(ms)))
                }
            }
            assert_eq!(spec.settings.channel_capacity, 4);
        }
    }
}
