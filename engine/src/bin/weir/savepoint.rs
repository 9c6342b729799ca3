//! `weir savepoint`: take, list, show, export, import and dispose of savepoints.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

use weir::api::model::{SavepointMode, SavepointRecord, SavepointStatus};

use crate::client::{Client, label, opt, print_table, time};

#[derive(Subcommand)]
pub enum SavepointCommand {
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

/// `--mode` (the API's `SavepointMode`).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum SavepointModeArg {
    KeepRunning,
    Cancel,
    Stop,
    Drain,
}

impl From<SavepointModeArg> for SavepointMode {
    fn from(mode: SavepointModeArg) -> Self {
        match mode {
            SavepointModeArg::KeepRunning => SavepointMode::KeepRunning,
            SavepointModeArg::Cancel => SavepointMode::Cancel,
            SavepointModeArg::Stop => SavepointMode::Stop,
            SavepointModeArg::Drain => SavepointMode::Drain,
        }
    }
}

/// One line (two with an error) about a savepoint.
fn describe(s: &SavepointRecord) -> String {
    let mut line = format!("savepoint {} of job {} (`{}`): {}", s.id, s.job, s.job_name, label(&s.status));
    if let Some(checkpoint) = s.checkpoint {
        line.push_str(&format!(", checkpoint {checkpoint}"));
    }
    if s.status == SavepointStatus::Completed {
        line.push_str(&format!(", {} entries, {} bytes", s.entries, s.bytes));
    }
    if let Some(error) = &s.error {
        line.push_str(&format!("\nerror: {error}"));
    }
    line
}

/// Runs a `weir savepoint` command.
pub async fn run(c: &Client, command: SavepointCommand) -> anyhow::Result<()> {
    match command {
        SavepointCommand::Trigger { job, mode } => {
            let mode = SavepointMode::from(mode);
            let mut s = c.trigger_savepoint(&job, mode).await?;
            println!("savepoint {} triggered ({})", s.id, label(&mode));
            // Poll until it is no longer pending.
            while s.status == SavepointStatus::Pending {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                s = c.savepoint(&s.id).await?;
            }
            println!("{}", describe(&s));
            anyhow::ensure!(s.status == SavepointStatus::Completed, "the savepoint failed");
        }
        SavepointCommand::List { job } => {
            let rows = c
                .savepoints(job.as_deref())
                .await?
                .into_iter()
                .map(|s| {
                    vec![
                        s.id.clone(),
                        s.job_name.clone(),
                        label(&s.status),
                        s.mode.as_ref().map(label).unwrap_or_default(),
                        opt(&s.checkpoint),
                        s.bytes.to_string(),
                        time(Some(s.created_ms)),
                        opt(&s.origin),
                        opt(&s.error),
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
            let s = c.savepoint(&id).await?;
            println!("{}", describe(&s));
            if let Some(d) = &s.description {
                let rows = d
                    .nodes
                    .iter()
                    .map(|n| {
                        vec![
                            n.id.clone(),
                            label(&n.kind),
                            n.parallelism.to_string(),
                            opt(&n.module),
                            opt(&n.connector),
                            opt(&n.state_version),
                        ]
                    })
                    .collect();
                println!("max_parallelism {}", d.max_parallelism);
                print_table(&["node", "kind", "parallelism", "module", "connector", "state version"], rows);
            }
        }
        SavepointCommand::Export { id, output } => {
            let partial = output.with_extension("partial");
            let mut file = std::fs::File::create(&partial)
                .with_context(|| format!("cannot create {}", partial.display()))?;
            let result = c.export_savepoint(&id, &mut file).await;
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
            let s = c.import_savepoint(&file).await?;
            println!("{}", describe(&s));
            if let Some(origin) = &s.origin {
                println!("imported from savepoint {origin}");
            }
        }
        SavepointCommand::Delete { id } => {
            c.delete_savepoint(&id).await?;
            println!("savepoint {id} deleted");
        }
    }
    Ok(())
}
