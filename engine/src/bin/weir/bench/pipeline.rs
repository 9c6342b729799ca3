//! `weir bench pipeline`: whole jobs, end to end, as a user runs them (issue 18).
//!
//! 1. **From a file**: Nexmark bids as JSON lines (the `nexmark` crate's `Bid`, one per line,
//!    split in two files), generated once and cached under `~/.cache/weir/bench/`. Each run is
//!    file source → (q0: nothing | `builtin:nexmark-q1` | `builtin:nexmark-q2`) → blackhole,
//!    in this process on the command's multi-thread runtime (as `weir run`), at parallelism 1
//!    and 2, without checkpoints (`run_job`) and with 1 s checkpoints into a fresh redb store
//!    (`run_job_checkpointed`). Each figure is the median of `runs` runs made round robin.
//! 2. **The stream log**: bids appended to a stream as MessagePack, then stream source → q1 →
//!    stream sink with 1 s checkpoints at parallelism 2, timed until the output is committed;
//!    the output is then read back and counted.
//!
//! Records per CPU-second divide the records by the user + system CPU time of the whole
//! process over the run (every thread: tasks, blocking pool, snapshot writer).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use weir_store::{CheckpointStorage, LogRecord, Store};

use weir::connectors::NexmarkSourceConfig;
use weir::guest::GuestHost;
use weir::modules::LocalModules;
use weir::plan::JobSpec;
use weir::runtime::{RunEnv, run_job, run_job_checkpointed};

use super::kafka::cpu_seconds;

/// Bumped whenever the generated file changes (fields, generator settings, layout).
const FORMAT_VERSION: u32 = 1;

/// Files the bids are split into.
const FILES: u64 = 2;

/// Apache Flink 2.3 (SQL, same file, same machine) at parallelism 1, events per second, for
/// q0, q1 and q2: issue 18. The issue puts Flink at 450–620 K events per CPU-second, so these
/// wall-clock figures are at or above Flink's per-CPU-second ones: "×Flink" below divides
/// Weir's records per CPU-second by them, which understates Weir's advantage, if anything.
const FLINK_P1: [f64; 3] = [643e3, 692e3, 845e3];

/// The goals of issue 18, records per CPU-second, for q0, q1 and q2.
const GOALS: [f64; 3] = [3e6, 2e6, 2e6];

/// The goal of issue 18 for the stream-log path, records per CPU-second.
const STREAM_GOAL: f64 = 1e6;

/// A query of the file pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Query {
    /// No operator: source → sink.
    Q0,
    /// `builtin:nexmark-q1`.
    Q1,
    /// `builtin:nexmark-q2`.
    Q2,
}

impl Query {
    fn index(self) -> usize {
        self as usize
    }

    fn name(self) -> &'static str {
        ["q0", "q1", "q2"][self.index()]
    }
}

/// What the suite runs.
#[derive(Debug, Clone)]
pub struct PipelineBenchOptions {
    /// Bids in the file.
    pub bids: u64,
    /// Runs of each variant (the median is reported).
    pub runs: usize,
    /// Queries of the file pipeline.
    pub queries: Vec<Query>,
    /// Parallelisms of the file pipeline.
    pub parallelisms: Vec<u32>,
    /// Run without checkpoints.
    pub plain: bool,
    /// Run with 1 s checkpoints.
    pub checkpointed: bool,
    /// Bids of the stream-log path (0: skip it).
    pub stream_bids: u64,
    /// Where the generated files are cached.
    pub cache: PathBuf,
    /// Scratch space (stores).
    pub dir: PathBuf,
}

/// `$XDG_CACHE_HOME/weir/bench`, else `~/.cache/weir/bench`, else under `data_dir`.
pub fn default_cache(data_dir: &Path) -> PathBuf {
    let base =
        std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache"))
        });
    match base {
        Some(b) => b.join("weir").join("bench"),
        None => data_dir.join("bench-cache"),
    }
}

