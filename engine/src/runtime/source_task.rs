//! The loop of a source subtask: it reads batches from its connector and sends them on,
//! with the watermarks it derives or its connector tracks, and idleness.
//!
//! Checkpointed, it injects a barrier at the batch boundary after the coordinator triggers
//! a checkpoint (recording its position at exactly that point), and at the end of its input
//! sends the final watermark and waits for the final checkpoint to complete before it sends
//! end-of-stream (invariant C11). Waiting for room on its outputs, it still takes triggers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::control::{Control, ToCoordinator};
use super::error::TaskError;
use super::faults::FaultPoint;
use super::message::{Barrier, Message};
use super::metrics::{JobMetrics, SubtaskMetrics};
use super::output::Output;
use super::snapshot_writer::WriteRequest;
use super::stop::StopMode;
use super::subtask_blob::TaskState;
use super::task::Checkpointing;
use crate::connectors::Source;

/// How often a source's lag is copied to its metrics.
const LAG_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a source that has nothing new (an empty batch) waits before it asks again.
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Runs a source subtask.
pub async fn run_source(
    source: Box<dyn Source>,
    out_of_orderness_ms: Option<i64>,
    records_per_second: Option<u64>,
    output: Output,
    metrics: Arc<SubtaskMetrics>,
    job: Arc<JobMetrics>,
    mut checkpointing: Option<Checkpointing>,
) -> Result<(), TaskError> {
    let restored = checkpointing.as_ref().and_then(|c| c.restored.source_watermark);
    let (max_ts, watermark) = restored.unwrap_or((i64::MIN, i64::MIN));
    let mut task = SourceTask {
        source,
        out_of_orderness_ms,
        records_per_second,
        output,
        metrics,
        job,
        max_ts,
        watermark,
        exhausted: false,
        stopped: false,
        announced: false,
        started: Instant::now(),
        emitted: 0,
        idle_out: false,
        positions: BTreeMap::new(),
        lag_at: Instant::now(),
    };
    loop {
        match &mut checkpointing {
            Some(c) => match task.before_batch(c).await? {
                Step::Batch => c.hit(FaultPoint::Process)?,
                Step::Again => continue,
                Step::Finished => break,
            },
            None if task.exhausted => break,
            None => task.output.ready().await,
        }
        let idle = task.next_batch()?;
        if !task.exhausted {
            task.follow_source()?;
        }
        task.pace(idle).await;
    }
    task.output.broadcast(Message::EndOfStream)?;
    Ok(())
}

/// What a checkpointed source does next, once its control messages are handled.
enum Step {
    /// Read the next batch.
    Batch,
    /// Look at the control messages again (one arrived while waiting).
    Again,
    /// The final checkpoint completed: the source ends.
    Finished,
}

/// A running source subtask: its connector, output and event-time progress.
struct SourceTask {
    source: Box<dyn Source>,
    out_of_orderness_ms: Option<i64>,
    records_per_second: Option<u64>,
    output: Output,
    metrics: Arc<SubtaskMetrics>,
    job: Arc<JobMetrics>,
    /// The highest event time seen, and the watermark sent.
    max_ts: i64,
    watermark: i64,
    /// The input ended (ran out, or the job stops).
    exhausted: bool,
    /// The input ended because the job is suspended.
    stopped: bool,
    /// The coordinator was told that the input ended.
    announced: bool,
    started: Instant,
    emitted: u64,
    /// The output is marked idle (an idle notice went out, no batch or watermark since).
    idle_out: bool,
    /// Checkpoint id → the position recorded at its trigger, for `checkpoint_completed`.
    /// Entries at or below a completed id are dropped, so aborted ones do not accumulate.
    positions: BTreeMap<u64, serde_json::Value>,
    /// When the source's lag was last copied to the metrics.
    lag_at: Instant,
}

