//! The checkpoint coordinator: one tokio task per run (attempt) of a checkpointed job.
//!
//! It triggers checkpoint `n` at the sources ([`Control::Trigger`]) on the interval and on
//! demand, collects every subtask's ack, completes the checkpoint in one durable store
//! transaction and announces it ([`Control::Completed`]); a timeout, a decline or a failed
//! completion aborts it. Once every source has ended it takes the final checkpoint and
//! returns its id. The protocol and its invariants are docs/design.md §6; the ones kept
//! here are cited by number.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc};
use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage, Manifest, SubtaskState, SubtaskStats};

use super::control::{Control, JobEvent, ToCoordinator, TriggerError, TriggerRequest};
use super::env::CheckpointHold;
use super::error::JobError;
use super::faults::FaultInjector;
use super::stop::StopSignal;
use super::store_call::store_call;
use crate::clock::unix_ms;
use crate::plan::CheckpointSettings;

/// One task as the coordinator sees it.
#[derive(Debug, Clone)]
pub struct TaskInfo {
    /// Node id.
    pub node: String,
    /// Subtask index.
    pub subtask: u32,
    /// True for source subtasks (they receive triggers).
    pub is_source: bool,
}

/// A checkpoint in flight.
struct Pending {
    meta: CheckpointMeta,
    started: Instant,
    acks: HashMap<usize, (SubtaskState, SubtaskStats)>,
}

/// The coordinator of one run (attempt) of a job.
pub struct Coordinator {
    /// Job id.
    pub job: String,
    /// Settings.
    pub settings: CheckpointSettings,
    /// The store.
    pub storage: Arc<dyn CheckpointStorage>,
    /// Every task, by index.
    pub tasks: Vec<TaskInfo>,
    /// Control channel of every task, by index.
    pub controls: Vec<mpsc::UnboundedSender<Control>>,
    /// Acks, declines and finished sources.
    pub inbox: mpsc::UnboundedReceiver<ToCoordinator>,
    /// On-demand triggers.
    pub requests: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<TriggerRequest>>>,
    /// Events.
    pub events: broadcast::Sender<JobEvent>,
    /// Armed at the first completed checkpoint.
    pub faults: Option<Arc<FaultInjector>>,
    /// The job's stop request (the final checkpoint of a stop for a savepoint is pinned).
    pub stop: Arc<StopSignal>,
    /// Whether checkpoints but the final one are held back.
    pub hold: Arc<CheckpointHold>,
}

/// The coordinator's bookkeeping during one run.
struct Progress {
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    consecutive_failures: u32,
    /// When the last checkpoint ended (completed or failed): the minimum pause counts from it.
    last_end: Instant,
    next_periodic: Option<Instant>,
    sources_finished: Vec<bool>,
    /// A source ended because the job is stopping: the final checkpoint is a stop point.
    stopping: bool,
    /// On-demand triggers waiting for a checkpoint in flight to end (max_concurrent).
    waiting: VecDeque<TriggerRequest>,
    final_pending: Option<u64>,
}

impl Progress {
    fn all_sources_finished(&self, tasks: &[TaskInfo]) -> bool {
        tasks.iter().zip(&self.sources_finished).all(|(t, finished)| !t.is_source || *finished)
    }
}

