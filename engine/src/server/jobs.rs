//! The job manager: creates jobs from specs for a tenant, runs them with checkpoints, keeps
//! their status in the store, and controls them (stop, cancel, restart). Jobs that were
//! running when the server went down resume from their latest checkpoint when it starts.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redb::{ReadableDatabase, ReadableTable};
use tracing::Instrument as _;
use weir_store::{CheckpointStorage as _, SavepointInfo, Store};

mod admission;
mod exceptions;
mod hold;
mod kafka_access;
mod live;
mod logs;
mod record;
mod resume;
mod upgrade;

pub(crate) use exceptions::rows_per_tenant as exception_rows;
pub use exceptions::{ExceptionAction, JobException};
pub use live::{PartitionLag, SubtaskLive};
pub(crate) use logs::rows_per_tenant as log_rows;
pub use logs::{DEFAULT_LOG_BYTES, JobLogs, LogFilter, StoredLine};
pub(crate) use record::JOBS;
pub use record::{
    JobRecord, JobStatus, JobVersion, MAX_VERSIONS, Upgrade, UpgradePhase, VersionModule, VersionOutcome,
};
pub use upgrade::{
    DEFAULT_GRACE_PERIOD_MS, MAX_GRACE_PERIOD_MS, SavepointFuture, TakenSavepoint, UpgradeCheck,
    UpgradeRequest, UpgradeSavepoints, UpgradeStop,
};

use admission::{TenantModules, apply_quota_settings, scope_spec};
use live::Sample;
use record::{decode_job, encode_job};

use super::error::{ServerError, ServerResult};
use super::ids::{check_hex_id, new_id};
use super::ledger::{charge_row, job_owner};
use super::registry::ModuleRegistry;
use super::telemetry::Telemetry;
use super::tenants::Tenant;
use crate::clock::unix_ms;
use crate::connectors::kafka::ConnectionConfig;
use crate::plan::{JobSpec, Plan, PlanLimits};
use crate::runtime::{JobError, JobEvent, JobReport, RunEnv, StopMode, commit_latest, run_job_checkpointed};
use crate::savepoint::{RestoreError, RestoreOptions, restore_into};

/// How often the live rates of a running job are sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Why a run of a job ended without a report; its message is the job's `error`.
#[derive(Debug, thiserror::Error)]
enum RunFailure {
    /// The run failed (restarts used up, or the job cannot run).
    #[error(transparent)]
    Job(JobError),
    /// The run itself panicked (not a subtask: those fail the attempt and may restart).
    #[error("job failed: its run panicked: {0}")]
    Panicked(String),
}

struct Running {
    env: Arc<RunEnv>,
    plan: Arc<Plan>,
    task: tokio::task::JoinHandle<()>,
    /// Tells this run apart from a later run of the same job.
    generation: u64,
    /// The task following its events.
    watcher: tokio::task::AbortHandle,
    sample: Arc<Mutex<Sample>>,
}

struct Inner {
    store: Store,
    registry: ModuleRegistry,
    telemetry: Arc<Telemetry>,
    /// What a spec may ask for on this server (applied whenever a job is planned).
    limits: PlanLimits,
    /// The server's Kafka connections (a tenant's job names one it was granted).
    kafka: Arc<BTreeMap<String, ConnectionConfig>>,
    /// The running attempts. Its critical sections only insert, look up and remove; a panic
    /// elsewhere cannot leave it half-changed, so a poisoned lock is taken as it is (one
    /// panicking request must not turn every later request into a panic).
    running: Mutex<HashMap<String, Running>>,
    generations: std::sync::atomic::AtomicU64,
    /// Per tenant: serialises its quota checks with the job creations they admit. Per tenant
    /// because admission plans (compiles) the job and may run its modules' guest code (a
    /// savepoint's migration): one tenant's slow module must not hold anyone else's (T3).
    admission: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The cluster, once its listeners run: attempts run on its workers while any is live.
    cluster: Mutex<Option<Arc<dyn crate::runtime::AttemptRunner>>>,
    /// The operator logs of the jobs that ran since the server started (lines not yet
    /// written, followers), by job id.
    logs: Mutex<HashMap<String, Arc<JobLogs>>>,
}

/// The job manager. Cheap to clone.
#[derive(Clone)]
pub struct JobManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for JobManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobManager").finish_non_exhaustive()
    }
}

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

