//! Checkpoint barriers at a task with input channels: aligned and unaligned checkpoints
//! (invariant C10, docs/design.md §6).
//!
//! **Aligned.** When barrier `n` arrives on a channel the task stops reading that channel
//! (its later messages stay queued, in order) and keeps reading the others; when barrier `n`
//! has arrived on every channel still open, the task snapshots, forwards one barrier per
//! output and resumes every channel. Records processed between the first barrier and the
//! snapshot are the alignment's bytes (Flink's "processed in-flight data").
//!
//! **Unaligned.** The task snapshots at once — at the first barrier of `n` that arrived
//! unaligned (it overtook data), or when `n` has waited `unaligned_after` since its trigger
//! (then it *switches*) — and forwards `n` ahead of its queued output. Its channel state
//! for `n` is every message it has not processed that sits before `n` on an input: the
//! messages an unaligned barrier overtook (copied when it arrives), the messages before an
//! aligned barrier still queued at the switch (copied, the barrier taken out), and on every
//! input whose barrier has not arrived yet, each message it takes until it arrives. When
//! `n` has arrived on every open input the checkpoint is finished here and its snapshot
//! goes to the writer with that channel state.
//!
//! A task works on one checkpoint at a time (unaligned checkpoints need
//! `max_concurrent: 1`, as in Flink): a barrier of a later checkpoint, or the coordinator's
//! abort, abandons the pending one — declined, so the writer keeps its changes for the
//! next (C4).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::input_gate::InputGate;
use super::message::{Barrier, Message};
use crate::clock::unix_ms;

/// A barrier arrived out of protocol (a bug upstream, never user input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("barrier protocol violated: {0}")]
pub struct ProtocolError(pub String);

/// The task must snapshot now and forward `barrier` (unaligned: ahead of its queued output).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// The barrier to forward.
    pub barrier: Barrier,
    /// Taken unaligned.
    pub unaligned: bool,
    /// Time from the first barrier to the snapshot (zero when none had arrived).
    pub alignment: Duration,
    /// Bytes of records processed between the first barrier and the snapshot.
    pub alignment_bytes: u64,
    /// Time from the trigger to the first barrier's arrival (or to the switch).
    pub start_delay: Duration,
    /// When it switched from aligned to unaligned (unix ms), if it did.
    pub switched_at_ms: Option<u64>,
}

/// The checkpoint whose snapshot the task took is finished here: its channel state is
/// complete (or it was abandoned: `decline`).
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The checkpoint.
    pub id: u64,
    /// Per input channel (gate index), the in-flight messages, oldest first; empty for an
    /// aligned checkpoint.
    pub channels: Vec<(usize, Vec<Message>)>,
    /// Why the checkpoint is given up here (the writer keeps the snapshot's changes).
    pub decline: Option<String>,
}

/// What the task must do after an event, in this order.
#[derive(Debug, Default, PartialEq)]
pub struct Steps {
    /// A pending checkpoint whose snapshot was taken is given up.
    pub abandoned: Option<Finished>,
    /// Snapshot now.
    pub snapshot: Option<Snapshot>,
    /// The snapshot's checkpoint is finished here.
    pub finished: Option<Finished>,
}

impl Steps {
    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        self.abandoned.is_none() && self.snapshot.is_none() && self.finished.is_none()
    }
}

/// Channel state in the making (after an unaligned snapshot).
#[derive(Debug)]
struct Capture {
    channels: Vec<Vec<Message>>,
    /// Channels whose barrier has not arrived: every message taken is in-flight.
    logging: Vec<bool>,
    /// Bytes of the messages logged so far (what [`message_bytes`] counts).
    logged: u64,
}

/// What a message held in channel state costs: a batch's data plus 16 bytes per record
/// (as output is counted), anything else 64.
fn message_bytes(message: &Message) -> u64 {
    match message {
        Message::Batch(b) => (b.data.len() + 16 * b.len()) as u64,
        _ => 64,
    }
}

#[derive(Debug)]
struct Pending {
    barrier: Barrier,
    arrived: Vec<bool>,
    /// When the first barrier arrived (`None` if the switch came first).
    first: Option<Instant>,
    bytes: u64,
    capture: Option<Capture>,
}

