//! The `weir` command: runs jobs on this machine (`run`), hosts them (`serve`, `demo`),
//! drives a server as its client (`module`, `job`, `checkpoint`, `savepoint`, `stream`,
//! `tenant`), runs as a worker of a server (`worker`) and measures (`bench <suite>`).

mod bench;
mod checkpoint;
mod client;
mod demo;
mod job;
mod module;
mod run;
mod savepoint;
mod serve;
mod stream;
mod tenant;
mod worker;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "weir", version, about = "A stream-processing engine for sandboxed WebAssembly operators")]
struct Cli {
    /// Data directory (compiled-module cache, the store of `weir run`, outputs of `weir demo`).
    #[arg(long, global = true, default_value = "weir-data", env = "WEIR_DATA_DIR")]
    data_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a job file to completion on this machine and prints a summary. The job is
    /// checkpointed into `<data-dir>/weir.redb`; run the same command again after a crash
    /// and it resumes from its latest completed checkpoint.
    Run(run::RunArgs),
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
    /// A worker: registers with a controller (`weir serve` with `cluster.listen`) and runs
    /// the subtasks it is given, until Ctrl-C or SIGTERM.
    Worker(worker::WorkerArgs),
    /// Modules on a server.
    Module {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: module::ModuleCommand,
    },
    /// Jobs on a server.
    Job {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: job::JobCommand,
    },
    /// Checkpoints of a job on a server (or, with `list --local`, of a `weir run` job).
    Checkpoint {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: checkpoint::CheckpointCommand,
    },
    /// Savepoints on a server: take, list, export, import, dispose.
    Savepoint {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: savepoint::SavepointCommand,
    },
    /// Streams on a server.
    Stream {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: stream::StreamCommand,
    },
    /// Tenants on a server (admin token).
    Tenant {
        #[command(flatten)]
        target: Target,
        #[command(subcommand)]
        command: tenant::TenantCommand,
    },
    /// Benchmarks (build with `--release`): each suite prints its figures side by side.
    Bench {
        #[command(subcommand)]
        suite: bench::Suite,
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

impl Target {
    /// The client of the target server.
    fn client(self, data_dir: &Path) -> anyhow::Result<client::Client> {
        let file = client::ClientConfig::read(data_dir)?;
        let url = self.url.or(file.url).unwrap_or_else(|| "http://127.0.0.1:8080".into());
        Ok(client::Client::new(&url, self.token.or(file.token)))
    }
}

fn main() -> anyhow::Result<()> {
    // INFO is for what a user acts on (the address, job state changes, failures); routine
    // lines (every checkpoint) are DEBUG: `RUST_LOG=weir=debug` shows them.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "weir=info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches)?;
    let data_dir_given = matches.value_source("data_dir") == Some(clap::parser::ValueSource::CommandLine);
    let data_dir = cli.data_dir;
    if let Command::Checkpoint {
        command: checkpoint::CheckpointCommand::List { job, local: true, .. }, ..
    } = &cli.command
    {
        // Reads the store only: no engine, no server, and nothing is created.
        return checkpoint::local_history(&data_dir, job);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => run::run(&data_dir, args).await,
            Command::Serve { listen, config } => {
                serve::serve(data_dir_given.then_some(data_dir), listen, config).await
            }
            Command::Demo { listen } => serve::demo(data_dir, listen).await,
            Command::Worker(args) => worker::worker(args).await,
            Command::Module { target, command } => module::run(&target.client(&data_dir)?, command).await,
            Command::Job { target, command } => job::run(&target.client(&data_dir)?, command).await,
            Command::Checkpoint { target, command } => {
                checkpoint::run(&target.client(&data_dir)?, command).await
            }
            Command::Savepoint { target, command } => {
                savepoint::run(&target.client(&data_dir)?, command).await
            }
            Command::Stream { target, command } => stream::run(&target.client(&data_dir)?, command).await,
            Command::Tenant { target, command } => tenant::run(&target.client(&data_dir)?, command).await,
            Command::Bench { suite } => bench::run(&data_dir, suite).await,
        }
    })
}
