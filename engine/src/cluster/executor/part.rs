//! One part of an attempt running on this worker: plan the spec again with the shipped
//! modules, register the inputs and answer `Deployed`; wait for `Start`; open the outputs,
//! run the subtasks (their messages to the coordinator and their counters go over the
//! session) and answer `Ended`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use weir_store::CheckpointStorage;

use super::counters::Counters;
use super::logs::ShippedLogs;
use super::{DeployError, ExecutorConfig, lock};
use crate::cluster::protocol::{AttemptId, Deploy, DeployRefusal, ModuleBytes, RemoteFailure, ToController};
use crate::cluster::quota::RemoteQuota;
use crate::cluster::remote_storage::RemoteStorage;
use crate::guest::{GuestHost, OperatorModule};
use crate::local_state::{LocalQuota, LocalStateConfig};
use crate::plan::{JobSpec, LoadError, ModuleLoader, Plan};
use crate::runtime::attempt::{Layout, Part};
use crate::runtime::env::TaskEnv;
use crate::runtime::{Control, JobError, StopSignal, ToCoordinator};

/// The control senders of a part's tasks, by task index (the executor routes `Control`
/// messages through them).
pub(super) type Controls = Arc<Mutex<HashMap<usize, mpsc::UnboundedSender<Control>>>>;

/// Loads the modules the controller shipped.
struct Shipped<'a> {
    host: &'a GuestHost,
    modules: &'a BTreeMap<String, ModuleBytes>,
}

impl ModuleLoader for Shipped<'_> {
    fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, LoadError> {
        let module = self
            .modules
            .get(reference)
            .ok_or_else(|| format!("module `{reference}` was not shipped with the deploy"))?;
        Ok(self.host.load(&module.name, &module.bytes)?)
    }
}

/// Runs one part: prepare, answer `Deployed`, wait for `Start`, run, answer `Ended`.
pub(super) async fn run_part(
    config: ExecutorConfig,
    deploy: Deploy,
    outbox: mpsc::Sender<ToController>,
    storage: Arc<RemoteStorage>,
    controls: Controls,
    stop: Arc<StopSignal>,
    start: oneshot::Receiver<()>,
) {
    let attempt = deploy.attempt.clone();
    let plan = match plan_part(&config, &deploy).await {
        Ok(plan) => plan,
        Err(e) => return refuse(&outbox, attempt, e).await,
    };
    let layout = Layout {
        job: attempt.job.clone(),
        attempt: attempt.attempt,
        places: deploy.places.clone(),
        addresses: deploy.addresses.clone(),
        here: deploy.here,
        data: Arc::new(config.data.clone()),
    };
    let part = match Part::prepare(&plan, Some(&layout)) {
        Ok(part) => part,
        Err(e) => return refuse(&outbox, attempt, e.into()).await,
    };
    let receivers = control_receivers(&plan, &layout, &controls);
    if outbox.send(ToController::Deployed { attempt: attempt.clone(), result: Ok(()) }).await.is_err() {
        return;
    }
    if start.await.is_err() {
        return;
    }
    let logs = Arc::new(ShippedLogs::default());
    let env = task_env(&config, &attempt, storage, stop, logs.clone());
    let running =
        Running { plan: &plan, layout: &layout, env: &env, outbox: &outbox, attempt: &attempt, logs: &logs };
    let failure = running.run(part, deploy.restore.as_ref(), receivers).await.err();
    let _ = outbox.send(ToController::Ended { attempt, failure }).await;
}

/// Plans the deploy's spec with the shipped modules, on the blocking pool (planning
/// compiles modules).
async fn plan_part(config: &ExecutorConfig, deploy: &Deploy) -> Result<Plan, DeployError> {
    let host = config.host.clone();
    let (spec_json, modules, kafka) =
        (deploy.spec_json.clone(), deploy.modules.clone(), deploy.kafka.clone());
    tokio::task::spawn_blocking(move || -> Result<Plan, DeployError> {
        let spec: JobSpec = serde_json::from_str(&spec_json).map_err(DeployError::Spec)?;
        let mut plan = crate::plan::plan(&spec, &Shipped { host: &host, modules: &modules })?;
        // The connections the controller resolved (a spec names connections only).
        crate::cluster::protocol::set_kafka_access(&mut plan, &kafka);
        Ok(plan)
    })
    .await?
}

/// Tells the controller the part could not be set up.
async fn refuse(outbox: &mpsc::Sender<ToController>, attempt: AttemptId, error: DeployError) {
    let result = Err(DeployRefusal(error.to_string()));
    let _ = outbox.send(ToController::Deployed { attempt, result }).await;
}

