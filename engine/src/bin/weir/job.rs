//! `weir job`: submit, list, show, stop, cancel and restart jobs on a server.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

use crate::client::{Client, field, items, ms_time, print_table};

#[derive(Subcommand)]
pub enum JobCommand {
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

/// Runs a `weir job` command.
pub async fn run(c: &Client, command: JobCommand) -> anyhow::Result<()> {
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