impl JobManager {
    /// The manager over `store` (creates its table); jobs are held to `limits`.
    pub fn open(
        store: &Store,
        registry: ModuleRegistry,
        telemetry: Arc<Telemetry>,
        limits: PlanLimits,
        kafka: BTreeMap<String, ConnectionConfig>,
    ) -> ServerResult<Self> {
        let txn = store.database()?.begin_write().map_err(db_err)?;
        txn.open_table(JOBS).map_err(db_err)?;
        txn.commit().map_err(db_err)?;
        Ok(JobManager {
            inner: Arc::new(Inner {
                store: store.clone(),
                registry,
                telemetry,
                limits,
                kafka: Arc::new(kafka),
                running: Mutex::new(HashMap::new()),
                generations: std::sync::atomic::AtomicU64::new(0),
                admission: Mutex::new(HashMap::new()),
                logs: Mutex::new(HashMap::new()),
                cluster: Mutex::new(None),
            }),
        })
    }

    /// Runs the attempts of jobs started from now on on `cluster`'s workers (while any is live).
    pub fn set_cluster(&self, cluster: Arc<dyn crate::runtime::AttemptRunner>) {
        *self.inner.cluster.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cluster);
    }

    /// Job `id` of `tenant`.
    pub fn get(&self, tenant: &str, id: &str) -> ServerResult<JobRecord> {
        check_hex_id("job", id, 32)?;
        let txn = self.inner.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(JOBS).map_err(db_err)?;
        match t.get((tenant, id)).map_err(db_err)? {
            Some(v) => decode_job(v.value()),
            None => Err(ServerError::NotFound(format!("no job `{id}`"))),
        }
    }

    /// The jobs of `tenant`, oldest first.
    pub fn list(&self, tenant: &str) -> ServerResult<Vec<JobRecord>> {
        let txn = self.inner.store.database()?.begin_read().map_err(db_err)?;
        let t = txn.open_table(JOBS).map_err(db_err)?;
        let mut out = Vec::new();
        for row in t.range((tenant, "")..).map_err(db_err)? {
            let (k, v) = row.map_err(db_err)?;
            if k.value().0 != tenant {
                break;
            }
            out.push(decode_job(v.value())?);
        }
        out.sort_by_key(|j| j.created_ms);
        Ok(out)
    }

    fn put(&self, job: &JobRecord) -> ServerResult<()> {
        let txn = self.inner.store.database()?.begin_write().map_err(db_err)?;
        {
            let mut t = txn.open_table(JOBS).map_err(db_err)?;
            let value = encode_job(&job.tenant, job)?;
            let key = (job.tenant.as_str(), job.id.as_str());
            let old = t.insert(key, value.as_slice()).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, key.0, key.0.len() + key.1.len(), (old, Some(value.len())), 0, false)?;
        }
        txn.commit().map_err(db_err)
    }

    /// Changes job `id` of `tenant` in one transaction; returns the new record.
    fn update(&self, tenant: &str, id: &str, change: impl FnOnce(&mut JobRecord)) -> ServerResult<JobRecord> {
        let txn = self.inner.store.database()?.begin_write().map_err(db_err)?;
        let job;
        {
            let mut t = txn.open_table(JOBS).map_err(db_err)?;
            let mut record = match t.get((tenant, id)).map_err(db_err)? {
                Some(v) => decode_job(v.value())?,
                None => return Err(ServerError::NotFound(format!("no job `{id}`"))),
            };
            let before = record.clone();
            change(&mut record);
            if record == before {
                // Nothing changed (most checkpoint events): no write, no fsync.
                drop(t);
                txn.abort().map_err(db_err)?;
                return Ok(record);
            }
            let value = encode_job(tenant, &record)?;
            let old = t.insert((tenant, id), value.as_slice()).map_err(db_err)?.map(|v| v.value().len());
            charge_row(&txn, tenant, tenant.len() + id.len(), (old, Some(value.len())), 0, false)?;
            job = record;
        }
        txn.commit().map_err(db_err)?;
        Ok(job)
    }

    /// (module id, job id) for every module that a job of `tenant` which may still run refers
    /// to. Every job but a finished one may run again (stopped, cancelled and failed jobs can
    /// be restarted), so only finished jobs release their modules.
    pub fn modules_in_use(&self, tenant: &str) -> ServerResult<Vec<(String, String)>> {
        let mut used = Vec::new();
        for job in self.list(tenant)? {
            if job.status == JobStatus::Finished {
                continue;
            }
            // An upgrade in progress may go back to the old version: its modules stay too.
            let specs: Vec<&JobSpec> = match &job.upgrade {
                Some(u) => {
                    [u.from_version, u.to_version].iter().filter_map(|v| job.version_spec(*v)).collect()
                }
                None => Vec::new(),
            };
            for node in job.spec.nodes.iter().chain(specs.into_iter().flat_map(|s| s.nodes.iter())) {
                if let Some(m) = &node.module {
                    used.push((m.clone(), job.id.clone()));
                }
            }
        }
        Ok(used)
    }

    /// Waits for `tenant`'s admission turn (see `Inner::admission`); a disabled tenant's is refused.
    async fn admit(&self, tenant: &str) -> ServerResult<tokio::sync::OwnedMutexGuard<()>> {
        let turn = self.turn(tenant).await;
        self.refuse_disabled(tenant).map(|()| turn)
    }

    /// Validates `spec` for `tenant` against its quotas, stores the job and starts it; with
    /// `restore`, from that savepoint (whose state is checked against the job and written
    /// as the job's first checkpoint before anything starts).
    pub async fn create(
        &self,
        tenant: &Tenant,
        mut spec: JobSpec,
        restore: Option<(SavepointInfo, RestoreOptions)>,
    ) -> ServerResult<JobRecord> {
        apply_quota_settings(&tenant.quotas, &mut spec.settings, true)?;
        let _admitted = self.admit(&tenant.id).await?;
        let (spec, plan) = self.plan(&tenant.id, spec).await?;
        self.check_counts(tenant, None, plan.subtask_count(), buffered_bytes(&plan.spec))?;
        let id = new_id(16);
        // Everything the job stores from now on (checkpoints, restored state) is the tenant's.
        self.inner.store.set_owners(&[(job_owner(&id), tenant.id.clone())])?;
        let restored_from = match restore {
            Some((savepoint, options)) => {
                Some(restore_into(&self.inner.store, &id, &plan, &savepoint, options).await.map_err(|e| {
                    match e {
                        RestoreError::Incompatible(m) => ServerError::BadRequest(format!(
                            "cannot start from savepoint `{}`: {m}",
                            savepoint.id
                        )),
                        RestoreError::Migration(m) => ServerError::Unprocessable(format!(
                            "cannot start from savepoint `{}`: {m}",
                            savepoint.id
                        )),
                        RestoreError::Store(e) => ServerError::from(e),
                    }
                })?)
            }
            None => None,
        };
        let job = JobRecord {
            id,
            tenant: tenant.id.clone(),
            name: spec.name.clone(),
            status: JobStatus::Running,
            error: None,
            created_ms: unix_ms(),
            start_ms: Some(unix_ms()),
            end_ms: None,
            restarts: 0,
            subtasks: plan.subtask_count(),
            spec,
            restored_from,
            unconfirmed_resumes: 0,
            version: 1,
            versions: Vec::new(),
            upgrade: None,
        };
        let mut job = job;
        let first = self.new_version(
            &job.tenant,
            1,
            &job.spec,
            job.restored_from.as_ref().map(|r| r.savepoint.clone()),
        );
        job.versions = vec![JobVersion { outcome: VersionOutcome::Current, ..first }];
        self.put(&job)?;
        tracing::info!(tenant = %job.tenant, job = %job.id, name = %job.name, "job created");
        self.start(&job, plan);
        Ok(job)
    }

    /// Holds the spec to the server's plan limits, resolves the modules (pinning references
    /// to module ids in the returned spec), scopes the connectors to the tenant (Kafka: to its
    /// grants, see `jobs/kafka_access.rs`) and plans the job. Every path that runs a job
    /// plans it here. Compiles, so it runs on the blocking pool.
    async fn plan(&self, tenant: &str, mut spec: JobSpec) -> ServerResult<(JobSpec, Arc<Plan>)> {
        let registry = self.inner.registry.clone();
        let store = self.inner.store.clone();
        let limits = self.inner.limits.clone();
        let kafka = self.inner.kafka.clone();
        let tenant = tenant.to_string();
        tokio::task::spawn_blocking(move || {
            // Before anything compiles: a refused spec costs no Cranelift time.
            limits.apply(&mut spec).map_err(|e| ServerError::BadRequest(e.to_string()))?;
            let grants = super::tenants::Tenants::over(&store).get(&tenant)?;
            let kafka = kafka_access::resolve_kafka(&grants, &spec, &kafka)?;
            let mut scoped = spec.clone();
            scope_spec(&tenant, &mut scoped, &store)?;
            let loader =
                TenantModules { registry: &registry, tenant: &tenant, resolved: Mutex::new(BTreeMap::new()) };
            let mut plan =
                crate::plan::plan(&scoped, &loader).map_err(|e| ServerError::BadRequest(e.to_string()))?;
            kafka.apply(&mut plan);
            let resolved = loader.resolved.into_inner().expect("resolved lock");
            for node in &mut spec.nodes {
                if let Some(m) = &mut node.module
                    && let Some(id) = resolved.get(m.as_str())
                {
                    *m = id.clone();
                }
            }
            Ok((spec, Arc::new(plan)))
        })
        .await?
    }

    /// Checks the job, subtask and buffered-bytes quotas for a job of `subtasks` subtasks
    /// whose channels hold `buffered` bytes (`except`: a job already counted, being
    /// restarted).
    fn check_counts(
        &self,
        tenant: &Tenant,
        except: Option<&str>,
        subtasks: u32,
        buffered: u64,
    ) -> ServerResult<()> {
        let holding: Vec<JobRecord> = self
            .list(&tenant.id)?
            .into_iter()
            .filter(|j| j.status.holds_quota() && Some(j.id.as_str()) != except)
            .collect();
        let q = &tenant.quotas;
        if u32::try_from(holding.len()).unwrap_or(u32::MAX) >= q.max_jobs {
            return Err(ServerError::Quota {
                limit: "max_jobs",
                message: format!(
                    "the tenant has {} job(s) that are running or stopped, and may have {}; cancel one first",
                    holding.len(),
                    q.max_jobs
                ),
            });
        }
        let used = holding.iter().fold(0u32, |sum, j| sum.saturating_add(j.subtasks));
        if used.saturating_add(subtasks) > q.max_subtasks {
            return Err(ServerError::Quota {
                limit: "max_subtasks",
                message: format!(
                    "the job needs {subtasks} subtask(s); the tenant's jobs use {used} of {}",
                    q.max_subtasks
                ),
            });
        }
        let used = holding.iter().map(|j| buffered_bytes(&j.spec)).fold(0u64, u64::saturating_add);
        if used.saturating_add(buffered) > q.max_buffered_bytes {
            return Err(ServerError::Quota {
                limit: "max_buffered_bytes",
                message: format!(
                    "the job's channels may hold {buffered} bytes (channels × settings.channel_capacity_bytes); \
                     the tenant's jobs' hold {used} of {}; lower channel_capacity_bytes or the parallelism",
                    q.max_buffered_bytes
                ),
            });
        }
        Ok(())
    }

    /// Starts running `job` (its status is already stored as running).
    fn start(&self, job: &JobRecord, plan: Arc<Plan>) {
        self.start_run(job, plan, false);
    }

    /// Starts running `job`, with checkpoints held back if `held` (an upgrade's probation);
    /// returns the run's events from its start on.
    fn start_run(
        &self,
        job: &JobRecord,
        plan: Arc<Plan>,
        held: bool,
    ) -> tokio::sync::broadcast::Receiver<JobEvent> {
        let cluster = self.inner.cluster.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut env = RunEnv::new(job.id.clone(), self.inner.store.for_this_open()).with_cluster(cluster);
        let logs = self.job_logs(&job.tenant, &job.id);
        if let Some(logs) = &logs {
            env = env.with_logs(logs.clone(), crate::guest::logs::LogRate::default());
        }
        env.hold_checkpoints(held);
        let env = Arc::new(env);
        let probation = env.subscribe();
        let sample = Arc::new(Mutex::new(Sample::default()));
        let span = tracing::info_span!("job", tenant = %job.tenant, job = %job.id);
        let events = self.clone().watch_events(
            job.tenant.clone(),
            job.id.clone(),
            env.subscribe(),
            env.clone(),
            plan.clone(),
            sample.clone(),
        );
        let events = tokio::spawn(events.instrument(span.clone()));
        let events_handle = events.abort_handle();
        let manager = self.clone();
        let (tenant, id) = (job.tenant.clone(), job.id.clone());
        let run_env = env.clone();
        let run_plan = plan.clone();
        let end_sample = sample.clone();
        let generation = self.inner.generations.fetch_add(1, Ordering::Relaxed);
        // The entry is in the map before the run can end and look for it.
        let mut running = self.inner.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let task = tokio::spawn(
            async move {
                // A panic of the run itself (not of a subtask: those fail the attempt) fails
                // this job, recorded as any failure, instead of leaving it `running`.
                let run = std::panic::AssertUnwindSafe(run_job_checkpointed(&plan, &run_env));
                let result = match futures::FutureExt::catch_unwind(run).await {
                    Ok(result) => result.map_err(RunFailure::Job),
                    Err(panic) => Err(RunFailure::Panicked(resume::panic_text(&*panic))),
                };
                events.abort();
                // What the run logged and counted since the last tick.
                manager.sample(&tenant, &id, &run_env, &plan, &end_sample);
                manager.flush_logs(logs).await;
                manager.finished(&tenant, &id, generation, result).await;
            }
            .instrument(span),
        );
        let watcher = events_handle;
        running.insert(job.id.clone(), Running { env, plan: run_plan, task, generation, watcher, sample });
        probation
    }

    /// Follows a running job: status on restarts, telemetry on checkpoints, live rates.
    async fn watch_events(
        self,
        tenant: String,
        id: String,
        mut events: tokio::sync::broadcast::Receiver<JobEvent>,
        env: Arc<RunEnv>,
        plan: Arc<Plan>,
        sample: Arc<Mutex<Sample>>,
    ) {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        let mut unconfirmed = Some(Instant::now());
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    self.sample(&tenant, &id, &env, &plan, &sample);
                    self.flush_logs(self.running_logs(&id)).await;
                    if unconfirmed.is_some_and(|t| t.elapsed() >= resume::CONFIRMED_AFTER) {
                        unconfirmed = None;
                        let _ = self.update(&tenant, &id, |j| j.unconfirmed_resumes = 0);
                    }
                }
                event = events.recv() => match event {
                    Ok(JobEvent::Restarting { attempt, error, failure, delay_ms }) => {
                        let class = failure.class.map_or("unknown".to_string(), |c| {
                            serde_json::to_value(c).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
                        });
                        self.inner.telemetry.restarted(&tenant, &id, &class, delay_ms);
                        let mut exception =
                            JobException::new(unix_ms(), attempt, &failure, &error, ExceptionAction::Restarted);
                        exception.delay_ms = Some(delay_ms);
                        self.record_exception(&tenant, &id, exception).await;
                        let _ = self.update(&tenant, &id, |j| {
                            j.restarts += 1;
                            j.error = Some(error);
                            if j.status == JobStatus::Running {
                                j.status = JobStatus::Restarting;
                            }
                        });
                    }
                    Ok(JobEvent::TookOut { failure, error, action }) => {
                        let action = match action {
                            crate::plan::OnError::DeadLetter => ExceptionAction::DeadLettered,
                            _ => ExceptionAction::Skipped,
                        };
                        let attempt = self.get(&tenant, &id).map_or(0, |j| j.restarts);
                        let exception = JobException::new(unix_ms(), attempt, &failure, &error, action);
                        self.record_exception(&tenant, &id, exception).await;
                    }
                    Ok(JobEvent::CheckpointCompleted { id: checkpoint, .. }) => {
                        unconfirmed = None;
                        let _ = self.update(&tenant, &id, |j| {
                            if j.status == JobStatus::Restarting {
                                j.status = JobStatus::Running;
                            }
                            j.unconfirmed_resumes = 0;
                        });
                        let store = self.inner.store.clone();
                        let job_id = id.clone();
                        if let Ok(Ok(Some((meta, _)))) =
                            tokio::task::spawn_blocking(move || store.checkpoint(&job_id, checkpoint)).await
                        {
                            self.inner.telemetry.checkpoint_completed(&tenant, &id, &meta);
                        }
                    }
                    Ok(JobEvent::CheckpointFailed { .. }) => self.inner.telemetry.checkpoint_failed(&tenant, &id),
                    Ok(JobEvent::Restored { .. }) => {
                        let _ = self.update(&tenant, &id, |j| {
                            if j.status == JobStatus::Restarting {
                                j.status = JobStatus::Running;
                            }
                        });
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        // The run ended: what it counted since the last tick is exported too.
                        self.sample(&tenant, &id, &env, &plan, &sample);
                        return;
                    }
                },
            }
        }
    }

    /// Appends `exception` to job `id`'s history (a failure to is logged: the job goes on).
    async fn record_exception(&self, tenant: &str, id: &str, exception: JobException) {
        let (store, tenant, id) = (self.inner.store.clone(), tenant.to_string(), id.to_string());
        let recorded =
            tokio::task::spawn_blocking(move || exceptions::record(&store, &tenant, &id, exception)).await;
        if let Ok(Err(e)) | Err(e) = recorded.map_err(ServerError::internal) {
            tracing::warn!("cannot record a job's failure in its exception history: {e}");
        }
    }

    /// Job `id`'s exception history, newest first.
    pub fn exceptions(&self, tenant: &str, id: &str) -> ServerResult<Vec<JobException>> {
        self.get(tenant, id)?;
        exceptions::list(&self.inner.store, tenant, id)
    }

    /// Records how a run ended.
    async fn finished(&self, tenant: &str, id: &str, generation: u64, result: Result<JobReport, RunFailure>) {
        {
            let mut running = self.inner.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if running.get(id).is_none_or(|r| r.generation != generation) {
                // Cancelled or restarted meanwhile: whoever did that records the status.
                return;
            }
            running.remove(id);
        }
        if self.probation_ended(tenant, id, &result).await {
            return;
        }
        let outcome = self.update(tenant, id, |j| {
            if j.upgrade.is_some() {
                // The old version stopping for an upgrade: the upgrade records what follows.
                return;
            }
            j.end_ms = Some(unix_ms());
            match &result {
                Ok(report) if report.stopped && !report.drained => j.status = JobStatus::Stopped,
                Ok(_) => {
                    j.status = JobStatus::Finished;
                    j.error = None;
                }
                Err(e) => {
                    j.status = JobStatus::Failed;
                    j.error = Some(e.to_string());
                }
            }
        });
        match (&result, outcome) {
            (_, Err(e)) => tracing::error!("cannot record the end of the job: {e}"),
            (Ok(report), Ok(j)) => tracing::info!(
                status = ?j.status,
                final_checkpoint = report.final_checkpoint.unwrap_or_default(),
                "job ended"
            ),
            (Err(e), Ok(j)) => {
                tracing::warn!("job failed: {e}");
                let info = match e {
                    RunFailure::Job(e) => e.info(),
                    RunFailure::Panicked(_) => crate::runtime::FailureInfo {
                        class: Some(crate::runtime::FailureClass::Platform),
                        ..Default::default()
                    },
                };
                let exception =
                    JobException::new(unix_ms(), j.restarts, &info, &e.to_string(), ExceptionAction::Failed);
                self.record_exception(tenant, id, exception).await;
            }
        }
    }

    /// Asks job `id` to stop at a final checkpoint.
    pub async fn stop(&self, tenant: &str, id: &str) -> ServerResult<JobRecord> {
        upgrade::refuse_upgrading(&self.get(tenant, id)?, "stop it")?;
        let (this, tenant, id) = (self.clone(), tenant.to_string(), id.to_string());
        tokio::task::spawn_blocking(move || this.stop_with(&tenant, &id, StopMode::Suspend, false)).await?
    }

    /// Asks job `id` to stop as `mode` says, pinning the final checkpoint with `pin` (a
    /// savepoint copies it).
    pub fn stop_with(&self, tenant: &str, id: &str, mode: StopMode, pin: bool) -> ServerResult<JobRecord> {
        let job = self.get(tenant, id)?;
        if !job.status.is_active() {
            return Err(ServerError::Conflict(format!("job `{id}` is {}, not running", job.status.as_str())));
        }
        if let Some(r) = self.inner.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id)
        {
            r.env.stop_with(mode, pin);
        }
        self.update(tenant, id, |j| {
            if j.status.is_active() {
                j.status = JobStatus::Stopping;
            }
        })
    }

    /// Aborts the run of job `id` (if any) and waits until it is gone; returns the run's
    /// environment and plan.
    async fn abort_run(&self, id: &str) -> ServerResult<Option<(Arc<RunEnv>, Arc<Plan>)>> {
        let running = self.inner.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
        let mut ended = None;
        if let Some(r) = running {
            r.watcher.abort();
            r.task.abort();
            // The run's tasks are dropped with it.
            let _ = r.task.await;
            // Checkpoints it left in progress fail now (and their chunks go).
            let store = self.inner.store.clone();
            let job = id.to_string();
            tokio::task::spawn_blocking(move || store.recover(&job)).await??;
            ended = Some((r.env, r.plan));
        }
        Ok(ended)
    }

    /// The environment of job `id`'s current run.
    pub(crate) fn running_env(&self, id: &str) -> Option<Arc<RunEnv>> {
        self.inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .map(|r| r.env.clone())
    }

    /// Cancels job `id` at once: no final checkpoint; it can restart from its latest one.
    /// The output its latest completed checkpoint covers is committed (a cancel right after
    /// a checkpoint may come before the sinks committed it).
    pub async fn cancel(&self, tenant: &str, id: &str) -> ServerResult<JobRecord> {
        let job = self.get(tenant, id)?;
        upgrade::refuse_upgrading(&job, "cancel it")?;
        if !job.status.holds_quota() {
            return Err(ServerError::Conflict(format!(
                "job `{id}` is {}; there is nothing to cancel",
                job.status.as_str()
            )));
        }
        if let Some((env, plan)) = self.abort_run(id).await?
            && let Err(e) = commit_latest(&plan, &env).await
        {
            tracing::warn!(tenant = %tenant, job = %id, "cannot commit the output of the latest checkpoint: {e}");
        }
        let job = self.update(tenant, id, |j| {
            if j.status.holds_quota() {
                j.status = JobStatus::Canceled;
                j.end_ms = Some(unix_ms());
            }
        })?;
        tracing::info!(tenant = %tenant, job = %id, "job canceled");
        Ok(job)
    }

    /// Restarts job `id` from its latest checkpoint (cancelling the current run first).
    pub async fn restart(&self, tenant: &Tenant, id: &str) -> ServerResult<JobRecord> {
        let job = self.get(&tenant.id, id)?;
        upgrade::refuse_upgrading(&job, "restart it")?;
        if job.status == JobStatus::Finished {
            return Err(ServerError::Conflict(format!(
                "job `{id}` finished: its input ended and its output is committed; submit it again for a new run"
            )));
        }
        let _admitted = self.admit(&tenant.id).await?;
        let mut spec = job.spec.clone();
        apply_quota_settings(&tenant.quotas, &mut spec.settings, false)?;
        let (_, plan) = self.plan(&tenant.id, spec).await?;
        if !job.status.holds_quota() {
            self.check_counts(tenant, Some(id), plan.subtask_count(), buffered_bytes(&plan.spec))?;
        }
        self.abort_run(id).await?;
        let job = self.update(&tenant.id, id, |j| {
            j.status = JobStatus::Running;
            j.error = None;
            j.start_ms = Some(unix_ms());
            j.end_ms = None;
            j.unconfirmed_resumes = 0;
        })?;
        tracing::info!(tenant = %tenant.id, job = %id, "job restarted");
        self.start(&job, plan);
        Ok(job)
    }

    /// Triggers a checkpoint of running job `id`; returns its id.
    pub async fn trigger_checkpoint(&self, tenant: &str, id: &str) -> ServerResult<u64> {
        let job = self.get(tenant, id)?;
        upgrade::refuse_upgrading(&job, "trigger a checkpoint")?;
        let trigger =
            self.running_env(id).map(|env| env.trigger_handle()).filter(|_| job.status == JobStatus::Running);
        let Some(trigger) = trigger else {
            return Err(ServerError::Conflict(format!("job `{id}` is {}, not running", job.status.as_str())));
        };
        trigger
            .trigger()
            .await
            .map_err(|why| ServerError::Conflict(format!("cannot trigger a checkpoint: {why}")))
    }

    /// Cancels every run (server shutdown); statuses stay as they are so the jobs resume.
    pub fn abort_all(&self) {
        for (_, r) in self.inner.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain() {
            r.watcher.abort();
            r.task.abort();
        }
    }
}

/// Bytes the channels of a job with `spec` may hold: its channels × `channel_capacity_bytes`
/// (counted against the tenant's `max_buffered_bytes`).
pub fn buffered_bytes(spec: &JobSpec) -> u64 {
    crate::plan::channel_count(spec).saturating_mul(spec.settings.channel_capacity_bytes)
}
