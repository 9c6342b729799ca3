//! `weir job`: submit, list, show, stop, cancel and restart jobs on a server, and read their
//! exception history.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

use crate::client::{Client, float, label, opt, print_table, time};

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
    /// Shows a job's exception history: its last 100 failures, newest first.
    Exceptions {
        /// Job id.
        id: String,
    },
    /// Prints the job's operator log, oldest first.
    Logs {
        /// Job id.
        id: String,
        /// Keep printing new lines as they come (until interrupted).
        #[arg(short, long)]
        follow: bool,
        /// Only this node's lines.
        #[arg(long)]
        node: Option<String>,
        /// Only this subtask's.
        #[arg(long)]
        subtask: Option<u32>,
        /// Only lines at least this important: trace, debug, info, warn, error.
        #[arg(long)]
        level: Option<String>,
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
            let detail = c.create_job(&body, from_savepoint.as_deref(), allow_non_restored_state).await?;
            let job = &detail.job;
            println!("job {} `{}` {}", job.id, job.name, label(&job.status));
            if let Some(r) = &job.restored_from {
                println!("restored from savepoint {} as checkpoint {}", r.savepoint, r.checkpoint);
                for n in r.nodes.iter().filter(|n| n.restored) {
                    let migrated = match n.state_versions {
                        Some((from, to)) if n.migrated => format!(", state migrated [{from},{to}]"),
                        _ => String::new(),
                    };
                    println!(
                        "  {}: parallelism {} -> {}{migrated}",
                        n.id,
                        opt(&n.from_parallelism),
                        n.parallelism
                    );
                }
                for d in &r.dropped {
                    println!("  dropped: {d}");
                }
            }
        }
        JobCommand::List => {
            let rows = c
                .jobs()
                .await?
                .into_iter()
                .map(|s| {
                    let j = s.job;
                    vec![
                        j.id,
                        j.name,
                        label(&j.status),
                        j.subtasks.to_string(),
                        j.restarts.to_string(),
                        time(j.start_ms),
                        j.error.unwrap_or_default(),
                    ]
                })
                .collect();
            print_table(&["id", "name", "status", "subtasks", "restarts", "started (UTC)", "error"], rows);
        }
        JobCommand::Get { id } => {
            let detail = c.job(&id).await?;
            let j = &detail.job;
            println!("job {} `{}`: {}", j.id, j.name, label(&j.status));
            if let Some(error) = &j.error {
                println!("error: {error}");
            }
            let rows = detail
                .vertices
                .iter()
                .map(|v| {
                    vec![
                        v.id.clone(),
                        label(&v.kind),
                        v.parallelism.to_string(),
                        v.records_in.to_string(),
                        v.records_out.to_string(),
                        float(v.records_out_per_second),
                        float(v.backpressure),
                    ]
                })
                .collect();
            print_table(
                &["node", "kind", "parallelism", "records in", "records out", "out/s", "backpressure"],
                rows,
            );
            if let Some(cp) = &detail.latest_checkpoint {
                println!(
                    "latest checkpoint {} ({} ms, {} bytes)",
                    cp.id,
                    cp.duration_ms.map(float).unwrap_or_default(),
                    cp.full_size
                );
            }
        }
        JobCommand::Stop { id } => println!("job {id} {}", label(&c.job_action(&id, "stop").await?.status)),
        JobCommand::Cancel { id } => {
            println!("job {id} {}", label(&c.job_action(&id, "cancel").await?.status))
        }
        JobCommand::Restart { id } => {
            println!("job {id} {}", label(&c.job_action(&id, "restart").await?.status))
        }
        JobCommand::Logs { id, follow, node, subtask, level } => {
            let mut query = String::new();
            for (k, v) in [("node", node), ("subtask", subtask.map(|s| s.to_string())), ("level", level)] {
                if let Some(v) = v {
                    query.push_str(&format!("&{k}={}", urlencoding(&v)));
                }
            }
            let mut after = 0u64;
            loop {
                let lines = c.job_logs(&id, after, &query).await?;
                for l in &lines {
                    println!(
                        "{} {:<6} {}#{} [{}] {}",
                        time(Some(l.line.time_ms)),
                        l.line.level.name(),
                        l.line.node,
                        l.line.subtask,
                        l.line.attempt,
                        l.line.message
                    );
                    after = l.seq;
                }
                if !follow {
                    break;
                }
                if lines.is_empty() {
                    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                }
            }
        }
        JobCommand::Exceptions { id } => {
            let rows = c
                .job_exceptions(&id)
                .await?
                .into_iter()
                .map(|e| {
                    let at = match (&e.node, e.subtask, e.worker) {
                        (Some(n), Some(s), Some(w)) => format!("{n} #{s} on worker {w}"),
                        (Some(n), Some(s), None) => format!("{n} #{s}"),
                        (None, _, Some(w)) => format!("worker {w}"),
                        _ => String::new(),
                    };
                    let action = match e.delay_ms {
                        Some(ms) => format!("{} after {ms} ms", label(&e.action)),
                        None => label(&e.action),
                    };
                    vec![
                        e.seq.to_string(),
                        time(Some(e.time_ms)),
                        e.attempt.to_string(),
                        e.class.as_ref().map(label).unwrap_or_default(),
                        at,
                        action,
                        e.error,
                    ]
                })
                .collect();
            print_table(&["#", "time (UTC)", "restart", "class", "where", "action", "error"], rows);
        }
    }
    Ok(())
}

/// `s` for a URL's query (letters, digits and `-_.~` as they are, the rest %-encoded).
fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
