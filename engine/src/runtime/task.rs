//! The loops of the three kinds of subtask. Each runs as one tokio task.
//!
//! Without checkpointing ([`Checkpointing`] absent) a source sends its batches, the final
//! watermark and end-of-stream. With it, a source also injects barriers when the coordinator
//! triggers a checkpoint and, at the end of its input, sends the final watermark and waits
//! for the final checkpoint to complete before it sends end-of-stream (invariant C11) — so
//! every record's output is committed by some checkpoint.
//!
//! Idleness (docs/design.md §2): a source whose [`Source::idle`] is true sends
//! [`Message::Idle`] once, and is active again when it sends a batch or a watermark; an
//! operator forwards idle when every input is idle, and the current watermark when one is
//! active again.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::mpsc;
use weir_store::{CheckpointStorage, SubtaskStats};

use super::barrier::{Aligned, Aligner};
use super::control::{Control, ToCoordinator};
use super::error::TaskError;
use super::faults::{FaultInjector, FaultPoint};
use super::input_gate::InputGate;
use super::message::{Barrier, Message};
use super::metrics::{JobMetrics, SubtaskMetrics};
use super::output::Output;
use super::scopes::restore_chunks;
use super::snapshot_writer::{SnapshotWriter, WriteRequest};
use super::stop::{StopMode, StopSignal};
use super::task_state::{RestoreError, TaskState};
use super::watermark::WatermarkTracker;
use crate::connectors::{ConnectorEnv, Sink, SinkConfig, Source};
use crate::guest::OperatorInstance;
use crate::guest::bindings::Context;

/// How long a source that has nothing new (an empty batch) waits before it asks again.
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// A task's link to the checkpoint coordinator.
pub struct Checkpointing {
    /// Index of the task in the job.
    pub task: usize,
    /// Node id.
    pub node: String,
    /// Subtask index.
    pub subtask: u32,
    /// Messages from the coordinator.
    pub control: mpsc::UnboundedReceiver<Control>,
    /// Messages to the coordinator.
    pub coordinator: mpsc::UnboundedSender<ToCoordinator>,
    /// The task's snapshot writer.
    pub writer: SnapshotWriter,
    /// Fault injection (tests).
    pub faults: Option<Arc<FaultInjector>>,
    /// What the task restored (defaults when starting fresh).
    pub restored: TaskState,
    /// Sources: the id of the final checkpoint once it was triggered.
    pub final_id: Option<u64>,
    /// The coordinator is gone (its channel closed).
    pub control_closed: bool,
    /// Set when the job is asked to stop: sources end their input at the next batch
    /// boundary (drained: with the end-of-input watermark) and the final checkpoint follows.
    pub stop: Arc<StopSignal>,
}

impl Checkpointing {
    /// Handles pending control messages of an operator: completions go to the writer, in
    /// order with the snapshots.
    fn drain_control(&mut self) {
        while let Ok(control) = self.control.try_recv() {
            if let Control::Completed(id) = control {
                self.writer.completed(id);
            }
        }
    }

    fn hit(&self, point: FaultPoint) -> Result<(), TaskError> {
        match &self.faults {
            Some(f) => f.hit(point),
            None => Ok(()),
        }
    }

    fn stats(&self, aligned: Option<&Aligned>, triggered: Instant, sync_started: Instant) -> SubtaskStats {
        SubtaskStats {
            operator: self.node.clone(),
            subtask: self.subtask,
            ack_time_ms: 0,
            sync_ms: sync_started.elapsed().as_secs_f64() * 1e3,
            async_ms: 0.0,
            alignment_ms: aligned.map(|a| a.duration.as_secs_f64() * 1e3).unwrap_or_default(),
            alignment_bytes: aligned.map(|a| a.bytes).unwrap_or_default(),
            start_delay_ms: match aligned {
                Some(a) => a.start_delay.as_secs_f64() * 1e3,
                None => sync_started.saturating_duration_since(triggered).as_secs_f64() * 1e3,
            },
            state_bytes: 0,
            full_state_bytes: 0,
            ..SubtaskStats::default()
        }
    }
}

