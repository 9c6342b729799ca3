//! Checkpoints: the per-job coordinator, what tasks send it, and the per-subtask writer
//! that stores a snapshot off the processing path.
//!
//! The protocol (docs/design.md §5): the coordinator triggers checkpoint `n` at the sources
//! ([`Control::Trigger`]); each source records its position and sends barrier `n` on every
//! output channel; every other task aligns barrier `n` over its inputs, snapshots (the sync
//! part: the guest's `snapshot`, timers, watermarks, sink pre-commit), forwards the barrier
//! and hands the snapshot to its [`SnapshotWriter`], which writes it to the store (the async
//! part) and acks. When every subtask acked, the coordinator completes the checkpoint in one
//! durable store transaction and tells every task ([`Control::Completed`]); sinks then
//! commit. A timeout, a declined snapshot or a failed write aborts the checkpoint: its pieces
//! are deleted and tasks make their next snapshot a full one.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc, oneshot};
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, Manifest, OPERATOR_SCOPE_BASE, ScopeDelta,
    StateEntry, SubtaskState, SubtaskStats, SubtaskWrite,
};

use super::error::{JobError, TaskError};
use super::faults::{FaultInjector, FaultPoint};
use crate::guest::bindings::{ChangeKind, StateDelta};
use crate::plan::CheckpointSettings;
use crate::plan::key_groups::key_group;

/// The coordinator's error when every task ended before the final checkpoint: a consequence
/// of the tasks' ends, which say why.
pub(crate) const TASKS_GONE: &str = "every task stopped";

/// Milliseconds since the Unix epoch.
pub fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// What the coordinator tells a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Sources: inject barrier `id` now.
    Trigger {
        /// Checkpoint id.
        id: u64,
        /// When it was triggered.
        triggered: Instant,
        /// The final checkpoint (every source has ended).
        is_final: bool,
    },
    /// Checkpoint `id` completed (it is durable): sinks commit what it covers.
    Completed(u64),
    /// Checkpoint `id` was aborted: the next snapshot must be a full one.
    Aborted(u64),
}

/// What a task (or its writer) tells the coordinator.
#[derive(Debug)]
pub enum ToCoordinator {
    /// A subtask's snapshot for checkpoint `id` is stored.
    Ack {
        /// Checkpoint id.
        id: u64,
        /// Index of the task in the job's task list.
        task: usize,
        /// Its state handles.
        state: SubtaskState,
        /// Its statistics.
        stats: SubtaskStats,
    },
    /// A subtask could not take or store its snapshot for checkpoint `id`.
    Decline {
        /// Checkpoint id.
        id: u64,
        /// Index of the task.
        task: usize,
        /// Why.
        reason: String,
    },
    /// A source subtask has no more input; it waits for the final checkpoint.
    SourceFinished {
        /// Index of the task.
        task: usize,
        /// It ended because the job is stopping, not because its input ended.
        stopped: bool,
    },
}

/// Something that happened to a running job (for the CLI, tests and later the API).
#[derive(Debug, Clone, PartialEq)]
pub enum JobEvent {
    /// A checkpoint completed.
    CheckpointCompleted {
        /// Its id.
        id: u64,
        /// The final checkpoint.
        is_final: bool,
        /// End-to-end duration.
        duration_ms: f64,
        /// Bytes written by it.
        size: u64,
    },
    /// A checkpoint failed.
    CheckpointFailed {
        /// Its id.
        id: u64,
        /// Why.
        reason: String,
    },
    /// The job failed and is being restarted.
    Restarting {
        /// The restart number (1 for the first).
        attempt: u32,
        /// The failure.
        error: String,
    },
    /// The job was restored from a checkpoint.
    Restored {
        /// The checkpoint.
        checkpoint: u64,
    },
}

/// A request to trigger a checkpoint now; the reply is its id.
#[derive(Debug)]
pub struct TriggerRequest {
    /// Where the checkpoint's id (or why none was triggered) goes.
    pub reply: oneshot::Sender<Result<u64, String>>,
    /// Pin the checkpoint against retention (a savepoint copies it).
    pub pin: bool,
}

/// Per-subtask state that is not keyed state: stored as the subtask's blob.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// Sources: the position at the barrier.
    pub position: Option<serde_json::Value>,
    /// Sources: highest event time seen and watermark emitted.
    pub source_watermark: Option<(i64, i64)>,
    /// Operators: the watermark of every input channel.
    pub watermarks: Vec<i64>,
    /// Operators: registered event-time timers.
    pub timers: Vec<(i64, Vec<u8>)>,
    /// Sinks: pre-committed transactions not yet committed, by checkpoint id.
    pub sink_pending: Vec<(u64, serde_json::Value)>,
    /// Operators: the state schema version of the module that wrote this snapshot (its
    /// `describe().state-version`); `None` in checkpoints written before it was recorded.
    #[serde(default)]
    pub state_version: Option<u32>,
}

