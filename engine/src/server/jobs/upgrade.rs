//! Upgrading a running job in one step, with rollback: new module versions, parallelism or
//! settings, one job id throughout.
//!
//! 1. **Check before anything stops.** The new spec is planned and held to the quotas, a
//!    `keep_running` savepoint of the job is taken and [`check_restore`] checks it against
//!    the new plan (key groups, nodes without a place, rescaled sources, schema versions);
//!    the savepoint is deleted again. A refusal (422) leaves the job as it was. `dry_run`
//!    stops here and answers what the check found.
//! 2. **Stop at a savepoint.** The new version is added to the history (`upgrading`) with
//!    the upgrade in the job record; the job stops (or drains) at a savepoint, whose id is
//!    stored as soon as it is known. Its final checkpoint commits the old version's output.
//! 3. **Switch.** The record names the new spec (`restoring`); [`restore_into`] writes the
//!    job's next checkpoint from the savepoint for the new plan, and the new version starts
//!    on **probation**: no checkpoint but a final one is taken (its output stays
//!    uncommitted) until the grace period ends.
//! 4. **Confirm or roll back.** Grace period over: the upgrade is confirmed, checkpoints
//!    resume. The new version failed to restore, failed (a restart) or ended failed within
//!    it: the new run is aborted, its staged output discarded (its sinks recover at the
//!    checkpoint it started from), and the old version restores from the same savepoint;
//!    the history and the exception history say why.
//!
//! Every step is stored before it acts, so a server that goes down in the middle of one
//! finishes the upgrade or rolls it back when it starts ([`JobManager::resume_upgrade`]):
//! the job ends on exactly one version, and — the new version having committed nothing —
//! its output is what one version would have written.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use utoipa::ToSchema;
use weir_store::{CheckpointStorage as _, SavepointInfo};

use super::exceptions::{ExceptionAction, JobException};
use super::record::{JobRecord, JobStatus, JobVersion, Upgrade, UpgradePhase, VersionModule, VersionOutcome};
use super::{JobManager, RunFailure, buffered_bytes};
use crate::clock::unix_ms;
use crate::plan::{JobSpec, NodeKind, Plan};
use crate::runtime::{FailureClass, FailureInfo, JobEvent, JobReport, RunEnv, commit_latest};
use crate::savepoint::{RestoreCheck, RestoreError, RestoreOptions, check_restore, restore_into};
use crate::server::error::{ServerError, ServerResult};
use crate::server::tenants::Tenant;

/// The probation of an upgraded job when the request names none, ms.
pub const DEFAULT_GRACE_PERIOD_MS: u64 = 10_000;
/// The longest probation a request may ask for, ms (its output waits that long).
pub const MAX_GRACE_PERIOD_MS: u64 = 600_000;
/// How long a stopping run may take to end after its final checkpoint completed.
const RUN_END_TIMEOUT: Duration = Duration::from_secs(60);

/// What an upgrade asks for: a new spec, or the current one with new modules and
/// parallelism. Node ids carry state over, as when a job starts from a savepoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpgradeRequest {
    /// The new spec (default: the current one, with the changes below).
    #[serde(default)]
    pub spec: Option<JobSpec>,
    /// New modules by operator id (a module id, the name it was uploaded under, or
    /// `builtin:<name>`).
    #[serde(default)]
    pub modules: BTreeMap<String, String>,
    /// New parallelism by node id.
    #[serde(default)]
    pub parallelism: BTreeMap<String, u32>,
    /// Drain the old version (every event-time timer fires) instead of stopping it. Its
    /// windows fire early: for an event-time job that reads on, stop (the default).
    #[serde(default)]
    pub drain: bool,
    /// Drop the savepoint's state that has no place in the new version instead of refusing.
    #[serde(default)]
    pub allow_non_restored_state: bool,
    /// Probation of the new version, ms (default 10 000, at most 600 000): it takes no
    /// checkpoint, and a failure rolls it back to the old version.
    #[serde(default)]
    pub grace_period_ms: Option<u64>,
    /// Only check: take a savepoint, check it against the new version, delete it, answer.
    #[serde(default)]
    pub dry_run: bool,
}

