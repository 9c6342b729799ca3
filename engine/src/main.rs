//! The `weir` command.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use weir::guest::GuestHost;
use weir::runtime::JobReport;

#[derive(Parser)]
#[command(name = "weir", version, about = "A stream-processing engine for sandboxed WebAssembly operators")]
struct Cli {
    /// Data directory (compiled-module cache, outputs of `weir demo`).
    #[arg(long, global = true, default_value = "weir-data", env = "WEIR_DATA_DIR")]
    data_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Suite {
    Nexmark,
    Checkpoints,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a job file to completion on this machine and prints a summary. The job is
    /// checkpointed into `<data-dir>/weir.redb`; run the same command again after a crash
    /// and it resumes from its latest completed checkpoint.
    Run {
        /// The job spec (JSON).
        job: PathBuf,
        /// The job id checkpoints are kept under (default: the spec's name, else the file
        /// name without extension).
        #[arg(long)]
        job_id: Option<String>,
        /// Run without checkpoints (and without exactly-once sinks).
        #[arg(long)]
        no_checkpoints: bool,
    },
    /// Prints the checkpoint history of a job.
    Checkpoints {
        /// The job id.
        job_id: String,
    },
    /// Runs the bundled demo jobs (word count and Nexmark q1) and shows their results.
    Demo,
    /// Benchmarks: `nexmark` (q1/q2 records per second per core, Wasm versus native) or
    /// `checkpoints` (throughput with and without checkpoints, checkpoint size and duration,
    /// incremental bytes written, restore speed).
    Bench {
        /// Which benchmark.
        #[arg(value_enum, default_value_t = Suite::Nexmark)]
        suite: Suite,
        /// nexmark: bids per measured pass.
        #[arg(long, default_value_t = 65_536)]
        records: usize,
        /// nexmark: minimum seconds per measurement.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        /// checkpoints: records of the throughput job.
        #[arg(long, default_value_t = 20_000_000)]
        job_records: u64,
        /// checkpoints: distinct keys of the throughput job.
        #[arg(long, default_value_t = 100_000)]
        job_keys: u64,
        /// checkpoints: runs of each throughput variant.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// checkpoints: key counts for size and duration vs state size.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000,500000")]
        state_keys: Vec<u64>,
        /// checkpoints: keys of the incremental benchmark (1 GiB of state at 1 KiB values).
        #[arg(long, default_value_t = 1_000_000)]
        incremental_keys: u64,
        /// checkpoints: bytes per state value.
        #[arg(long, default_value_t = 1000)]
        value_bytes: usize,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "weir=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    if let Command::Checkpoints { job_id } = &cli.command {
        // Reads the store only: no engine, and nothing is created.
        return checkpoints(&cli.data_dir, job_id);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let host = GuestHost::new(Some(cli.data_dir.join("module-cache")))?;
        match cli.command {
            Command::Run { job, job_id, no_checkpoints } => {
                if no_checkpoints {
                    let report = weir::run_job_file(host, &job).await?;
                    print_report(&job.display().to_string(), &report);
                } else {
                    run_checkpointed(host, &cli.data_dir, &job, job_id).await?;
                }
            }
            Command::Checkpoints { .. } => unreachable!("handled above"),
            Command::Demo => demo(host, &cli.data_dir).await?,
            Command::Bench { suite: Suite::Nexmark, records, seconds, .. } => {
                bench(&host, records, seconds).await?
            }
            Command::Bench {
                suite: Suite::Checkpoints,
                job_records,
                job_keys,
                runs,
                state_keys,
                incremental_keys,
                value_bytes,
                ..
            } => {
                let dir = cli.data_dir.join("bench");
                let options = weir::checkpoint_bench::CheckpointBenchOptions {
                    records: job_records,
                    keys: job_keys,
                    runs: runs.max(1),
                    state_keys,
                    incremental_keys,
                    value_bytes,
                    dir: dir.clone(),
                };
                weir::checkpoint_bench::run_and_print(&host, &options).await?;
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        Ok(())
    })
}

fn open_store(data_dir: &std::path::Path) -> anyhow::Result<weir_store::Store> {
    std::fs::create_dir_all(data_dir).with_context(|| format!("cannot create {}", data_dir.display()))?;
    let path = data_dir.join("weir.redb");
    weir_store::Store::open(&path).with_context(|| format!("cannot open the store {}", path.display()))
}

async fn run_checkpointed(
    host: Arc<GuestHost>,
    data_dir: &std::path::Path,
    job: &std::path::Path,
    job_id: Option<String>,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let text =
        std::fs::read_to_string(job).with_context(|| format!("cannot read job file {}", job.display()))?;
    let spec = weir::plan::JobSpec::from_json(&text)?;
    let base = job.parent().unwrap_or(std::path::Path::new("."));
    let plan = weir::plan::plan(&spec, &weir::modules::LocalModules::new(host, base))?;
    let job_id = job_id
        .or_else(|| (!spec.name.is_empty()).then(|| spec.name.clone()))
        .or_else(|| job.file_stem().map(|s| s.to_string_lossy().trim_end_matches(".job").to_string()))
        .unwrap_or_else(|| "job".into());
    let store = open_store(data_dir)?;
    let env = weir::runtime::RunEnv::new(job_id.clone(), store);
    let mut events = env.subscribe();
    let printer = tokio::spawn(async move {
        use weir::runtime::JobEvent;
        while let Ok(event) = events.recv().await {
            let line = match event {
                JobEvent::CheckpointCompleted { id, is_final, duration_ms, size } => format!(
                    "checkpoint {id} completed{} in {duration_ms:.1} ms, {size} bytes",
                    if is_final { " (final)" } else { "" }
                ),
                JobEvent::CheckpointFailed { id, reason } => format!("checkpoint {id} failed: {reason}"),
                JobEvent::Restarting { attempt, error } => format!("restart {attempt}: {error}"),
                JobEvent::Restored { checkpoint } => format!("restored from checkpoint {checkpoint}"),
            };
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    });
    let result = weir::runtime::run_job_checkpointed(&plan, &env).await;
    drop(env);
    let _ = printer.await;
    let report = result?;
    if report.already_finished {
        println!(
            "job {job_id} had already finished (final checkpoint {}); its output is committed",
            report.final_checkpoint.unwrap_or_default()
        );
    } else {
        print_report(&job_id, &report);
        println!(
            "final checkpoint {}, {} restart(s)",
            report.final_checkpoint.unwrap_or_default(),
            report.restarts
        );
    }
    Ok(())
}

fn checkpoints(data_dir: &std::path::Path, job_id: &str) -> anyhow::Result<()> {
    use weir_store::CheckpointStorage as _;
    let path = data_dir.join("weir.redb");
    anyhow::ensure!(
        path.exists(),
        "no store at {} (nothing has run with this data directory)",
        path.display()
    );
    let store = open_store(data_dir)?;
    let history = store.history(job_id)?;
    anyhow::ensure!(!history.is_empty(), "no checkpoints of job `{job_id}` in {}", path.display());
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "id",
        "status",
        "trigger time (UTC)",
        "duration ms",
        "size bytes",
        "full size bytes",
        "subtasks",
        "max alignment ms",
        "note",
    ]);
    for c in &history {
        let status = format!("{:?}", c.status).to_lowercase();
        let note = match (&c.failure, c.is_final, c.retained) {
            (Some(f), _, _) => f.clone(),
            (None, true, _) => "final".into(),
            (None, false, false) if c.status == weir_store::CheckpointStatus::Completed => "subsumed".into(),
            _ => String::new(),
        };
        table.add_row([
            c.id.to_string(),
            status,
            format_time(c.trigger_time_ms),
            c.duration_ms.map(|d| format!("{d:.1}")).unwrap_or_default(),
            c.state_size.to_string(),
            c.full_size.to_string(),
            c.subtasks.len().to_string(),
            format!("{:.1}", c.subtasks.iter().map(|s| s.alignment_ms).fold(0.0, f64::max)),
            note,
        ]);
    }
    println!("checkpoints of job {job_id}:");
    println!("{table}");
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS.mmm` of a Unix time in milliseconds (UTC).
fn format_time(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

fn print_report(name: &str, report: &JobReport) {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "node",
        "kind",
        "parallelism",
        "records in",
        "records out",
    ]);
    for n in &report.nodes {
        table.add_row([
            n.id.clone(),
            format!("{:?}", n.kind).to_lowercase(),
            n.parallelism.to_string(),
            n.records_in.to_string(),
            n.records_out.to_string(),
        ]);
    }
    println!("job {name}: finished in {:.3} s", report.duration.as_secs_f64());
    println!("{table}");
    println!(
        "{} source records, {:.0} records/s, {} subtasks",
        report.source_records(),
        report.records_per_second(),
        report.tasks
    );
}

async fn bench(host: &GuestHost, records: usize, seconds: f64) -> anyhow::Result<()> {
    let results = weir::bench::run(host, records, std::time::Duration::from_secs_f64(seconds)).await?;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "query",
        "batch",
        "wasm records/s",
        "native records/s",
        "wasm / native",
    ]);
    for r in &results {
        table.add_row([
            r.query.to_string(),
            r.batch_size.to_string(),
            format!("{:.2} M", r.wasm / 1e6),
            format!("{:.2} M", r.native / 1e6),
            format!("{:.2}", r.wasm / r.native),
        ]);
    }
    println!("Nexmark bids, one core (one operator instance, current-thread runtime):");
    println!("{table}");
    Ok(())
}

const DEMO_JOBS: &[(&str, &str)] = &[
    ("wordcount", include_str!("../../examples/wordcount/wordcount.job.json")),
    ("nexmark-q1", include_str!("../../examples/nexmark-q1/q1.job.json")),
];

async fn demo(host: Arc<GuestHost>, data_dir: &std::path::Path) -> anyhow::Result<()> {
    let out_root = data_dir.join("demo-output");
    for (name, text) in DEMO_JOBS {
        let mut spec = weir::plan::JobSpec::from_json(text)?;
        let out_dir = out_root.join(name);
        for node in &mut spec.nodes {
            if node.kind == weir::plan::NodeKind::Sink && node.connector.as_deref() == Some("file") {
                node.config = serde_json::json!({ "path": out_dir });
            }
        }
        let plan = weir::plan::plan(&spec, &weir::modules::LocalModules::new(host.clone(), "."))?;
        let report = weir::runtime::run_job(&plan).await?;
        print_report(name, &report);
        let first = out_dir.join("part-0.jsonl");
        let text = std::fs::read_to_string(&first).with_context(|| format!("reading {}", first.display()))?;
        println!("first records of {}:", first.display());
        for line in text.lines().take(5) {
            println!("  {line}");
        }
        println!();
    }
    println!("outputs are in {}", out_root.display());
    Ok(())
}
