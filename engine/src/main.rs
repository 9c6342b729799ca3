//! The `weir` command.

use std::path::{Path, PathBuf};
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
    /// `--data-dir` was given on the command line.
    #[arg(skip)]
    data_dir_given: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Suite {
    Nexmark,
    Checkpoints,
    Savepoints,
    Server,
    Languages,
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
    /// Runs a Weir server: the HTTP API over the store in the data directory. Jobs that were
    /// running when it last stopped resume from their latest checkpoints.
    Serve {
        /// Address to listen on (overrides the config file and `WEIR_LISTEN`).
        #[arg(long)]
        listen: Option<String>,
        /// Config file (TOML); `WEIR_*` variables override it.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// The demo: a server on a fresh data directory (`<data-dir>/demo`) with a demo tenant,
    /// the example modules uploaded and a word-count job checkpointing every 2 s. Prints the
    /// address and the tenant's token, and writes them where the CLI client finds them.
    Demo {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: String,
    },
    /// Modules on a server.
    Module {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: ModuleCommand,
    },
    /// Jobs on a server.
    Job {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: JobCommand,
    },
    /// Checkpoints of a job on a server.
    Checkpoint {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: CheckpointCommand,
    },
    /// Savepoints on a server: take, list, export, import, dispose.
    Savepoint {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: SavepointCommand,
    },
    /// Streams on a server.
    Stream {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: StreamCommand,
    },
    /// Tenants on a server (admin token).
    Tenant {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Benchmarks: `nexmark` (q1/q2 records per second per core, Wasm versus native),
    /// `checkpoints` (throughput with and without checkpoints, checkpoint size and duration,
    /// incremental bytes written, restore speed), `savepoints` (copy, export, import and
    /// restore, rescaled or not, against reading the checkpoint) or `server` (instantiation,
    /// memory per idle instance, API latency over a long history, a quiet tenant beside a
    /// noisy one) or `languages` (word count and Nexmark q17 per core, in Python,
    /// JavaScript and C beside Rust).
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
        /// savepoints: keys of the state.
        #[arg(long, default_value_t = 200_000)]
        savepoint_keys: u64,
        /// checkpoints, savepoints: bytes per state value.
        #[arg(long, default_value_t = 1000)]
        value_bytes: usize,
        /// server: operator instances created.
        #[arg(long, default_value_t = 200)]
        instances: usize,
        /// server: checkpoints in the listed history.
        #[arg(long, default_value_t = 10_000)]
        history: u64,
        /// server: requests per latency figure.
        #[arg(long, default_value_t = 20)]
        requests: usize,
        /// server: seconds per throughput measurement.
        #[arg(long, default_value_t = 5.0)]
        window: f64,
        /// server: lines per second of the quiet tenant's job.
        #[arg(long, default_value_t = 20_000)]
        quiet_rate: u64,
        /// languages: `NAME=DIR`, a language's build directory holding `wordcount.wasm` and
        /// `nexmark-q17.wasm` (repeatable; default: `examples/{python,js,c}/build` where
        /// they exist).
        #[arg(long = "lang", value_name = "NAME=DIR")]
        languages: Vec<String>,
        /// languages: records per batch.
        #[arg(long, default_value_t = 1024)]
        batch: usize,
    },
}

/// Which server, and as whom.
#[derive(clap::Args, Clone)]
struct Target {
    /// The server (default: `WEIR_URL`, else `<data-dir>/client.toml`, else
    /// http://127.0.0.1:8080).
    #[arg(long, env = "WEIR_URL")]
    url: Option<String>,
    /// The token (default: `WEIR_TOKEN`, else `<data-dir>/client.toml`).
    #[arg(long, env = "WEIR_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

#[derive(Subcommand)]
enum ModuleCommand {
    /// Uploads a component.
    Upload {
        /// The `.wasm` file.
        file: PathBuf,
        /// Its name (default: the file name without `.wasm`).
        #[arg(long)]
        name: Option<String>,
    },
    /// Lists the modules.
    List,
    /// Deletes a module no job uses.
    Delete {
        /// Module id.
        id: String,
    },
}

#[derive(Subcommand)]
enum JobCommand {
    /// Submits a job spec (JSON file) and starts it.
    Submit {
        /// The spec.
        spec: PathBuf,
        /// Start from this savepoint (state mapped by node id; rescaled by key group;
        /// migrated or refused when a module's state schema changed).
        #[arg(long, value_name = "ID")]
        from_savepoint: Option<String>,
        /// With --from-savepoint: drop savepoint state that has no place in the job.
        #[arg(long, requires = "from_savepoint")]
        allow_non_restored_state: bool,
    },
    /// Lists the jobs.
    List,
    /// Shows a job: status, graph and live figures.
    Get {
        /// Job id.
        id: String,
    },
    /// Stops a job at a final checkpoint.
    Stop {
        /// Job id.
        id: String,
    },
    /// Cancels a job at once.
    Cancel {
        /// Job id.
        id: String,
    },
    /// Restarts a job from its latest checkpoint.
    Restart {
        /// Job id.
        id: String,
    },
}

#[derive(Subcommand)]
enum CheckpointCommand {
    /// Lists a job's checkpoints with the summary.
    List {
        /// Job id.
        job: String,
        /// Most checkpoints listed.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Triggers a checkpoint and waits for its outcome.
    Trigger {
        /// Job id.
        job: String,
    },
}

#[derive(Subcommand)]
enum SavepointCommand {
    /// Takes a savepoint of a job and waits until it completed or failed.
    Trigger {
        /// Job id.
        job: String,
        /// What happens to the job: keep-running, cancel, stop, or drain (stop with drain:
        /// the pipeline empties and the job finishes).
        #[arg(long, value_enum, default_value_t = SavepointModeArg::KeepRunning)]
        mode: SavepointModeArg,
    },
    /// Lists savepoints (of one job with --job).
    List {
        /// Only this job's.
        #[arg(long)]
        job: Option<String>,
    },
    /// Shows a savepoint: status, size and the job it describes.
    Get {
        /// Savepoint id.
        id: String,
    },
    /// Downloads a savepoint as one portable file.
    Export {
        /// Savepoint id.
        id: String,
        /// The file to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Uploads a savepoint file (from any Weir server) as a new savepoint.
    Import {
        /// The file.
        file: PathBuf,
    },
    /// Disposes of a savepoint.
    Delete {
        /// Savepoint id.
        id: String,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SavepointModeArg {
    KeepRunning,
    Cancel,
    Stop,
    Drain,
}

impl SavepointModeArg {
    fn api_name(self) -> &'static str {
        match self {
            SavepointModeArg::KeepRunning => "keep_running",
            SavepointModeArg::Cancel => "cancel",
            SavepointModeArg::Stop => "stop",
            SavepointModeArg::Drain => "drain",
        }
    }
}

#[derive(Subcommand)]
enum StreamCommand {
    /// Creates a stream.
    Create {
        /// Its name.
        name: String,
        /// Partitions.
        #[arg(long, default_value_t = 1)]
        partitions: u32,
    },
    /// Lists the streams.
    List,
    /// Appends records: JSON lines from a file or stdin (`-`), each a record object with
    /// `value` (and optionally `key`, `timestamp`, `partition`) or a bare value.
    Push {
        /// The stream.
        name: String,
        /// The file (`-` for stdin).
        #[arg(default_value = "-")]
        file: PathBuf,
    },
    /// Reads records of a partition.
    Read {
        /// The stream.
        name: String,
        /// Partition.
        #[arg(long, default_value_t = 0)]
        partition: u32,
        /// First offset.
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// Most records.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
}

#[derive(Subcommand)]
enum TenantCommand {
    /// Creates a tenant and prints its token.
    Create {
        /// Its name.
        name: String,
    },
    /// Lists the tenants.
    List,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "weir=info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches)?;
    cli.data_dir_given = matches.value_source("data_dir") == Some(clap::parser::ValueSource::CommandLine);
    if let Command::Checkpoints { job_id } = &cli.command {
        // Reads the store only: no engine, and nothing is created.
        return checkpoints(&cli.data_dir, job_id);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let data_dir = cli.data_dir.clone();
    match cli.command {
        Command::Serve { listen, config } => {
            return runtime.block_on(serve(cli.data_dir_given.then_some(data_dir), listen, config));
        }
        Command::Demo { listen } => return runtime.block_on(demo(data_dir, listen)),
        Command::Module { target, command } => {
            return runtime.block_on(async { module_command(&client(&data_dir, target)?, command).await });
        }
        Command::Job { target, command } => {
            return runtime.block_on(async { job_command(&client(&data_dir, target)?, command).await });
        }
        Command::Checkpoint { target, command } => {
            return runtime
                .block_on(async { checkpoint_command(&client(&data_dir, target)?, command).await });
        }
        Command::Savepoint { target, command } => {
            return runtime.block_on(async { savepoint_command(&client(&data_dir, target)?, command).await });
        }
        Command::Stream { target, command } => {
            return runtime.block_on(async { stream_command(&client(&data_dir, target)?, command).await });
        }
        Command::Tenant { target, command } => {
            return runtime.block_on(async { tenant_command(&client(&data_dir, target)?, command).await });
        }
        _ => {}
    }
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
            Command::Serve { .. }
            | Command::Demo { .. }
            | Command::Module { .. }
            | Command::Job { .. }
            | Command::Checkpoint { .. }
            | Command::Savepoint { .. }
            | Command::Stream { .. }
            | Command::Tenant { .. } => unreachable!("handled above"),
            Command::Bench { suite: Suite::Languages, records, seconds, languages, batch, .. } => {
                bench_languages(&host, languages, records, batch, seconds).await?
            }
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
            Command::Bench { suite: Suite::Savepoints, savepoint_keys, value_bytes, .. } => {
                let options = weir::savepoint_bench::SavepointBenchOptions {
                    keys: savepoint_keys,
                    value_bytes,
                    dir: cli.data_dir.join("bench-savepoints"),
                };
                weir::savepoint_bench::run_and_print(&host, &options).await?;
            }
            Command::Bench {
                suite: Suite::Server, instances, history, requests, window, quiet_rate, ..
            } => {
                let options = weir::server_bench::ServerBenchOptions {
                    dir: cli.data_dir.join("bench-server"),
                    instances: instances.max(1),
                    checkpoints: history,
                    requests: requests.max(1),
                    seconds: window,
                    quiet_rate,
                };
                weir::server_bench::run_and_print(&options).await?;
            }
        }
        Ok(())
    })
}

fn open_store(data_dir: &Path) -> anyhow::Result<weir_store::Store> {
    std::fs::create_dir_all(data_dir).with_context(|| format!("cannot create {}", data_dir.display()))?;
    let path = data_dir.join("weir.redb");
    weir_store::Store::open(&path).with_context(|| format!("cannot open the store {}", path.display()))
}

async fn run_checkpointed(
    host: Arc<GuestHost>,
    data_dir: &Path,
    job: &Path,
    job_id: Option<String>,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let text =
        std::fs::read_to_string(job).with_context(|| format!("cannot read job file {}", job.display()))?;
    let spec = weir::plan::JobSpec::from_json(&text)?;
    let base = job.parent().unwrap_or(Path::new("."));
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

fn checkpoints(data_dir: &Path, job_id: &str) -> anyhow::Result<()> {
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

async fn bench_languages(
    host: &GuestHost,
    languages: Vec<String>,
    records: usize,
    batch_size: usize,
    seconds: f64,
) -> anyhow::Result<()> {
    let dirs: Vec<(String, PathBuf)> = if languages.is_empty() {
        ["python", "js", "c"]
            .into_iter()
            .map(|l| (l.to_string(), PathBuf::from(format!("examples/{l}/build"))))
            .filter(|(_, d)| d.is_dir())
            .collect()
    } else {
        languages
            .iter()
            .map(|l| match l.split_once('=') {
                Some((name, dir)) => Ok((name.to_string(), PathBuf::from(dir))),
                None => Err(anyhow::anyhow!("--lang takes NAME=DIR, got `{l}`")),
            })
            .collect::<Result<_, _>>()?
    };
    if dirs.is_empty() {
        println!(
            "no language builds found: build them with examples/<lang>/build.sh, or pass --lang NAME=DIR"
        );
    }
    let found = |dir: &Path, file: &str| Some(dir.join(file)).filter(|p| p.is_file());
    let mut measured = Vec::new();
    for (name, dir) in &dirs {
        let (wordcount, q17) = (found(dir, "wordcount.wasm"), found(dir, "nexmark-q17.wasm"));
        anyhow::ensure!(
            wordcount.is_some() || q17.is_some(),
            "{name}: {} holds neither wordcount.wasm nor nexmark-q17.wasm",
            dir.display()
        );
        measured.push((name.clone(), wordcount, q17));
    }
    let options = weir::lang_bench::LanguageBenchOptions {
        languages: measured,
        records,
        batch_size,
        min: std::time::Duration::from_secs_f64(seconds),
    };
    let results = weir::lang_bench::run(host, &options).await?;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "workload",
        "language",
        "records/s",
        "vs Rust",
        "component",
    ]);
    for r in &results {
        let rust = results.iter().find(|x| x.workload == r.workload && x.language == "rust").map(|x| x.rate);
        table.add_row([
            r.workload.to_string(),
            r.language.clone(),
            format!("{:.0} k", r.rate / 1e3),
            rust.map(|rust| format!("{:.3}", r.rate / rust)).unwrap_or_default(),
            if r.size >= 1_000_000 {
                format!("{:.1} MB", r.size as f64 / 1e6)
            } else {
                format!("{} KB", r.size / 1000)
            },
        ]);
    }
    println!(
        "One operator instance per module, one core, {batch_size} records per batch, {records} records per pass:"
    );
    println!("{table}");
    Ok(())
}

async fn serve(
    data_dir: Option<PathBuf>,
    listen: Option<String>,
    config: Option<PathBuf>,
) -> anyhow::Result<()> {
    let mut config = weir::server::ServerConfig::load(config.as_deref()).map_err(anyhow::Error::msg)?;
    if let Some(listen) = listen {
        config.listen = listen;
    }
    // `--data-dir` wins over the config file (WEIR_DATA_DIR is read by both).
    if let Some(dir) = data_dir {
        config.data_dir = dir;
    }
    if config.admin_token.is_none() {
        tracing::warn!(
            "no admin_token configured (WEIR_ADMIN_TOKEN): tenants cannot be managed over the API"
        );
    }
    let server = weir::server::Server::open(config).await?;
    weir::api::serve(server, |address| {
        println!("weir server listening on http://{address}");
    })
    .await
}

async fn demo(data_dir: PathBuf, listen: String) -> anyhow::Result<()> {
    let dir = data_dir.join("demo");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let admin_token = weir::server::ids::new_token();
    let config = weir::server::ServerConfig {
        listen,
        data_dir: dir.clone(),
        admin_token: Some(admin_token.clone()),
        ..weir::server::ServerConfig::default()
    };
    let server = weir::server::Server::open(config).await?;
    let demo = weir::server::demo::setup(&server).await?;
    let token = demo.token.clone();
    weir::api::serve(server, move |address| {
        let url = format!("http://{address}");
        let client = weir::client::ClientConfig { url: Some(url.clone()), token: Some(token.clone()) };
        let written = client.write(&data_dir).is_ok();
        println!("Weir demo on {url} (data in {})", dir.display());
        println!("  open {url}/ in a browser and sign in with the tenant's token");
        println!("  tenant `demo`, token: {token}");
        println!("  admin token:          {admin_token}");
        for job in &demo.jobs {
            println!("  job {} `{}` started, checkpoint every 2 s", job.id, job.name);
        }
        println!();
        if written {
            println!("The CLI finds this server ({}/client.toml):", data_dir.display());
        }
        println!("  weir job list");
        println!("  weir checkpoint list {}", demo.jobs[0].id);
        println!("  echo '\"to be or not to be\"' | weir stream push lines");
        println!("  weir stream read live-counts");
        println!("  curl -H 'Authorization: Bearer {token}' {url}/api/v1/jobs");
        println!(
            "Press Ctrl-C to stop; jobs resume when the server starts again on the same data directory."
        );
    })
    .await
}

fn client(data_dir: &Path, target: Target) -> anyhow::Result<weir::client::Client> {
    let file = weir::client::ClientConfig::read(data_dir)?;
    let url = target.url.or(file.url).unwrap_or_else(|| "http://127.0.0.1:8080".into());
    Ok(weir::client::Client::new(&url, target.token.or(file.token)))
}

fn ms_time(v: &serde_json::Value, key: &str) -> String {
    v.get(key).and_then(serde_json::Value::as_u64).map(format_time).unwrap_or_default()
}

async fn module_command(c: &weir::client::Client, command: ModuleCommand) -> anyhow::Result<()> {
    use std::io::IsTerminal as _;
    use weir::client::{field, items, print_table};
    match command {
        ModuleCommand::Upload { file, name } => {
            let m = c.upload(&file, name.as_deref(), std::io::stderr().is_terminal()).await?;
            println!("module {} `{}` ({} bytes)", field(&m, "id"), field(&m, "name"), field(&m, "size"));
        }
        ModuleCommand::List => {
            let list = c.get("/api/v1/modules").await?;
            let rows = items(&list)
                .iter()
                .map(|m| vec![field(m, "id"), field(m, "name"), field(m, "size"), ms_time(m, "created_ms")])
                .collect();
            print_table(&["id", "name", "bytes", "uploaded (UTC)"], rows);
        }
        ModuleCommand::Delete { id } => {
            c.delete(&format!("/api/v1/modules/{id}")).await?;
            println!("module {id} deleted");
        }
    }
    Ok(())
}

async fn job_command(c: &weir::client::Client, command: JobCommand) -> anyhow::Result<()> {
    use weir::client::{field, items, print_table};
    match command {
        JobCommand::Submit { spec, from_savepoint, allow_non_restored_state } => {
            let text =
                std::fs::read_to_string(&spec).with_context(|| format!("cannot read {}", spec.display()))?;
            let body: serde_json::Value =
                serde_json::from_str(&text).with_context(|| format!("{} is not JSON", spec.display()))?;
            let path = match &from_savepoint {
                Some(id) => format!(
                    "/api/v1/jobs?from_savepoint={id}{}",
                    if allow_non_restored_state { "&allow_non_restored_state=true" } else { "" }
                ),
                None => "/api/v1/jobs".to_string(),
            };
            let job = c.post(&path, Some(&body)).await?;
            println!("job {} `{}` {}", field(&job, "id"), field(&job, "name"), field(&job, "status"));
            if let Some(r) = job.get("restored_from").filter(|r| !r.is_null()) {
                println!(
                    "restored from savepoint {} as checkpoint {}",
                    field(r, "savepoint"),
                    field(r, "checkpoint")
                );
                for n in r.get("nodes").and_then(serde_json::Value::as_array).into_iter().flatten() {
                    if n.get("restored").and_then(serde_json::Value::as_bool) == Some(true) {
                        println!(
                            "  {}: parallelism {} -> {}{}",
                            field(n, "id"),
                            field(n, "from_parallelism"),
                            field(n, "parallelism"),
                            if n.get("migrated").and_then(serde_json::Value::as_bool) == Some(true) {
                                format!(", state migrated {}", field(n, "state_versions"))
                            } else {
                                String::new()
                            }
                        );
                    }
                }
                for d in r.get("dropped").and_then(serde_json::Value::as_array).into_iter().flatten() {
                    println!("  dropped: {}", d.as_str().unwrap_or_default());
                }
            }
        }
        JobCommand::List => {
            let list = c.get("/api/v1/jobs").await?;
            let rows = items(&list)
                .iter()
                .map(|j| {
                    vec![
                        field(j, "id"),
                        field(j, "name"),
                        field(j, "status"),
                        field(j, "subtasks"),
                        field(j, "restarts"),
                        ms_time(j, "start_ms"),
                        field(j, "error"),
                    ]
                })
                .collect();
            print_table(&["id", "name", "status", "subtasks", "restarts", "started (UTC)", "error"], rows);
        }
        JobCommand::Get { id } => {
            let j = c.get(&format!("/api/v1/jobs/{id}")).await?;
            println!("job {} `{}`: {}", field(&j, "id"), field(&j, "name"), field(&j, "status"));
            if !field(&j, "error").is_empty() {
                println!("error: {}", field(&j, "error"));
            }
            let vertices =
                j.get("vertices").and_then(serde_json::Value::as_array).cloned().unwrap_or_default();
            let rows = vertices
                .iter()
                .map(|v| {
                    vec![
                        field(v, "id"),
                        field(v, "kind"),
                        field(v, "parallelism"),
                        field(v, "records_in"),
                        field(v, "records_out"),
                        field(v, "records_out_per_second"),
                        field(v, "backpressure"),
                    ]
                })
                .collect();
            print_table(
                &["node", "kind", "parallelism", "records in", "records out", "out/s", "backpressure"],
                rows,
            );
            if let Some(cp) = j.get("latest_checkpoint").filter(|v| !v.is_null()) {
                println!(
                    "latest checkpoint {} ({} ms, {} bytes)",
                    field(cp, "id"),
                    field(cp, "duration_ms"),
                    field(cp, "full_size")
                );
            }
        }
        JobCommand::Stop { id } => {
            let j = c.post(&format!("/api/v1/jobs/{id}/stop"), None).await?;
            println!("job {id} {}", field(&j, "status"));
        }
        JobCommand::Cancel { id } => {
            let j = c.post(&format!("/api/v1/jobs/{id}/cancel"), None).await?;
            println!("job {id} {}", field(&j, "status"));
        }
        JobCommand::Restart { id } => {
            let j = c.post(&format!("/api/v1/jobs/{id}/restart"), None).await?;
            println!("job {id} {}", field(&j, "status"));
        }
    }
    Ok(())
}

async fn savepoint_command(c: &weir::client::Client, command: SavepointCommand) -> anyhow::Result<()> {
    use weir::client::{field, items, print_table};
    let describe = |s: &serde_json::Value| {
        let mut line = format!(
            "savepoint {} of job {} (`{}`): {}",
            field(s, "id"),
            field(s, "job"),
            field(s, "job_name"),
            field(s, "status")
        );
        if !field(s, "checkpoint").is_empty() {
            line.push_str(&format!(", checkpoint {}", field(s, "checkpoint")));
        }
        if field(s, "status") == "completed" {
            line.push_str(&format!(", {} entries, {} bytes", field(s, "entries"), field(s, "bytes")));
        }
        if !field(s, "error").is_empty() {
            line.push_str(&format!("\nerror: {}", field(s, "error")));
        }
        line
    };
    match command {
        SavepointCommand::Trigger { job, mode } => {
            let body = serde_json::json!({ "mode": mode.api_name() });
            let s = c.post(&format!("/api/v1/jobs/{job}/savepoints"), Some(&body)).await?;
            let id = field(&s, "id");
            println!("savepoint {id} triggered ({})", mode.api_name());
            let mut s = s;
            // Poll until it is no longer pending.
            while field(&s, "status") == "pending" {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                s = c.get(&format!("/api/v1/savepoints/{id}")).await?;
            }
            println!("{}", describe(&s));
            anyhow::ensure!(field(&s, "status") == "completed", "the savepoint failed");
        }
        SavepointCommand::List { job } => {
            let path = match &job {
                Some(j) => format!("/api/v1/jobs/{j}/savepoints"),
                None => "/api/v1/savepoints".to_string(),
            };
            let list = c.get(&path).await?;
            let rows = items(&list)
                .iter()
                .map(|s| {
                    vec![
                        field(s, "id"),
                        field(s, "job_name"),
                        field(s, "status"),
                        field(s, "mode"),
                        field(s, "checkpoint"),
                        field(s, "bytes"),
                        ms_time(s, "created_ms"),
                        field(s, "origin"),
                        field(s, "error"),
                    ]
                })
                .collect();
            print_table(
                &[
                    "id",
                    "job",
                    "status",
                    "mode",
                    "checkpoint",
                    "bytes",
                    "created (UTC)",
                    "imported from",
                    "error",
                ],
                rows,
            );
        }
        SavepointCommand::Get { id } => {
            let s = c.get(&format!("/api/v1/savepoints/{id}")).await?;
            println!("{}", describe(&s));
            if let Some(d) = s.get("description").filter(|d| !d.is_null()) {
                let rows = d
                    .get("nodes")
                    .and_then(serde_json::Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|n| {
                        vec![
                            field(n, "id"),
                            field(n, "kind"),
                            field(n, "parallelism"),
                            field(n, "module"),
                            field(n, "connector"),
                            field(n, "state_version"),
                        ]
                    })
                    .collect();
                println!("max_parallelism {}", field(d, "max_parallelism"));
                print_table(&["node", "kind", "parallelism", "module", "connector", "state version"], rows);
            }
        }
        SavepointCommand::Export { id, output } => {
            let partial = output.with_extension("partial");
            let mut file = std::fs::File::create(&partial)
                .with_context(|| format!("cannot create {}", partial.display()))?;
            let result = c.download(&format!("/api/v1/savepoints/{id}/file"), &mut file).await;
            drop(file);
            match result {
                Ok(bytes) => {
                    std::fs::rename(&partial, &output)
                        .with_context(|| format!("cannot write {}", output.display()))?;
                    println!("savepoint {id} exported to {} ({bytes} bytes)", output.display());
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&partial);
                    return Err(e);
                }
            }
        }
        SavepointCommand::Import { file } => {
            let s = c.post_file("/api/v1/savepoints", &file).await?;
            println!("{}", describe(&s));
            if !field(&s, "origin").is_empty() {
                println!("imported from savepoint {}", field(&s, "origin"));
            }
        }
        SavepointCommand::Delete { id } => {
            c.delete(&format!("/api/v1/savepoints/{id}")).await?;
            println!("savepoint {id} deleted");
        }
    }
    Ok(())
}

async fn checkpoint_command(c: &weir::client::Client, command: CheckpointCommand) -> anyhow::Result<()> {
    use weir::client::{field, items, print_table};
    match command {
        CheckpointCommand::List { job, limit } => {
            let h = c.get(&format!("/api/v1/jobs/{job}/checkpoints?limit={limit}")).await?;
            let counts = &h["counts"];
            println!(
                "{} checkpoints: {} completed, {} failed, {} in progress",
                field(counts, "total"),
                field(counts, "completed"),
                field(counts, "failed"),
                field(counts, "in_progress")
            );
            let s = &h["summary"];
            for (name, key) in
                [("duration ms", "duration_ms"), ("size bytes", "state_size"), ("full size", "full_size")]
            {
                let m = &s[key];
                println!("  {name}: min {} avg {} max {}", field(m, "min"), field(m, "avg"), field(m, "max"));
            }
            let rows = items(&h)
                .iter()
                .map(|cp| {
                    vec![
                        field(cp, "id"),
                        field(cp, "status"),
                        format!("{}/{}", field(cp, "acknowledged_subtasks"), field(cp, "total_subtasks")),
                        ms_time(cp, "trigger_time_ms"),
                        field(cp, "duration_ms"),
                        field(cp, "state_size"),
                        field(cp, "full_size"),
                        field(cp, "failure"),
                    ]
                })
                .collect();
            print_table(
                &["id", "status", "acked", "triggered (UTC)", "duration ms", "size", "full size", "failure"],
                rows,
            );
        }
        CheckpointCommand::Trigger { job } => {
            let t = c.post(&format!("/api/v1/jobs/{job}/checkpoints"), None).await?;
            let id = field(&t, "id");
            println!("checkpoint {id} triggered");
            // Poll until it is no longer in progress.
            for _ in 0..600 {
                let cp = c.get(&format!("/api/v1/jobs/{job}/checkpoints/{id}")).await;
                if let Ok(cp) = cp
                    && field(&cp, "status") != "in_progress"
                {
                    println!(
                        "checkpoint {id} {} in {} ms, {} bytes {}",
                        field(&cp, "status"),
                        field(&cp, "duration_ms"),
                        field(&cp, "state_size"),
                        field(&cp, "failure")
                    );
                    return Ok(());
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            anyhow::bail!("checkpoint {id} still in progress after 2 minutes");
        }
    }
    Ok(())
}

async fn stream_command(c: &weir::client::Client, command: StreamCommand) -> anyhow::Result<()> {
    use weir::client::{field, items, print_table};
    match command {
        StreamCommand::Create { name, partitions } => {
            let s = c
                .post("/api/v1/streams", Some(&serde_json::json!({ "name": name, "partitions": partitions })))
                .await?;
            println!("stream `{}` with {} partition(s)", field(&s, "name"), field(&s, "partitions"));
        }
        StreamCommand::List => {
            let list = c.get("/api/v1/streams").await?;
            let rows = items(&list)
                .iter()
                .map(|s| vec![field(s, "name"), field(s, "partitions"), field(s, "end_offsets")])
                .collect();
            print_table(&["name", "partitions", "end offsets"], rows);
        }
        StreamCommand::Push { name, file } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?
            };
            let records = weir::client::records_from_lines(&text)?;
            let n = records.len();
            let out = c
                .post(
                    &format!("/api/v1/streams/{name}/records"),
                    Some(&serde_json::json!({ "records": records })),
                )
                .await?;
            let last = items(&out).last().map(|a| {
                format!(" (last: partition {} offset {})", field(a, "partition"), field(a, "offset"))
            });
            println!("{n} record(s) appended to `{name}`{}", last.unwrap_or_default());
        }
        StreamCommand::Read { name, partition, offset, limit } => {
            let r = c
                .get(&format!(
                    "/api/v1/streams/{name}/records?partition={partition}&offset={offset}&limit={limit}"
                ))
                .await?;
            let rows = items(&r)
                .iter()
                .map(|x| vec![field(x, "offset"), field(x, "key"), field(x, "value"), field(x, "timestamp")])
                .collect();
            print_table(&["offset", "key", "value", "timestamp"], rows);
            println!("next offset: {}", field(&r, "next_offset"));
        }
    }
    Ok(())
}

async fn tenant_command(c: &weir::client::Client, command: TenantCommand) -> anyhow::Result<()> {
    use weir::client::{field, items, print_table};
    match command {
        TenantCommand::Create { name } => {
            let t = c.post("/api/v1/tenants", Some(&serde_json::json!({ "name": name }))).await?;
            println!("tenant {} `{}`", field(&t["tenant"], "id"), field(&t["tenant"], "name"));
            println!("token: {}", field(&t, "token"));
        }
        TenantCommand::List => {
            let list = c.get("/api/v1/tenants").await?;
            let rows = items(&list)
                .iter()
                .map(|t| vec![field(t, "id"), field(t, "name"), ms_time(t, "created_ms")])
                .collect();
            print_table(&["id", "name", "created (UTC)"], rows);
        }
    }
    Ok(())
}
