//! `weir bench checkpoints`: what checkpoints cost.
//!
//! 1. **Throughput**: a stateful job (generator → hash → the keyed `counter` operator →
//!    blackhole) with 1 s checkpoints versus without, records per second.
//! 2. **Duration and size vs state size**: the same job with `n` keys of ~1 KiB values and one
//!    (final) checkpoint holding all of them.
//! 3. **Incremental size**: an operator instance holding `keys` entries of ~1 KiB (1 GiB at
//!    the default) is checkpointed into a redb store; then 1 % of its keys change and it is
//!    checkpointed again: bytes written versus bytes changed.
//! 4. **Restore speed**: that state read back from redb and restored into a fresh instance.

use std::collections::BTreeMap;
use std::future::Future;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage, Manifest, Store, SubtaskWrite};

use super::kafka::cpu_seconds;
use weir::clock::unix_ms;
use weir::guest::bindings::Context;
use weir::guest::{GuestHost, InstanceLimits, OperatorInstance};
use weir::modules::LocalModules;
use weir::plan::{JobSpec, ModuleLoader};
use weir::record::{Batch, to_msgpack};
use weir::runtime::{JobEvent, RunEnv, run_job, run_job_checkpointed};
use weir::runtime::{RESTORE_CHUNK_BYTES, restore_chains, split_into_scopes};

/// Sizes of the checkpoint benchmark.
#[derive(Debug, Clone)]
pub struct CheckpointBenchOptions {
    /// Records of the throughput job.
    pub records: u64,
    /// Distinct keys of the throughput job.
    pub keys: u64,
    /// Runs of each throughput variant (the median is reported).
    pub runs: usize,
    /// Key counts for duration and size vs state size.
    pub state_keys: Vec<u64>,
    /// Keys of the incremental benchmark (each ~`value_bytes`).
    pub incremental_keys: u64,
    /// Bytes of each value.
    pub value_bytes: usize,
    /// Where the stores go.
    pub dir: std::path::PathBuf,
}

/// Throughput with and without checkpoints.
#[derive(Debug, Clone)]
pub struct ThroughputResult {
    /// Records per second without checkpoints (median).
    pub plain: f64,
    /// Records per second with 1 s checkpoints (median).
    pub checkpointed: f64,
    /// Best run without checkpoints (the least disturbed by other load).
    pub plain_best: f64,
    /// Best run with 1 s checkpoints.
    pub checkpointed_best: f64,
    /// Median of the ratios of runs made back to back (a paired comparison: drift of the
    /// machine between pairs cancels out).
    pub paired_ratio: f64,
    /// Records per CPU-second of the whole process (every thread: the job's and the
    /// blocking pool's, where snapshots are written), medians: without and with checkpoints.
    pub plain_per_cpu: f64,
    /// See `plain_per_cpu`.
    pub checkpointed_per_cpu: f64,
    /// Median of the per-pair ratios of records per CPU-second.
    pub paired_cpu_ratio: f64,
    /// Checkpoints completed per checkpointed run (median), including the final one.
    pub checkpoints: usize,
    /// Mean over the periodic checkpoints of the last run: bytes written, sync ms (largest
    /// subtask), async ms (largest subtask), end-to-end ms.
    pub mean_size: f64,
    /// See `mean_size`.
    pub mean_sync_ms: f64,
    /// See `mean_size`.
    pub mean_async_ms: f64,
    /// See `mean_size`.
    pub mean_duration_ms: f64,
}

/// One state size.
#[derive(Debug, Clone)]
pub struct StateSizeResult {
    /// Keys.
    pub keys: u64,
    /// Bytes written by the checkpoint.
    pub size: u64,
    /// End-to-end duration, ms.
    pub duration_ms: f64,
    /// Largest sync part of a subtask, ms.
    pub sync_ms: f64,
    /// Largest async part of a subtask, ms.
    pub async_ms: f64,
}