/// What the check before an upgrade found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UpgradeCheck {
    /// The version the job runs.
    pub from_version: u32,
    /// The number the new version gets.
    pub to_version: u32,
    /// The new spec, with module references pinned to module ids.
    pub spec: JobSpec,
    /// What each node gets from the savepoint the check took.
    pub check: RestoreCheck,
}

/// How an upgrade takes a savepoint: of the running job (to check against), or stopping it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeStop {
    /// The job keeps running (the savepoint the new version is checked against).
    KeepRunning,
    /// The job stops at the savepoint.
    Stop,
    /// The job drains, then stops at the savepoint.
    Drain,
}

/// A savepoint an upgrade took: its id, and why it failed (`None`: it completed).
#[derive(Debug, Clone)]
pub struct TakenSavepoint {
    /// Its id.
    pub id: String,
    /// Why it failed.
    pub failure: Option<String>,
}

/// A future of the savepoints an upgrade takes.
pub type SavepointFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = ServerResult<T>> + Send + 'a>>;

/// The savepoints an upgrade takes and deletes: `server::savepoints::Savepoints`, which sits
/// above the job manager (it stops jobs), so the job manager sees it through this.
pub trait UpgradeSavepoints: Send + Sync {
    /// Takes a savepoint of `job` as `how` says and waits for its outcome; `taken` gets its
    /// id as soon as it is known.
    fn take<'a>(
        &'a self,
        tenant: &'a Tenant,
        job: &'a str,
        how: UpgradeStop,
        taken: Box<dyn FnOnce(&str) + Send + 'a>,
    ) -> SavepointFuture<'a, TakenSavepoint>;

    /// Deletes savepoint `id` of `tenant`.
    fn delete<'a>(&'a self, tenant: &'a str, id: &'a str) -> SavepointFuture<'a, ()>;
}

/// Refuses a change (`what`) of a job while it is being upgraded.
pub(super) fn refuse_upgrading(job: &JobRecord, what: &str) -> ServerResult<()> {
    match &job.upgrade {
        Some(u) => Err(ServerError::Conflict(format!(
            "job `{}` is being upgraded from version {} to {}; {what} once the upgrade ended",
            job.id, u.from_version, u.to_version
        ))),
        None => Ok(()),
    }
}

/// A restore error as the answer to an upgrade.
fn refusal(e: RestoreError) -> ServerError {
    match e {
        RestoreError::Incompatible(m) => {
            ServerError::Unprocessable(format!("the new version cannot take the job's state: {m}"))
        }
        RestoreError::Migration(m) => ServerError::Unprocessable(format!("the new version's module: {m}")),
        RestoreError::Store(e) => ServerError::from(e),
    }
}

/// `spec` with `request`'s module and parallelism changes.
fn changed_spec(mut spec: JobSpec, request: &UpgradeRequest) -> ServerResult<JobSpec> {
    for (node, module) in &request.modules {
        match spec.nodes.iter_mut().find(|n| &n.id == node) {
            Some(n) if n.kind == NodeKind::Operator => n.module = Some(module.clone()),
            Some(_) => {
                return Err(ServerError::BadRequest(format!("modules: node `{node}` is not an operator")));
            }
            None => return Err(ServerError::BadRequest(format!("modules: the job has no node `{node}`"))),
        }
    }
    for (node, parallelism) in &request.parallelism {
        match spec.nodes.iter_mut().find(|n| &n.id == node) {
            Some(n) => n.parallelism = *parallelism,
            None => {
                return Err(ServerError::BadRequest(format!("parallelism: the job has no node `{node}`")));
            }
        }
    }
    Ok(spec)
}

impl JobManager {
    /// A version of `tenant`'s job with `spec` (its modules looked up for their names).
    pub(super) fn new_version(
        &self,
        tenant: &str,
        version: u32,
        spec: &JobSpec,
        savepoint: Option<String>,
    ) -> JobVersion {
        let modules = spec
            .nodes
            .iter()
            .filter_map(|n| n.module.as_ref().map(|m| (n, m)))
            .map(|(n, m)| VersionModule {
                node: n.id.clone(),
                digest: m.clone(),
                name: self.inner.registry.get(tenant, m).ok().map(|module| module.name),
            })
            .collect();
        JobVersion {
            version,
            created_ms: unix_ms(),
            spec: spec.clone(),
            modules,
            savepoint,
            outcome: VersionOutcome::Upgrading,
            reason: None,
        }
    }

