//! Barrier alignment for a task with several input channels (invariant C10, docs/design.md
//! §6).
//!
//! When barrier `n` arrives on a channel the task stops reading that channel (its later
//! messages stay queued, in order) and keeps reading the others; when barrier `n` has
//! arrived on every channel that is still open, the task is aligned: it snapshots, forwards
//! one barrier per output and resumes every channel. Records processed between the first and
//! the last barrier are counted as the alignment's bytes.

use std::time::{Duration, Instant};

use super::input_gate::InputGate;
use super::message::Barrier;

/// An alignment in progress.
#[derive(Debug, Clone)]
struct Pending {
    barrier: Barrier,
    arrived: Vec<bool>,
    count: usize,
    started: Instant,
    bytes: u64,
}

/// A completed alignment: the task must snapshot now, then forward `barrier`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aligned {
    /// The barrier (of the first channel it arrived on).
    pub barrier: Barrier,
    /// Time from the first barrier to the last.
    pub duration: Duration,
    /// Bytes of records processed from the other channels meanwhile.
    pub bytes: u64,
    /// Time from the trigger to the first barrier's arrival.
    pub start_delay: Duration,
}

/// A barrier arrived out of protocol (a bug upstream, never user input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("barrier protocol violated: {0}")]
pub struct ProtocolError(pub String);

/// Aligns barriers across the channels of one input gate.
#[derive(Debug)]
pub struct Aligner {
    channels: usize,
    ended: Vec<bool>,
    pending: Option<Pending>,
    first_arrival: Option<Instant>,
    last_aligned: u64,
}

impl Aligner {
    /// An aligner for `channels` input channels.
    pub fn new(channels: usize) -> Self {
        Aligner {
            channels,
            ended: vec![false; channels],
            pending: None,
            first_arrival: None,
            last_aligned: 0,
        }
    }

    /// True while an alignment is in progress.
    pub fn is_aligning(&self) -> bool {
        self.pending.is_some()
    }

    /// The id of the last completed alignment (0 before the first).
    pub fn last_aligned(&self) -> u64 {
        self.last_aligned
    }

    /// Counts `bytes` of records processed while aligning.
    pub fn processed(&mut self, bytes: usize) {
        if let Some(p) = &mut self.pending {
            p.bytes += bytes as u64;
        }
    }

    /// Barrier `barrier` arrived on `channel`. Blocks the channel and returns `Some` when
    /// the task is aligned (every channel then unblocked).
    pub fn on_barrier(
        &mut self,
        channel: usize,
        barrier: Barrier,
        gate: &mut InputGate,
    ) -> Result<Option<Aligned>, ProtocolError> {
        if barrier.id <= self.last_aligned {
            return Err(ProtocolError(format!(
                "barrier {} on channel {channel} after barrier {} was aligned",
                barrier.id, self.last_aligned
            )));
        }
        let now = Instant::now();
        let pending = self.pending.get_or_insert_with(|| Pending {
            barrier,
            arrived: vec![false; self.channels],
            count: 0,
            started: now,
            bytes: 0,
        });
        if pending.barrier.id != barrier.id {
            return Err(ProtocolError(format!(
                "barrier {} on channel {channel} while aligning barrier {}",
                barrier.id, pending.barrier.id
            )));
        }
        if pending.arrived[channel] {
            return Err(ProtocolError(format!("barrier {} twice on channel {channel}", barrier.id)));
        }
        pending.arrived[channel] = true;
        pending.count += 1;
        self.first_arrival.get_or_insert(now);
        gate.set_blocked(channel, true);
        Ok(self.try_complete(gate))
    }

    /// Channel `channel` ended (end of stream): it no longer holds an alignment back.
    pub fn on_end(&mut self, channel: usize, gate: &mut InputGate) -> Option<Aligned> {
        self.ended[channel] = true;
        self.try_complete(gate)
    }