/// Runs a source subtask.
pub async fn run_source(
    mut source: Box<dyn Source>,
    out_of_orderness_ms: Option<i64>,
    records_per_second: Option<u64>,
    mut output: Output,
    metrics: Arc<SubtaskMetrics>,
    job: Arc<JobMetrics>,
    mut checkpointing: Option<Checkpointing>,
) -> Result<(), TaskError> {
    let (mut max_ts, mut watermark) =
        checkpointing.as_ref().and_then(|c| c.restored.source_watermark).unwrap_or((i64::MIN, i64::MIN));
    let mut exhausted = false;
    let mut stopped = false;
    let mut announced = false;
    let started = Instant::now();
    let mut emitted = 0u64;
    // The output is marked idle (an idle notice went out, no batch or watermark since).
    let mut idle_out = false;
    // Checkpoint id → the position recorded at its trigger, for `checkpoint_completed`.
    // Entries at or below a completed id are dropped, so aborted ones do not accumulate.
    let mut positions = std::collections::BTreeMap::new();
    loop {
        // Barriers go out at batch boundaries, recording the position at exactly that point.
        if let Some(c) = &mut checkpointing {
            let mut done = false;
            while let Ok(control) = c.control.try_recv() {
                done |=
                    source_control(c, control, &mut *source, (max_ts, watermark), &output, &mut positions)
                        .await?;
            }
            if done {
                break;
            }
            match c.stop.requested() {
                _ if exhausted => {}
                None => {}
                // Stopping: the input ends here, but event time does not jump to the end,
                // so the job resumes from the final checkpoint as if never stopped.
                Some(StopMode::Suspend) => {
                    exhausted = true;
                    stopped = true;
                }
                // Draining: the input ends here as if it had run out, so every event-time
                // timer downstream fires before the final checkpoint.
                Some(StopMode::Drain) => {
                    exhausted = true;
                    (max_ts, watermark) = end_of_input(&output).await?;
                }
            }
            if exhausted {
                if !announced {
                    announced = true;
                    let _ = c.coordinator.send(ToCoordinator::SourceFinished { task: c.task, stopped });
                }
                let Some(control) = c.control.recv().await else { break };
                if source_control(c, control, &mut *source, (max_ts, watermark), &output, &mut positions)
                    .await?
                {
                    break;
                }
                continue;
            }
            c.hit(FaultPoint::Process)?;
        } else if exhausted {
            break;
        }
        let mut idle = false;
        match source.next_batch()? {
            Some(batch) if batch.is_empty() => idle = true,
            Some(batch) => {
                // A source that tracks event time itself replaces the task's watermarks.
                let own = source.watermark().is_some();
                let out_of_orderness_ms = out_of_orderness_ms.filter(|_| !own);
                if let Some(delay) = out_of_orderness_ms {
                    for e in &batch.entries {
                        max_ts = max_ts.max(e.timestamp);
                    }
                    let w = max_ts.saturating_sub(delay).saturating_sub(1);
                    if w > watermark {
                        watermark = w;
                    }
                }
                metrics.add_out(batch.len());
                job.source_batches.fetch_add(1, Ordering::Relaxed);
                emitted += batch.len() as u64;
                output.emit(batch).await?;
                // The batch made every output channel active again.
                idle_out = false;
                if out_of_orderness_ms.is_some() && watermark > i64::MIN {
                    output.broadcast(Message::Watermark(watermark)).await?;
                }
            }
            None => {
                exhausted = true;
                (max_ts, watermark) = end_of_input(&output).await?;
            }
        }
        if !exhausted {
            if let Some(w) = source.watermark()
                && w > watermark
            {
                watermark = w;
                idle_out = false;
                output.broadcast(Message::Watermark(w)).await?;
            }
            let now_idle = source.idle();
            if now_idle != idle_out {
                idle_out = now_idle;
                // Active again without a batch or a new watermark (say, a partition was
                // assigned): the current watermark tells the receivers so.
                let message = if now_idle { Message::Idle } else { Message::Watermark(watermark) };
                output.broadcast(message).await?;
            }
        }
        match records_per_second {
            // Paced: the next batch is due when the records so far fit the rate.
            Some(rate) if !exhausted => {
                let due = started + std::time::Duration::from_secs_f64(emitted as f64 / rate as f64);
                tokio::time::sleep_until(due.into()).await;
            }
            // A following source with nothing new polls again a little later.
            _ if idle => tokio::time::sleep(IDLE_POLL).await,
            // A source that never fills a channel must still let other tasks run.
            _ => tokio::task::yield_now().await,
        }
    }
    output.broadcast(Message::EndOfStream).await?;
    Ok(())
}