/// A control channel for every task here: the senders go to `controls`, the receivers
/// are returned (by task index).
fn control_receivers(
    plan: &Plan,
    layout: &Layout,
    controls: &Controls,
) -> BTreeMap<usize, mpsc::UnboundedReceiver<Control>> {
    let mut receivers = BTreeMap::new();
    let mut senders = lock(controls);
    let mut task = 0usize;
    for (index, node) in plan.nodes.iter().enumerate() {
        for s in 0..node.parallelism {
            if layout.is_here(index, s) {
                let (tx, rx) = mpsc::unbounded_channel();
                senders.insert(task, tx);
                receivers.insert(task, rx);
            }
            task += 1;
        }
    }
    receivers
}

/// What the subtasks here run with: the controller's storage and outboxes over the
/// session, host state on this worker's disk held to the tenant's quota.
fn task_env(
    config: &ExecutorConfig,
    attempt: &AttemptId,
    storage: Arc<RemoteStorage>,
    stop: Arc<StopSignal>,
    logs: Arc<ShippedLogs>,
) -> TaskEnv {
    TaskEnv {
        job_id: attempt.job.clone(),
        storage: storage.clone() as Arc<dyn CheckpointStorage>,
        faults: None,
        stop,
        store: None,
        outbox: Some(storage.clone() as Arc<dyn weir_store::Outbox>),
        local: LocalStateConfig {
            base: config.local_state.clone(),
            job: attempt.job.clone(),
            quota: Some(LocalQuota::new(Arc::new(RemoteQuota { storage, floor: config.disk_floor.clone() }))),
        },
        // On a worker, records are taken out at sources and by the guests themselves; the
        // replay that finds a record breaking an operator runs on the controller's own
        // attempts only (docs/design.md §13).
        dead_letters: Arc::default(),
        // The lines go to the controller, into the job's log.
        logs: Some(logs),
        log_rate: crate::guest::logs::LogRate::default(),
        attempt: u32::try_from(attempt.attempt).unwrap_or(u32::MAX),
    }
}

/// A failure of the part as a whole (not of one subtask).
fn part_failure(error: &JobError) -> RemoteFailure {
    RemoteFailure { node: String::new(), subtask: 0, message: error.to_string(), secondary: false }
}

/// How the part's run ended, as the controller is told.
fn remote_failure(error: JobError) -> RemoteFailure {
    match error {
        JobError::Task { node, subtask, error } => {
            RemoteFailure { node, subtask, secondary: error.is_secondary(), message: error.to_string() }
        }
        JobError::Panic { node, subtask, message } => {
            RemoteFailure { node, subtask, message: format!("panicked: {message}"), secondary: false }
        }
        other => part_failure(&other),
    }
}

/// A started part: what its run reads.
struct Running<'a> {
    plan: &'a Plan,
    layout: &'a Layout,
    env: &'a TaskEnv,
    outbox: &'a mpsc::Sender<ToController>,
    attempt: &'a AttemptId,
    logs: &'a Arc<ShippedLogs>,
}

impl Running<'_> {
    /// Opens the outputs, runs the subtasks until they all end, and reports their last
    /// counters; every message of the subtasks reaches the controller before this returns.
    async fn run(
        &self,
        mut part: Part<'_>,
        restore: Option<&(weir_store::CheckpointMeta, weir_store::Manifest)>,
        receivers: BTreeMap<usize, mpsc::UnboundedReceiver<Control>>,
    ) -> Result<(), RemoteFailure> {
        part.open_outputs().await.map_err(|e| part_failure(&e))?;
        let (to_coordinator, inbox) = mpsc::unbounded_channel::<ToCoordinator>();
        let forward = tokio::spawn(forward_to_coordinator(inbox, self.outbox.clone(), self.attempt.clone()));
        let spawned = part.spawn(Some(self.env), restore, receivers, &to_coordinator);
        drop(to_coordinator);
        let (finished, tasks) = spawned.map_err(|e| part_failure(&e))?;
        let counters = Counters::new(self.plan, self.layout, finished.metrics());
        let reporting = tokio::spawn(counters.clone().report(self.outbox.clone(), self.attempt.clone()));
        let shipping = tokio::spawn(self.logs.clone().ship(self.outbox.clone(), self.attempt.clone()));
        let joined = tasks.join(None).await;
        reporting.abort();
        shipping.abort();
        // Every message of the subtasks reaches the controller before `Ended`, and so do
        // their last log lines and final counters.
        let _ = forward.await;
        if let Some(logs) = self.logs.take(self.attempt) {
            let _ = self.outbox.send(logs).await;
        }
        let metrics = ToController::Metrics { attempt: self.attempt.clone(), counters: counters.now() };
        let _ = self.outbox.send(metrics).await;
        joined.map(drop).map_err(remote_failure)
    }
}

/// Sends the subtasks' messages to the coordinator over the session, in order, until
/// every subtask dropped its sender.
async fn forward_to_coordinator(
    mut inbox: mpsc::UnboundedReceiver<ToCoordinator>,
    outbox: mpsc::Sender<ToController>,
    attempt: AttemptId,
) {
    while let Some(message) = inbox.recv().await {
        let message = ToController::Coordinator { attempt: attempt.clone(), message: message.into() };
        if outbox.send(message).await.is_err() {
            return;
        }
    }
}