impl TaskState {
    /// Encodes as MessagePack.
    pub fn encode(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).expect("task state encodes")
    }

    /// Decodes, with an error for a corrupt blob.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.is_empty() {
            return Ok(TaskState::default());
        }
        rmp_serde::from_slice(bytes).map_err(|e| format!("corrupt task state: {e}"))
    }

    /// Operators: the state schema version to restore operator `operator`'s saved state
    /// with, into a module of version `module_version`. A job's checkpoints are restored
    /// into the module they were taken with, so the recorded version must be the module's
    /// (a checkpoint written before versions were recorded counts as the module's own);
    /// migrating state to a changed module is the work of a savepoint.
    pub fn restore_version(&self, operator: &str, module_version: u32) -> Result<u32, String> {
        match self.state_version {
            Some(recorded) if recorded != module_version => Err(format!(
                "operator `{operator}`: the checkpoint's state has schema version {recorded} but the module \
                 has version {module_version}; start a changed module from a savepoint"
            )),
            _ => Ok(module_version),
        }
    }
}

/// A snapshot handed from a task to its writer.
#[derive(Debug)]
pub struct WriteRequest {
    /// Checkpoint id.
    pub id: u64,
    /// The guest's changes since its previous snapshot (operators).
    pub delta: Option<StateDelta>,
    /// The task's other state.
    pub state: TaskState,
    /// Statistics of the sync part (the writer adds the async duration and sizes).
    pub stats: SubtaskStats,
}

#[derive(Debug)]
enum WriterMessage {
    Write(Box<WriteRequest>),
    Completed(u64),
}

/// Where a task sends its snapshots: a queue to its own writer task, which stores them in
/// order without blocking the task.
///
/// The writer keeps the guest's deltas since the last *completed* checkpoint and writes,
/// for checkpoint `n`, the chains of that completed checkpoint plus all of them merged. So
/// a checkpoint that fails or is aborted (whatever the timing of the abort) loses nothing:
/// its changes go out again with the next one, and no chain ever builds on chunks that an
/// abort deleted. The task forwards completions ([`SnapshotWriter::completed`]) in order
/// with its snapshots.
#[derive(Debug, Clone)]
pub struct SnapshotWriter {
    tx: mpsc::UnboundedSender<WriterMessage>,
}

impl SnapshotWriter {
    /// Queues a snapshot. Fails only if the writer is gone (its task failed).
    pub fn send(&self, request: WriteRequest) -> Result<(), TaskError> {
        self.tx
            .send(WriterMessage::Write(Box::new(request)))
            .map_err(|_| TaskError::Storage("the snapshot writer stopped".into()))
    }

    /// Checkpoint `id` completed: its chains become the base of later writes.
    pub fn completed(&self, id: u64) {
        let _ = self.tx.send(WriterMessage::Completed(id));
    }
}

/// Everything a writer needs.
pub struct WriterConfig {
    /// Job id.
    pub job: String,
    /// Node id.
    pub operator: String,
    /// Subtask index.
    pub subtask: u32,
    /// Index of the task in the job.
    pub task: usize,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// Chain bound.
    pub max_chain_length: usize,
    /// The chains of the restored checkpoint (empty for a fresh start).
    pub previous: BTreeMap<u32, Vec<u64>>,
    /// The store.
    pub storage: Arc<dyn CheckpointStorage>,
    /// Where acks go.
    pub coordinator: mpsc::UnboundedSender<ToCoordinator>,
    /// Fault injection.
    pub faults: Option<Arc<FaultInjector>>,
}

type Changes = BTreeMap<u32, BTreeMap<(String, Vec<u8>), Option<Vec<u8>>>>;