/// The end of a source's input (it ran out, or the job is drained): event time jumps to the
/// end, so every event-time timer downstream fires before the final checkpoint and its output
/// is committed with it. Returns the source's (highest event time, watermark).
async fn end_of_input(output: &Output) -> Result<(i64, i64), TaskError> {
    output.broadcast(Message::Watermark(i64::MAX)).await?;
    Ok((i64::MAX, i64::MAX))
}

/// Handles one control message at a source; true when the final checkpoint completed.
/// `positions` holds the position recorded at each pending checkpoint's trigger, handed to
/// [`Source::checkpoint_completed`] when it completes.
async fn source_control(
    c: &mut Checkpointing,
    control: Control,
    source: &mut dyn Source,
    watermark: (i64, i64),
    output: &Output,
    positions: &mut std::collections::BTreeMap<u64, serde_json::Value>,
) -> Result<bool, TaskError> {
    match control {
        Control::Trigger { id, triggered, is_final } => {
            let started = Instant::now();
            let position = source.position();
            positions.insert(id, position.clone());
            let state = TaskState {
                position: Some(position),
                source_watermark: Some(watermark),
                ..TaskState::default()
            };
            let stats = c.stats(None, triggered, started);
            output.broadcast(Message::Barrier(Barrier { id, triggered, is_final })).await?;
            c.writer.send(WriteRequest { id, delta: None, state, stats })?;
            if is_final {
                c.final_id = Some(id);
            }
            Ok(false)
        }
        Control::Completed(id) => {
            c.writer.completed(id);
            if let Some(position) = positions.remove(&id) {
                source.checkpoint_completed(id, &position)?;
            }
            // Older pending ones were aborted or subsumed: never reported.
            positions.retain(|pending, _| *pending > id);
            Ok(c.final_id == Some(id))
        }
        Control::Aborted(id) => {
            positions.remove(&id);
            Ok(false)
        }
    }
}

