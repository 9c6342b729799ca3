//! `weir checkpoint`: a job's checkpoint history (from a server, or `--local` from the
//! data directory's store after `weir run`) and on-demand checkpoints.

use std::path::Path;

use clap::Subcommand;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use crate::client::{Client, float, format_time, opt, print_table, time};
use crate::run::open_store;

#[derive(Subcommand)]
pub enum CheckpointCommand {
    /// Lists a job's checkpoints with the summary.
    List {
        /// Job id (with `--local`: the id `weir run` kept it under).
        job: String,
        /// Most checkpoints listed.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Read the history of a `weir run` job from `<data-dir>/weir.redb` instead of a
        /// server.
        #[arg(long)]
        local: bool,
    },
    /// Triggers a checkpoint and waits for its outcome.
    Trigger {
        /// Job id.
        job: String,
    },
}

/// Runs a `weir checkpoint` command against a server.
pub async fn run(c: &Client, command: CheckpointCommand) -> anyhow::Result<()> {
    match command {
        CheckpointCommand::List { job, limit, .. } => {
            let h = c.checkpoints(&job, limit).await?;
            let n = &h.counts;
            println!(
                "{} checkpoints: {} completed ({} unaligned, {} of them switched from aligned), {} failed, \
                 {} in progress",
                n.total, n.completed, n.unaligned, n.switched_to_unaligned, n.failed, n.in_progress
            );
            let s = &h.summary;
            for (name, m) in [
                ("duration ms", &s.duration_ms),
                ("size bytes", &s.state_size),
                ("full size", &s.full_size),
                ("processed in-flight bytes", &s.alignment_bytes),
                ("persisted in-flight bytes", &s.persisted_in_flight_bytes),
            ] {
                println!("  {name}: min {} avg {} max {}", float(m.min), float(m.avg), float(m.max));
            }
            let rows = h
                .data
                .iter()
                .map(|cp| {
                    vec![
                        cp.id.to_string(),
                        cp.status.clone(),
                        format!("{}/{}", cp.acknowledged_subtasks, cp.total_subtasks),
                        time(Some(cp.trigger_time_ms)),
                        cp.duration_ms.map(float).unwrap_or_default(),
                        cp.state_size.to_string(),
                        cp.full_size.to_string(),
                        checkpoint_type(cp),
                        cp.processed_in_flight_bytes.to_string(),
                        cp.persisted_in_flight_bytes.to_string(),
                        opt(&cp.failure),
                    ]
                })
                .collect();
            print_table(
                &[
                    "id",
                    "status",
                    "acked",
                    "triggered (UTC)",
                    "duration ms",
                    "size",
                    "full size",
                    "type",
                    "processed in-flight",
                    "persisted in-flight",
                    "failure",
                ],
                rows,
            );
        }
        CheckpointCommand::Trigger { job } => {
            let id = c.trigger_checkpoint(&job).await?.id;
            println!("checkpoint {id} triggered");
            // Poll until it is no longer in progress.
            for _ in 0..600 {
                if let Ok(cp) = c.checkpoint(&job, id).await
                    && cp.checkpoint.status != "in_progress"
                {
                    let cp = cp.checkpoint;
                    println!(
                        "checkpoint {id} {} in {} ms, {} bytes {}",
                        cp.status,
                        cp.duration_ms.map(float).unwrap_or_default(),
                        cp.state_size,
                        opt(&cp.failure)
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

/// A checkpoint's type: `aligned`, `unaligned`, or `aligned → unaligned +<ms>` (switched that
/// long after its trigger).
fn checkpoint_type(cp: &weir::api::model::CheckpointView) -> String {
    use weir::api::model::CheckpointType;
    match (cp.checkpoint_type, cp.switched_to_unaligned_ms) {
        (CheckpointType::Aligned, _) => "aligned".into(),
        (CheckpointType::Unaligned, _) => "unaligned".into(),
        (CheckpointType::AlignedThenUnaligned, Some(at)) => {
            format!("aligned → unaligned +{} ms", at.saturating_sub(cp.trigger_time_ms))
        }
        (CheckpointType::AlignedThenUnaligned, None) => "aligned → unaligned".into(),
    }
}

/// `weir checkpoint list --local`: the history of a `weir run` job in the data directory's
/// store (read only: nothing is created).
pub fn local_history(data_dir: &Path, job_id: &str) -> anyhow::Result<()> {
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
        "unaligned subtasks",
        "persisted in-flight bytes",
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
            c.subtasks
                .iter()
                .filter(|s| s.unaligned || s.switched_to_unaligned_ms.is_some())
                .count()
                .to_string(),
            c.subtasks.iter().map(|s| s.persisted_in_flight_bytes).sum::<u64>().to_string(),
            note,
        ]);
    }
    println!("checkpoints of job {job_id}:");
    println!("{table}");
    Ok(())
}
