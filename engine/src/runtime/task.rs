//! The loops of operator and sink subtasks (the source's is in `source_task`), and what
//! every checkpointed subtask shares. Each runs as one tokio task.
//!
//! Without checkpointing ([`Checkpointing`] absent) a source sends its batches, the final
//! watermark and end-of-stream. With it, a source also injects barriers when the coordinator
//! triggers a checkpoint and, at the end of its input, sends the final watermark and waits
//! for the final checkpoint to complete before it sends end-of-stream (invariant C11) — so
//! every record's output is committed by some checkpoint.
//!
//! Idleness (docs/design.md §2): a source whose [`Source::idle`](crate::connectors::Source::idle) is true sends
//! [`Message::Idle`] once, and is active again when it sends a batch or a watermark; an
//! operator forwards idle when every input is idle, and the current watermark when one is
//! active again.
//!
//! Backpressure: a task queues a whole call's output, then waits for room on its outputs
//! before it takes its next input; while it waits it still takes barriers (and a source its
//! triggers), so an unaligned checkpoint never waits for the backlog (docs/design.md §6).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use weir_store::{CheckpointStorage, SubtaskStats};

use super::barrier::{BarrierHandler, Finished, Snapshot, Steps};
use super::control::{Control, ToCoordinator};
use super::dead_letter::{DeadLetterBook, DeadLetters, OperatorGuard, record_can_cause};
use super::error::TaskError;
use super::faults::{FaultInjector, FaultPoint};
use super::in_flight::ChannelMessages;
use super::input_gate::InputGate;
use super::message::Message;
use super::metrics::{GUEST_COUNTERS, JobMetrics, SubtaskMetrics};
use super::output::Output;
use super::restore::restore_chains;
use super::scopes::RESTORE_CHUNK_BYTES;
use super::snapshot_writer::{SnapshotWriter, WriteRequest};
use super::stop::StopSignal;
use super::subtask_blob::{TaskRestoreError, TaskState};
use super::watermark::WatermarkTracker;
use crate::connectors::{ConnectorEnv, Sink, SinkConfig};
use crate::guest::OperatorInstance;
use crate::guest::bindings::Context;
use crate::plan::DEAD_LETTER_OUTPUT;
use crate::record::Batch;

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
    /// The job's `channel_capacity_bytes`: bounds the channel state a capture may log.
    pub channel_capacity_bytes: u64,
    /// The checkpoint the task restored (0: none).
    pub restored_id: u64,
    /// The job's book of records taken out (operators find their poison records in it).
    pub dead_letters: Arc<DeadLetterBook>,
}

impl Checkpointing {
    pub(super) fn hit(&self, point: FaultPoint) -> Result<(), TaskError> {
        match &self.faults {
            Some(f) => f.hit(point),
            None => Ok(()),
        }
    }

    pub(super) fn stats(
        &self,
        snapshot: Option<&Snapshot>,
        triggered: Instant,
        sync_started: Instant,
    ) -> SubtaskStats {
        SubtaskStats {
            operator: self.node.clone(),
            subtask: self.subtask,
            sync_ms: sync_started.elapsed().as_secs_f64() * 1e3,
            alignment_ms: snapshot.map(|s| s.alignment.as_secs_f64() * 1e3).unwrap_or_default(),
            alignment_bytes: snapshot.map(|s| s.alignment_bytes).unwrap_or_default(),
            start_delay_ms: match snapshot {
                Some(s) => s.start_delay.as_secs_f64() * 1e3,
                None => sync_started.saturating_duration_since(triggered).as_secs_f64() * 1e3,
            },
            unaligned: snapshot.is_some_and(|s| s.unaligned),
            switched_to_unaligned_ms: snapshot.and_then(|s| s.switched_at_ms),
            ..SubtaskStats::default()
        }
    }

    /// The snapshot taken for `finished.id` goes to the writer with its channel state (or
    /// declined, when the checkpoint was given up here).
    fn finish(
        &self,
        taken: &mut Option<WriteRequest>,
        finished: Finished,
        gate: &InputGate,
    ) -> Result<(), TaskError> {
        let Some(mut request) = taken.take() else { return Ok(()) };
        debug_assert_eq!(request.id, finished.id, "the snapshot of the finished checkpoint");
        request.channels = finished
            .channels
            .into_iter()
            .map(|(c, messages)| ChannelMessages {
                port: gate.port(c),
                upstream: gate.upstream_subtask(c),
                messages,
            })
            .collect();
        request.state.in_flight_messages = request.channels.iter().map(|c| c.messages.len() as u64).sum();
        request.decline = finished.decline;
        self.writer.send(request)
    }
}