/// Creates a writer; the returned future is the writer task (it ends when every
/// [`SnapshotWriter`] is dropped, or fails on an injected fault).
pub fn snapshot_writer(
    config: WriterConfig,
) -> (SnapshotWriter, impl Future<Output = Result<(), TaskError>> + Send + 'static) {
    let (tx, mut rx) = mpsc::unbounded_channel::<WriterMessage>();
    let fut = async move {
        // The chains of the last completed checkpoint, and the deltas taken since.
        let mut base = config.previous;
        let mut deltas: Vec<(u64, Arc<Vec<ScopeDelta>>)> = Vec::new();
        let mut written: BTreeMap<u64, BTreeMap<u32, Vec<u64>>> = BTreeMap::new();
        let shared = Arc::new(WriterShared {
            job: config.job,
            operator: config.operator,
            subtask: config.subtask,
            max_chain_length: config.max_chain_length,
            storage: config.storage,
        });
        while let Some(message) = rx.recv().await {
            let request = match message {
                WriterMessage::Completed(id) => {
                    if let Some(chains) = written.remove(&id) {
                        base = chains;
                        let (done, rest): (Vec<_>, Vec<_>) = deltas.into_iter().partition(|(k, _)| *k <= id);
                        deltas = rest;
                        // Freeing a large delta (an allocation per entry) is work too: not on
                        // the threads that process records.
                        if !done.is_empty() {
                            tokio::task::spawn_blocking(move || drop(done));
                        }
                    }
                    written.retain(|k, _| *k > id);
                    continue;
                }
                WriterMessage::Write(r) => *r,
            };
            let id = request.id;
            if let Some(f) = &config.faults {
                f.hit(FaultPoint::AsyncWrite)?;
            }
            let started = Instant::now();
            let shared2 = shared.clone();
            let previous = base.clone();
            let earlier: Vec<Arc<Vec<ScopeDelta>>> = deltas.iter().map(|(_, d)| d.clone()).collect();
            let WriteRequest { delta, state, mut stats, .. } = request;
            let (max_parallelism, subtask) = (config.max_parallelism, config.subtask);
            // Everything heavy (splitting by key group, merging, encoding, redb) runs on the
            // blocking pool, off the threads that process records.
            let result = tokio::task::spawn_blocking(move || {
                let split = match &delta {
                    Some(d) => Some(Arc::new(split_into_scopes(d, max_parallelism, subtask)?)),
                    None => None,
                };
                drop(delta);
                let mut all = earlier;
                all.extend(split.clone());
                let scopes = merge(&all);
                // Several pending deltas are kept as their merge from now on (bounded by the
                // keys changed, however many checkpoints fail in a row).
                let keep = if all.len() > 1 { Some(scopes.clone()) } else { split };
                let blob = state.encode();
                let written = shared2
                    .storage
                    .write_subtask(SubtaskWrite {
                        job: shared2.job.clone(),
                        checkpoint: id,
                        operator: shared2.operator.clone(),
                        subtask: shared2.subtask,
                        full: false,
                        scopes,
                        previous,
                        blob,
                        max_chain_length: shared2.max_chain_length,
                    })
                    .map_err(|e| e.to_string());
                Ok::<_, String>((keep, written))
            })
            .await
            .map_err(|e| format!("snapshot write panicked: {e}"))
            .and_then(|r| r);
            let result = match result {
                Ok((keep, written)) => {
                    match keep {
                        Some(merged) if !deltas.is_empty() => deltas = vec![(id, merged)],
                        Some(split) => deltas.push((id, split)),
                        None => {}
                    }
                    written
                }
                Err(reason) => {
                    // A malformed snapshot (or a panic while writing) cannot be written now
                    // or later: the task fails and the job recovers.
                    let _ = config.coordinator.send(ToCoordinator::Decline {
                        id,
                        task: config.task,
                        reason: format!("{}/{}: {reason}", shared.operator, shared.subtask),
                    });
                    return Err(TaskError::Storage(format!("cannot write the snapshot: {reason}")));
                }
            };
            match result {
                Ok(state) => {
                    written.insert(id, state.chains.clone());
                    stats.async_ms = started.elapsed().as_secs_f64() * 1e3;
                    stats.state_bytes = state.bytes_written;
                    stats.ack_time_ms = unix_ms();
                    let _ =
                        config.coordinator.send(ToCoordinator::Ack { id, task: config.task, state, stats });
                }
                Err(reason) => {
                    let _ = config.coordinator.send(ToCoordinator::Decline {
                        id,
                        task: config.task,
                        reason: format!("{}/{}: {reason}", shared.operator, shared.subtask),
                    });
                }
            }
        }
        Ok(())
    };
    (SnapshotWriter { tx }, fut)
}