    /// Job `id`'s versions, oldest first.
    pub fn versions(&self, tenant: &str, id: &str) -> ServerResult<Vec<JobVersion>> {
        Ok(self.get(tenant, id)?.history())
    }

    /// Upgrades running job `id` as `request` says (see the module's text). Returns what the
    /// check found and the job once the new version started on probation (or, with
    /// `dry_run`, as it is).
    pub async fn upgrade(
        &self,
        savepoints: &dyn UpgradeSavepoints,
        tenant: &Tenant,
        id: &str,
        request: UpgradeRequest,
    ) -> ServerResult<(UpgradeCheck, JobRecord)> {
        let job = self.get(&tenant.id, id)?;
        refuse_upgrading(&job, "upgrade it again")?;
        if job.status != JobStatus::Running {
            return Err(ServerError::Conflict(format!(
                "job `{id}` is {}: only a running job is upgraded (start a stopped one from a savepoint)",
                job.status.as_str()
            )));
        }
        let grace_period_ms = request.grace_period_ms.unwrap_or(DEFAULT_GRACE_PERIOD_MS);
        if grace_period_ms > MAX_GRACE_PERIOD_MS {
            return Err(ServerError::BadRequest(format!(
                "grace_period_ms is {grace_period_ms}; at most {MAX_GRACE_PERIOD_MS}"
            )));
        }
        let mut spec = changed_spec(request.spec.clone().unwrap_or_else(|| job.spec.clone()), &request)?;
        super::admission::apply_quota_settings(&tenant.quotas, &mut spec.settings, true)?;
        let options = RestoreOptions { allow_non_restored_state: request.allow_non_restored_state };
        // One admission: the quota check and the switch (another job of the tenant cannot
        // take the room meanwhile).
        let _admitted = self.admit(&tenant.id).await?;
        let (spec, plan) = self.plan(&tenant.id, spec).await?;
        self.check_counts(tenant, Some(id), plan.subtask_count(), buffered_bytes(&plan.spec))?;
        let check = self.check_against_savepoint(savepoints, tenant, id, &plan, options).await?;
        // The history holds the current version: numbers of dropped or rolled-back ones are not reused.
        let to_version = job.history().iter().map(|v| v.version).max().unwrap_or(job.version) + 1;
        let answer = UpgradeCheck { from_version: job.version, to_version, spec: spec.clone(), check };
        if request.dry_run {
            return Ok((answer, self.get(&tenant.id, id)?));
        }
        let version = self.new_version(&tenant.id, to_version, &spec, None);
        let from_version = job.version;
        self.update(&tenant.id, id, |j| {
            j.push_version(version);
            j.upgrade = Some(Upgrade {
                from_version,
                to_version,
                phase: UpgradePhase::Stopping,
                savepoint: None,
                grace_period_ms,
                probation_until_ms: None,
                allow_non_restored_state: request.allow_non_restored_state,
                started_ms: unix_ms(),
                rollback_reason: None,
                restore_checkpoint: None,
            });
        })?;
        tracing::info!(tenant = %tenant.id, job = %id, from_version, to_version, "upgrading job");
        let how = if request.drain { UpgradeStop::Drain } else { UpgradeStop::Stop };
        let this = self.clone();
        let name = Box::new(|savepoint: &str| {
            let named = this.update(&tenant.id, id, |j| {
                if let Some(u) = &mut j.upgrade {
                    u.savepoint = Some(savepoint.to_string());
                }
            });
            if let Err(e) = named {
                tracing::warn!("cannot record the upgrade's savepoint: {e}");
            }
        });
        let savepoint = match savepoints.take(tenant, id, how, name).await {
            Ok(TakenSavepoint { id: savepoint, failure: None }) => savepoint,
            Ok(TakenSavepoint { failure: Some(why), .. }) => {
                return Err(self
                    .abandon(&tenant.id, id, format!("the savepoint to stop at failed: {why}"))
                    .await);
            }
            Err(e) => {
                return Err(self.abandon(&tenant.id, id, format!("cannot stop at a savepoint: {e}")).await);
            }
        };
        self.end_run(id).await?;
        self.switch(&tenant.id, id).await?;
        let job = self.get(&tenant.id, id)?;
        tracing::info!(tenant = %tenant.id, job = %id, %savepoint, "upgraded job on probation");
        Ok((answer, job))
    }