impl Coordinator {
    /// Runs until the final checkpoint completed (returns its id) or checkpointing fails
    /// for good.
    pub async fn run(mut self) -> Result<u64, JobError> {
        let storage = self.storage.clone();
        let job = self.job.clone();
        // Invariant C8: ids come from the store and never repeat, across restarts too.
        let last_id = store_call(move || storage.last_checkpoint_id(&job)).await?;
        let mut p = Progress {
            next_id: last_id + 1,
            pending: BTreeMap::new(),
            consecutive_failures: 0,
            last_end: Instant::now(),
            next_periodic: self.settings.interval_ms.map(|ms| Instant::now() + Duration::from_millis(ms)),
            sources_finished: vec![false; self.tasks.len()],
            stopping: false,
            waiting: VecDeque::new(),
            final_pending: None,
        };
        let requests = self.requests.clone();
        let mut requests = requests.lock().await;
        let mut requests_open = true;
        let min_pause = Duration::from_millis(self.settings.min_pause_ms);
        let timeout = Duration::from_millis(self.settings.timeout_ms);

        loop {
            let finished = p.all_sources_finished(&self.tasks);
            if finished || p.final_pending.is_some() {
                for request in p.waiting.drain(..) {
                    let _ = request.reply.send(Err(TriggerError::Finishing));
                }
            } else if self.hold.held() {
                for request in p.waiting.drain(..) {
                    let _ = request.reply.send(Err(TriggerError::Held));
                }
            } else if !p.waiting.is_empty() && p.pending.len() < self.settings.max_concurrent {
                if let Some(request) = p.waiting.pop_front() {
                    let id = self.trigger(&mut p, false, request.pin).await;
                    let _ = request.reply.send(Ok(id));
                }
                continue;
            }
            let idle = p.final_pending.is_none() && p.pending.is_empty();
            // The final checkpoint, once every source ended and nothing else is pending.
            if finished && idle && p.last_end.elapsed() >= min_pause {
                let id = self.trigger(&mut p, true, self.stop.pinned()).await;
                p.final_pending = Some(id);
                continue;
            }
            let can_trigger =
                p.pending.len() < self.settings.max_concurrent && p.final_pending.is_none() && !finished;
            let held = self.hold.held();
            let periodic_at =
                p.next_periodic.filter(|_| can_trigger && !held).map(|t| t.max(p.last_end + min_pause));
            let expiry = p.pending.values().map(|c| c.started + timeout).min();
            let pause_end = (finished && idle).then(|| p.last_end + min_pause);
            let wake = [periodic_at, expiry, pause_end].into_iter().flatten().min();
            tokio::select! {
                _ = sleep_until(wake) => self.on_wake(&mut p, periodic_at).await?,
                // Released (or held): the next periodic checkpoint is due again (or not).
                () = self.hold.changed.notified() => {}
                request = requests.recv(), if requests_open => match request {
                    None => requests_open = false,
                    Some(request) if held && !finished && p.final_pending.is_none() => {
                        let _ = request.reply.send(Err(TriggerError::Held));
                    }
                    Some(request) if can_trigger => {
                        let id = self.trigger(&mut p, false, request.pin).await;
                        let _ = request.reply.send(Ok(id));
                    }
                    Some(request) if finished || p.final_pending.is_some() => {
                        let _ = request.reply.send(Err(TriggerError::Finishing));
                    }
                    // max_concurrent checkpoints are in flight: this one starts when one ends.
                    Some(request) => p.waiting.push_back(request),
                },
                message = self.inbox.recv() => {
                    let Some(message) = message else { return Err(JobError::TasksGone) };
                    if let Some(id) = self.on_message(&mut p, message).await? {
                        return Ok(id);
                    }
                }
            }
        }
    }

    /// A deadline passed: checkpoints past their timeout are aborted, a periodic one due
    /// is triggered.
    async fn on_wake(&mut self, p: &mut Progress, periodic_at: Option<Instant>) -> Result<(), JobError> {
        let now = Instant::now();
        let timeout = Duration::from_millis(self.settings.timeout_ms);
        let expired: Vec<u64> =
            p.pending.iter().filter(|(_, c)| c.started + timeout <= now).map(|(id, _)| *id).collect();
        for id in expired {
            // Aborting an earlier one may have aborted it already.
            if !p.pending.contains_key(&id) {
                continue;
            }
            let reason = format!("expired before completing ({} ms timeout)", self.settings.timeout_ms);
            self.abort(p, id, reason).await?;
        }
        if periodic_at.is_some_and(|t| t <= now) && p.pending.len() < self.settings.max_concurrent {
            self.trigger(p, false, false).await;
            p.next_periodic = self.settings.interval_ms.map(|ms| now + Duration::from_millis(ms));
        }
        Ok(())
    }

    /// A message from a task: a source ended, a snapshot declined or acked. Returns the id
    /// of the final checkpoint once it completed.
    async fn on_message(
        &mut self,
        p: &mut Progress,
        message: ToCoordinator,
    ) -> Result<Option<u64>, JobError> {
        match message {
            ToCoordinator::SourceFinished { task, stopped } => {
                p.sources_finished[task] = true;
                p.stopping |= stopped;
            }
            ToCoordinator::Decline { id, reason, .. } => {
                if p.pending.contains_key(&id) {
                    self.abort(p, id, reason).await?;
                }
            }
            ToCoordinator::Ack { id, task, state, stats } => {
                let Some(c) = p.pending.get_mut(&id) else { return Ok(None) };
                c.acks.insert(task, (state, stats));
                if c.acks.len() < self.tasks.len() {
                    return Ok(None);
                }
                let c = p.pending.remove(&id).expect("pending");
                match self.complete(c).await {
                    Ok(meta) => {
                        p.consecutive_failures = 0;
                        p.last_end = Instant::now();
                        self.announce_completion(&meta);
                        if p.final_pending == Some(id) {
                            return Ok(Some(id));
                        }
                    }
                    Err((c, reason)) => {
                        p.pending.insert(id, c);
                        self.abort(p, id, reason).await?;
                    }
                }
            }
        }
        Ok(None)
    }

    /// Tells every task that a checkpoint completed. Invariant C6: sources last — after
    /// the final checkpoint a source ends the stream, and every other task must have the
    /// news by the time the end reaches it.
    fn announce_completion(&self, meta: &CheckpointMeta) {
        let id = meta.id;
        for sources in [false, true] {
            for (c, t) in self.controls.iter().zip(&self.tasks) {
                if t.is_source == sources {
                    let _ = c.send(Control::Completed(id));
                }
            }
        }
        if let Some(f) = &self.faults {
            f.arm();
        }
        let _ = self.events.send(JobEvent::CheckpointCompleted {
            id,
            is_final: meta.is_final,
            duration_ms: meta.duration_ms.unwrap_or_default(),
            size: meta.state_size,
        });
        tracing::debug!(job = %self.job, checkpoint = id, final = meta.is_final, size = meta.state_size, "checkpoint completed");
    }

