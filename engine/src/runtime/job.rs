//! Running a job: one attempt without checkpoints, or attempts from the latest completed
//! checkpoint with restarts; committing what a checkpoint owns.

use std::time::Instant;

use weir_store::{CheckpointMeta, Manifest};

use super::attempt::run_attempt;
use super::control::JobEvent;
use super::env::RunEnv;
use super::error::{FailureClass, FailureInfo, JobError, TaskError};
use super::report::JobReport;
use super::store_call::store_call;
use super::subtask_blob::{TaskRestoreError, restored_state};
use super::task::open_recovered_sink;
use crate::connectors::ConnectorEnv;
use crate::plan::{Decision, NodeBody, Plan, PlanError, RestartTracker};
use crate::retry::Retry;

/// Runs `plan` to completion without checkpoints. The first failing subtask stops the job;
/// its error is returned (errors that merely follow from it, like a closed channel, are
/// not).
pub async fn run_job(plan: &Plan) -> Result<JobReport, JobError> {
    run_attempt(plan, None).await
}

/// Runs `plan` with checkpoints in `env`: restores the latest completed checkpoint of the
/// job if there is one, restarts after failures as `settings.restart` allows, and ends with
/// a final checkpoint whose completion commits the sinks' last output.
pub async fn run_job_checkpointed(plan: &Plan, env: &RunEnv) -> Result<JobReport, JobError> {
    let strategy =
        plan.spec.settings.restart.resolve().map_err(|e| JobError::Plan(PlanError::Settings(e)))?;
    // The jitter is drawn per job: the same job's delays are the same on every run.
    let seed = env
        .job_id
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let mut tracker = RestartTracker::new(strategy, seed);
    let clock = Instant::now();
    let mut restarts = 0u32;
    let mut attempts = 0u32;
    // Local stores of host keyed state left by a process that died: working copies only.
    let local = crate::local_state::LocalStateConfig::beside(&env.store, &env.job_id);
    crate::local_state::remove_job_dirs(&local.base, &env.job_id);
    let mut restored_from = Vec::new();
    loop {
        let storage = env.storage.clone();
        let job = env.job_id.clone();
        // Invariant C9: only a completed checkpoint is ever restored; whatever an earlier
        // attempt left in progress is failed and its chunks removed first.
        let latest = store_call(move || {
            storage.recover(&job)?;
            storage.latest_completed(&job)
        })
        .await?;
        env.dead_letters.restoring(latest.as_ref().map_or(0, |(m, _)| m.id));
        if let Some((meta, manifest)) = &latest {
            if meta.is_final && !meta.stopped {
                recommit_final(plan, env, meta, manifest).await?;
                let mut report = JobReport::already_finished(meta.id);
                report.restarts = restarts;
                report.restored_from = restored_from;
                return Ok(report);
            }
            // A checkpoint that does not fit the job (other nodes, other parallelism) will
            // not fit on a retry either: fail at once.
            check_manifest(plan, manifest)?;
            restored_from.push(meta.id);
            let _ = env.events.send(JobEvent::Restored { checkpoint: meta.id });
            tracing::debug!(job = %env.job_id, checkpoint = meta.id, "restoring from checkpoint");
        }
        env.attempt.store(attempts, std::sync::atomic::Ordering::Relaxed);
        attempts += 1;
        let started = clock.elapsed().as_millis() as u64;
        let attempt = match &env.cluster {
            Some(cluster) if cluster.active() => cluster.run_attempt(plan, env, latest).await,
            _ => run_attempt(plan, Some((env, latest))).await,
        };
        match attempt {
            Ok(mut report) => {
                report.restarts = restarts;
                report.restored_from = restored_from;
                return Ok(report);
            }
            Err(e @ JobError::Plan(_)) => return Err(e),
            // A record broke an operator that takes such records out: replay to find it, or
            // take it out; neither is a failure of the job, and neither waits.
            Err(JobError::Task { node, subtask, error: TaskError::PoisonSuspected(guest) }) => {
                let limit = plan.spec.settings.max_dead_letters_per_minute;
                if let Err(count) = env.dead_letters.suspect(&node, subtask, limit) {
                    let error = TaskError::DeadLetterLimit {
                        count,
                        limit,
                        last: guest.to_string(),
                        unreadable: false,
                    };
                    return Err(JobError::Task { node, subtask, error });
                }
                tracing::info!(job = %env.job_id, %node, subtask, "a batch broke the operator, replaying it record by record: {guest}");
            }
            Err(JobError::Task { node, subtask, error: TaskError::Poison { hash, record } }) => {
                let limit = plan.spec.settings.max_dead_letters_per_minute;
                let error = record.error.clone();
                let info = FailureInfo {
                    class: Some(FailureClass::UserCode),
                    node: Some(node.clone()),
                    subtask: Some(subtask),
                    worker: None,
                };
                let action = plan
                    .spec
                    .nodes
                    .iter()
                    .find(|n| n.id == node)
                    .and_then(|n| n.on_error)
                    .unwrap_or_default();
                if let Err(count) = env.dead_letters.found(&node, subtask, hash, *record, limit) {
                    let error = TaskError::DeadLetterLimit { count, limit, last: error, unreadable: false };
                    return Err(JobError::Task { node, subtask, error });
                }
                tracing::info!(job = %env.job_id, %node, subtask, "found the record that broke the operator, taking it out: {error}");
                let _ = env.events.send(JobEvent::TookOut { failure: info, error, action });
            }
            Err(e @ JobError::Task { error: TaskError::DeadLetterLimit { .. }, .. }) => return Err(e),
            Err(e) => {
                let class = e.class();
                match tracker.failed(clock.elapsed().as_millis() as u64, started, class.counts()) {
                    Decision::Restart(delay) => {
                        restarts += 1;
                        tracing::warn!(
                            job = %env.job_id,
                            attempt = restarts,
                            class = ?class,
                            retry = ?e.retry_hint(),
                            delay_ms = delay.as_millis() as u64,
                            "job failed, restarting: {e}"
                        );
                        let _ = env.events.send(JobEvent::Restarting {
                            attempt: restarts,
                            error: e.to_string(),
                            failure: e.info(),
                            delay_ms: delay.as_millis() as u64,
                        });
                        tokio::time::sleep(delay).await;
                    }
                    Decision::GiveUp if restarts == 0 => return Err(e),
                    Decision::GiveUp => {
                        return Err(JobError::RestartsExhausted { restarts, last: Box::new(e) });
                    }
                }
            }
        }
    }
}