    /// Takes a `keep_running` savepoint of job `id`, checks it against `plan`, deletes it.
    async fn check_against_savepoint(
        &self,
        savepoints: &dyn UpgradeSavepoints,
        tenant: &Tenant,
        id: &str,
        plan: &Plan,
        options: RestoreOptions,
    ) -> ServerResult<RestoreCheck> {
        let probe = savepoints.take(tenant, id, UpgradeStop::KeepRunning, Box::new(|_| {})).await?;
        let checked = match &probe.failure {
            None => match self.savepoint_info(&probe.id).await {
                Ok(info) => check_restore(&self.inner.store, plan, &info, options).await.map_err(refusal),
                Err(e) => Err(e),
            },
            Some(why) => Err(ServerError::Conflict(format!(
                "cannot take the savepoint to check the new version against: {why}"
            ))),
        };
        if let Err(e) = savepoints.delete(&tenant.id, &probe.id).await {
            tracing::warn!(savepoint = %probe.id, "cannot delete the savepoint an upgrade checked against: {e}");
        }
        checked
    }

    /// The stored savepoint `id` (complete: the store holds it once it was copied whole).
    async fn savepoint_info(&self, id: &str) -> ServerResult<SavepointInfo> {
        let (store, sid) = (self.inner.store.clone(), id.to_string());
        tokio::task::spawn_blocking(move || store.savepoint(&sid))
            .await??
            .ok_or_else(|| ServerError::Conflict(format!("savepoint `{id}` is not stored")))
    }

    /// Waits for job `id`'s run to end (a stop's: its final checkpoint completed), at most
    /// [`RUN_END_TIMEOUT`], then aborts what is left of it; its end is not recorded as the
    /// job's (the upgrade records it).
    async fn end_run(&self, id: &str) -> ServerResult<()> {
        let running = self.inner.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
        if let Some(mut r) = running {
            if tokio::time::timeout(RUN_END_TIMEOUT, &mut r.task).await.is_err() {
                tracing::warn!(job = %id, "the stopping run did not end in time; aborting it");
                r.task.abort();
                let _ = r.task.await;
            }
            r.watcher.abort();
            let (store, job) = (self.inner.store.clone(), id.to_string());
            tokio::task::spawn_blocking(move || store.recover(&job)).await??;
        }
        Ok(())
    }

    /// Gives up an upgrade before anything switched: the old version runs on from its
    /// latest checkpoint. Returns the error to answer with.
    async fn abandon(&self, tenant: &str, id: &str, why: String) -> ServerError {
        tracing::warn!(tenant, job = %id, "upgrade abandoned: {why}");
        if self.running_env(id).is_some_and(|env| env.stop_requested().is_none()) {
            // Nothing was asked of the run: it goes on as it is.
            let cleared = self.update(tenant, id, |j| {
                if let Some(u) = j.upgrade.take() {
                    j.set_outcome(u.to_version, VersionOutcome::Abandoned, Some(why.clone()));
                }
            });
            if let Err(e) = cleared {
                tracing::error!(tenant, job = %id, "cannot record the abandoned upgrade: {e}");
            }
            return ServerError::Conflict(format!("the upgrade was abandoned: {why}"));
        }
        let resumed = async {
            self.end_run(id).await?;
            let job = self.update(tenant, id, |j| {
                if let Some(u) = j.upgrade.take() {
                    j.set_outcome(u.to_version, VersionOutcome::Abandoned, Some(why.clone()));
                }
                j.status = JobStatus::Running;
                j.start_ms = Some(unix_ms());
                j.end_ms = None;
            })?;
            let (_, plan) = self.plan(tenant, job.spec.clone()).await?;
            self.start(&job, plan);
            Ok::<_, ServerError>(job.version)
        }
        .await;
        match resumed {
            Ok(version) => {
                ServerError::Conflict(format!("the upgrade was abandoned: {why}; version {version} runs on"))
            }
            Err(e) => {
                let _ = self.update(tenant, id, |j| {
                    j.status = JobStatus::Failed;
                    j.error =
                        Some(format!("the upgrade was abandoned ({why}) and the job cannot resume: {e}"));
                    j.end_ms = Some(unix_ms());
                });
                ServerError::Conflict(format!(
                    "the upgrade was abandoned ({why}) and the job cannot resume: {e}"
                ))
            }
        }
    }