impl SourceTask {
    /// Handles the control messages due before the next batch: barriers go out at batch
    /// boundaries, recording the position at exactly that point. Then the stop signal, the
    /// end of input (waiting for the final checkpoint) and backpressure.
    async fn before_batch(&mut self, c: &mut Checkpointing) -> Result<Step, TaskError> {
        let mut done = false;
        while let Ok(control) = c.control.try_recv() {
            done |= self.control(c, control)?;
        }
        if done {
            return Ok(Step::Finished);
        }
        match c.stop.requested() {
            _ if self.exhausted => {}
            None => {}
            // Stopping: the input ends here, but event time does not jump to the end,
            // so the job resumes from the final checkpoint as if never stopped.
            Some(StopMode::Suspend) => {
                self.exhausted = true;
                self.stopped = true;
            }
            // Draining: the input ends here as if it had run out, so every event-time
            // timer downstream fires before the final checkpoint.
            Some(StopMode::Drain) => {
                self.exhausted = true;
                (self.max_ts, self.watermark) = end_of_input(&self.output)?;
            }
        }
        if self.exhausted {
            if !self.announced {
                self.announced = true;
                let _ =
                    c.coordinator.send(ToCoordinator::SourceFinished { task: c.task, stopped: self.stopped });
            }
            let Some(control) = c.control.recv().await else { return Ok(Step::Finished) };
            return Ok(if self.control(c, control)? { Step::Finished } else { Step::Again });
        }
        // Backpressure: wait for room, taking triggers meanwhile (an unaligned barrier
        // overtakes the backlog at once).
        if self.output.has_room() {
            return Ok(Step::Batch);
        }
        if c.control_closed {
            self.output.ready().await;
            return Ok(Step::Batch);
        }
        tokio::select! {
            biased;
            control = c.control.recv() => {
                match control {
                    Some(control) if self.control(c, control)? => Ok(Step::Finished),
                    Some(_) => Ok(Step::Again),
                    None => {
                        c.control_closed = true;
                        Ok(Step::Again)
                    }
                }
            }
            () = self.output.ready() => Ok(Step::Batch),
        }
    }

    /// Handles one control message; true when the final checkpoint completed.
    fn control(&mut self, c: &mut Checkpointing, control: Control) -> Result<bool, TaskError> {
        let progress = (self.max_ts, self.watermark);
        source_control(c, control, &mut *self.source, progress, &self.output, &mut self.positions)
    }

    /// Reads and emits the next batch, with the watermark it moves; true when the source
    /// had nothing new (it follows its input and is idle).
    fn next_batch(&mut self) -> Result<bool, TaskError> {
        let busy = Instant::now();
        let next = self.source.next_batch()?;
        if next.as_ref().is_some_and(|b| !b.is_empty()) {
            self.metrics.add_busy(busy);
        }
        // Its lag, at most every 200 ms (a copy of a few entries).
        if self.lag_at.elapsed() >= LAG_EVERY {
            self.lag_at = Instant::now();
            let lag = self.source.lag();
            if !lag.is_empty()
                && let Ok(mut l) = self.metrics.lag.lock()
            {
                *l = lag;
            }
        }
        // The records it left out go with the batch: a checkpoint's position covers both.
        self.output.take_out(self.source.take_rejected()).map_err(TaskError::from)?;
        let Some(batch) = next else {
            self.exhausted = true;
            (self.max_ts, self.watermark) = end_of_input(&self.output)?;
            self.metrics.set_watermark(self.watermark);
            return Ok(false);
        };
        if batch.is_empty() {
            return Ok(true);
        }
        // A source that tracks event time itself replaces the task's watermarks.
        let own = self.source.watermark().is_some();
        let out_of_orderness_ms = self.out_of_orderness_ms.filter(|_| !own);
        if let Some(delay) = out_of_orderness_ms {
            for e in &batch.entries {
                self.max_ts = self.max_ts.max(e.timestamp);
            }
            let w = self.max_ts.saturating_sub(delay).saturating_sub(1);
            if w > self.watermark {
                self.watermark = w;
            }
        }
        self.metrics.add_out(&batch);
        self.job.source_batches.fetch_add(1, Ordering::Relaxed);
        self.emitted += batch.len() as u64;
        self.output.emit(batch)?;
        // The batch made every output channel active again.
        self.idle_out = false;
        if out_of_orderness_ms.is_some() && self.watermark > i64::MIN {
            self.output.broadcast(Message::Watermark(self.watermark))?;
            self.metrics.set_watermark(self.watermark);
        }
        self.metrics.set_idle(false);
        Ok(false)
    }