/// The next control message of a checkpointed task; never ready without one (the
/// coordinator's channel closed, or no checkpointing).
async fn next_control(checkpointing: &mut Option<Checkpointing>) -> Control {
    if let Some(c) = checkpointing
        && !c.control_closed
    {
        match c.control.recv().await {
            Some(control) => return control,
            None => c.control_closed = true,
        }
    }
    std::future::pending().await
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// What woke an operator or a sink.
enum Event {
    Control(Control),
    Timeout,
    Input(usize, Message),
}

/// Waits for the next event of a task with inputs: a control message, the barrier
/// handler's deadline, or an input — only barriers while its outputs are full. `None`
/// when every input ended.
async fn next_event(
    checkpointing: &mut Option<Checkpointing>,
    handler: &BarrierHandler,
    gate: &mut InputGate,
    output: Option<&Output>,
) -> Option<Result<Event, TaskError>> {
    let deadline = handler.deadline();
    loop {
        let room = output.is_none_or(Output::has_room);
        tokio::select! {
            biased;
            control = next_control(checkpointing) => return Some(Ok(Event::Control(control))),
            () = sleep_until(deadline) => return Some(Ok(Event::Timeout)),
            () = async { if let Some(o) = output { o.ready().await } }, if !room => continue,
            next = gate.next(!room) => {
                return next.map(|n| n.map(|(c, m)| Event::Input(c, m)).map_err(TaskError::from));
            }
        }
    }
}

/// Runs an operator subtask over its input gate until every input ended. `state_version` is
/// the module's state schema version (from `describe`), recorded with every snapshot.
pub async fn run_operator(
    mut instance: OperatorInstance,
    state_version: u32,
    context: Context,
    gate: InputGate,
    output: Output,
    metrics: Arc<SubtaskMetrics>,
    checkpointing: Option<Checkpointing>,
) -> Result<(), TaskError> {
    let mut watermarks = WatermarkTracker::new(gate.len());
    if let Some(c) = &checkpointing {
        if !c.restored.watermarks.is_empty() {
            watermarks =
                WatermarkTracker::restore(&c.restored.watermarks).ok_or(TaskRestoreError::NoWatermarks)?;
        }
        for (ts, key) in &c.restored.timers {
            instance.timers().register(key.clone(), *ts);
        }
    }
    // The guest reads its watermarks (`event-time`) from `open` on: restored ones included.
    let ports: Vec<u32> = (0..gate.len()).map(|c| gate.port(c)).collect();
    let mut inputs = vec![i64::MIN; context.inputs as usize];
    watermarks.raise_inputs(&ports, &mut inputs);
    instance.set_watermarks(watermarks.current(), &inputs);
    // The guest's own dead letters are taken (counted, held to the limit) whether or not the
    // job has a destination for them.
    let mut consumed = output.side_outputs().to_vec();
    if !consumed.iter().any(|n| n == DEAD_LETTER_OUTPUT) {
        consumed.push(DEAD_LETTER_OUTPUT.to_string());
    }
    instance.set_side_outputs(consumed);
    instance.open(&context).await?;
    // An operator that takes out the records that break it.
    let guard = match &checkpointing {
        Some(c) if output.on_error().takes_out() => {
            Some(OperatorGuard::new(Some(&c.dead_letters), &c.node, c.subtask, c.restored_id))
        }
        _ => None,
    };
    let mut task = OperatorTask {
        guard,
        instance,
        state_version,
        handler: barrier_handler(&gate, checkpointing.as_ref()),
        gate,
        output,
        metrics,
        checkpointing,
        watermarks,
        ports,
        inputs,
        idle_out: false,
        taken: None,
        counters_at: Instant::now(),
    };
    while let Some(event) =
        next_event(&mut task.checkpointing, &task.handler, &mut task.gate, Some(&task.output)).await
    {
        let (steps, progress) = match event? {
            Event::Control(control) => (task.control(control), Progress::default()),
            Event::Timeout => (task.handler.on_timeout(&mut task.gate), Progress::default()),
            Event::Input(channel, Message::Barrier(b)) => {
                let overtaken = task.gate.take_overtaken();
                (task.handler.on_barrier(channel, b, overtaken, &mut task.gate)?, Progress::default())
            }
            Event::Input(channel, Message::EndOfStream) => {
                let steps = task.handler.on_end(channel, &mut task.gate);
                (steps, Progress { advanced: task.watermarks.end(channel), time_moved: true })
            }
            Event::Input(channel, message) => {
                let steps = task.handler.taken(channel, &message, &mut task.gate);
                (steps, task.on_input(channel, message).await?)
            }
        };
        task.copy_counters();
        task.event_time(progress).await?;
        task.checkpoint(steps).await?;
    }
    task.counters_at = Instant::now() - COUNTERS_EVERY;
    task.copy_counters();
    task.output.broadcast(Message::EndOfStream)?;
    Ok(())
}

/// How event time moved with one event at an operator.
#[derive(Default)]
struct Progress {
    /// The combined watermark advanced to this.
    advanced: Option<i64>,
    /// An input's own watermark (or idleness) may have moved.
    time_moved: bool,
}

/// A running operator subtask: its instance, inputs, output, event time and checkpointing.
struct OperatorTask {
    /// With `on_error: skip | dead_letter`: takes out the records that break the guest.
    guard: Option<OperatorGuard>,
    instance: OperatorInstance,
    /// The module's state schema version, recorded with every snapshot.
    state_version: u32,
    handler: BarrierHandler,
    gate: InputGate,
    output: Output,
    metrics: Arc<SubtaskMetrics>,
    checkpointing: Option<Checkpointing>,
    watermarks: WatermarkTracker,
    /// Each channel's input port, and each port's watermark as the guest reads it.
    ports: Vec<u32>,
    inputs: Vec<i64>,
    /// Every input is idle and an idle notice went downstream.
    idle_out: bool,
    /// A snapshot taken unaligned, waiting for the rest of its channel state.
    taken: Option<WriteRequest>,
    /// When the guest's counters were last copied to the metrics.
    counters_at: Instant,
}

/// How often an operator's own counters are copied to its metrics.
const COUNTERS_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl OperatorTask {
    /// Handles a control message (see [`operator_control`]).
    fn control(&mut self, control: Control) -> Steps {
        operator_control(&mut self.checkpointing, control, &mut self.handler, &mut self.gate)
    }

    /// Copies the guest's own counters to the metrics, at most every 200 ms.
    fn copy_counters(&mut self) {
        if self.counters_at.elapsed() < COUNTERS_EVERY {
            return;
        }
        self.counters_at = Instant::now();
        let counters = self.instance.counters();
        if counters.is_empty() {
            return;
        }
        let copy = counters.iter().take(GUEST_COUNTERS).map(|(n, v)| (n.clone(), *v)).collect();
        if let Ok(mut c) = self.metrics.guest_counters.lock() {
            *c = copy;
        }
    }

    /// Handles a batch, a watermark or an idle notice from input `channel`.
    async fn on_input(&mut self, channel: usize, message: Message) -> Result<Progress, TaskError> {
        Ok(match message {
            Message::Batch(batch) => {
                if let Some(c) = &self.checkpointing {
                    c.hit(FaultPoint::Process)?;
                }
                self.metrics.add_in(&batch);
                let advanced = self.watermarks.activate(channel);
                let port = self.gate.port(channel);
                let busy = Instant::now();
                match self.guard.take() {
                    None => {
                        let out = self.instance.process(port, &batch).await?;
                        emit(&mut self.instance, &mut self.output, &self.metrics, out)?;
                    }
                    Some(mut guard) => {
                        let guarded = self.process_guarded(&mut guard, port, batch).await;
                        self.guard = Some(guard);
                        guarded?;
                    }
                }
                self.metrics.add_busy(busy);
                Progress { advanced, time_moved: false }
            }
            Message::Watermark(w) => {
                Progress { advanced: self.watermarks.update(channel, w), time_moved: true }
            }
            Message::Idle => Progress { advanced: self.watermarks.set_idle(channel), time_moved: true },
            Message::Barrier(_) | Message::EndOfStream => unreachable!("handled by the caller"),
        })
    }

    /// Processes a batch of input `port` through `guard`: the poison records a replay found
    /// are taken out; replaying record by record, a record the guest fails on is found;
    /// else a batch the guest fails on is suspected (the job replays it record by record).
    async fn process_guarded(
        &mut self,
        guard: &mut OperatorGuard,
        port: u32,
        batch: Batch,
    ) -> Result<(), TaskError> {
        let batch = if guard.idle() {
            batch
        } else {
            let (kept, taken) = guard.filter(port, batch);
            self.output.take_out(taken).map_err(TaskError::from)?;
            kept
        };
        if !guard.careful() {
            return match self.instance.process(port, &batch).await {
                Ok(out) => emit(&mut self.instance, &mut self.output, &self.metrics, out),
                Err(e) if record_can_cause(&e) => Err(TaskError::PoisonSuspected(Box::new(e))),
                Err(e) => Err(e.into()),
            };
        }
        for r in batch.iter() {
            guard.count(port, r.key, r.value, r.timestamp);
            let mut one = Batch::with_capacity(1, r.key.len() + r.value.len());
            one.push(r.key, r.value, r.timestamp);
            match self.instance.process(port, &one).await {
                Ok(out) => emit(&mut self.instance, &mut self.output, &self.metrics, out)?,
                Err(e) if record_can_cause(&e) => {
                    let (hash, record) = guard.found(port, r.key, r.value, r.timestamp, &e);
                    return Err(TaskError::Poison { hash, record: Box::new(record) });
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Waits for room on the outputs before the next guest call of a series (the timers
    /// due at a watermark, then `on-watermark`), taking control messages meanwhile: each
    /// call's output is queued whole, so the queue holds at most the channels' capacity and
    /// one call's output however many timers are due. Inputs (barriers included) wait until
    /// the series ends: a snapshot never sees a watermark half handled.
    async fn wait_for_room(&mut self) -> Result<(), TaskError> {
        while !self.output.has_room() {
            tokio::select! {
                biased;
                control = next_control(&mut self.checkpointing) => {
                    let steps = self.control(control);
                    self.checkpoint(steps).await?;
                }
                () = self.output.ready() => {}
            }
        }
        Ok(())
    }

    /// Passes on how event time moved: to the guest's view of its watermarks, to the timers
    /// due, to the guest and downstream, and the idleness of the output.
    async fn event_time(&mut self, progress: Progress) -> Result<(), TaskError> {
        let Progress { advanced, time_moved } = progress;
        if time_moved || advanced.is_some() {
            // An input's own watermark may move while the combined one stays.
            self.watermarks.raise_inputs(&self.ports, &mut self.inputs);
            self.instance.set_watermarks(self.watermarks.current(), &self.inputs);
        }
        if let Some(w) = advanced {
            self.fire_timers(w).await?;
            // Then the operator sees the watermark, then it goes downstream.
            self.wait_for_room().await?;
            let out = self.instance.on_watermark(w).await?;
            emit(&mut self.instance, &mut self.output, &self.metrics, out)?;
            self.output.broadcast(Message::Watermark(w))?;
            self.metrics.set_watermark(w);
        }
        // Idle when every input is; active again (with the current watermark, unless one
        // just went out) when one of them is.
        let all_idle = self.watermarks.all_idle();
        if all_idle != self.idle_out {
            self.idle_out = all_idle;
            self.metrics.set_idle(all_idle);
            if all_idle {
                self.output.broadcast(Message::Idle)?;
            } else if advanced.is_none() {
                self.output.broadcast(Message::Watermark(self.watermarks.current()))?;
            }
        }
        Ok(())
    }

    /// Fires the timers due at watermark `w` in time order, one call at a time, each after
    /// there is room downstream. A timer registered while they fire at or before the time of
    /// the one firing is deferred to the next advance of the watermark, so an `on-timer` that
    /// registers itself again cannot keep the loop going forever.
    async fn fire_timers(&mut self, w: i64) -> Result<(), TaskError> {
        self.instance.timers().begin_firing();
        let fired = async {
            while let Some((ts, key)) = self.instance.timers().pop_due(w) {
                self.wait_for_room().await?;
                let out = self.instance.on_timer(&key, ts).await?;
                emit(&mut self.instance, &mut self.output, &self.metrics, out)?;
            }
            Ok::<_, TaskError>(())
        }
        .await;
        self.instance.timers().end_firing();
        fired
    }

    /// Carries out the barrier handler's steps: a checkpoint given up, a snapshot to take
    /// (then the barrier goes on), a checkpoint whose channel state is complete.
    async fn checkpoint(&mut self, steps: Steps) -> Result<(), TaskError> {
        let Some(c) = &mut self.checkpointing else { return Ok(()) };
        if let Some(f) = steps.abandoned {
            c.finish(&mut self.taken, f, &self.gate)?;
        }
        if let Some(s) = steps.snapshot {
            // Snapshot, then forward the barrier — never before the snapshot (C2).
            c.hit(FaultPoint::Snapshot)?;
            let started = Instant::now();
            let delta = self.instance.snapshot(s.barrier.id, false).await?;
            // Also after the guest handed its changes over (and forgot them): recovery must
            // not depend on this instance's memory.
            c.hit(FaultPoint::Snapshot)?;
            // Host keyed state: the keys changed since the last barrier and a snapshot of the
            // local store (the writer reads the values).
            let host = self.instance.keyed_states().checkpoint();
            let state = TaskState {
                watermarks: self.watermarks.channels().to_vec(),
                timers: self.instance.timers().iter().cloned().collect(),
                state_version: Some(self.state_version),
                ..TaskState::default()
            };
            let stats = c.stats(Some(&s), s.barrier.triggered, started);
            self.output.barrier(s.barrier, s.unaligned)?;
            self.taken = Some(WriteRequest::new(s.barrier.id, Some(delta), state, stats).with_host(host));
        }
        if let Some(f) = steps.finished {
            c.finish(&mut self.taken, f, &self.gate)?;
        }
        Ok(())
    }
}

/// Routes what a guest call returned (the main output) and then what it emitted on side
/// outputs.
fn emit(
    instance: &mut OperatorInstance,
    output: &mut Output,
    metrics: &SubtaskMetrics,
    out: Batch,
) -> Result<(), TaskError> {
    metrics.add_out(&out);
    output.emit(out)?;
    let mut routed = Ok(());
    instance.drain_side_outputs(|name, batch| {
        if routed.is_ok() {
            metrics.add_out(&batch);
            routed = if name == DEAD_LETTER_OUTPUT {
                // The guest sent these to the dead letters itself.
                output.take_out(DeadLetters::from_guest(&batch)).map_err(TaskError::from)
            } else {
                output.emit_side(name, batch).map_err(TaskError::from)
            };
        }
    });
    routed
}

/// Handles a control message at an operator: completions go to the writer (in order with
/// the snapshots: a completion never overtakes the snapshot of its own checkpoint, which
/// this task sent before it could complete), starts and aborts to the barrier handler.
fn operator_control(
    checkpointing: &mut Option<Checkpointing>,
    control: Control,
    handler: &mut BarrierHandler,
    gate: &mut InputGate,
) -> Steps {
    match control {
        Control::Completed(id) => {
            if let Some(c) = checkpointing {
                c.writer.completed(id);
            }
            Steps::default()
        }
        Control::Started { id, triggered, unaligned_after } => {
            handler.on_started(id, triggered, unaligned_after, false);
            Steps::default()
        }
        Control::Aborted(id) => handler.on_aborted(id, gate),
        Control::Trigger { .. } => Steps::default(),
    }
}

/// The barrier handler of a task reading `gate`: its captures of channel state are held to
/// twice the input channels' capacity in bytes, at least 16 MiB.
fn barrier_handler(gate: &InputGate, checkpointing: Option<&Checkpointing>) -> BarrierHandler {
    let per_channel = checkpointing.map_or(u64::MAX, |c| c.channel_capacity_bytes).saturating_mul(2);
    let limit = per_channel.saturating_mul(gate.len() as u64).max(16 << 20);
    BarrierHandler::new(gate.len()).with_capture_limit(limit)
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
    let mut handler = barrier_handler(&gate, checkpointing.as_ref());
    let mut taken: Option<WriteRequest> = None;
    let mut pending: Vec<(u64, serde_json::Value)> =
        checkpointing.as_ref().map(|c| c.restored.sink_pending.clone()).unwrap_or_default();
    while let Some(event) = next_event(&mut checkpointing, &handler, &mut gate, None).await {
        let steps = match event? {
            Event::Control(Control::Completed(id)) => {
                if let Some(c) = &checkpointing {
                    c.writer.completed(id);
                }
                commit_upto(&mut *sink, &mut pending, id)?;
                continue;
            }
            Event::Control(control) => operator_control(&mut checkpointing, control, &mut handler, &mut gate),
            Event::Timeout => handler.on_timeout(&mut gate),
            Event::Input(channel, Message::Barrier(b)) => {
                let overtaken = gate.take_overtaken();
                handler.on_barrier(channel, b, overtaken, &mut gate)?
            }
            Event::Input(channel, Message::EndOfStream) => handler.on_end(channel, &mut gate),
            Event::Input(channel, message) => {
                let steps = handler.taken(channel, &message, &mut gate);
                if let Message::Batch(batch) = message {
                    if let Some(c) = &checkpointing {
                        c.hit(FaultPoint::Process)?;
                    }
                    metrics.add_in(&batch);
                    job.sink_received();
                    let busy = Instant::now();
                    sink.write(&batch)?;
                    metrics.add_busy(busy);
                    if let Some(pause) = sink.pause() {
                        tokio::time::sleep(pause).await;
                    }
                }
                steps
            }
        };
        let Some(c) = &checkpointing else { continue };
        if let Some(f) = steps.abandoned {
            c.finish(&mut taken, f, &gate)?;
        }
        if let Some(s) = steps.snapshot {
            c.hit(FaultPoint::Snapshot)?;
            let started = Instant::now();
            if let Some(txn) = sink.precommit(s.barrier.id)? {
                pending.push((s.barrier.id, txn));
            }
            let state = TaskState { sink_pending: pending.clone(), ..TaskState::default() };
            let stats = c.stats(Some(&s), s.barrier.triggered, started);
            taken = Some(WriteRequest::new(s.barrier.id, None, state, stats));
        }
        if let Some(f) = steps.finished {
            c.finish(&mut taken, f, &gate)?;
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

/// Puts the channel state of the restored checkpoint (the in-flight data an unaligned
/// checkpoint persisted, in `chunks`; `expected` messages) into the gate, to be delivered
/// per channel in its original order before anything new. Lost or damaged channel state
/// fails the restore: resuming without it would drop records. Invariant C12.
pub(crate) async fn restore_channel_state(
    gate: &mut InputGate,
    storage: Arc<dyn CheckpointStorage>,
    job: String,
    chunks: Vec<u64>,
    expected: u64,
) -> Result<(), TaskError> {
    if chunks.is_empty() && expected == 0 {
        return Ok(());
    }
    let entries = tokio::task::spawn_blocking(move || storage.read_chain(&job, &chunks))
        .await?
        .map_err(|e| TaskRestoreError::ChannelState(e.to_string()))?;
    let channels = super::in_flight::decode(&entries).map_err(|e| TaskRestoreError::ChannelState(e.0))?;
    let found: u64 = channels.values().map(|m| m.len() as u64).sum();
    if found != expected {
        return Err(TaskRestoreError::ChannelState(format!(
            "{found} of the {expected} in-flight messages it recorded are stored"
        ))
        .into());
    }
    for ((port, upstream), messages) in channels {
        let channel = gate.channel_of(port, upstream).ok_or_else(|| {
            TaskRestoreError::ChannelState(format!(
                "the job has no input channel from subtask {upstream} on port {port}"
            ))
        })?;
        // C12: replayed ahead of anything the channel brings, in its original order.
        gate.replay(channel, messages);
    }
    Ok(())
}

/// Restores an operator instance from its chains: every scope's live entries, in chunks,
/// written by a module of state schema version `state_version`.
pub(crate) async fn restore_instance(
    instance: &mut OperatorInstance,
    state_version: u32,
    storage: Arc<dyn CheckpointStorage>,
    job: String,
    chains: BTreeMap<u32, Vec<u64>>,
    faults: Option<Arc<FaultInjector>>,
) -> Result<(), TaskError> {
    if let Some(f) = &faults {
        f.hit(FaultPoint::Restore)?;
    }
    let chains = chains.into_values().collect();
    restore_chains(instance, state_version, storage, job, chains, RESTORE_CHUNK_BYTES).await
}