/// The incremental and restore figures.
#[derive(Debug, Clone)]
pub struct IncrementalResult {
    /// Bytes of live state (keys + values).
    pub state_bytes: u64,
    /// Bytes written by the first (full) checkpoint.
    pub base_written: u64,
    /// Seconds to snapshot and write the base.
    pub base_seconds: f64,
    /// Keys changed (1 %).
    pub changed_keys: u64,
    /// Bytes of the changed entries (keys + values) as the guest handed them over.
    pub changed_bytes: u64,
    /// Bytes written by the incremental checkpoint (chunk data).
    pub incremental_written: u64,
    /// Bytes written to storage by the process during the incremental checkpoint (redb pages
    /// and metadata included; from `/proc/self/io`).
    pub disk_written: i64,
    /// Seconds to snapshot and write the increment.
    pub incremental_seconds: f64,
    /// Seconds to read the state back from redb (every live entry visited, not copied).
    pub read_seconds: f64,
    /// Seconds to restore it into a fresh instance (reading it again meanwhile).
    pub restore_seconds: f64,
    /// CPU seconds of the process (every thread) during the read and restore.
    pub restore_cpu_seconds: f64,
}

fn counter(host: &Arc<GuestHost>) -> anyhow::Result<Arc<weir::guest::OperatorModule>> {
    LocalModules::new(host.clone(), ".").load("builtin:counter").map_err(anyhow::Error::msg)
}

fn job(records: u64, keys: u64, pad: usize, interval_ms: Option<u64>) -> anyhow::Result<JobSpec> {
    let spec = serde_json::json!({
        "name": "bench",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": records, "keys": keys, "batch_size": 1024,
                          "out_of_orderness_ms": null } },
            { "id": "count", "kind": "operator", "module": "builtin:counter", "config": { "pad": pad } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "in", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "memory_limit_mb": 4096, "cpu_limit_ms": 600000, "wall_limit_ms": 600000,
                      "checkpoint": { "interval_ms": interval_ms, "timeout_ms": 600000 } }
    });
    Ok(serde_json::from_value(spec)?)
}

async fn run_checkpointed_job(
    host: &Arc<GuestHost>,
    spec: &JobSpec,
    dir: &Path,
) -> anyhow::Result<(weir::runtime::JobReport, Vec<JobEvent>, Store)> {
    let plan = weir::plan::plan(spec, &LocalModules::new(host.clone(), "."))?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let store = Store::open(&dir.join("weir.redb"))?;
    let env = RunEnv::new("bench", store.clone());
    let mut rx = env.subscribe();
    let report = run_job_checkpointed(&plan, &env).await?;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    Ok((report, events, store))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs `f` on a fresh current-thread runtime on its own thread: every task of the job
/// shares one core, so runs are comparable (a two-worker runtime on a two-core machine makes
/// throughput swing by ±25 % from run to run with thread placement alone). The snapshot
/// writes still go to tokio's blocking pool, as they do in production.
fn on_one_core<T: Send>(f: impl Future<Output = T> + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f)
        })
        .join()
        .expect("benchmark thread")
    })
}

