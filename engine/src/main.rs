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

#[derive(Subcommand)]
enum Command {
    /// Runs a job file to completion on this machine and prints a summary.
    Run {
        /// The job spec (JSON).
        job: PathBuf,
    },
    /// Runs the bundled demo jobs (word count and Nexmark q1) and shows their results.
    Demo,
    /// Measures Nexmark q1/q2 records per second per core, Wasm versus native.
    Bench {
        /// Bids per measured pass.
        #[arg(long, default_value_t = 65_536)]
        records: usize,
        /// Minimum seconds per measurement.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
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
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let host = GuestHost::new(Some(cli.data_dir.join("module-cache")))?;
        match cli.command {
            Command::Run { job } => {
                let report = weir::run_job_file(host, &job).await?;
                print_report(&job.display().to_string(), &report);
            }
            Command::Demo => demo(host, &cli.data_dir).await?,
            Command::Bench { records, seconds } => bench(&host, records, seconds).await?,
        }
        Ok(())
    })
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