/// The barrier protocol of one task over one input gate.
#[derive(Debug)]
pub struct BarrierHandler {
    channels: usize,
    ended: Vec<bool>,
    /// Every checkpoint up to this id is finished or given up here.
    done: u64,
    /// The coordinator aborted every checkpoint up to this id it told of.
    aborted: u64,
    pending: Option<Pending>,
    /// Checkpoints announced by the coordinator that may switch to unaligned: id → (barrier
    /// to forward, the moment to switch).
    started: BTreeMap<u64, (Barrier, Instant)>,
    /// The latest checkpoints given up here (their late barriers are ignored).
    given_up: std::collections::VecDeque<u64>,
    /// Most bytes of messages a capture may log while barriers are still to come.
    capture_limit: u64,
}

impl BarrierHandler {
    /// A handler for `channels` input channels.
    pub fn new(channels: usize) -> Self {
        BarrierHandler {
            channels,
            ended: vec![false; channels],
            done: 0,
            aborted: 0,
            pending: None,
            started: BTreeMap::new(),
            given_up: std::collections::VecDeque::new(),
            capture_limit: u64::MAX,
        }
    }

    /// At most `bytes` of messages logged as channel state while an unaligned checkpoint's
    /// barriers are still to come: past it the checkpoint is given up here (declined with
    /// the reason), instead of copying without bound.
    pub fn with_capture_limit(mut self, bytes: u64) -> Self {
        self.capture_limit = bytes;
        self
    }

    /// True while a checkpoint is in progress here (aligning, or capturing channel state).
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The checkpoint the coordinator triggered may switch to unaligned `after` its
    /// trigger: the task switches then even if no barrier of it has arrived.
    pub fn on_started(&mut self, id: u64, triggered: Instant, after: Duration, is_final: bool) {
        if id > self.done && id > self.aborted {
            let barrier = Barrier::new(id, triggered, is_final, Some(after));
            // A timeout past the end of time (a tenant may write any number) never switches.
            if let Some(at) = switch_at(&barrier) {
                self.started.insert(id, (barrier, at));
            }
        }
    }

    /// When the task must call [`BarrierHandler::on_timeout`] next, if ever.
    pub fn deadline(&self) -> Option<Instant> {
        match &self.pending {
            Some(p) if p.capture.is_none() => switch_at(&p.barrier),
            Some(_) => None,
            None => self.started.values().next().map(|(_, at)| *at),
        }
    }

    /// The task takes `message` (not a barrier) from `channel`: logged as in-flight if the
    /// channel's barrier is still to come after an unaligned snapshot; counted if aligning.
    /// A capture that would pass the handler's capture limit is given up (`abandoned`).
    pub fn taken(&mut self, channel: usize, message: &Message, gate: &mut InputGate) -> Steps {
        let Some(p) = &mut self.pending else { return Steps::default() };
        match &mut p.capture {
            Some(c) if c.logging[channel] => {
                c.logged = c.logged.saturating_add(message_bytes(message));
                if c.logged > self.capture_limit {
                    let reason = format!(
                        "its channel state passed {} bytes before every barrier arrived (twice the \
                         task's input channels' channel_capacity_bytes, at least 16 MiB)",
                        self.capture_limit
                    );
                    return Steps { abandoned: self.abandon(reason, gate), ..Steps::default() };
                }
                c.channels[channel].push(message.clone());
            }
            Some(_) => {}
            None => {
                if let Message::Batch(b) = message {
                    p.bytes += b.data.len() as u64;
                }
            }
        }
        Steps::default()
    }