    /// Passes on the source's own watermark and idleness.
    fn follow_source(&mut self) -> Result<(), TaskError> {
        if let Some(w) = self.source.watermark()
            && w > self.watermark
        {
            self.watermark = w;
            self.idle_out = false;
            self.output.broadcast(Message::Watermark(w))?;
            self.metrics.set_watermark(w);
        }
        let now_idle = self.source.idle();
        if now_idle != self.idle_out {
            self.idle_out = now_idle;
            self.metrics.set_idle(now_idle);
            // Active again without a batch or a new watermark (say, a partition was
            // assigned): the current watermark tells the receivers so.
            let message = if now_idle { Message::Idle } else { Message::Watermark(self.watermark) };
            self.output.broadcast(message)?;
        }
        Ok(())
    }

    /// Waits before the next batch: paced to the rate, polling an idle source a little
    /// later, or just letting other tasks run.
    async fn pace(&mut self, idle: bool) {
        match self.records_per_second {
            // Paced: the next batch is due when the records so far fit the rate.
            Some(rate) if !self.exhausted => {
                let due =
                    self.started + std::time::Duration::from_secs_f64(self.emitted as f64 / rate as f64);
                tokio::time::sleep_until(due.into()).await;
            }
            // A following source with nothing new polls again a little later.
            _ if idle => tokio::time::sleep(IDLE_POLL).await,
            // A source that never fills a channel must still let other tasks run.
            _ => tokio::task::yield_now().await,
        }
    }
}

/// The end of a source's input (it ran out, or the job is drained): event time jumps to the
/// end, so every event-time timer downstream fires before the final checkpoint and its output
/// is committed with it. Returns the source's (highest event time, watermark).
fn end_of_input(output: &Output) -> Result<(i64, i64), TaskError> {
    output.broadcast(Message::Watermark(i64::MAX))?;
    Ok((i64::MAX, i64::MAX))
}

/// Handles one control message at a source; true when the final checkpoint completed.
/// `positions` holds the position recorded at each pending checkpoint's trigger, handed to
/// [`Source::checkpoint_completed`] when it completes.
fn source_control(
    c: &mut Checkpointing,
    control: Control,
    source: &mut dyn Source,
    watermark: (i64, i64),
    output: &Output,
    positions: &mut BTreeMap<u64, serde_json::Value>,
) -> Result<bool, TaskError> {
    match control {
        Control::Trigger { id, triggered, is_final, unaligned_after } => {
            let started = Instant::now();
            let position = source.position();
            positions.insert(id, position.clone());
            let state = TaskState {
                position: Some(position),
                source_watermark: Some(watermark),
                ..TaskState::default()
            };
            let mut stats = c.stats(None, triggered, started);
            // Unaligned from the start: the barrier overtakes the queued output, which the
            // receivers persist as their channel state.
            let unaligned = unaligned_after == Some(std::time::Duration::ZERO);
            stats.unaligned = unaligned;
            output.barrier(Barrier::new(id, triggered, is_final, unaligned_after), unaligned)?;
            c.writer.send(WriteRequest::new(id, None, state, stats))?;
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
        Control::Started { .. } => Ok(false),
    }
}

#[cfg(test)]
mod tests;
