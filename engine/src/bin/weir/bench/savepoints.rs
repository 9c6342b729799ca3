//! `weir bench savepoints`: what savepoints cost, against the state they copy.
//!
//! A keyed job (generator → hash → the `counter` operator at parallelism 2 → blackhole)
//! ends with a final checkpoint holding `keys` entries of ~`value_bytes` bytes. Then:
//! reading that checkpoint's state back (what a restart reads: the baseline), copying it
//! into a savepoint, exporting the savepoint to a file, importing the file into a second
//! store, and starting a job from the savepoint at the same parallelism and at twice it
//! (which writes the new job's first checkpoint).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use weir_store::{CheckpointStorage as _, SavepointInfo, Store};

use weir::guest::GuestHost;
use weir::modules::LocalModules;
use weir::plan::JobSpec;
use weir::runtime::{RunEnv, run_job_checkpointed};
use weir::savepoint::{Description, RestoreOptions, restore_into};

/// Sizes of the savepoint benchmark.
#[derive(Debug, Clone)]
pub struct SavepointBenchOptions {
    /// Distinct keys of the state.
    pub keys: u64,
    /// Bytes per state value.
    pub value_bytes: usize,
    /// Where the stores and the file go (emptied first, removed after).
    pub dir: PathBuf,
}

/// One measured step.
#[derive(Debug, Clone)]
pub struct Step {
    /// What was done.
    pub name: &'static str,
    /// Seconds it took.
    pub seconds: f64,
}

/// The results.
#[derive(Debug, Clone)]
pub struct SavepointBenchResult {
    /// Key and value bytes of the state (the savepoint's `bytes`).
    pub state_bytes: u64,
    /// Entries of the state.
    pub entries: u64,
    /// Bytes of the exported file.
    pub file_bytes: u64,
    /// The steps, in order; the first is the baseline.
    pub steps: Vec<Step>,
}

fn spec(keys: u64, pad: usize, parallelism: u32) -> anyhow::Result<JobSpec> {
    Ok(serde_json::from_value(serde_json::json!({
        "name": "savepoint-bench",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": keys, "keys": keys, "batch_size": 1024,
                          "out_of_orderness_ms": null } },
            { "id": "count", "kind": "operator", "module": "builtin:counter", "parallelism": parallelism,
              "config": { "pad": pad } },
            { "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": parallelism }
        ],
        "edges": [
            { "from": "in", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "memory_limit_mb": 4096, "cpu_limit_ms": 600000,
                      "checkpoint": { "interval_ms": null, "timeout_ms": 600000 } }
    }))?)
}

fn timed<T>(
    steps: &mut Vec<Step>,
    name: &'static str,
    f: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let started = Instant::now();
    let out = f()?;
    steps.push(Step { name, seconds: started.elapsed().as_secs_f64() });
    Ok(out)
}

/// Runs the benchmark.
pub async fn run(host: &Arc<GuestHost>, o: &SavepointBenchOptions) -> anyhow::Result<SavepointBenchResult> {
    let _ = std::fs::remove_dir_all(&o.dir);
    std::fs::create_dir_all(&o.dir)?;
    let modules = LocalModules::new(host.clone(), ".");
    let job_spec = spec(o.keys, o.value_bytes, 2)?;
    let plan = weir::plan::plan(&job_spec, &modules)?;
    let store = Store::open(&o.dir.join("a.redb"))?;
    let env = RunEnv::new("source-job", store.clone());
    run_job_checkpointed(&plan, &env).await?;
    let (meta, manifest) =
        store.latest_completed("source-job")?.ok_or_else(|| anyhow::anyhow!("no checkpoint"))?;
    let mut steps = Vec::new();

    let entries = timed(&mut steps, "read the checkpoint's state (a restart's read)", || {
        let mut n = 0u64;
        for subtasks in manifest.values() {
            for state in subtasks.values() {
                for chain in state.chains.values() {
                    n += store.read_chain("source-job", chain)?.len() as u64;
                }
            }
        }
        Ok(n)
    })?;
    let info = SavepointInfo {
        id: "bench".into(),
        owner: "bench".into(),
        job: "source-job".into(),
        checkpoint: meta.id,
        created_ms: 0,
        bytes: 0,
        entries: 0,
        origin: None,
        description: serde_json::to_value(
            Description::of(&job_spec, &manifest).map_err(anyhow::Error::msg)?,
        )?,
    };
    let info = timed(&mut steps, "copy into a savepoint", || Ok(store.create_savepoint(info, &manifest)?))?;
    let file = o.dir.join("bench.weirsp");
    let file_bytes = timed(&mut steps, "export to a file", || {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&file)?);
        let n = store.export_savepoint("bench", &mut out)?;
        std::io::Write::flush(&mut out)?;
        Ok(n)
    })?;
    let other = Store::open(&o.dir.join("b.redb"))?;
    timed(&mut steps, "import the file into another store", || {
        let mut input = std::io::BufReader::new(std::fs::File::open(&file)?);
        Ok(other.import_savepoint(&mut input, "bench", "bench")?)
    })?;
    for (parallelism, name) in
        [(2u32, "start a job from it, same parallelism"), (4, "start a job from it, rescaled 2 → 4")]
    {
        let plan = weir::plan::plan(&spec(o.keys, o.value_bytes, parallelism)?, &modules)?;
        let job = format!("restored-{parallelism}");
        let started = Instant::now();
        restore_into(&store, &job, &plan, &info, RestoreOptions::default()).await?;
        steps.push(Step { name, seconds: started.elapsed().as_secs_f64() });
    }
    drop((store, other));
    let _ = std::fs::remove_dir_all(&o.dir);
    Ok(SavepointBenchResult { state_bytes: info.bytes, entries, file_bytes, steps })
}

/// Runs the benchmark and prints a table.
pub async fn run_and_print(host: &Arc<GuestHost>, o: &SavepointBenchOptions) -> anyhow::Result<()> {
    let r = run(host, o).await?;
    let mib = r.state_bytes as f64 / 1048576.0;
    println!(
        "savepoints of {:.1} MiB of keyed state ({} entries of ~{} B, 2 subtasks); export file {:.1} MiB ({:.3}x the state)",
        mib,
        r.entries,
        o.value_bytes,
        r.file_bytes as f64 / 1048576.0,
        r.file_bytes as f64 / r.state_bytes.max(1) as f64
    );
    let baseline = r.steps.first().map_or(1.0, |s| s.seconds).max(1e-9);
    for s in &r.steps {
        println!(
            "  {:<48} {:>8.3} s {:>8.0} MiB/s {:>7.2}x the read",
            s.name,
            s.seconds,
            mib / s.seconds.max(1e-9),
            s.seconds / baseline
        );
    }
    Ok(())
}
