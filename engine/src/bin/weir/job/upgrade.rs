//! `weir job upgrade` and `weir job versions`.

use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::Value;
use weir::api::model::{Data, UpgradeAnswer};
use weir::server::jobs::{JobVersion, VersionOutcome};

use crate::client::{Client, label, print_table, time};

/// Asks for the upgrade, prints the check, and (unless a dry run) waits for its outcome.
pub async fn run(c: &Client, id: &str, body: &Value, dry_run: bool) -> anyhow::Result<()> {
    let answer: UpgradeAnswer = c.post(&format!("/api/v1/jobs/{id}/upgrade"), Some(body)).await?;
    let check = &answer.check;
    println!(
        "version {} -> {}: the new version can take the state of savepoint {}",
        check.from_version, check.to_version, check.check.savepoint
    );
    for n in &check.check.nodes {
        let from = n.from_parallelism.map_or("new".to_string(), |p| p.to_string());
        let versions = match n.state_versions {
            Some((a, b)) if n.migrates => format!(", state migrated {a} -> {b}"),
            _ => String::new(),
        };
        let state = if n.has_state { "state" } else { "no state" };
        println!("  {}: parallelism {from} -> {}, {state}{versions}", n.id, n.parallelism);
    }
    for d in &check.check.dropped {
        println!("  dropped: {d}");
    }
    if dry_run {
        return Ok(());
    }
    let grace = body.get("grace_period_ms").and_then(Value::as_u64).unwrap_or(10_000);
    let deadline = Instant::now() + Duration::from_millis(grace) + Duration::from_secs(300);
    let mut job = answer.job.job;
    while job.upgrade.is_some() {
        if Instant::now() > deadline {
            bail!("the upgrade of job {id} has not ended yet; see `weir job versions {id}`");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        job = c.job(id).await?.job;
    }
    let versions: Data<JobVersion> = c.get(&format!("/api/v1/jobs/{id}/versions")).await?;
    let target = versions.data.iter().find(|v| v.version == check.to_version);
    match target.map(|v| (v.outcome, v.reason.clone())) {
        Some((VersionOutcome::Current, _)) => {
            println!("job {id} runs version {} ({})", job.version, label(&job.status));
            Ok(())
        }
        Some((outcome, reason)) => bail!(
            "the upgrade to version {} was {}: {}; job {id} runs version {}",
            check.to_version,
            words(outcome),
            reason.unwrap_or_default(),
            job.version
        ),
        None => bail!("job {id} runs version {}", job.version),
    }
}

/// Prints a job's versions.
pub async fn print_versions(c: &Client, id: &str) -> anyhow::Result<()> {
    let versions: Data<JobVersion> = c.get(&format!("/api/v1/jobs/{id}/versions")).await?;
    let rows = versions
        .data
        .into_iter()
        .map(|v| {
            let modules = v
                .modules
                .iter()
                .map(|m| format!("{}={}", m.node, &m.digest[..m.digest.len().min(12)]))
                .collect::<Vec<_>>()
                .join(" ");
            let parallelism = v
                .spec
                .nodes
                .iter()
                .map(|n| format!("{}:{}", n.id, n.parallelism))
                .collect::<Vec<_>>()
                .join(" ");
            vec![
                v.version.to_string(),
                time(Some(v.created_ms)),
                words(v.outcome).to_string(),
                modules,
                parallelism,
                v.savepoint.unwrap_or_default(),
                v.reason.unwrap_or_default(),
            ]
        })
        .collect();
    print_table(
        &["version", "created (UTC)", "outcome", "modules", "parallelism", "from savepoint", "reason"],
        rows,
    );
    Ok(())
}

/// A version's outcome, in words.
fn words(outcome: VersionOutcome) -> &'static str {
    match outcome {
        VersionOutcome::Current => "current",
        VersionOutcome::Upgrading => "upgrading",
        VersionOutcome::Replaced => "replaced",
        VersionOutcome::RolledBack => "rolled back",
        VersionOutcome::Abandoned => "abandoned",
    }
}