    /// Barrier `barrier` arrived on `channel`, with the messages it overtook there (an
    /// unaligned barrier).
    pub fn on_barrier(
        &mut self,
        channel: usize,
        barrier: Barrier,
        overtaken: Vec<Message>,
        gate: &mut InputGate,
    ) -> Result<Steps, ProtocolError> {
        let mut steps = Steps::default();
        if barrier.id <= self.done {
            if barrier.id <= self.aborted || self.given_up.contains(&barrier.id) {
                // A barrier of a checkpoint given up here: nothing to do.
                return Ok(steps);
            }
            return Err(ProtocolError(format!(
                "barrier {} on channel {channel} after checkpoint {} was finished",
                barrier.id, self.done
            )));
        }
        if let Some(p) = &self.pending
            && p.barrier.id < barrier.id
        {
            // The pending checkpoint cannot complete (with one checkpoint at a time, a
            // later barrier means it was aborted): give it up.
            let reason = format!("subsumed by checkpoint {} before every barrier arrived", barrier.id);
            steps.abandoned = self.abandon(reason, gate);
        }
        self.started.retain(|id, _| *id > barrier.id);
        let now = Instant::now();
        let p = self.pending.get_or_insert_with(|| Pending {
            barrier,
            arrived: vec![false; self.channels],
            first: None,
            bytes: 0,
            capture: None,
        });
        if p.barrier.id != barrier.id {
            return Err(ProtocolError(format!(
                "barrier {} on channel {channel} while checkpoint {} is in progress",
                barrier.id, p.barrier.id
            )));
        }
        if p.arrived[channel] {
            return Err(ProtocolError(format!("barrier {} twice on channel {channel}", barrier.id)));
        }
        p.arrived[channel] = true;
        p.first.get_or_insert(now);
        if let Some(c) = &mut p.capture {
            c.logging[channel] = false;
            c.channels[channel].extend(overtaken);
        } else {
            let due = switch_at(&barrier).is_some_and(|at| now >= at);
            if barrier.unaligned || due {
                steps.snapshot = Some(self.switch(channel, overtaken, gate, !barrier.unaligned));
            } else {
                gate.set_blocked(channel, true);
                if self.open_missing() {
                    return Ok(steps);
                }
                steps.snapshot = Some(self.aligned(gate));
            }
        }
        steps.finished = self.try_finish();
        Ok(steps)
    }

    /// Channel `channel` ended (end of stream): it no longer holds a checkpoint back.
    pub fn on_end(&mut self, channel: usize, gate: &mut InputGate) -> Steps {
        self.ended[channel] = true;
        let mut steps = Steps::default();
        let Some(p) = &mut self.pending else { return steps };
        match &mut p.capture {
            Some(c) => c.logging[channel] = false,
            None => {
                if !self.open_missing() {
                    steps.snapshot = Some(self.aligned(gate));
                }
            }
        }
        steps.finished = self.try_finish();
        steps
    }

    /// The deadline passed: the pending (or announced) checkpoint switches to unaligned.
    pub fn on_timeout(&mut self, gate: &mut InputGate) -> Steps {
        let mut steps = Steps::default();
        let now = Instant::now();
        if self.pending.is_none() {
            // No barrier of it here yet: start it now.
            let Some((&id, &(barrier, at))) = self.started.iter().next() else { return steps };
            if now < at {
                return steps;
            }
            self.started.remove(&id);
            self.pending = Some(Pending {
                barrier,
                arrived: vec![false; self.channels],
                first: None,
                bytes: 0,
                capture: None,
            });
        }
        let p = self.pending.as_ref().expect("pending");
        let due = switch_at(&p.barrier).is_some_and(|at| now >= at);
        if p.capture.is_some() || !due {
            return steps;
        }
        steps.snapshot = Some(self.switch(usize::MAX, Vec::new(), gate, true));
        steps.finished = self.try_finish();
        steps
    }

    /// The coordinator aborted checkpoint `id` (and every one before): a pending one is
    /// given up.
    pub fn on_aborted(&mut self, id: u64, gate: &mut InputGate) -> Steps {
        self.aborted = self.aborted.max(id);
        self.started.retain(|k, _| *k > id);
        let mut steps = Steps::default();
        if self.pending.as_ref().is_some_and(|p| p.barrier.id <= id) {
            steps.abandoned = self.abandon(format!("checkpoint {id} was aborted"), gate);
        }
        steps
    }

    fn open_missing(&self) -> bool {
        let p = self.pending.as_ref().expect("pending");
        (0..self.channels).any(|c| !p.arrived[c] && !self.ended[c])
    }

