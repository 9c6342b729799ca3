//! The output side of a task: routes batches to the downstream subtasks of every outgoing
//! edge by the edge's partitioning. An edge carries the main output (the records a call
//! returns) or one named side output; control messages go on every edge.
//!
//! Routing never waits: a task queues a whole call's output, then waits for room
//! ([`Output::ready`]) before it takes its next input, taking barriers meanwhile.

use super::channel::{Closed, Sender};
use super::dead_letter::{DeadLetters, TakeOutError};
use super::message::{Barrier, Message};
use crate::connectors::Rejected;
use crate::key_groups::{key_group, subtask_for_key_group};
use crate::plan::Partitioning;
use crate::plan::{DEAD_LETTER_OUTPUT, OnError};
use crate::record::Batch;

/// The senders of one outgoing edge, by downstream subtask index (one sender for forward).
#[derive(Debug)]
pub struct EdgeOutput {
    partitioning: Partitioning,
    targets: Vec<Sender>,
    max_parallelism: u32,
    round_robin: usize,
    scratch: Vec<Batch>,
    /// `None`: the main output; else the index of the side output it carries.
    output: Option<u8>,
}

impl EdgeOutput {
    /// An edge output over `targets` (indexed by downstream subtask).
    pub fn new(partitioning: Partitioning, targets: Vec<Sender>, max_parallelism: u32, start: usize) -> Self {
        let n = targets.len();
        EdgeOutput {
            partitioning,
            targets,
            max_parallelism,
            round_robin: start % n.max(1),
            scratch: (0..n).map(|_| Batch::empty()).collect(),
            output: None,
        }
    }

    /// The edge carries side output `output` (an index into [`Output`]'s side-output names)
    /// instead of the main output.
    pub fn carrying(mut self, output: Option<u8>) -> Self {
        self.output = output;
        self
    }

    fn emit(&mut self, batch: Batch) -> Result<(), Closed> {
        match self.partitioning {
            Partitioning::Forward => self.targets[0].push(Message::Batch(batch)),
            Partitioning::Rebalance => {
                let i = self.round_robin;
                self.round_robin = (i + 1) % self.targets.len();
                self.targets[i].push(Message::Batch(batch))
            }
            Partitioning::Broadcast => {
                let (last, rest) = self.targets.split_last().expect("an edge has a target");
                for t in rest {
                    t.push(Message::Batch(batch.clone()))?;
                }
                last.push(Message::Batch(batch))
            }
            Partitioning::Hash => {
                let p = self.targets.len() as u32;
                if p == 1 {
                    return self.targets[0].push(Message::Batch(batch));
                }
                for r in batch.iter() {
                    let target = subtask_for_key_group(
                        key_group(r.key, self.max_parallelism),
                        p,
                        self.max_parallelism,
                    );
                    self.scratch[target as usize].push(r.key, r.value, r.timestamp);
                }
                for (i, t) in self.targets.iter().enumerate() {
                    if !self.scratch[i].is_empty() {
                        let part = std::mem::replace(&mut self.scratch[i], Batch::empty());
                        t.push(Message::Batch(part))?;
                    }
                }
                Ok(())
            }
        }
    }

    fn broadcast(&self, message: &Message) -> Result<(), Closed> {
        for t in &self.targets {
            t.push(message.clone())?;
        }
        Ok(())
    }
}

/// Every outgoing edge of a task.
#[derive(Debug, Default)]
pub struct Output {
    edges: Vec<EdgeOutput>,
    /// Names of the side outputs the edges carry, by index.
    side_outputs: Vec<String>,
    /// What the task does with the records it takes out (`on_error`); `None`: it fails.
    dead_letters: Option<DeadLetters>,
}

impl Output {
    /// An output over the given edges.
    pub fn new(edges: Vec<EdgeOutput>) -> Self {
        Output { edges, side_outputs: Vec::new(), dead_letters: None }
    }

    /// The task takes records out by `dead_letters`' policy.
    pub(crate) fn with_dead_letters(mut self, dead_letters: DeadLetters) -> Self {
        self.dead_letters = Some(dead_letters);
        self
    }

    /// The node's `on_error`.
    pub(crate) fn on_error(&self) -> OnError {
        self.dead_letters.as_ref().map_or(OnError::Fail, DeadLetters::policy)
    }

    /// Takes `rejected` out of the stream: counted, held to the job's per-minute limit, and
    /// routed to the dead letters by the node's policy (or always, when the guest sent them).
    pub(crate) fn take_out(&mut self, rejected: Vec<Rejected>) -> Result<(), TakeOutError> {
        // Nearly every batch of a source takes nothing out: no work then.
        if rejected.is_empty() {
            return Ok(());
        }
        let Some(d) = &mut self.dead_letters else { return Ok(()) };
        let batch = d.take_out(rejected)?;
        self.emit_side(DEAD_LETTER_OUTPUT, batch)?;
        Ok(())
    }

    /// Names the side outputs its edges carry (by the index [`EdgeOutput::carrying`] gives).
    pub fn with_side_outputs(mut self, names: Vec<String>) -> Self {
        self.side_outputs = names;
        self
    }

    /// The names of the side outputs its edges carry.
    pub fn side_outputs(&self) -> &[String] {
        &self.side_outputs
    }

    /// Routes a batch of the main output (an empty batch is dropped), without waiting for room.
    pub fn emit(&mut self, batch: Batch) -> Result<(), Closed> {
        self.route(None, batch)
    }

    /// Routes a batch of the side output `name` to the edges that carry it (none: dropped).
    pub fn emit_side(&mut self, name: &str, batch: Batch) -> Result<(), Closed> {
        match self.side_outputs.iter().position(|n| n == name) {
            Some(i) => self.route(Some(i as u8), batch),
            None => Ok(()),
        }
    }

    fn route(&mut self, output: Option<u8>, batch: Batch) -> Result<(), Closed> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut carrying = self.edges.iter_mut().filter(|e| e.output == output).peekable();
        while let Some(e) = carrying.next() {
            if carrying.peek().is_some() {
                e.emit(batch.clone())?;
            } else {
                return e.emit(batch);
            }
        }
        Ok(())
    }

    /// Sends a control message (watermark, idle, aligned barrier, end of stream) on every
    /// channel, behind what is queued.
    pub fn broadcast(&self, message: Message) -> Result<(), Closed> {
        for e in &self.edges {
            e.broadcast(&message)?;
        }
        Ok(())
    }

    /// Sends `barrier` on every channel: aligned (behind what is queued) or unaligned
    /// (ahead of the data queued after the last barrier). Returns how many messages it
    /// overtook in all.
    pub fn barrier(&self, barrier: Barrier, unaligned: bool) -> Result<usize, Closed> {
        if !unaligned {
            self.broadcast(Message::Barrier(barrier))?;
            return Ok(0);
        }
        let mut overtaken = 0;
        for e in &self.edges {
            for t in &e.targets {
                overtaken += t.push_overtaking(barrier)?;
            }
        }
        Ok(overtaken)
    }

    /// True when every channel has room for more data.
    pub fn has_room(&self) -> bool {
        self.edges.iter().all(|e| e.targets.iter().all(|t| t.has_room()))
    }

    /// Waits until every channel has room for more data (backpressure). Cancel-safe.
    pub async fn ready(&self) {
        for e in &self.edges {
            for t in &e.targets {
                t.ready().await;
            }
        }
    }
}