    /// Starts a checkpoint: records it, tells the sources; returns its id. A pinned one is
    /// kept by retention until unpinned (a savepoint copies it).
    async fn trigger(&self, p: &mut Progress, is_final: bool, pinned: bool) -> u64 {
        let id = p.next_id;
        p.next_id += 1;
        let meta = CheckpointMeta {
            job: self.job.clone(),
            id,
            status: CheckpointStatus::InProgress,
            is_final,
            stopped: is_final && p.stopping,
            pinned,
            trigger_time_ms: unix_ms(),
            retained: true,
            ..CheckpointMeta::default()
        };
        let storage = self.storage.clone();
        let m = meta.clone();
        if let Err(e) = store_call(move || storage.begin(&m)).await {
            // The history misses the start; completion still records the checkpoint.
            tracing::warn!(job = %self.job, checkpoint = id, "cannot record the checkpoint's start: {e}");
        }
        let triggered = Instant::now();
        p.pending.insert(id, Pending { meta, started: triggered, acks: HashMap::new() });
        // Savepoints and the final checkpoint are aligned: a savepoint must be portable and
        // rescalable, and the final checkpoint must hold no data still in flight.
        let unaligned_after =
            if is_final || pinned { None } else { self.settings.effective_aligned_timeout() };
        for (c, t) in self.controls.iter().zip(&self.tasks) {
            if t.is_source {
                let _ = c.send(Control::Trigger { id, triggered, is_final, unaligned_after });
            } else if let Some(after) = unaligned_after.filter(|t| !t.is_zero()) {
                let _ = c.send(Control::Started { id, triggered, unaligned_after: after });
            }
        }
        tracing::debug!(job = %self.job, checkpoint = id, final = is_final, "checkpoint triggered");
        id
    }

    /// Completes a checkpoint whose subtasks all acked. Invariant C3: one durable store
    /// transaction writes the manifest and the Completed status — the moment the
    /// checkpoint exists; nothing is announced before it.
    async fn complete(&self, c: Pending) -> Result<CheckpointMeta, (Pending, String)> {
        let mut meta = c.meta.clone();
        let mut manifest: Manifest = BTreeMap::new();
        let mut stats = Vec::new();
        for (task, (state, s)) in &c.acks {
            let info = &self.tasks[*task];
            meta.state_size += state.bytes_written;
            stats.push(s.clone());
            manifest.entry(info.node.clone()).or_default().insert(info.subtask, state.clone());
        }
        stats.sort_by(|a, b| (&a.operator, a.subtask).cmp(&(&b.operator, b.subtask)));
        meta.subtasks = stats;
        meta.status = CheckpointStatus::Completed;
        meta.end_time_ms = Some(unix_ms());
        meta.duration_ms = Some(c.started.elapsed().as_secs_f64() * 1e3);
        let storage = self.storage.clone();
        let retain = self.settings.retained;
        let m = meta.clone();
        match store_call(move || storage.complete(&m, &manifest, retain)).await {
            Ok(_) => Ok(meta),
            Err(e) => Err((c, format!("completing failed: {e}"))),
        }
    }

    /// Fails checkpoint `id` — and, invariant C5, every later pending one, which may build
    /// on its increments — deletes their pieces and tells the tasks. Too many consecutive
    /// failures fail the job.
    async fn abort(&self, p: &mut Progress, id: u64, reason: String) -> Result<(), JobError> {
        let doomed: Vec<u64> = p.pending.range(id..).map(|(k, _)| *k).collect();
        for k in doomed {
            let c = p.pending.remove(&k).expect("pending");
            let mut meta = c.meta;
            meta.status = CheckpointStatus::Failed;
            meta.end_time_ms = Some(unix_ms());
            meta.duration_ms = Some(c.started.elapsed().as_secs_f64() * 1e3);
            meta.failure = Some(if k == id {
                reason.clone()
            } else {
                format!("aborted because checkpoint {id} failed")
            });
            let storage = self.storage.clone();
            let m = meta.clone();
            if let Err(e) = store_call(move || storage.abort(&m)).await {
                tracing::warn!(job = %self.job, checkpoint = k, "cannot clean up the failed checkpoint: {e}");
            }
            for c in &self.controls {
                let _ = c.send(Control::Aborted(k));
            }
            if p.final_pending == Some(k) {
                p.final_pending = None;
            }
            let failure = meta.failure.unwrap_or_default();
            tracing::warn!(job = %self.job, checkpoint = k, reason = %failure, "checkpoint failed");
            let _ = self.events.send(JobEvent::CheckpointFailed { id: k, reason: failure });
        }
        p.consecutive_failures += 1;
        p.last_end = Instant::now();
        if p.consecutive_failures > self.settings.tolerable_failures {
            return Err(JobError::CheckpointsFailed {
                failures: p.consecutive_failures,
                tolerable: self.settings.tolerable_failures,
                last: reason,
            });
        }
        Ok(())
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
