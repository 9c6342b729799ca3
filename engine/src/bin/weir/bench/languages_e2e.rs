//! `weir bench languages --end-to-end`: Nexmark q1 of each language as a whole job, the way
//! a user runs it: file of JSON bids → q1 (parallelism 1) → blackhole, no checkpoints, in this
//! process on its two-worker runtime (as `weir run`). Records/s: the bids over the wall-clock
//! time of the job; per CPU-second: over the user + system CPU time of the whole process
//! (every thread: the file source's JSON parsing, the host's transcoding, the guest). The
//! variants run round robin; each figure is the median of the runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use weir::guest::GuestHost;
use weir::modules::LocalModules;
use weir::plan::JobSpec;
use weir::runtime::run_job;

use super::kafka::cpu_seconds;
use super::pipeline::bid_files;

/// PyFlink 2.3 on q1 with the price conversion as a Python UDF, this machine and data, from
/// issue 20: (mode, events/s).
pub const PYFLINK: [(&str, f64); 2] = [("process mode", 127e3), ("thread mode", 376e3)];

/// One variant's medians.
#[derive(Debug, Clone)]
pub struct EndToEnd {
    /// `rust`, `python`, ...
    pub language: String,
    /// Records per second (wall-clock), median.
    pub rate: f64,
    /// Records per CPU-second of the process, median.
    pub per_cpu: f64,
    /// Records/s of each run.
    pub runs: Vec<f64>,
}

fn job(input: &Path, module: &str) -> anyhow::Result<JobSpec> {
    Ok(serde_json::from_value(serde_json::json!({
        "name": "languages-q1",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "file",
              "config": { "path": input, "timestamp_field": "date_time" } },
            { "id": "q1", "kind": "operator", "module": module },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "in", "to": "q1", "partitioning": "forward" },
            { "from": "q1", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": null } }
    }))?)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs q1 from `bids` JSON bids (generated once into `cache`) for Rust and every language
/// directory holding `nexmark-q1.wasm`, `runs` rounds.
pub async fn run(
    host: &Arc<GuestHost>,
    languages: &[(String, PathBuf)],
    bids: u64,
    runs: usize,
    cache: &Path,
) -> anyhow::Result<Vec<EndToEnd>> {
    let input = bid_files(cache, bids)?;
    let mut variants = vec![("rust".to_string(), "builtin:nexmark-q1".to_string())];
    for (language, dir) in languages {
        for (file, label) in
            [("nexmark-q1", language.clone()), ("nexmark-q1-records", format!("{language} per record"))]
        {
            let path = dir.join(format!("{file}.wasm"));
            if path.is_file() {
                variants.push((label, std::path::absolute(&path)?.display().to_string()));
            }
        }
    }
    // The first compile of a component (tens of seconds for an interpreter) is not the job's:
    // load each module once before timing.
    for (_, module) in &variants {
        weir::plan::plan(&job(&input, module)?, &LocalModules::new(host.clone(), "."))?;
    }
    let mut measured: Vec<Vec<(f64, f64)>> = variants.iter().map(|_| Vec::new()).collect();
    for round in 0..runs.max(1) {
        for (i, (label, module)) in variants.iter().enumerate() {
            let plan = weir::plan::plan(&job(&input, module)?, &LocalModules::new(host.clone(), "."))?;
            let (cpu0, start) = (cpu_seconds("self"), Instant::now());
            let report = run_job(&plan).await?;
            let (seconds, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds("self") - cpu0);
            anyhow::ensure!(
                report.source_records() == bids,
                "{label}: the source read {} of the {bids} bids",
                report.source_records()
            );
            let (rate, per_cpu) = (bids as f64 / seconds, bids as f64 / cpu.max(0.01));
            eprintln!(
                "  run {round} q1 {label:<20} {:>6.0} k records/s, {:>6.0} k per CPU-s",
                rate / 1e3,
                per_cpu / 1e3
            );
            measured[i].push((rate, per_cpu));
        }
    }
    Ok(variants
        .into_iter()
        .zip(measured)
        .map(|((language, _), runs)| EndToEnd {
            language,
            rate: median(runs.iter().map(|r| r.0).collect()),
            per_cpu: median(runs.iter().map(|r| r.1).collect()),
            runs: runs.iter().map(|r| r.0).collect(),
        })
        .collect())
}