/// Runs an operator subtask over its input gate until every input ended. `state_version` is
/// the module's state schema version (from `describe`), recorded with every snapshot.
pub async fn run_operator(
    mut instance: OperatorInstance,
    state_version: u32,
    context: Context,
    mut gate: InputGate,
    mut output: Output,
    metrics: Arc<SubtaskMetrics>,
    mut checkpointing: Option<Checkpointing>,
) -> Result<(), TaskError> {
    instance.open(&context).await?;
    let mut watermarks = WatermarkTracker::new(gate.len());
    if let Some(c) = &checkpointing {
        if !c.restored.watermarks.is_empty() {
            watermarks =
                WatermarkTracker::restore(&c.restored.watermarks).ok_or(RestoreError::NoWatermarks)?;
        }
        for (ts, key) in &c.restored.timers {
            instance.timers().register(key.clone(), *ts);
        }
    }
    let mut aligner = Aligner::new(gate.len());
    // Every input is idle and an idle notice went downstream.
    let mut idle_out = false;
    while let Some(next) = gate.next().await {
        let (channel, message) = next?;
        if let Some(c) = &mut checkpointing {
            c.drain_control();
        }
        let mut aligned = None;
        let advanced = match message {
            Message::Batch(batch) => {
                if let Some(c) = &checkpointing {
                    c.hit(FaultPoint::Process)?;
                }
                metrics.add_in(batch.len());
                aligner.processed(batch.data.len());
                let advanced = watermarks.activate(channel);
                let out = instance.process(gate.port(channel), &batch).await?;
                metrics.add_out(out.len());
                output.emit(out).await?;
                advanced
            }
            Message::Watermark(w) => watermarks.update(channel, w),
            Message::Idle => watermarks.set_idle(channel),
            Message::Barrier(b) => {
                aligned = aligner.on_barrier(channel, b, &mut gate)?;
                None
            }
            Message::EndOfStream => {
                aligned = aligner.on_end(channel, &mut gate);
                watermarks.end(channel)
            }
        };
        if let Some(w) = advanced {
            // Timers due at the new watermark fire first, in time order, then the operator
            // sees the watermark, then it goes downstream.
            while let Some((ts, key)) = instance.timers().pop_due(w) {
                let out = instance.on_timer(&key, ts).await?;
                metrics.add_out(out.len());
                output.emit(out).await?;
            }
            let out = instance.on_watermark(w).await?;
            metrics.add_out(out.len());
            output.emit(out).await?;
            output.broadcast(Message::Watermark(w)).await?;
        }
        // Idle when every input is; active again (with the current watermark, unless one
        // just went out) when one of them is.
        let all_idle = watermarks.all_idle();
        if all_idle != idle_out {
            idle_out = all_idle;
            if all_idle {
                output.broadcast(Message::Idle).await?;
            } else if advanced.is_none() {
                output.broadcast(Message::Watermark(watermarks.current())).await?;
            }
        }
        if let (Some(a), Some(c)) = (aligned, &mut checkpointing) {
            // Aligned: snapshot, then forward the barrier — never before the snapshot (C2).
            c.drain_control();
            c.hit(FaultPoint::Snapshot)?;
            let started = Instant::now();
            let delta = instance.snapshot(a.barrier.id, false).await?;
            // Also after the guest handed its changes over (and forgot them): recovery must
            // not depend on this instance's memory.
            c.hit(FaultPoint::Snapshot)?;
            let state = TaskState {
                watermarks: watermarks.channels().to_vec(),
                timers: instance.timers().iter().cloned().collect(),
                state_version: Some(state_version),
                ..TaskState::default()
            };
            let stats = c.stats(Some(&a), a.barrier.triggered, started);
            output.broadcast(Message::Barrier(a.barrier)).await?;
            c.writer.send(WriteRequest { id: a.barrier.id, delta: Some(delta), state, stats })?;
        }
    }
    output.broadcast(Message::EndOfStream).await?;
    Ok(())
}