    fn try_complete(&mut self, gate: &mut InputGate) -> Option<Aligned> {
        let p = self.pending.as_ref()?;
        let open_missing = (0..self.channels).any(|c| !p.arrived[c] && !self.ended[c]);
        if open_missing {
            return None;
        }
        let p = self.pending.take().expect("pending alignment");
        for c in 0..self.channels {
            if p.arrived[c] {
                gate.set_blocked(c, false);
            }
        }
        self.last_aligned = p.barrier.id;
        let first = self.first_arrival.take().unwrap_or(p.started);
        Some(Aligned {
            barrier: p.barrier,
            duration: p.started.elapsed(),
            bytes: p.bytes,
            start_delay: first.saturating_duration_since(p.barrier.triggered),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use futures::FutureExt as _;
    use proptest::prelude::*;

    use super::*;
    use crate::record::Batch;
    use crate::runtime::channel::{Sender, channel};
    use crate::runtime::message::Message;

    fn batch_of(ids: &[u64]) -> Batch {
        let mut b = Batch::empty();
        for id in ids {
            b.push(&[], &id.to_le_bytes(), 0);
        }
        b
    }

    fn ids_of(b: &Batch) -> Vec<u64> {
        b.iter().map(|r| u64::from_le_bytes(r.value.try_into().unwrap())).collect()
    }

    /// One input: `barriers + 1` segments of batches (each a list of records; the values do
    /// not matter, every record gets a unique id), a barrier between consecutive segments.
    fn input_strategy(barriers: usize) -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
        let segment = prop::collection::vec(prop::collection::vec(any::<u8>(), 0..4), 0..5);
        prop::collection::vec(segment, barriers + 1)
    }

    fn inputs_strategy() -> impl Strategy<Value = (usize, Vec<Vec<Vec<Vec<u8>>>>)> {
        (1usize..4)
            .prop_flat_map(|barriers| (Just(barriers), prop::collection::vec(input_strategy(barriers), 1..5)))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Random interleavings of batches, idle notices and 1–3 consecutive barriers on 1–4 inputs
        /// (random channel capacities, random order of sends and reads): the state at the
        /// moment of snapshot `k` holds every record sent before barrier `k` on any input
        /// and none sent after it; each barrier is aligned exactly once, in order; nothing is
        /// lost afterwards.
        #[test]
        fn alignment_snapshots_exactly_the_pre_barrier_records(
            (barriers, inputs) in inputs_strategy(),
            capacity in 1usize..4,
            schedule in prop::collection::vec(0usize..6, 0..400),
        ) {
            let n = inputs.len();
            let mut queues: Vec<Vec<Message>> = Vec::new();
            // before[k]: the records sent before barrier k+1 on any input.
            let mut before: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); barriers];
            let mut all: BTreeSet<u64> = BTreeSet::new();
            let now = Instant::now();
            let mut next_id = 0u64;
            for segments in &inputs {
                let mut q = Vec::new();
                for (k, batches) in segments.iter().enumerate() {
                    for b in batches {
                        let ids: Vec<u64> = b.iter().map(|_| { next_id += 1; next_id }).collect();
                        all.extend(&ids);
                        for set in &mut before[k.min(barriers)..] {
                            set.extend(&ids);
                        }
                        // An empty batch never reaches a channel (the output drops it);
                        // an idle notice goes in its place: alignment ignores idleness.
                        q.push(if ids.is_empty() { Message::Idle } else { Message::Batch(batch_of(&ids)) });
                    }
                    if k < barriers {
                        q.push(Message::Barrier(Barrier { id: k as u64 + 1, triggered: now, is_final: false }));
                    }
                }
                q.push(Message::EndOfStream);
                q.reverse(); // pop from the end
                queues.push(q);
            }
            let mut senders: Vec<Sender> = Vec::new();
            let mut receivers = Vec::new();
            for i in 0..n {
                let (tx, rx) = channel(capacity, ("up".into(), i as u32), ("down".into(), 0));
                senders.push(tx);
                receivers.push((0u32, rx));
            }
            let mut gate = InputGate::new(receivers);
            let mut aligner = Aligner::new(n);
            let mut processed: BTreeSet<u64> = BTreeSet::new();
            let mut snapshots: Vec<(u64, BTreeSet<u64>)> = Vec::new();
            let mut ended = 0;
            let consume = |gate: &mut InputGate, aligner: &mut Aligner, processed: &mut BTreeSet<u64>,
                           snapshots: &mut Vec<(u64, BTreeSet<u64>)>, ended: &mut usize| -> bool {
                let Some(Some(next)) = gate.next().now_or_never() else { return false };
                let (ch, msg) = next.expect("no upstream failure");
                let aligned = match msg {
                    Message::Batch(b) => {
                        aligner.processed(b.data.len());
                        for id in ids_of(&b) {
                            assert!(processed.insert(id), "record {id} processed twice");
                        }
                        None
                    }
                    Message::Barrier(b) => aligner.on_barrier(ch, b, gate).expect("protocol"),
                    Message::EndOfStream => { *ended += 1; aligner.on_end(ch, gate) }
                    Message::Watermark(_) | Message::Idle => None,
                };
                if let Some(a) = aligned {
                    snapshots.push((a.barrier.id, processed.clone()));
                }
                true
            };
            // The random schedule: 0..n sends on that input, anything else reads.
            for step in schedule {
                if step < n {
                    if let Some(m) = queues[step].last().cloned()
                        && senders[step].send(m).now_or_never().is_some()
                    {
                        queues[step].pop();
                    }
                } else {
                    consume(&mut gate, &mut aligner, &mut processed, &mut snapshots, &mut ended);
                }
            }
            // Drain: send what is left, reading whenever a channel is full.
            loop {
                let mut progress = false;
                for i in 0..n {
                    while let Some(m) = queues[i].last().cloned() {
                        if senders[i].send(m).now_or_never().is_some() {
                            queues[i].pop();
                            progress = true;
                        } else {
                            break;
                        }
                    }
                }
                progress |= consume(&mut gate, &mut aligner, &mut processed, &mut snapshots, &mut ended);
                if !progress {
                    break;
                }
            }
            prop_assert_eq!(ended, n, "every input ended");
            let ids: Vec<u64> = snapshots.iter().map(|(id, _)| *id).collect();
            prop_assert_eq!(ids, (1..=barriers as u64).collect::<Vec<_>>(), "each barrier aligned once, in order");
            for (k, (_, state)) in snapshots.iter().enumerate() {
                prop_assert_eq!(state, &before[k], "snapshot {} holds exactly the records before its barrier", k + 1);
            }
            prop_assert_eq!(processed, all);
            prop_assert!(!aligner.is_aligning());
        }
    }

    #[test]
    fn a_second_barrier_during_alignment_is_a_protocol_error() {
        let (tx0, rx0) = channel(4, ("a".into(), 0), ("b".into(), 0));
        let (_tx1, rx1) = channel(4, ("a".into(), 1), ("b".into(), 0));
        drop(tx0);
        let mut gate = InputGate::new(vec![(0, rx0), (0, rx1)]);
        let mut aligner = Aligner::new(2);
        let b = |id| Barrier { id, triggered: Instant::now(), is_final: false };
        assert_eq!(aligner.on_barrier(0, b(1), &mut gate).unwrap(), None);
        assert!(aligner.on_barrier(0, b(1), &mut gate).is_err(), "twice on one channel");
        assert!(aligner.on_barrier(1, b(2), &mut gate).is_err(), "another id while aligning");
        let done = aligner.on_barrier(1, b(1), &mut gate).unwrap().expect("aligned");
        assert_eq!(done.barrier.id, 1);
        assert!(aligner.on_barrier(0, b(1), &mut gate).is_err(), "an old barrier");
    }
}