/// Throughput with 1 s checkpoints versus none.
pub async fn throughput(
    host: &Arc<GuestHost>,
    o: &CheckpointBenchOptions,
) -> anyhow::Result<ThroughputResult> {
    let spec = job(o.records, o.keys, 0, Some(1000))?;
    let plan = weir::plan::plan(&spec, &LocalModules::new(host.clone(), "."))?;
    let (mut plain, mut checkpointed, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    let (mut plain_cpu, mut checkpointed_cpu) = (Vec::new(), Vec::new());
    let per_cpu = |cpu0: f64| o.records as f64 / (cpu_seconds("self") - cpu0).max(1e-3);
    let mut periodic = Vec::new();
    for run in 0..o.runs {
        // Alternate so that drift (cache, heat) hits both alike.
        let cpu0 = cpu_seconds("self");
        let report = on_one_core(run_job(&plan))?;
        plain_cpu.push(per_cpu(cpu0));
        plain.push(report.records_per_second());
        let dir = o.dir.join(format!("tp-{run}"));
        let cpu0 = cpu_seconds("self");
        let (report, events, store) = on_one_core(run_checkpointed_job(host, &spec, &dir))?;
        checkpointed_cpu.push(per_cpu(cpu0));
        checkpointed.push(report.records_per_second());
        eprintln!(
            "  run {run}: no checkpoints {:.2} M/s ({:.2} M/CPU-s), 1 s checkpoints {:.2} M/s ({:.2} M/CPU-s)",
            plain.last().copied().unwrap_or_default() / 1e6,
            plain_cpu.last().copied().unwrap_or_default() / 1e6,
            report.records_per_second() / 1e6,
            checkpointed_cpu.last().copied().unwrap_or_default() / 1e6,
        );
        periodic = store
            .history("bench")?
            .into_iter()
            .filter(|c| c.status == CheckpointStatus::Completed && !c.is_final)
            .collect::<Vec<_>>();
        counts
            .push(events.iter().filter(|e| matches!(e, JobEvent::CheckpointCompleted { .. })).count() as f64);
    }
    let n = periodic.len().max(1) as f64;
    let max_of = |c: &CheckpointMeta, f: fn(&weir_store::SubtaskStats) -> f64| {
        c.subtasks.iter().map(f).fold(0.0, f64::max)
    };
    let best = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let paired = median(checkpointed.iter().zip(&plain).map(|(c, p)| c / p).collect());
    let paired_cpu_ratio = median(checkpointed_cpu.iter().zip(&plain_cpu).map(|(c, p)| c / p).collect());
    Ok(ThroughputResult {
        paired_ratio: paired,
        paired_cpu_ratio,
        plain_per_cpu: median(plain_cpu),
        checkpointed_per_cpu: median(checkpointed_cpu),
        plain_best: best(&plain),
        checkpointed_best: best(&checkpointed),
        plain: median(plain),
        checkpointed: median(checkpointed),
        checkpoints: median(counts) as usize,
        mean_size: periodic.iter().map(|c| c.state_size as f64).sum::<f64>() / n,
        mean_sync_ms: periodic.iter().map(|c| max_of(c, |s| s.sync_ms)).sum::<f64>() / n,
        mean_async_ms: periodic.iter().map(|c| max_of(c, |s| s.async_ms)).sum::<f64>() / n,
        mean_duration_ms: periodic.iter().map(|c| c.duration_ms.unwrap_or_default()).sum::<f64>() / n,
    })
}

/// Duration and size of a checkpoint holding `keys` values of `value_bytes`.
pub async fn state_sizes(
    host: &Arc<GuestHost>,
    o: &CheckpointBenchOptions,
) -> anyhow::Result<Vec<StateSizeResult>> {
    let mut out = Vec::new();
    for &keys in o.state_keys.iter().filter(|&&keys| keys > 0) {
        // Each key once; no periodic checkpoint: the final one holds the whole state.
        let spec = job(keys, keys, o.value_bytes, None)?;
        let (_, _, store) = run_checkpointed_job(host, &spec, &o.dir.join(format!("size-{keys}"))).await?;
        let history = store.history("bench")?;
        let c =
            history.iter().rev().find(|c| c.status == CheckpointStatus::Completed).expect("final checkpoint");
        out.push(StateSizeResult {
            keys,
            size: c.state_size,
            duration_ms: c.duration_ms.unwrap_or_default(),
            sync_ms: c.subtasks.iter().map(|s| s.sync_ms).fold(0.0, f64::max),
            async_ms: c.subtasks.iter().map(|s| s.async_ms).fold(0.0, f64::max),
        });
    }
    Ok(out)
}

fn keyed_batch(keys: impl Iterator<Item = u64>) -> Batch {
    let mut b = Batch::empty();
    for k in keys {
        b.push(&to_msgpack(&k), &to_msgpack(&k), 0);
    }
    b
}

/// Bytes this process caused to be written to storage so far (`/proc/self/io`
/// `write_bytes`; 0 where that file does not exist).
fn io_write_bytes() -> i64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("write_bytes:").and_then(|v| v.trim().parse::<i64>().ok()))
        })
        .unwrap_or(0)
}