/// Runs a sink subtask until every input ended. With checkpointing, output is pre-committed
/// at each barrier and committed when the checkpoint completes.
pub async fn run_sink(
    mut sink: Box<dyn Sink>,
    mut gate: InputGate,
    metrics: Arc<SubtaskMetrics>,
    job: Arc<JobMetrics>,
    mut checkpointing: Option<Checkpointing>,
) -> Result<(), TaskError> {
    let mut aligner = Aligner::new(gate.len());
    let mut pending: Vec<(u64, serde_json::Value)> =
        checkpointing.as_ref().map(|c| c.restored.sink_pending.clone()).unwrap_or_default();
    loop {
        let next = match &mut checkpointing {
            Some(c) if !c.control_closed => {
                tokio::select! {
                    biased;
                    control = c.control.recv() => {
                        match control {
                            Some(Control::Completed(id)) => {
                                c.writer.completed(id);
                                commit_upto(&mut *sink, &mut pending, id)?
                            }
                            Some(_) => {}
                            None => c.control_closed = true,
                        }
                        continue;
                    }
                    next = gate.next() => next,
                }
            }
            _ => gate.next().await,
        };
        let Some(next) = next else { break };
        let (channel, message) = next?;
        let aligned = match message {
            Message::Batch(batch) => {
                if let Some(c) = &checkpointing {
                    c.hit(FaultPoint::Process)?;
                }
                metrics.add_in(batch.len());
                job.sink_received();
                aligner.processed(batch.data.len());
                sink.write(&batch)?;
                if let Some(pause) = sink.pause() {
                    tokio::time::sleep(pause).await;
                }
                None
            }
            Message::Watermark(_) | Message::Idle => None,
            Message::Barrier(b) => aligner.on_barrier(channel, b, &mut gate)?,
            Message::EndOfStream => aligner.on_end(channel, &mut gate),
        };
        if let (Some(a), Some(c)) = (aligned, &checkpointing) {
            c.hit(FaultPoint::Snapshot)?;
            let started = Instant::now();
            if let Some(txn) = sink.precommit(a.barrier.id)? {
                pending.push((a.barrier.id, txn));
            }
            let state = TaskState { sink_pending: pending.clone(), ..TaskState::default() };
            let stats = c.stats(Some(&a), a.barrier.triggered, started);
            c.writer.send(WriteRequest { id: a.barrier.id, delta: None, state, stats })?;
        }
    }
    if let Some(c) = &mut checkpointing {
        // The final checkpoint completed before end-of-stream was sent (the coordinator told
        // this task before the sources); commit what it covers.
        while let Ok(control) = c.control.try_recv() {
            if let Control::Completed(id) = control {
                commit_upto(&mut *sink, &mut pending, id)?;
            }
        }
        if !pending.is_empty() {
            return Err(TaskError::Uncommitted(pending.len()));
        }
    }
    sink.close()?;
    Ok(())
}

fn commit_upto(
    sink: &mut dyn Sink,
    pending: &mut Vec<(u64, serde_json::Value)>,
    id: u64,
) -> Result<(), TaskError> {
    let due: Vec<serde_json::Value> =
        pending.iter().filter(|(e, _)| *e <= id).map(|(_, t)| t.clone()).collect();
    if !due.is_empty() {
        sink.commit(&due)?;
        pending.retain(|(e, _)| *e > id);
    }
    Ok(())
}

/// Opens subtask `subtask` of a transactional sink and recovers it to checkpoint
/// `checkpoint` (0: none). Invariant C7: it commits the transactions that checkpoint owns
/// and drops every other pending output of the subtask.
pub(crate) fn open_recovered_sink(
    config: &SinkConfig,
    subtask: u32,
    parallelism: u32,
    env: ConnectorEnv<'_>,
    checkpoint: u64,
    state: &TaskState,
) -> Result<Box<dyn Sink>, TaskError> {
    let mut sink = config.open(subtask, parallelism, env)?;
    let txns: Vec<serde_json::Value> = state.sink_pending.iter().map(|(_, t)| t.clone()).collect();
    sink.recover(checkpoint, &txns)?;
    Ok(sink)
}

/// Restores an operator instance from its chains: every scope's live entries, in chunks,
/// written by a module of state schema version `state_version`.
pub(crate) async fn restore_instance(
    instance: &mut OperatorInstance,
    state_version: u32,
    storage: Arc<dyn CheckpointStorage>,
    job: String,
    chains: std::collections::BTreeMap<u32, Vec<u64>>,
    faults: Option<Arc<FaultInjector>>,
) -> Result<(), TaskError> {
    if let Some(f) = &faults {
        f.hit(FaultPoint::Restore)?;
    }
    for (_, chain) in chains {
        let storage = storage.clone();
        let job = job.clone();
        let entries = tokio::task::spawn_blocking(move || storage.read_chain(&job, &chain)).await??;
        for chunk in restore_chunks(entries, 4 << 20) {
            instance.restore(state_version, &chunk).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