/// Invariant C7: a checkpoint owns the sinks' transactions it pre-committed; committing
/// them again is harmless and covers a crash (or a cancel) between the checkpoint and the
/// commit.
async fn recommit_final(
    plan: &Plan,
    env: &RunEnv,
    meta: &CheckpointMeta,
    manifest: &Manifest,
) -> Result<(), JobError> {
    for node in &plan.nodes {
        let NodeBody::Sink(config) = &node.body else { continue };
        for s in 0..node.parallelism {
            let task_err = |error: TaskError| JobError::Task { node: node.id.clone(), subtask: s, error };
            let state = restored_state(manifest, &node.id, s).map_err(|e| task_err(e.into()))?;
            let cenv = ConnectorEnv {
                store: Some(&env.store),
                job: &env.job_id,
                node: &node.id,
                transactional: true,
                outbox: None,
            };
            let mut sink =
                open_recovered_sink(config, s, node.parallelism, cenv, meta.id, &state).map_err(task_err)?;
            // A sink that delivers after the commit (Kafka `exactly_once`: the final
            // checkpoint's output may be staged but not yet produced) finishes here.
            sink.close().map_err(|e| task_err(e.into()))?;
        }
    }
    Ok(())
}

/// Commits the sink output that the latest completed checkpoint of the job covers (a job
/// cancelled right after a checkpoint may not have committed it yet). Idempotent: commits
/// are keyed by checkpoint, and a restart commits the same transactions again.
pub async fn commit_latest(plan: &Plan, env: &RunEnv) -> Result<Option<u64>, JobError> {
    let storage = env.storage.clone();
    let job = env.job_id.clone();
    let Some((meta, manifest)) = store_call(move || storage.latest_completed(&job)).await? else {
        return Ok(None);
    };
    recommit_final(plan, env, &meta, &manifest).await?;
    Ok(Some(meta.id))
}

/// Checks that a checkpoint's manifest fits the plan: same nodes with the same parallelism.
fn check_manifest(plan: &Plan, manifest: &Manifest) -> Result<(), JobError> {
    for node in &plan.nodes {
        let error = match manifest.get(&node.id) {
            None => TaskRestoreError::MissingNode(node.id.clone()),
            Some(m) if m.len() != node.parallelism as usize => TaskRestoreError::Parallelism {
                node: node.id.clone(),
                checkpoint: m.len(),
                job: node.parallelism,
            },
            Some(_) => continue,
        };
        return Err(JobError::Task { node: node.id.clone(), subtask: 0, error: error.into() });
    }
    Ok(())
}