    /// Switches job `id` to the new version of its upgrade: commits what the old version's
    /// final checkpoint covers, writes the new version's checkpoint from the savepoint and
    /// starts it on probation. A new version that cannot restore is rolled back.
    async fn switch(&self, tenant: &str, id: &str) -> ServerResult<()> {
        let job = self.get(tenant, id)?;
        let Some(u) = job.upgrade.clone() else { return Ok(()) };
        let savepoint_id =
            u.savepoint.clone().ok_or_else(|| ServerError::internal("the upgrade names no savepoint"))?;
        let info = self.savepoint_info(&savepoint_id).await?;
        let old_spec = job
            .version_spec(u.from_version)
            .cloned()
            .ok_or_else(|| ServerError::internal("no old version"))?;
        let new_spec =
            job.version_spec(u.to_version).cloned().ok_or_else(|| ServerError::internal("no new version"))?;
        // The old version's output up to the savepoint is committed before the new one starts
        // clean (a server that went down after the final checkpoint may not have).
        if self.latest_checkpoint(id).await? == Some(info.checkpoint) {
            let (_, old_plan) = self.plan(tenant, old_spec).await?;
            let env = RunEnv::new(id, self.inner.store.for_this_open());
            commit_latest(&old_plan, &env)
                .await
                .map_err(|e| ServerError::internal(format!("cannot commit the old version's output: {e}")))?;
        }
        self.update(tenant, id, |j| {
            if let Some(u) = &mut j.upgrade {
                u.phase = UpgradePhase::Restoring;
            }
            j.spec = new_spec.clone();
            j.version = u.to_version;
            j.status = JobStatus::Running;
            j.error = None;
            j.start_ms = Some(unix_ms());
            j.end_ms = None;
        })?;
        let options = RestoreOptions { allow_non_restored_state: u.allow_non_restored_state };
        let restored = match self.plan(tenant, new_spec).await {
            Ok((_, plan)) => match restore_into(&self.inner.store, id, &plan, &info, options).await {
                Ok(report) => Ok((plan, report)),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        let (plan, report) = match restored {
            Ok(restored) => restored,
            Err(why) => {
                self.roll_back(
                    tenant,
                    id,
                    u.to_version,
                    format!("version {} cannot restore: {why}", u.to_version),
                )
                .await;
                return Ok(());
            }
        };
        let until = unix_ms() + u.grace_period_ms;
        self.update(tenant, id, |j| {
            if let Some(u) = &mut j.upgrade {
                u.phase = UpgradePhase::Probation;
                u.probation_until_ms = Some(until);
                u.restore_checkpoint = Some(report.checkpoint);
            }
            j.subtasks = plan.subtask_count();
            j.restored_from = Some(report.clone());
            if let Some(v) = j.versions.iter_mut().find(|v| v.version == u.to_version) {
                v.savepoint = Some(savepoint_id.clone());
            }
        })?;
        self.start_probation(tenant, id, plan, u.to_version, u.grace_period_ms)
    }

    /// Starts the new version of job `id` on probation and watches it.
    fn start_probation(
        &self,
        tenant: &str,
        id: &str,
        plan: Arc<Plan>,
        to_version: u32,
        grace_period_ms: u64,
    ) -> ServerResult<()> {
        let job = self.get(tenant, id)?;
        let events = self.start_run(&job, plan, grace_period_ms > 0);
        let (this, tenant, id) = (self.clone(), tenant.to_string(), id.to_string());
        tokio::spawn(
            async move { this.watch_probation(&tenant, &id, to_version, events, grace_period_ms).await },
        );
        Ok(())
    }

    /// Confirms the upgrade when the grace period ends; rolls it back if the new version
    /// restarts before (a run that ends is seen by [`JobManager::probation_ended`]).
    async fn watch_probation(
        &self,
        tenant: &str,
        id: &str,
        to_version: u32,
        mut events: broadcast::Receiver<JobEvent>,
        grace_period_ms: u64,
    ) {
        let grace = tokio::time::sleep(Duration::from_millis(grace_period_ms));
        tokio::pin!(grace);
        loop {
            tokio::select! {
                () = &mut grace => {
                    self.confirm(tenant, id, to_version);
                    return;
                }
                event = events.recv() => match event {
                    Ok(JobEvent::Restarting { error, .. }) => {
                        self.roll_back(tenant, id, to_version, format!("version {to_version} failed on probation: {error}")).await;
                        return;
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        }
    }

    /// Confirms the upgrade of job `id` to `to_version` if it is still on probation: the
    /// history says so and checkpoints resume.
    fn confirm(&self, tenant: &str, id: &str, to_version: u32) -> bool {
        let mut confirmed = false;
        let updated = self.update(tenant, id, |j| {
            let Some(u) = j.upgrade.clone() else { return };
            if u.to_version != to_version || u.phase != UpgradePhase::Probation {
                return;
            }
            j.upgrade = None;
            j.set_outcome(u.from_version, VersionOutcome::Replaced, None);
            j.set_outcome(u.to_version, VersionOutcome::Current, None);
            confirmed = true;
        });
        if let Err(e) = updated {
            tracing::warn!(tenant, job = %id, "cannot record the confirmed upgrade: {e}");
            return false;
        }
        if confirmed {
            if let Some(env) = self.running_env(id) {
                env.hold_checkpoints(false);
            }
            tracing::info!(tenant, job = %id, version = to_version, "upgrade confirmed");
        }
        confirmed
    }

    /// A run of job `id` ended: if it was a new version on probation, a failure rolls the
    /// upgrade back and a success confirms it. Returns true when the rollback records the
    /// job's status instead of the caller.
    pub(super) async fn probation_ended(
        &self,
        tenant: &str,
        id: &str,
        result: &Result<JobReport, RunFailure>,
    ) -> bool {
        let Ok(job) = self.get(tenant, id) else { return false };
        let Some(u) = job.upgrade.filter(|u| u.phase == UpgradePhase::Probation) else { return false };
        match result {
            Ok(_) => {
                self.confirm(tenant, id, u.to_version);
                false
            }
            Err(e) => {
                let (this, tenant, id) = (self.clone(), tenant.to_string(), id.to_string());
                let why = format!("version {} failed on probation: {e}", u.to_version);
                tokio::spawn(async move { this.roll_back(&tenant, &id, u.to_version, why).await });
                true
            }
        }
    }

    /// Rolls job `id`'s upgrade to `to_version` back (if it is still restoring or on
    /// probation): the old version restores from the upgrade's savepoint.
    async fn roll_back(&self, tenant: &str, id: &str, to_version: u32, why: String) {
        let mut claimed = false;
        let _ = self.update(tenant, id, |j| {
            if let Some(u) = &mut j.upgrade
                && u.to_version == to_version
                && matches!(u.phase, UpgradePhase::Restoring | UpgradePhase::Probation)
            {
                u.phase = UpgradePhase::RollingBack;
                u.rollback_reason = Some(why.clone());
                claimed = true;
            }
        });
        if !claimed {
            return;
        }
        tracing::warn!(tenant, job = %id, "rolling the upgrade back: {why}");
        if let Err(e) = self.finish_rollback(tenant, id).await {
            tracing::error!(tenant, job = %id, "cannot roll the upgrade back: {e}");
            let _ = self.update(tenant, id, |j| {
                j.upgrade = None;
                j.status = JobStatus::Failed;
                j.error = Some(format!("{why}; rolling back to the old version failed: {e}"));
                j.end_ms = Some(unix_ms());
            });
        }
    }

    /// The rollback's work: the new run goes, its staged output is discarded, the old
    /// version restores from the savepoint and starts.
    async fn finish_rollback(&self, tenant: &str, id: &str) -> ServerResult<()> {
        self.abort_run(id).await?;
        let job = self.get(tenant, id)?;
        let Some(u) = job.upgrade.clone() else { return Ok(()) };
        let why = u.rollback_reason.clone().unwrap_or_default();
        // The new version's output since the checkpoint it started from was never
        // committed (probation): its sinks recover at that checkpoint, which discards it.
        if let Some(restored) = u.restore_checkpoint
            && self.latest_checkpoint(id).await? == Some(restored)
            && let Some(new_spec) = job.version_spec(u.to_version).cloned()
            && let Ok((_, new_plan)) = self.plan(tenant, new_spec).await
        {
            let env = RunEnv::new(id, self.inner.store.for_this_open());
            commit_latest(&new_plan, &env).await.map_err(|e| {
                ServerError::internal(format!("cannot discard the new version's output: {e}"))
            })?;
        }
        let old_spec = job
            .version_spec(u.from_version)
            .cloned()
            .ok_or_else(|| ServerError::internal("no old version"))?;
        let savepoint_id =
            u.savepoint.clone().ok_or_else(|| ServerError::internal("the upgrade names no savepoint"))?;
        let info = self.savepoint_info(&savepoint_id).await?;
        let (_, plan) = self.plan(tenant, old_spec.clone()).await?;
        let options = RestoreOptions { allow_non_restored_state: u.allow_non_restored_state };
        let report = restore_into(&self.inner.store, id, &plan, &info, options).await.map_err(refusal)?;
        let job = self.update(tenant, id, |j| {
            j.upgrade = None;
            j.set_outcome(u.to_version, VersionOutcome::RolledBack, Some(why.clone()));
            j.set_outcome(u.from_version, VersionOutcome::Current, None);
            j.spec = old_spec.clone();
            j.version = u.from_version;
            j.subtasks = plan.subtask_count();
            j.status = JobStatus::Running;
            j.error = Some(format!("the upgrade to version {} was rolled back: {why}", u.to_version));
            j.restored_from = Some(report.clone());
            j.start_ms = Some(unix_ms());
            j.end_ms = None;
        })?;
        let info = FailureInfo { class: Some(FailureClass::UserCode), ..FailureInfo::default() };
        let exception = JobException::new(unix_ms(), job.restarts, &info, &why, ExceptionAction::RolledBack);
        self.record_exception(tenant, id, exception).await;
        tracing::info!(tenant, job = %id, version = u.from_version, "upgrade rolled back");
        self.start(&job, plan);
        Ok(())
    }

    /// The id of job `id`'s latest completed checkpoint.
    async fn latest_checkpoint(&self, id: &str) -> ServerResult<Option<u64>> {
        let (store, job) = (self.inner.store.clone(), id.to_string());
        let latest = tokio::task::spawn_blocking(move || store.latest_completed(&job)).await??;
        Ok(latest.map(|(meta, _)| meta.id))
    }

    /// Goes on with job `id`'s upgrade after a server start (nothing of it runs): before the
    /// old version stopped at its savepoint, the upgrade is abandoned and the old version
    /// resumes; after, the switch is made again (or the rollback), and a new version on
    /// probation resumes from the checkpoint it started from, on a new probation.
    pub(super) async fn resume_upgrade(&self, tenant: &str, id: &str) -> ServerResult<()> {
        let job = self.get(tenant, id)?;
        let Some(u) = job.upgrade.clone() else { return Ok(()) };
        tracing::info!(tenant, job = %id, phase = ?u.phase, "going on with an interrupted upgrade");
        match u.phase {
            UpgradePhase::Stopping => {
                let stopped = match &u.savepoint {
                    Some(s) => self.savepoint_info(s).await.is_ok(),
                    None => false,
                };
                if !stopped {
                    let why =
                        "the server went down before the old version stopped at its savepoint".to_string();
                    // Abandoning resumes the old version from its latest checkpoint.
                    let _ = self.abandon(tenant, id, why).await;
                    return Ok(());
                }
                self.switch(tenant, id).await
            }
            UpgradePhase::Restoring => self.switch(tenant, id).await,
            UpgradePhase::Probation => {
                let (_, plan) = self.plan(tenant, job.spec.clone()).await?;
                let until = unix_ms() + u.grace_period_ms;
                self.update(tenant, id, |j| {
                    if let Some(u) = &mut j.upgrade {
                        u.probation_until_ms = Some(until);
                    }
                    j.start_ms = Some(unix_ms());
                })?;
                self.start_probation(tenant, id, plan, u.to_version, u.grace_period_ms)
            }
            UpgradePhase::RollingBack => {
                let why = u.rollback_reason.clone().unwrap_or_default();
                if let Err(e) = self.finish_rollback(tenant, id).await {
                    self.update(tenant, id, |j| {
                        j.upgrade = None;
                        j.status = JobStatus::Failed;
                        j.error = Some(format!("{why}; rolling back to the old version failed: {e}"));
                        j.end_ms = Some(unix_ms());
                    })?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        serde_json::from_value(serde_json::json!({
            "name": "j",
            "nodes": [
                { "id": "in", "kind": "source", "connector": "generator" },
                { "id": "count", "kind": "operator", "module": "a" },
            ],
            "edges": [{ "from": "in", "to": "count" }]
        }))
        .unwrap()
    }

    /// Modules and parallelism change the named nodes; a node the job lacks, or a module
    /// for a node that is not an operator, is refused with its name.
    #[test]
    fn changes_apply_to_the_named_nodes_only() {
        let request = UpgradeRequest {
            modules: BTreeMap::from([("count".into(), "b".into())]),
            parallelism: BTreeMap::from([("count".into(), 3)]),
            ..UpgradeRequest::default()
        };
        let changed = changed_spec(spec(), &request).unwrap();
        assert_eq!(changed.nodes[1].module.as_deref(), Some("b"));
        assert_eq!(changed.nodes[1].parallelism, 3);
        assert_eq!(changed.nodes[0].parallelism, spec().nodes[0].parallelism);
        let bad = UpgradeRequest {
            modules: BTreeMap::from([("in".into(), "b".into())]),
            ..UpgradeRequest::default()
        };
        assert!(changed_spec(spec(), &bad).unwrap_err().to_string().contains("`in` is not an operator"));
        let bad =
            UpgradeRequest { parallelism: BTreeMap::from([("nope".into(), 2)]), ..UpgradeRequest::default() };
        assert!(changed_spec(spec(), &bad).unwrap_err().to_string().contains("no node `nope`"));
    }

    /// The history keeps the latest versions, never dropping the current one.
    #[test]
    fn the_history_is_bounded_and_keeps_the_current_version() {
        let spec = spec();
        let mut job = JobRecord {
            id: "ab".repeat(16),
            tenant: "t".into(),
            name: "j".into(),
            status: JobStatus::Running,
            error: None,
            created_ms: 1,
            start_ms: None,
            end_ms: None,
            restarts: 0,
            subtasks: 2,
            spec: spec.clone(),
            restored_from: None,
            unconfirmed_resumes: 0,
            version: 1,
            versions: Vec::new(),
            upgrade: None,
        };
        let version = |n: u32| JobVersion {
            version: n,
            created_ms: 0,
            spec: spec.clone(),
            modules: Vec::new(),
            savepoint: None,
            outcome: VersionOutcome::RolledBack,
            reason: None,
        };
        for n in 2..=40 {
            job.push_version(version(n));
        }
        assert_eq!(job.versions.len(), crate::server::jobs::MAX_VERSIONS);
        assert_eq!(job.versions[0].version, 1, "the current version stays");
        assert_eq!(job.versions.last().unwrap().version, 40);
        assert!(job.version_spec(1).is_some());
        assert!(job.version_spec(2).is_none(), "dropped");
    }
}