/// The directory holding `bids` Nexmark bids as JSON lines in [`FILES`] files, generated
/// unless already cached. Generated into a temporary directory renamed into place, so a
/// cached directory is always complete.
pub fn bid_files(cache: &Path, bids: u64) -> anyhow::Result<PathBuf> {
    let dir = cache.join(format!("nexmark-bids-v{FORMAT_VERSION}-{bids}"));
    if dir.is_dir() {
        return Ok(dir);
    }
    std::fs::create_dir_all(cache)?;
    let tmp = cache.join(format!(".nexmark-bids-v{FORMAT_VERSION}-{bids}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let started = Instant::now();
    let bytes = write_bids(&tmp, bids)?;
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => {}
        // Another process finished first: keep its copy.
        Err(_) if dir.is_dir() => {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Err(e) => return Err(e.into()),
    }
    eprintln!(
        "  generated {bids} bids as JSON lines ({:.0} MB, {:.0} bytes a line) in {} in {:.1} s",
        bytes as f64 / 1e6,
        bytes as f64 / bids.max(1) as f64,
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(dir)
}

/// Writes the bids into `part-<i>.jsonl` files of `dir`, half each; returns the bytes written.
fn write_bids(dir: &Path, bids: u64) -> anyhow::Result<u64> {
    let mut generator = bid_config(bids).generator(0, 1);
    let mut written = 0;
    for file in 0..FILES {
        let end = bids * (file + 1) / FILES;
        let f = std::fs::File::create(dir.join(format!("part-{file}.jsonl")))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
        let mut line = Vec::with_capacity(512);
        while generator.offset() < end {
            let nexmark::event::Event::Bid(bid) = generator.next().expect("the generator is endless") else {
                anyhow::bail!("the Nexmark generator configured for bids produced another event");
            };
            line.clear();
            serde_json::to_writer(&mut line, &bid)?;
            line.push(b'\n');
            out.write_all(&line)?;
            written += line.len() as u64;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    }
    Ok(written)
}

fn bid_config(count: u64) -> NexmarkSourceConfig {
    NexmarkSourceConfig {
        event_type: "bid".into(),
        count,
        base_time: 1_700_000_000_000,
        events_per_second: 10_000,
        key: None,
    }
}

fn file_job(input: &Path, query: Query, parallelism: u32) -> anyhow::Result<JobSpec> {
    let mut nodes = vec![serde_json::json!({
        "id": "in", "kind": "source", "connector": "file", "parallelism": parallelism,
        "config": { "path": input, "timestamp_field": "date_time" } })];
    let mut edges = Vec::new();
    let mut last = "in";
    if query != Query::Q0 {
        let module = format!("builtin:nexmark-{}", query.name());
        nodes.push(serde_json::json!({
            "id": "op", "kind": "operator", "module": module, "parallelism": parallelism }));
        edges.push(serde_json::json!({ "from": "in", "to": "op", "partitioning": "forward" }));
        last = "op";
    }
    nodes.push(serde_json::json!({
        "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": parallelism }));
    edges.push(serde_json::json!({ "from": last, "to": "out", "partitioning": "forward" }));
    let spec = serde_json::json!({
        "name": format!("pipeline-{}", query.name()),
        "nodes": nodes,
        "edges": edges,
        "settings": { "checkpoint": { "interval_ms": 1000, "timeout_ms": 600000 } }
    });
    Ok(serde_json::from_value(spec)?)
}

/// One run: wall-clock and CPU seconds, checkpoints completed.
#[derive(Debug, Clone, Copy)]
struct Run {
    seconds: f64,
    cpu: f64,
    checkpoints: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One variant of the file pipeline, over its runs.
#[derive(Debug, Clone)]
pub struct FileResult {
    /// The query.
    pub query: Query,
    /// Parallelism of every node.
    pub parallelism: u32,
    /// With 1 s checkpoints.
    pub checkpointed: bool,
    /// Records per second, median.
    pub rate: f64,
    /// Records per CPU-second, median.
    pub per_cpu: f64,
    /// CPUs busy on average (CPU seconds / wall-clock seconds), median.
    pub cpus: f64,
    /// Checkpoints completed per run (median), the final one included.
    pub checkpoints: usize,
    /// Records per second of each run, in order.
    pub runs: Vec<f64>,
}

impl FileResult {
    fn from_runs(query: Query, parallelism: u32, checkpointed: bool, bids: u64, runs: &[Run]) -> Self {
        let n = bids as f64;
        FileResult {
            query,
            parallelism,
            checkpointed,
            rate: median(runs.iter().map(|r| n / r.seconds).collect()),
            per_cpu: median(runs.iter().map(|r| n / r.cpu.max(0.01)).collect()),
            cpus: median(runs.iter().map(|r| r.cpu / r.seconds).collect()),
            checkpoints: median(runs.iter().map(|r| r.checkpoints as f64).collect()) as usize,
            runs: runs.iter().map(|r| n / r.seconds).collect(),
        }
    }
}

/// Runs one job from the file; checks that every bid came out of the source.
async fn run_file_once(
    host: &Arc<GuestHost>,
    input: &Path,
    o: &PipelineBenchOptions,
    (query, parallelism, checkpointed): (Query, u32, bool),
    tag: &str,
) -> anyhow::Result<Run> {
    let spec = file_job(input, query, parallelism)?;
    let plan = weir::plan::plan(&spec, &LocalModules::new(host.clone(), "."))?;
    let (report, checkpoints, seconds, cpu) = if checkpointed {
        let dir = o.dir.join(tag);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let store = Store::open(&dir.join("weir.redb"))?;
        let env = RunEnv::new(tag.to_string(), store.clone());
        let (cpu0, start) = (cpu_seconds("self"), Instant::now());
        let report = run_job_checkpointed(&plan, &env).await?;
        let (seconds, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds("self") - cpu0);
        let completed = store
            .history(tag)?
            .iter()
            .filter(|c| c.status == weir_store::CheckpointStatus::Completed)
            .count();
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
        (report, completed, seconds, cpu)
    } else {
        let (cpu0, start) = (cpu_seconds("self"), Instant::now());
        let report = run_job(&plan).await?;
        (report, 0, start.elapsed().as_secs_f64(), cpu_seconds("self") - cpu0)
    };
    anyhow::ensure!(
        report.source_records() == o.bids,
        "{tag}: the source read {} records of the {} bids in the file",
        report.source_records(),
        o.bids
    );
    Ok(Run { seconds, cpu, checkpoints })
}

/// The file pipeline: every query × parallelism × checkpoint mode, `runs` rounds.
pub async fn run_file(host: &Arc<GuestHost>, o: &PipelineBenchOptions) -> anyhow::Result<Vec<FileResult>> {
    let input = bid_files(&o.cache, o.bids)?;
    let mut variants = Vec::new();
    for &q in &o.queries {
        for &p in &o.parallelisms {
            for c in [false, true] {
                if (c && o.checkpointed) || (!c && o.plain) {
                    variants.push((q, p, c));
                }
            }
        }
    }
    let mut runs: Vec<Vec<Run>> = variants.iter().map(|_| Vec::new()).collect();
    for round in 0..o.runs {
        // Round robin, so that drift of the machine hits every variant alike.
        for (i, &(q, p, c)) in variants.iter().enumerate() {
            let tag = format!("{}-p{p}-{}-{round}", q.name(), if c { "cp" } else { "plain" });
            let r = run_file_once(host, &input, o, (q, p, c), &tag).await?;
            eprintln!(
                "  run {round} {tag:<16} {:>6.0} k records/s, {:>6.0} k per CPU-s ({:.2} CPUs){}",
                o.bids as f64 / r.seconds / 1e3,
                o.bids as f64 / r.cpu.max(0.01) / 1e3,
                r.cpu / r.seconds,
                if c { format!(", {} checkpoints", r.checkpoints) } else { String::new() }
            );
            runs[i].push(r);
        }
    }
    Ok(variants
        .iter()
        .zip(runs)
        .map(|(&(q, p, c), runs)| FileResult::from_runs(q, p, c, o.bids, &runs))
        .collect())
}

/// The stream-log path's figures.
#[derive(Debug, Clone)]
pub struct StreamResult {
    /// Bids in the input stream.
    pub bids: u64,
    /// Records per second appending the input (one `append` call per 1024 records).
    pub append_rate: f64,
    /// Records per second from start to output committed, median.
    pub rate: f64,
    /// Records per CPU-second over the same span, median.
    pub per_cpu: f64,
    /// Checkpoints completed per run, median.
    pub checkpoints: usize,
    /// Records per second of each run.
    pub runs: Vec<f64>,
}

fn stream_job(output: &str) -> anyhow::Result<JobSpec> {
    let spec = serde_json::json!({
        "name": "pipeline-stream",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "stream", "parallelism": 2,
              "config": { "stream": "bids", "batch_size": 1024 } },
            { "id": "q1", "kind": "operator", "module": "builtin:nexmark-q1", "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "stream", "parallelism": 2,
              "config": { "stream": output, "partitions": 2 } }
        ],
        "edges": [
            { "from": "in", "to": "q1", "partitioning": "forward" },
            { "from": "q1", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": 1000, "timeout_ms": 600000 } }
    });
    Ok(serde_json::from_value(spec)?)
}

/// Records committed to `stream` so far.
fn committed(store: &Store, stream: &str) -> anyhow::Result<u64> {
    Ok((0..2).map(|p| store.end_offset(stream, p)).sum::<Result<u64, _>>()?)
}

/// Reads `stream` back and checks every record decodes as q1's output; returns the count.
fn read_back(store: &Store, stream: &str) -> anyhow::Result<u64> {
    let mut n = 0;
    for p in 0..2 {
        let mut from = 0;
        loop {
            let mut bad = None;
            let read =
                store.read_with(
                    stream,
                    p,
                    from,
                    4096,
                    |offset, _, value, _| match rmp_serde::from_slice::<super::nexmark::Bid<'_>>(value) {
                        Ok(bid) => {
                            std::hint::black_box(bid);
                            true
                        }
                        Err(e) if bad.is_none() => {
                            bad = Some(anyhow::anyhow!("{stream}/{p}@{offset}: not a bid: {e}"));
                            true
                        }
                        Err(_) => true,
                    },
                )?;
            if let Some(e) = bad {
                return Err(e);
            }
            if read == 0 {
                break;
            }
            from += read as u64;
            n += read as u64;
        }
    }
    Ok(n)
}

/// The stream-log path: stream source → q1 → stream sink, 1 s checkpoints, parallelism 2.
pub async fn run_stream(host: &Arc<GuestHost>, o: &PipelineBenchOptions) -> anyhow::Result<StreamResult> {
    let dir = o.dir.join("stream");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let store = Store::open(&dir.join("weir.redb"))?;
    store.create_stream("bids", 2)?;
    let batches = super::nexmark::bid_batches(o.stream_bids as usize, 1024, None);
    let started = Instant::now();
    for (i, batch) in batches.iter().enumerate() {
        let log: Vec<LogRecord> = batch
            .iter()
            .map(|r| LogRecord { key: vec![], value: r.value.to_vec(), timestamp: r.timestamp })
            .collect();
        store.append("bids", (i % 2) as u32, &log)?;
    }
    let append_rate = o.stream_bids as f64 / started.elapsed().as_secs_f64();
    drop(batches);
    let mut runs = Vec::new();
    for round in 0..o.runs {
        let (tag, output) = (format!("stream-{round}"), format!("q1-{round}"));
        let plan = weir::plan::plan(&stream_job(&output)?, &LocalModules::new(host.clone(), "."))?;
        let env = RunEnv::new(tag.clone(), store.clone());
        let (cpu0, start) = (cpu_seconds("self"), Instant::now());
        run_job_checkpointed(&plan, &env).await?;
        // The job may end before the last checkpoint's output is committed.
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let n = committed(&store, &output)?;
            anyhow::ensure!(
                n <= o.stream_bids,
                "stream path: {n} records committed for {} read",
                o.stream_bids
            );
            if n == o.stream_bids {
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "stream path: only {n} of {} records were committed within 120 s of the job's end",
                o.stream_bids
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let (seconds, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds("self") - cpu0);
        let read = read_back(&store, &output)?;
        anyhow::ensure!(read == o.stream_bids, "stream path: read back {read} of {} records", o.stream_bids);
        let checkpoints = store
            .history(&tag)?
            .iter()
            .filter(|c| c.status == weir_store::CheckpointStatus::Completed)
            .count();
        eprintln!(
            "  run {round} stream q1 p2     {:>6.0} k records/s, {:>6.0} k per CPU-s ({:.2} CPUs), {checkpoints} checkpoints, {read} read back",
            o.stream_bids as f64 / seconds / 1e3,
            o.stream_bids as f64 / cpu.max(0.01) / 1e3,
            cpu / seconds
        );
        runs.push(Run { seconds, cpu, checkpoints });
    }
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    let n = o.stream_bids as f64;
    Ok(StreamResult {
        bids: o.stream_bids,
        append_rate,
        rate: median(runs.iter().map(|r| n / r.seconds).collect()),
        per_cpu: median(runs.iter().map(|r| n / r.cpu.max(0.01)).collect()),
        checkpoints: median(runs.iter().map(|r| r.checkpoints as f64).collect()) as usize,
        runs: runs.iter().map(|r| n / r.seconds).collect(),
    })
}

fn k(v: f64) -> String {
    if v.is_nan() {
        "–".into()
    } else if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else {
        format!("{:.0} K", v / 1e3)
    }
}

fn ratio(a: f64, b: f64) -> String {
    if a.is_nan() || b.is_nan() { "–".into() } else { format!("{:.2}", a / b) }
}

/// Runs the suite and prints its tables.
pub async fn run_and_print(host: &Arc<GuestHost>, o: &PipelineBenchOptions) -> anyhow::Result<()> {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    println!("{cpus} CPUs, load average before the runs {}", load.join(" "));
    if !o.queries.is_empty() && !o.parallelisms.is_empty() && (o.plain || o.checkpointed) {
        let results = run_file(host, o).await?;
        print_file(o, &results);
    }
    if o.stream_bids > 0 {
        let s = run_stream(host, o).await?;
        println!(
            "Stream log: {} bids appended as MessagePack ({} records/s), then stream → q1 → stream, parallelism 2, 1 s checkpoints, median of {} runs (start to output committed, then read back and counted):",
            s.bids,
            k(s.append_rate),
            o.runs
        );
        println!(
            "  {} records/s, {} per CPU-second ({:.2} × the goal of 1 M), {} checkpoints; each run: {}",
            k(s.rate),
            k(s.per_cpu),
            s.per_cpu / STREAM_GOAL,
            s.checkpoints,
            s.runs.iter().map(|r| k(*r)).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

fn print_file(o: &PipelineBenchOptions, results: &[FileResult]) {
    let find = |q: Query, p: u32, c: bool| {
        results.iter().find(|r| r.query == q && r.parallelism == p && r.checkpointed == c)
    };
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "query",
        "p",
        "checkpoints",
        "records/s",
        "per CPU-s",
        "CPUs",
        "per CPU-s / goal",
        "×Flink",
        "each run, records/s",
    ]);
    for r in results {
        let i = r.query.index();
        table.add_row([
            r.query.name().to_string(),
            r.parallelism.to_string(),
            if r.checkpointed { format!("1 s ({})", r.checkpoints) } else { "none".into() },
            k(r.rate),
            k(r.per_cpu),
            format!("{:.2}", r.cpus),
            ratio(r.per_cpu, GOALS[i]),
            ratio(r.per_cpu, FLINK_P1[i]),
            r.runs.iter().map(|x| k(*x)).collect::<Vec<_>>().join(", "),
        ]);
    }
    println!(
        "Nexmark bids as JSON lines ({} bids in {FILES} files), file → query → blackhole, median of {} runs:",
        o.bids, o.runs
    );
    println!("{table}");
    println!(
        "goals (issue 18): q0 ≥ 3 M, q1/q2 ≥ 2 M per CPU-s; ×Flink = per CPU-s / Flink's events/s at p1 (643 K, 692 K, 845 K)"
    );
    let mut ratios = Table::new();
    ratios.load_preset(UTF8_FULL_CONDENSED).set_header([
        "query",
        "p2 / p1 wall-clock (goal ≥ 1.8)",
        "1 s checkpoints / none, p1 (goal ≥ 0.95)",
        "1 s checkpoints / none, p2",
        "p1 wall-clock ×Flink",
    ]);
    for &q in &o.queries {
        let rate = |p: u32, c: bool| find(q, p, c).map_or(f64::NAN, |r| r.rate);
        let plain_or_cp = |p: u32| if o.plain { rate(p, false) } else { rate(p, true) };
        ratios.add_row([
            q.name().to_string(),
            ratio(plain_or_cp(2), plain_or_cp(1)),
            ratio(rate(1, true), rate(1, false)),
            ratio(rate(2, true), rate(2, false)),
            ratio(plain_or_cp(1), FLINK_P1[q.index()]),
        ]);
    }
    println!("{ratios}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bid_files_are_json_bids_split_in_two_and_cached() {
        let cache = std::env::temp_dir().join(format!("weir-pipeline-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache);
        let dir = bid_files(&cache, 101).unwrap();
        let mut lines = Vec::new();
        for f in 0..FILES {
            let text = std::fs::read_to_string(dir.join(format!("part-{f}.jsonl"))).unwrap();
            lines.push(text.lines().map(str::to_string).collect::<Vec<_>>());
        }
        assert_eq!((lines[0].len(), lines[1].len()), (50, 51));
        let bid: serde_json::Value = serde_json::from_str(&lines[1][50]).unwrap();
        for field in ["auction", "bidder", "price", "channel", "url", "date_time", "extra"] {
            assert!(bid.get(field).is_some(), "{field} missing in {bid}");
        }
        // A second call finds the cached copy: same files, not rewritten.
        let modified = std::fs::metadata(dir.join("part-0.jsonl")).unwrap().modified().unwrap();
        assert_eq!(bid_files(&cache, 101).unwrap(), dir);
        assert_eq!(std::fs::metadata(dir.join("part-0.jsonl")).unwrap().modified().unwrap(), modified);
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 1, "no temporary directory left behind");
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn jobs_have_the_query_between_file_and_blackhole() {
        let q0 = file_job(Path::new("/in"), Query::Q0, 2).unwrap();
        assert_eq!(q0.nodes.len(), 2);
        assert!(q0.nodes.iter().all(|n| n.parallelism == 2));
        let q2 = file_job(Path::new("/in"), Query::Q2, 1).unwrap();
        assert_eq!(q2.nodes[1].module.as_deref(), Some("builtin:nexmark-q2"));
        assert_eq!(q2.edges.len(), 2);
    }
}