/// Bytes written when 1 % of the keyed state changes, and restore speed.
pub async fn incremental(
    host: &Arc<GuestHost>,
    o: &CheckpointBenchOptions,
) -> anyhow::Result<IncrementalResult> {
    let module = counter(host)?;
    let limits = InstanceLimits { memory_bytes: 8 << 30, cpu_limit_ms: 600_000, ..InstanceLimits::default() };
    let config = format!(r#"{{"pad": {}}}"#, o.value_bytes);
    let context = Context::standalone("count", &config, 128);
    let mut inst = OperatorInstance::new(&module, "count", 0, limits).await?;
    inst.open(&context).await?;
    let keys = o.incremental_keys;
    let dir = o.dir.join("incremental");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("weir.redb");
    let store = Store::open(&path)?;

    // The state grows over BASE_STEPS checkpoints (as in a job whose state builds up between
    // periodic checkpoints); each writes the keys added since the one before.
    const BASE_STEPS: u64 = 4;
    let mut base = weir_store::SubtaskState::default();
    let (mut state_bytes, mut base_written, mut base_seconds) = (0u64, 0u64, 0f64);
    let mut k = 0;
    for step in 1..=BASE_STEPS {
        let upto = keys * step / BASE_STEPS;
        while k < upto {
            let end = (k + 4096).min(upto);
            inst.process(0, &keyed_batch(k..end)).await?;
            k = end;
        }
        let started = Instant::now();
        let delta = inst.snapshot(step, false).await?;
        state_bytes += delta.data.len() as u64;
        let scopes = split_into_scopes(&delta, 128, 0)?;
        drop(delta);
        base = write(&store, step, scopes, base.chains.clone())?;
        base_written += base.bytes_written;
        base_seconds += started.elapsed().as_secs_f64();
    }

    // 1 % of the keys change.
    let changed_keys = (keys / 100).max(1);
    let step = keys / changed_keys;
    inst.process(0, &keyed_batch((0..changed_keys).map(|i| i * step))).await?;
    let before = io_write_bytes();
    let started = Instant::now();
    let delta = inst.snapshot(BASE_STEPS + 1, false).await?;
    let changed_bytes = delta.data.len() as u64;
    let scopes = split_into_scopes(&delta, 128, 0)?;
    let incr = write(&store, BASE_STEPS + 1, scopes, base.chains.clone())?;
    let incremental_seconds = started.elapsed().as_secs_f64();
    let disk_written = io_write_bytes() - before;

    // Read: every chain's live entries visited in the store (no copy), to see what the store
    // alone costs.
    eprintln!("  restore: reading every chain, then restoring into a fresh instance");
    let started = Instant::now();
    let mut visited = 0u64;
    let chains: Vec<Vec<u64>> = incr.chains.values().cloned().collect();
    let _ = store.visit_chains("bench", &chains, &mut |_, key, value| {
        visited += (key.len() + value.len()) as u64;
        ControlFlow::Continue(())
    })?;
    let read_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(visited == state_bytes, "visited {visited} bytes of {state_bytes}");

    // Restore: every chain streamed into a fresh instance, as a restarted job does.
    let mut fresh = OperatorInstance::new(&module, "count", 0, limits).await?;
    let version = fresh.describe().await?.state_version;
    let storage: Arc<dyn CheckpointStorage> = Arc::new(store.clone());
    eprintln!("  restore: read done");
    let cpu_before = cpu_seconds("self");
    let started = Instant::now();
    restore_chains(&mut fresh, version, storage, "bench".into(), chains, RESTORE_CHUNK_BYTES).await?;
    let restore_seconds = started.elapsed().as_secs_f64();
    let restore_cpu_seconds = cpu_seconds("self") - cpu_before;
    Ok(IncrementalResult {
        state_bytes,
        base_written,
        base_seconds,
        changed_keys,
        changed_bytes,
        incremental_written: incr.bytes_written,
        disk_written,
        incremental_seconds,
        read_seconds,
        restore_seconds,
        restore_cpu_seconds,
    })
}

fn write(
    store: &Store,
    id: u64,
    scopes: Vec<weir_store::ScopeDelta>,
    previous: BTreeMap<u32, Vec<u64>>,
) -> anyhow::Result<weir_store::SubtaskState> {
    let state = store.write_subtask(SubtaskWrite {
        job: "bench".into(),
        checkpoint: id,
        operator: "count".into(),
        subtask: 0,
        full: false,
        scopes: Arc::new(scopes),
        previous,
        blob: Vec::new(),
        max_chain_length: 8,
        channel_state: Vec::new(),
    })?;
    let mut meta = CheckpointMeta::new("bench", id, unix_ms());
    meta.status = CheckpointStatus::Completed;
    let mut manifest: Manifest = BTreeMap::new();
    manifest.entry("count".into()).or_default().insert(0, state.clone());
    store.complete(&meta, &manifest, 2)?;
    Ok(state)
}

/// Runs every part and prints the results.
pub async fn run_and_print(host: &Arc<GuestHost>, o: &CheckpointBenchOptions) -> anyhow::Result<()> {
    // `--job-records 0` skips the throughput part, a state size of 0 keys is skipped.
    if o.records > 0 {
        let t = throughput(host, o).await?;
        println!(
            "throughput, stateful job on one core ({} records, {} keys, {} runs each, median / best):\n  no checkpoints  {:.2} / {:.2} M records/s\n  1 s checkpoints {:.2} / {:.2} M records/s ({} checkpoints)\n  ratio           {:.3} / {:.3} (median of paired runs {:.3})",
            o.records,
            o.keys,
            o.runs,
            t.plain / 1e6,
            t.plain_best / 1e6,
            t.checkpointed / 1e6,
            t.checkpointed_best / 1e6,
            t.checkpoints,
            t.checkpointed / t.plain,
            t.checkpointed_best / t.plain_best,
            t.paired_ratio
        );
        println!(
            "  per CPU-second (whole process) no checkpoints {:.2} M, 1 s checkpoints {:.2} M: ratio {:.3} (median of paired runs {:.3})",
            t.plain_per_cpu / 1e6,
            t.checkpointed_per_cpu / 1e6,
            t.checkpointed_per_cpu / t.plain_per_cpu,
            t.paired_cpu_ratio
        );
        println!(
            "  periodic checkpoints: {:.2} MiB written, sync {:.1} ms, async {:.1} ms, end to end {:.1} ms (means)",
            t.mean_size / 1048576.0,
            t.mean_sync_ms,
            t.mean_async_ms,
            t.mean_duration_ms
        );
    }
    println!("checkpoint duration and size vs state size ({} B values, one full checkpoint):", o.value_bytes);
    for r in state_sizes(host, o).await? {
        println!(
            "  {:>9} keys: {:>8.1} MiB in {:>8.1} ms (sync {:.1} ms, async {:.1} ms) = {:.0} MiB/s",
            r.keys,
            r.size as f64 / 1048576.0,
            r.duration_ms,
            r.sync_ms,
            r.async_ms,
            r.size as f64 / 1048576.0 / (r.duration_ms / 1e3).max(1e-9)
        );
    }
    let i = incremental(host, o).await?;
    let mib = |b: u64| b as f64 / 1048576.0;
    println!(
        "incremental checkpoint of {:.0} MiB state ({} keys):\n  base (4 checkpoints as the state grew): wrote {:.1} MiB in {:.2} s\n  1 % changed ({} keys, {:.2} MiB handed over): chunks of {:.2} MiB ({:.3}x), {:.2} MiB written to disk ({:.3}x), {:.3} s",
        mib(i.state_bytes),
        o.incremental_keys,
        mib(i.base_written),
        i.base_seconds,
        i.changed_keys,
        mib(i.changed_bytes),
        mib(i.incremental_written),
        i.incremental_written as f64 / i.changed_bytes as f64,
        i.disk_written as f64 / 1048576.0,
        i.disk_written as f64 / i.changed_bytes as f64,
        i.incremental_seconds
    );
    println!(
        "restore of {:.0} MiB: read from redb {:.2} s ({:.0} MiB/s), read + restore into a fresh instance {:.2} s ({:.0} MiB/s)",
        mib(i.state_bytes),
        i.read_seconds,
        mib(i.state_bytes) / i.read_seconds,
        i.restore_seconds,
        mib(i.state_bytes) / i.restore_seconds
    );
    println!(
        "  restore: {:.2} CPU s ({:.0} MiB per CPU-second)",
        i.restore_cpu_seconds,
        mib(i.state_bytes) / i.restore_cpu_seconds
    );
    Ok(())
}
