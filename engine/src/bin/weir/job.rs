//! `weir job`: submit, list, show, stop, cancel, restart and upgrade jobs on a server, and
//! read their exception history, logs and versions.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;

use crate::client::{Client, float, label, opt, print_table, time};

mod upgrade;

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
    /// Upgrades a running job in one step: checks a savepoint against the new version
    /// (refused before anything stops when its state does not fit), stops the job at a
    /// savepoint, starts the new version from it on probation, and rolls back to the old
    /// version if the new one fails to restore or fails within the grace period. Waits for
    /// the outcome; exits non-zero if the upgrade was refused or rolled back.
    Upgrade {
        /// Job id.
        id: String,
        /// The new spec (default: the current one, with the changes below).
        #[arg(long, value_name = "FILE")]
        spec: Option<PathBuf>,
        /// A new module for an operator: `<node>=<module id, name or builtin:name>` (repeat).
        #[arg(long = "module", value_name = "NODE=MODULE")]
        modules: Vec<String>,
        /// A new parallelism for a node: `<node>=<n>` (repeat).
        #[arg(long = "parallelism", value_name = "NODE=N")]
        parallelism: Vec<String>,
        /// Drain the old version (every event-time timer fires) instead of stopping it.
        #[arg(long)]
        drain: bool,
        /// Drop savepoint state that has no place in the new version.
        #[arg(long)]
        allow_non_restored_state: bool,
        /// Probation of the new version in ms (default 10000).
        #[arg(long, value_name = "MS")]
        grace_period_ms: Option<u64>,
        /// Only check the new version against a savepoint of the job; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Lists a job's versions: spec digests, the savepoint each started from, and what
    /// became of each.
    Versions {
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
        JobCommand::Upgrade {
            id,
            spec,
            modules,
            parallelism,
            drain,
            allow_non_restored_state,
            grace_period_ms,
            dry_run,
        } => {
            let spec = match spec {
                Some(path) => {
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read {}", path.display()))?;
                    Some(
                        serde_json::from_str::<serde_json::Value>(&text)
                            .with_context(|| format!("{} is not JSON", path.display()))?,
                    )
                }
                None => None,
            };
            let mut body = serde_json::json!({
                "modules": pairs(&modules, "--module", |v| Ok(serde_json::Value::from(v)))?,
                "parallelism": pairs(&parallelism, "--parallelism", |v| {
                    Ok(serde_json::Value::from(v.parse::<u32>().context("a parallelism is a number")?))
                })?,
                "drain": drain,
                "allow_non_restored_state": allow_non_restored_state,
                "dry_run": dry_run,
            });
            if let Some(spec) = spec {
                body["spec"] = spec;
            }
            if let Some(ms) = grace_period_ms {
                body["grace_period_ms"] = ms.into();
            }
            upgrade::run(c, &id, &body, dry_run).await?;
        }
        JobCommand::Versions { id } => upgrade::print_versions(c, &id).await?,
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

/// `NAME=VALUE` arguments of `flag` as a JSON object.
fn pairs(
    args: &[String],
    flag: &str,
    value: impl Fn(&str) -> anyhow::Result<serde_json::Value>,
) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let mut out = serde_json::Map::new();
    for a in args {
        let Some((k, v)) = a.split_once('=') else { anyhow::bail!("{flag} takes NODE=VALUE, not `{a}`") };
        out.insert(k.to_string(), value(v).with_context(|| format!("{flag} {a}"))?);
    }
    Ok(out)
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
