//! `weir savepoint`: take, list, show, export, import and dispose of savepoints.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

use crate::client::{Client, field, items, ms_time, print_table};

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

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum SavepointModeArg {
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

/// Runs a `weir savepoint` command.
pub async fn run(c: &Client, command: SavepointCommand) -> anyhow::Result<()> {
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