/// Merges deltas in order (a later change of a key wins) into one delta per scope.
fn merge(deltas: &[Arc<Vec<ScopeDelta>>]) -> Arc<Vec<ScopeDelta>> {
    match deltas {
        [] => return Arc::new(Vec::new()),
        [only] => return only.clone(),
        _ => {}
    }
    let mut changes: Changes = BTreeMap::new();
    for scopes in deltas {
        for scope in scopes.iter() {
            let m = changes.entry(scope.scope).or_default();
            for e in &scope.entries {
                m.insert((e.state.clone(), e.key.clone()), e.value.clone());
            }
        }
    }
    Arc::new(
        changes
            .into_iter()
            .map(|(scope, m)| ScopeDelta {
                scope,
                entries: m
                    .into_iter()
                    .map(|((state, key), value)| StateEntry { state, key, value })
                    .collect(),
            })
            .collect(),
    )
}

struct WriterShared {
    job: String,
    operator: String,
    subtask: u32,
    max_chain_length: usize,
    storage: Arc<dyn CheckpointStorage>,
}

/// Splits a guest's delta by key group (keyed entries) and into the subtask's operator
/// scope (entries with an empty key), keeping the order of entries within each scope.
pub fn split_into_scopes(
    delta: &StateDelta,
    max_parallelism: u32,
    subtask: u32,
) -> Result<Vec<ScopeDelta>, String> {
    let mut groups: Vec<Vec<StateEntry>> = (0..max_parallelism).map(|_| Vec::new()).collect();
    let mut operator: Vec<StateEntry> = Vec::new();
    let mut at = 0usize;
    for e in &delta.entries {
        let name = delta.names.get(e.state as usize).ok_or("state index out of range")?;
        let klen = e.key_len as usize;
        let vlen = e.value_len as usize;
        let key = delta.data.get(at..at + klen).ok_or("delta data too short")?;
        let value = delta.data.get(at + klen..at + klen + vlen).ok_or("delta data too short")?;
        at += klen + vlen;
        let value = match e.kind {
            ChangeKind::Put => Some(value.to_vec()),
            ChangeKind::Delete => None,
        };
        let entry = StateEntry { state: name.clone(), key: key.to_vec(), value };
        if key.is_empty() {
            operator.push(entry);
        } else {
            groups[key_group(key, max_parallelism) as usize].push(entry);
        }
    }
    let mut scopes: Vec<ScopeDelta> = groups
        .into_iter()
        .enumerate()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(g, entries)| ScopeDelta { scope: g as u32, entries })
        .collect();
    if !operator.is_empty() {
        scopes.push(ScopeDelta { scope: OPERATOR_SCOPE_BASE + subtask, entries: operator });
    }
    Ok(scopes)
}

