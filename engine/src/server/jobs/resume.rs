//! Resuming, at server start, the jobs that were running when the server stopped. Each job
//! resumes on its own: one that cannot (its spec no longer passes the server's plan limits,
//! a module is gone or does not compile, resuming it fails or panics) is marked `failed`
//! with the reason and the others resume. Nothing one stored job holds keeps the server from
//! starting.
//!
//! What cannot be caught (the process aborted, or killed for its memory) is counted instead,
//! so that a spec that brings the server down does not bring it down again at every start:
//! each resume is recorded in the job (`unconfirmed_resumes`) before the job starts, and
//! cleared once it shows progress (a completed checkpoint, or [`CONFIRMED_AFTER`] of
//! running). A job resumed [`MAX_UNCONFIRMED_RESUMES`] times without progress, the server
//! going down each time, is marked failed instead of being resumed again.

use std::time::Duration;

use redb::{ReadableDatabase, ReadableTable};

use super::record::{JOBS, JobRecord, JobStatus, decode_job};
use super::{JobManager, db_err};
use crate::clock::unix_ms;
use crate::server::error::{ServerError, ServerResult};

/// Resumes without progress after which a job is failed rather than resumed again.
pub(super) const MAX_UNCONFIRMED_RESUMES: u32 = 3;

/// Running this long after a resume counts as progress (for jobs without periodic
/// checkpoints).
pub(super) const CONFIRMED_AFTER: Duration = Duration::from_secs(60);

/// The text of a panic's payload.
pub(super) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

impl JobManager {
    /// Starts every job that was running when the server stopped, from its latest checkpoint
    /// (not those of a disabled tenant: enabling it resumes them); returns how many. Fails
    /// only when the job table cannot be read at all.
    pub async fn resume_all(&self) -> ServerResult<usize> {
        let mut resumed = 0;
        let upgrading = self.upgrading_jobs()?;
        for (tenant, id) in &upgrading {
            if self.is_disabled(tenant) {
                continue;
            }
            // The upgrade goes on (or is rolled back), the job on exactly one version.
            if let Err(e) = self.resume_upgrade(tenant, id).await {
                tracing::warn!(tenant = %tenant, job = %id, "cannot go on with the job's upgrade: {e}");
                let _ = self.update(tenant, id, |j| {
                    j.upgrade = None;
                    j.status = JobStatus::Failed;
                    j.error = Some(format!("cannot go on with its upgrade after a server restart: {e}"));
                    j.end_ms = Some(unix_ms());
                });
            } else {
                resumed += 1;
            }
        }
        for (tenant, id) in self.active_jobs()? {
            if self.is_disabled(&tenant) || upgrading.contains(&(tenant.clone(), id.clone())) {
                continue;
            }
            let (this, t, i) = (self.clone(), tenant.clone(), id.clone());
            // A task of its own: a panic while resuming this job ends that task only.
            let why = match tokio::spawn(async move { this.resume_one(&t, &i).await }).await {
                Ok(Ok(())) => {
                    resumed += 1;
                    continue;
                }
                Ok(Err(e)) => e.to_string(),
                Err(e) if e.is_panic() => format!("resuming it panicked: {}", panic_text(&*e.into_panic())),
                Err(e) => e.to_string(),
            };
            tracing::warn!(tenant = %tenant, job = %id, "cannot resume the job: {why}");
            // Whatever of it may have started goes (a panic after the start).
            if let Err(e) = self.abort_run(&id).await {
                tracing::warn!(tenant = %tenant, job = %id, "cannot abort the job's run: {e}");
            }
            let failed = self.update(&tenant, &id, |j| {
                j.status = JobStatus::Failed;
                j.error = Some(format!("cannot resume after a server restart: {why}"));
                j.end_ms = Some(unix_ms());
            });
            if let Err(e) = failed {
                tracing::error!(tenant = %tenant, job = %id, "cannot mark the job failed: {e}");
            }
        }
        Ok(resumed)
    }

    /// (tenant, id) of every job stored as active. A record that does not decode is logged
    /// and left alone: it cannot be resumed, nor marked failed.
    pub(crate) fn active_jobs(&self) -> ServerResult<Vec<(String, String)>> {
        self.stored_jobs_where(|job| job.status.is_active())
    }

    /// (tenant, id) of every stored job that `keep` keeps (records that do not decode are
    /// logged and left out).
    fn stored_jobs_where(&self, keep: impl Fn(&JobRecord) -> bool) -> ServerResult<Vec<(String, String)>> {
        let txn = self.inner.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(JOBS).map_err(db_err)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(db_err)? {
            let (k, v) = row.map_err(db_err)?;
            let (tenant, id) = k.value();
            match decode_job(v.value()) {
                Ok(job) if keep(&job) => out.push((tenant.to_string(), id.to_string())),
                Ok(_) => {}
                Err(e) => tracing::error!(tenant, job = id, "cannot read the job's record; not resumed: {e}"),
            }
        }
        Ok(out)
    }

    /// (tenant, id) of every job stored with an upgrade in progress.
    fn upgrading_jobs(&self) -> ServerResult<Vec<(String, String)>> {
        self.stored_jobs_where(|job| job.upgrade.is_some())
    }

    /// Resumes one job: plans it again (held to today's limits) and starts it. A job that was
    /// stopping resumes and is asked to stop again.
    async fn resume_one(&self, tenant: &str, id: &str) -> ServerResult<()> {
        let job = self.get(tenant, id)?;
        if job.unconfirmed_resumes >= MAX_UNCONFIRMED_RESUMES {
            return Err(ServerError::Conflict(format!(
                "the server went down {} times after resuming this job, each time before the job \
                 completed a checkpoint or ran for {} s; it is not resumed again (restart it once the \
                 cause is fixed)",
                job.unconfirmed_resumes,
                CONFIRMED_AFTER.as_secs()
            )));
        }
        let (_, plan) = self.plan(tenant, job.spec.clone()).await?;
        let stopping = job.status == JobStatus::Stopping;
        // Stored (durably) before the job starts: if it takes the server down, the next
        // start sees it.
        let job = self.update(tenant, id, |j| {
            j.status = if stopping { JobStatus::Stopping } else { JobStatus::Running };
            j.start_ms = Some(unix_ms());
            j.unconfirmed_resumes = j.unconfirmed_resumes.saturating_add(1);
        })?;
        tracing::info!(tenant = %job.tenant, job = %job.id, stopping, "resuming job");
        self.start(&job, plan);
        if stopping && let Some(env) = self.running_env(id) {
            env.stop();
        }
        Ok(())
    }
}
