//! `weir run`: a job file run to completion on this machine, checkpointed into the
//! data directory's store.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use weir::guest::GuestHost;
use weir::runtime::JobReport;

/// `weir run`'s arguments.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The job spec (JSON).
    job: PathBuf,
    /// The job id checkpoints are kept under (default: the spec's name, else the file
    /// name without extension).
    #[arg(long)]
    job_id: Option<String>,
    /// Run without checkpoints (and without exactly-once sinks).
    #[arg(long)]
    no_checkpoints: bool,
}

/// `weir run` has no named Kafka connections (a server's admin configures those): a Kafka
/// node writes its connection inline under `brokers`.
fn refuse_named_kafka(plan: &weir::plan::Plan) -> anyhow::Result<()> {
    use weir::connectors::{SinkConfig, SourceKind};
    use weir::plan::NodeBody;
    for node in &plan.nodes {
        let named = match &node.body {
            NodeBody::Source(c) => match &c.kind {
                SourceKind::Kafka(k) if k.access.is_none() => k.connection.as_deref(),
                _ => None,
            },
            NodeBody::Sink(SinkConfig::Kafka(k)) if k.access.is_none() => k.connection.as_deref(),
            _ => None,
        };
        if let Some(name) = named {
            anyhow::bail!(
                "node `{}`: `weir run` has no named Kafka connections (`{name}` names one of a server's); \
                 write the connection inline under `brokers`",
                node.id
            );
        }
    }
    Ok(())
}

/// Runs `weir run`.
pub async fn run(data_dir: &Path, args: RunArgs) -> anyhow::Result<()> {
    let RunArgs { job, job_id, no_checkpoints } = args;
    let host = GuestHost::new(Some(data_dir.join("module-cache")))?;
    let text =
        std::fs::read_to_string(&job).with_context(|| format!("cannot read job file {}", job.display()))?;
    let spec = weir::plan::JobSpec::from_json(&text)?;
    // Modules named by path are relative to the job file.
    let base = job.parent().unwrap_or(Path::new("."));
    let plan = weir::plan::plan(&spec, &weir::modules::LocalModules::new(host, base))?;
    refuse_named_kafka(&plan)?;
    if no_checkpoints {
        let report = weir::runtime::run_job(&plan).await?;
        print_report(&job.display().to_string(), &report);
        return Ok(());
    }
    let job_id = job_id
        .or_else(|| (!spec.name.is_empty()).then(|| spec.name.clone()))
        .or_else(|| job.file_stem().map(|s| s.to_string_lossy().trim_end_matches(".job").to_string()))
        .unwrap_or_else(|| "job".into());
    run_checkpointed(data_dir, &plan, job_id).await
}

/// Opens (creating it if needed) the store of the data directory.
pub fn open_store(data_dir: &Path) -> anyhow::Result<weir_store::Store> {
    std::fs::create_dir_all(data_dir).with_context(|| format!("cannot create {}", data_dir.display()))?;
    let path = data_dir.join("weir.redb");
    weir_store::Store::open(&path).with_context(|| format!("cannot open the store {}", path.display()))
}

async fn run_checkpointed(data_dir: &Path, plan: &weir::plan::Plan, job_id: String) -> anyhow::Result<()> {
    use std::io::Write as _;
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
                JobEvent::Restarting { attempt, error, delay_ms, .. } => {
                    format!("restart {attempt} in {delay_ms} ms: {error}")
                }
                JobEvent::Restored { checkpoint } => format!("restored from checkpoint {checkpoint}"),
                JobEvent::TookOut { error, action, .. } => {
                    format!("took a record out ({}): {error}", action.name())
                }
            };
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    });
    let result = weir::runtime::run_job_checkpointed(plan, &env).await;
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