/// Live entries as restore chunks of at most `max_bytes` each (at least one entry each).
pub fn restore_chunks(entries: Vec<StateEntry>, max_bytes: usize) -> Vec<StateDelta> {
    let mut out = Vec::new();
    let mut cur = StateDelta { names: Vec::new(), data: Vec::new(), entries: Vec::new() };
    let mut names: HashMap<String, u32> = HashMap::new();
    for e in entries {
        let Some(value) = e.value else { continue };
        if !cur.entries.is_empty() && cur.data.len() + e.key.len() + value.len() > max_bytes {
            out.push(std::mem::replace(
                &mut cur,
                StateDelta { names: Vec::new(), data: Vec::new(), entries: Vec::new() },
            ));
            names.clear();
        }
        let state = *names.entry(e.state.clone()).or_insert_with(|| {
            cur.names.push(e.state.clone());
            (cur.names.len() - 1) as u32
        });
        cur.data.extend_from_slice(&e.key);
        cur.data.extend_from_slice(&value);
        cur.entries.push(crate::guest::bindings::StateEntry {
            state,
            kind: ChangeKind::Put,
            key_len: e.key.len() as u32,
            value_len: value.len() as u32,
        });
    }
    if !cur.entries.is_empty() {
        out.push(cur);
    }
    out
}

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
    pub stop: Arc<super::job::StopSignal>,
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
    waiting: std::collections::VecDeque<TriggerRequest>,
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
        let last_id = blocking(move || storage.last_checkpoint_id(&job)).await?;
        let mut p = Progress {
            next_id: last_id + 1,
            pending: BTreeMap::new(),
            consecutive_failures: 0,
            last_end: Instant::now(),
            next_periodic: self.settings.interval_ms.map(|ms| Instant::now() + Duration::from_millis(ms)),
            sources_finished: vec![false; self.tasks.len()],
            stopping: false,
            waiting: std::collections::VecDeque::new(),
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
                    let _ = request.reply.send(Err("the job is finishing".to_string()));
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
            let periodic_at = p.next_periodic.filter(|_| can_trigger).map(|t| t.max(p.last_end + min_pause));
            let expiry = p.pending.values().map(|c| c.started + timeout).min();
            let pause_end = (finished && idle).then(|| p.last_end + min_pause);
            let wake = [periodic_at, expiry, pause_end].into_iter().flatten().min();
            tokio::select! {
                _ = sleep_until(wake) => {
                    let now = Instant::now();
                    let expired: Vec<u64> =
                        p.pending.iter().filter(|(_, c)| c.started + timeout <= now).map(|(id, _)| *id).collect();
                    for id in expired {
                        let reason = format!("expired before completing ({} ms timeout)", self.settings.timeout_ms);
                        self.abort(&mut p, id, reason).await?;
                    }
                    if periodic_at.is_some_and(|t| t <= now) && p.pending.len() < self.settings.max_concurrent {
                        self.trigger(&mut p, false, false).await;
                        p.next_periodic = self.settings.interval_ms.map(|ms| now + Duration::from_millis(ms));
                    }
                }
                request = requests.recv(), if requests_open => match request {
                    None => requests_open = false,
                    Some(request) if can_trigger => {
                        let id = self.trigger(&mut p, false, request.pin).await;
                        let _ = request.reply.send(Ok(id));
                    }
                    Some(request) if finished || p.final_pending.is_some() => {
                        let _ = request.reply.send(Err("the job is finishing".to_string()));
                    }
                    // max_concurrent checkpoints are in flight: this one starts when one ends.
                    Some(request) => p.waiting.push_back(request),
                },
                message = self.inbox.recv() => match message {
                    None => return Err(JobError::Checkpoint(TASKS_GONE.into())),
                    Some(ToCoordinator::SourceFinished { task, stopped }) => {
                        p.sources_finished[task] = true;
                        p.stopping |= stopped;
                    }
                    Some(ToCoordinator::Decline { id, reason, .. }) => {
                        if p.pending.contains_key(&id) {
                            self.abort(&mut p, id, reason).await?;
                        }
                    }
                    Some(ToCoordinator::Ack { id, task, state, stats }) => {
                        let Some(c) = p.pending.get_mut(&id) else { continue };
                        c.acks.insert(task, (state, stats));
                        if c.acks.len() < self.tasks.len() {
                            continue;
                        }
                        let c = p.pending.remove(&id).expect("pending");
                        match self.complete(c).await {
                            Ok(meta) => {
                                p.consecutive_failures = 0;
                                p.last_end = Instant::now();
                                self.announce_completion(&meta);
                                if p.final_pending == Some(id) {
                                    return Ok(id);
                                }
                            }
                            Err((c, reason)) => {
                                p.pending.insert(id, c);
                                self.abort(&mut p, id, reason).await?;
                            }
                        }
                    }
                },
            }
        }
    }

    /// Tells every task that a checkpoint completed, sources last: after the final
    /// checkpoint a source ends the stream, and every other task must have the news by the
    /// time the end reaches it.
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
        tracing::info!(job = %self.job, checkpoint = id, final = meta.is_final, size = meta.state_size, "checkpoint completed");
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
        if let Err(e) = blocking(move || storage.begin(&m)).await {
            // The history misses the start; completion still records the checkpoint.
            tracing::warn!(job = %self.job, checkpoint = id, "cannot record the checkpoint's start: {e}");
        }
        let triggered = Instant::now();
        p.pending.insert(id, Pending { meta, started: triggered, acks: HashMap::new() });
        for (c, t) in self.controls.iter().zip(&self.tasks) {
            if t.is_source {
                let _ = c.send(Control::Trigger { id, triggered, is_final });
            }
        }
        tracing::debug!(job = %self.job, checkpoint = id, final = is_final, "checkpoint triggered");
        id
    }

    /// Completes a checkpoint whose subtasks all acked: one durable store transaction.
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
        match blocking(move || storage.complete(&m, &manifest, retain)).await {
            Ok(_) => Ok(meta),
            Err(e) => Err((c, format!("completing failed: {e}"))),
        }
    }

    /// Fails checkpoint `id` — and every later pending one, which may build on its
    /// increments — deletes their pieces and tells the tasks. Too many consecutive failures
    /// fail the job.
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
            if let Err(e) = blocking(move || storage.abort(&m)).await {
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
            return Err(JobError::Checkpoint(format!(
                "{} consecutive checkpoints failed (tolerable: {}); the last one: {reason}",
                p.consecutive_failures, self.settings.tolerable_failures
            )));
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

/// Runs a store call on the blocking pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, weir_store::StoreError> + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| JobError::Checkpoint(format!("store call panicked: {e}")))?
        .map_err(|e| JobError::Checkpoint(format!("checkpoint store: {e}")))
}