    /// Every open channel delivered the aligned barrier: snapshot, and read them all again.
    fn aligned(&mut self, gate: &mut InputGate) -> Snapshot {
        let p = self.pending.as_mut().expect("pending");
        for c in 0..self.channels {
            if p.arrived[c] {
                gate.set_blocked(c, false);
            }
        }
        // Nothing to capture: the checkpoint finishes with its snapshot.
        p.capture = Some(Capture {
            channels: vec![Vec::new(); self.channels],
            logging: vec![false; self.channels],
            logged: 0,
        });
        snapshot_of(p, false, None)
    }

    /// Snapshot unaligned now. `channel` (if a real one) just delivered the barrier with
    /// the messages it overtook; every other channel whose barrier is still to come gives
    /// up the messages before its barrier if it is queued, or logs what it delivers until
    /// it arrives. `switched`: an aligned checkpoint switching (its timeout).
    fn switch(
        &mut self,
        channel: usize,
        overtaken: Vec<Message>,
        gate: &mut InputGate,
        switched: bool,
    ) -> Snapshot {
        let p = self.pending.as_mut().expect("pending");
        let mut capture = Capture {
            channels: vec![Vec::new(); self.channels],
            logging: vec![false; self.channels],
            logged: 0,
        };
        let mut overtaken = Some(overtaken);
        for c in 0..self.channels {
            if c == channel {
                capture.channels[c] = overtaken.take().unwrap_or_default();
            } else if p.arrived[c] {
                // An aligned barrier arrived here before the switch: nothing in flight.
                gate.set_blocked(c, false);
            } else if !self.ended[c] {
                match gate.extract_barrier(c, p.barrier.id) {
                    Some((_, before)) => {
                        p.arrived[c] = true;
                        capture.channels[c] = before;
                    }
                    None => capture.logging[c] = true,
                }
            }
        }
        p.capture = Some(capture);
        let switched_at = switched.then(unix_ms);
        snapshot_of(p, true, switched_at)
    }

    fn try_finish(&mut self) -> Option<Finished> {
        let p = self.pending.as_ref()?;
        if p.capture.is_none() || self.open_missing() {
            return None;
        }
        let p = self.pending.take().expect("pending");
        self.done = p.barrier.id;
        self.started.retain(|id, _| *id > self.done);
        let channels = p
            .capture
            .expect("captured")
            .channels
            .into_iter()
            .enumerate()
            .filter(|(_, m)| !m.is_empty())
            .collect();
        Some(Finished { id: p.barrier.id, channels, decline: None })
    }

    /// Gives up the pending checkpoint; `Some` when its snapshot was taken (the task must
    /// tell its writer).
    fn abandon(&mut self, reason: String, gate: &mut InputGate) -> Option<Finished> {
        let p = self.pending.take()?;
        self.done = self.done.max(p.barrier.id);
        self.started.retain(|id, _| *id > self.done);
        if self.given_up.len() == 16 {
            self.given_up.pop_front();
        }
        self.given_up.push_back(p.barrier.id);
        for c in 0..self.channels {
            if p.arrived[c] {
                gate.set_blocked(c, false);
            }
        }
        p.capture.map(|_| Finished { id: p.barrier.id, channels: Vec::new(), decline: Some(reason) })
    }
}

/// When checkpoint `b` switches to unaligned: `None` for an aligned-only one, or one whose
/// timeout lies beyond what an `Instant` can hold.
fn switch_at(b: &Barrier) -> Option<Instant> {
    b.unaligned_after.and_then(|t| b.triggered.checked_add(t))
}

fn snapshot_of(p: &Pending, unaligned: bool, switched_at_ms: Option<u64>) -> Snapshot {
    let now = Instant::now();
    let first = p.first.unwrap_or(now);
    Snapshot {
        barrier: p.barrier,
        unaligned,
        alignment: now.saturating_duration_since(first),
        alignment_bytes: p.bytes,
        start_delay: first.saturating_duration_since(p.barrier.triggered),
        switched_at_ms,
    }
}

#[cfg(test)]
mod tests;
