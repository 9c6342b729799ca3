//! A disabled tenant's jobs: disabling stops them at once and records which were running;
//! enabling resumes those from their latest checkpoints (as a server restart resumes jobs).
//! While the tenant is disabled no job of it starts: admission refuses it (checked under
//! the tenant's admission lock, which disabling holds while it sets the flag and stops the
//! jobs), and the server does not resume its jobs when it starts.

use std::collections::BTreeSet;

use super::JobManager;
use super::record::JobStatus;
use crate::clock::unix_ms;
use crate::runtime::commit_latest;
use crate::server::error::ServerResult;
use crate::server::tenants::{Tenant, Tenants};

impl JobManager {
    /// `tenant`'s admission lock (see `Inner::admission`), without the disabled check.
    pub(super) async fn turn(&self, tenant: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.inner.admission.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(tenant.to_string()).or_default().clone()
        };
        lock.lock_owned().await
    }

    /// Refuses to start a job of a disabled tenant (a tenant that is gone is not refused
    /// here; its jobs fail elsewhere).
    pub(super) fn refuse_disabled(&self, tenant: &str) -> ServerResult<()> {
        match Tenants::over(&self.inner.store).get(tenant) {
            Ok(t) => t.check_enabled(),
            Err(_) => Ok(()),
        }
    }

    /// True when `tenant` is disabled (its jobs are not resumed at start).
    pub(super) fn is_disabled(&self, tenant: &str) -> bool {
        self.refuse_disabled(tenant).is_err()
    }

    /// Disables tenant `id`: from now on its requests answer 403; its active jobs stop at
    /// once (no final checkpoint: a hostile guest cannot delay it; the output of each job's
    /// latest checkpoint is committed) and are recorded `stopped` with the reason. The
    /// ones that were running (not those asked to stop) are listed in the tenant record for
    /// [`JobManager::enable_tenant`]. Disabling a disabled tenant changes nothing.
    pub async fn disable_tenant(&self, tenants: &Tenants, id: &str) -> ServerResult<Tenant> {
        // Holding the tenant's turn: admissions in flight end first, and every later one
        // (and a concurrent disable) sees the flag.
        let _turn = self.turn(id).await;
        let tenant = tenants.get(id)?;
        if tenant.disabled_ms.is_some() {
            return Ok(tenant);
        }
        let since = unix_ms();
        tenants.set_disabled(id, Some((since, Vec::new()))).await?;
        let reason = format!(
            "tenant `{}` was disabled by the admin; the job resumes from its latest checkpoint when the tenant is enabled",
            tenant.name
        );
        let mut suspended = Vec::new();
        for job in self.list(id)? {
            if !job.status.is_active() {
                continue;
            }
            if let Some((env, plan)) = self.abort_run(&job.id).await?
                && let Err(e) = commit_latest(&plan, &env).await
            {
                tracing::warn!(tenant = %id, job = %job.id, "cannot commit the output of the latest checkpoint: {e}");
            }
            self.update(id, &job.id, |j| {
                j.status = JobStatus::Stopped;
                j.error = Some(reason.clone());
                j.end_ms = Some(unix_ms());
            })?;
            if job.status != JobStatus::Stopping {
                suspended.push(job.id);
            }
        }
        tracing::info!(tenant = %id, jobs = suspended.len(), "tenant disabled");
        tenants.set_disabled(id, Some((since, suspended))).await
    }

    /// Enables tenant `id`: its tokens work again and the jobs disabling stopped resume
    /// from their latest checkpoints (also jobs still recorded active, if the server went
    /// down while disabling). A job that cannot resume (its quota was lowered meanwhile)
    /// stays stopped with the reason. Enabling an enabled tenant changes nothing.
    pub async fn enable_tenant(&self, tenants: &Tenants, id: &str) -> ServerResult<Tenant> {
        let (tenant, resume) = {
            // One enable resumes the jobs (a concurrent one finds the tenant enabled).
            let _turn = self.turn(id).await;
            let before = tenants.get(id)?;
            if before.disabled_ms.is_none() {
                return Ok(before);
            }
            let mut resume: BTreeSet<String> = before.suspended_jobs.iter().cloned().collect();
            resume.extend(self.list(id)?.into_iter().filter(|j| j.status.is_active()).map(|j| j.id));
            (tenants.set_disabled(id, None).await?, resume)
        };
        for job in resume {
            match self.get(id, &job) {
                Ok(j) if j.status == JobStatus::Stopped || j.status.is_active() => {}
                _ => continue,
            }
            if let Err(e) = self.restart(&tenant, &job).await {
                tracing::warn!(tenant = %id, job = %job, "cannot resume the job: {e}");
                let _ = self.update(id, &job, |j| {
                    j.error = Some(format!("cannot resume after the tenant was enabled: {e}"));
                });
            }
        }
        tracing::info!(tenant = %id, "tenant enabled");
        Ok(tenant)
    }
}
