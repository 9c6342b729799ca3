//! The barrier protocol on real channels, a real input gate and a real output: random
//! schedules of batches, watermarks and barriers (aligned, overtaking, or switching from
//! aligned to unaligned) on 1–4 inputs and 1–3 outputs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use proptest::prelude::*;

use super::*;
use crate::plan::Partitioning;
use crate::record::Batch;
use crate::runtime::channel::{Received, Receiver, Sender, Wanted, channel};
use crate::runtime::output::{EdgeOutput, Output};

/// A message as the test compares it: a batch by its record ids, a watermark by value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Batch(Vec<u64>),
    Watermark(i64),
}

fn item(m: &Message) -> Option<Item> {
    match m {
        Message::Batch(b) => {
            Some(Item::Batch(b.iter().map(|r| u64::from_le_bytes(r.value.try_into().unwrap())).collect()))
        }
        Message::Watermark(w) => Some(Item::Watermark(*w)),
        _ => None,
    }
}

fn batch_of(ids: &[u64]) -> Batch {
    let mut b = Batch::empty();
    for id in ids {
        b.push(&[], &id.to_le_bytes(), 0);
    }
    b
}

/// How checkpoint `k` passes the channels.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Aligned only (a savepoint).
    Aligned,
    /// May be unaligned at once: each upstream sends it overtaking or not (a source with a
    /// timeout sends it aligned), the receiver switches when it arrives.
    Unaligned,
    /// Announced to the receiver, which may switch before any barrier arrived.
    Announced,
}

fn mode_strategy() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Aligned), Just(Mode::Unaligned), Just(Mode::Announced)]
}

/// One upstream: `barriers + 1` segments of messages (a batch of 1–3 records or a
/// watermark), a barrier between consecutive segments; per barrier, sent overtaking?
type Script = (Vec<Vec<(bool, u8)>>, Vec<bool>);

fn scenario() -> impl Strategy<Value = (Vec<Mode>, Vec<Script>, usize, usize)> {
    (1usize..4, 1usize..5, 1usize..4, 1usize..4).prop_flat_map(|(barriers, inputs, outputs, capacity)| {
        let segment = prop::collection::vec((any::<bool>(), 1u8..4), 0..6);
        let script =
            (prop::collection::vec(segment, barriers + 1), prop::collection::vec(any::<bool>(), barriers));
        (
            prop::collection::vec(mode_strategy(), barriers),
            prop::collection::vec(script, inputs),
            Just(outputs),
            Just(capacity),
        )
    })
}

/// What the upstream of one input sends, in order.
enum Send {
    Data(Message),
    Barrier { k: u64, overtaking: bool },
    End,
}

struct Downstream {
    rx: Receiver,
    /// Data received, in order.
    data: Vec<Item>,
    /// Per barrier id: (data received before it, the data it overtook).
    at_barrier: BTreeMap<u64, (usize, Vec<Item>)>,
}

impl Downstream {
    fn poll(&mut self) -> bool {
        let waker = futures::task::noop_waker();
        match self.rx.poll_recv(&mut std::task::Context::from_waker(&waker), Wanted::Any) {
            std::task::Poll::Ready(Received::Message(Message::Barrier(b), overtaken)) => {
                let over = overtaken.iter().filter_map(item).collect();
                self.at_barrier.insert(b.id, (self.data.len(), over));
                true
            }
            std::task::Poll::Ready(Received::Message(m, _)) => {
                self.data.extend(item(&m));
                true
            }
            _ => false,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// For every checkpoint finished at the task: per input, what it processed before its
    /// snapshot, then the channel state, then what came after the barrier is exactly the
    /// input, in order (so a restore replays every message once); per output, what arrived
    /// before the forwarded barrier plus what the barrier overtook is exactly what the task
    /// emitted before its snapshot.
    #[test]
    fn every_checkpoint_holds_each_message_once_in_channel_order(
        (modes, scripts, outputs, capacity) in scenario(),
        schedule in prop::collection::vec(0usize..12, 0..600),
    ) {
        let n = scripts.len();
        let now = Instant::now();
        let barrier_of = |k: u64| {
            let after = match modes[k as usize - 1] {
                Mode::Aligned => None,
                Mode::Unaligned | Mode::Announced => Some(Duration::ZERO),
            };
            Barrier::new(k, now, false, after)
        };
        // The inputs' scripts, with every record and watermark unique.
        let mut next_id = 0u64;
        let mut sends: Vec<Vec<Send>> = Vec::new();
        let mut inputs_all: Vec<Vec<Item>> = Vec::new();
        // Per input, per barrier k: how many items precede it.
        let mut before_barrier: Vec<Vec<usize>> = Vec::new();
        for (segments, overtaking) in &scripts {
            let (mut q, mut all, mut marks) = (Vec::new(), Vec::new(), Vec::new());
            for (k, segment) in segments.iter().enumerate() {
                for &(is_batch, size) in segment {
                    next_id += 1;
                    let m = if is_batch {
                        let ids: Vec<u64> = (0..u64::from(size)).map(|j| next_id * 8 + j).collect();
                        Message::Batch(batch_of(&ids))
                    } else {
                        Message::Watermark(next_id as i64)
                    };
                    all.push(item(&m).unwrap());
                    q.push(Send::Data(m));
                }
                if k < overtaking.len() {
                    marks.push(all.len());
                    let overtake = overtaking[k] && !matches!(modes[k], Mode::Aligned);
                    q.push(Send::Barrier { k: k as u64 + 1, overtaking: overtake });
                }
            }
            q.push(Send::End);
            q.reverse();
            sends.push(q);
            inputs_all.push(all);
            before_barrier.push(marks);
        }
        let mut senders: Vec<Sender> = Vec::new();
        let mut receivers = Vec::new();
        for i in 0..n {
            let (tx, rx) = channel(capacity, ("up".into(), i as u32), ("task".into(), 0));
            senders.push(tx);
            receivers.push((0u32, rx));
        }
        let mut gate = InputGate::new(receivers);
        let mut targets = Vec::new();
        let mut downstream = Vec::new();
        for o in 0..outputs {
            let (tx, rx) = channel(capacity, ("task".into(), 0), ("down".into(), o as u32));
            targets.push(tx);
            downstream.push(Downstream { rx, data: Vec::new(), at_barrier: BTreeMap::new() });
        }
        let mut output = Output::new(vec![EdgeOutput::new(Partitioning::Rebalance, targets, 128, 0)]);
        let mut handler = BarrierHandler::new(n);
        // Per input, the items the task processed, in order.
        let mut processed: Vec<Vec<Item>> = vec![Vec::new(); n];
        // Items the task emitted, in order, and the number emitted at each snapshot.
        let mut emitted_count = 0usize;
        let mut snapshots: BTreeMap<u64, (Vec<usize>, usize)> = BTreeMap::new();
        let mut finished: BTreeMap<u64, Vec<Vec<Item>>> = BTreeMap::new();
        let mut ended = 0;
        let mut announced = 0u64;

        let apply = |steps: Steps, processed: &Vec<Vec<Item>>, output: &mut Output, emitted: usize,
                         snapshots: &mut BTreeMap<u64, (Vec<usize>, usize)>,
                         finished: &mut BTreeMap<u64, Vec<Vec<Item>>>| {
            assert!(steps.abandoned.is_none(), "nothing is abandoned with one checkpoint at a time");
            if let Some(s) = steps.snapshot {
                let id = s.barrier.id;
                assert!(snapshots.insert(id, (processed.iter().map(Vec::len).collect(), emitted)).is_none());
                output.barrier(s.barrier, s.unaligned).expect("downstream open");
            }
            if let Some(f) = steps.finished {
                assert!(f.decline.is_none());
                let mut per = vec![Vec::new(); n];
                for (c, ms) in f.channels {
                    per[c] = ms.iter().filter_map(item).collect();
                }
                finished.insert(f.id, per);
            }
        };

        let step = |choice: usize, handler: &mut BarrierHandler, gate: &mut InputGate, output: &mut Output,
                        sends: &mut Vec<Vec<Send>>, processed: &mut Vec<Vec<Item>>, emitted_count: &mut usize,
                        snapshots: &mut BTreeMap<u64, (Vec<usize>, usize)>,
                        finished: &mut BTreeMap<u64, Vec<Vec<Item>>>, ended: &mut usize,
                        announced: &mut u64, downstream: &mut Vec<Downstream>| -> bool {
            if choice < n {
                // Input `choice` sends its next message; a barrier only once the previous
                // checkpoint finished here (one checkpoint at a time).
                let i = choice;
                let Some(next) = sends[i].last() else { return false };
                let ok = match next {
                    Send::Data(m) => {
                        senders[i].has_room() && senders[i].push(m.clone()).is_ok()
                    }
                    Send::Barrier { k, overtaking } => {
                        if *k > 1 && !finished.contains_key(&(k - 1)) {
                            false
                        } else if *overtaking {
                            senders[i].push_overtaking(barrier_of(*k)).is_ok()
                        } else {
                            senders[i].push(Message::Barrier(barrier_of(*k))).is_ok()
                        }
                    }
                    Send::End => senders[i].push(Message::EndOfStream).is_ok(),
                };
                if ok {
                    sends[i].pop();
                }
                return ok;
            }
            if choice < n + outputs {
                return downstream[choice - n].poll();
            }
            if choice == n + outputs {
                // The coordinator announces the next checkpoint that may switch.
                let k = (finished.len() + 1) as u64;
                if k as usize <= modes.len() && matches!(modes[k as usize - 1], Mode::Announced) && *announced < k {
                    *announced = k;
                    handler.on_started(k, now, Duration::ZERO, false);
                    let steps = handler.on_timeout(gate);
                    apply(steps, processed, output, *emitted_count, snapshots, finished);
                    return true;
                }
                return false;
            }
            // The task takes its next input (barriers only while its output is full).
            let room = output.has_room();
            let Some(Some(next)) = gate.next(!room).now_or_never() else { return false };
            let (ch, m) = next.expect("no upstream failure");
            let steps = match m {
                Message::Barrier(b) => {
                    let overtaken = gate.take_overtaken();
                    handler.on_barrier(ch, b, overtaken, gate).expect("protocol")
                }
                Message::EndOfStream => {
                    *ended += 1;
                    handler.on_end(ch, gate)
                }
                m => {
                    handler.taken(ch, &m, gate);
                    processed[ch].push(item(&m).unwrap());
                    if let Message::Batch(b) = m {
                        output.emit(b).expect("downstream open");
                        *emitted_count += 1;
                    }
                    Steps::default()
                }
            };
            apply(steps, processed, output, *emitted_count, snapshots, finished);
            true
        };

        for choice in schedule {
            step(choice, &mut handler, &mut gate, &mut output, &mut sends, &mut processed, &mut emitted_count,
                 &mut snapshots, &mut finished, &mut ended, &mut announced, &mut downstream);
        }
        // Drain: every party in turn until nothing moves.
        loop {
            let mut progress = false;
            for choice in 0..n + outputs + 2 {
                while step(choice, &mut handler, &mut gate, &mut output, &mut sends, &mut processed,
                           &mut emitted_count, &mut snapshots, &mut finished, &mut ended, &mut announced,
                           &mut downstream) {
                    progress = true;
                }
            }
            if !progress {
                break;
            }
        }
        prop_assert_eq!(ended, n, "every input ended");
        prop_assert_eq!(finished.len(), modes.len(), "every checkpoint finished: {:?}", finished.keys());
        prop_assert_eq!(&processed, &inputs_all, "everything processed once, in order");
        for (k, (counts, emitted)) in &snapshots {
            let state = &finished[k];
            for c in 0..n {
                let mut restored: Vec<Item> = inputs_all[c][..counts[c]].to_vec();
                restored.extend(state[c].iter().cloned());
                let mark = before_barrier[c][*k as usize - 1];
                restored.extend(inputs_all[c][mark..].iter().cloned());
                prop_assert_eq!(&restored, &inputs_all[c],
                    "checkpoint {}, input {}: processed before + channel state + after the barrier", k, c);
            }
            // Outputs: what each downstream got before the barrier plus what it overtook
            // is what the task emitted before the snapshot (batches go round robin).
            let mut before = 0;
            for d in &downstream {
                let (at, over) = &d.at_barrier[k];
                let mut logical: Vec<Item> = d.data[..*at].to_vec();
                logical.extend(over.iter().cloned());
                prop_assert!(d.data.starts_with(&logical), "checkpoint {k}: the overtaken data is queued next");
                before += logical.len();
            }
            prop_assert_eq!(before, *emitted, "checkpoint {}: output before the barrier", k);
            if matches!(modes[*k as usize - 1], Mode::Aligned) {
                prop_assert!(state.iter().all(Vec::is_empty), "an aligned checkpoint has no channel state");
            }
        }
    }
}

#[test]
fn a_later_barrier_or_an_abort_abandons_the_pending_checkpoint() {
    let (tx0, rx0) = channel(4, ("a".into(), 0), ("b".into(), 0));
    let (tx1, rx1) = channel(4, ("a".into(), 1), ("b".into(), 0));
    let mut gate = InputGate::new(vec![(0, rx0), (0, rx1)]);
    let mut h = BarrierHandler::new(2);
    let now = Instant::now();
    tx0.push_overtaking(Barrier::new(1, now, false, Some(Duration::ZERO))).unwrap();
    let Some(Some(Ok((0, Message::Barrier(b))))) = gate.next(false).now_or_never() else { panic!() };
    let steps = h.on_barrier(0, b, gate.take_overtaken(), &mut gate).unwrap();
    assert!(steps.snapshot.is_some_and(|s| s.unaligned) && steps.finished.is_none());
    // Checkpoint 2 arrives before 1 on channel 1: 1 is given up, declined.
    tx0.push_overtaking(Barrier::new(2, now, false, Some(Duration::ZERO))).unwrap();
    let Some(Some(Ok((0, Message::Barrier(b))))) = gate.next(false).now_or_never() else { panic!() };
    let steps = h.on_barrier(0, b, gate.take_overtaken(), &mut gate).unwrap();
    assert_eq!(steps.abandoned.as_ref().map(|f| (f.id, f.decline.is_some())), Some((1, true)));
    assert_eq!(steps.snapshot.map(|s| s.barrier.id), Some(2));
    // The late barrier 1 is ignored; an abort of 2 gives it up too.
    assert!(h.on_barrier(1, Barrier::new(1, now, false, None), Vec::new(), &mut gate).unwrap().is_empty());
    let steps = h.on_aborted(2, &mut gate);
    assert_eq!(steps.abandoned.map(|f| f.id), Some(2));
    assert!(!h.is_pending());
    drop((tx0, tx1));
}

#[test]
fn a_second_barrier_on_a_channel_is_a_protocol_error() {
    let (_tx0, rx0) = channel(4, ("a".into(), 0), ("b".into(), 0));
    let (_tx1, rx1) = channel(4, ("a".into(), 1), ("b".into(), 0));
    let mut gate = InputGate::new(vec![(0, rx0), (0, rx1)]);
    let mut h = BarrierHandler::new(2);
    let b = |id| Barrier::new(id, Instant::now(), false, None);
    assert!(h.on_barrier(0, b(1), Vec::new(), &mut gate).unwrap().is_empty());
    assert!(h.on_barrier(0, b(1), Vec::new(), &mut gate).is_err(), "twice on one channel");
    let steps = h.on_barrier(1, b(1), Vec::new(), &mut gate).unwrap();
    assert!(steps.snapshot.is_some_and(|s| !s.unaligned));
    assert!(steps.finished.is_some_and(|f| f.channels.is_empty()));
    assert!(h.on_barrier(0, b(1), Vec::new(), &mut gate).is_err(), "a finished checkpoint's barrier again");
}

#[test]
fn an_enormous_timeout_never_switches() {
    let (_tx0, rx0) = channel(4, ("a".into(), 0), ("b".into(), 0));
    let (_tx1, rx1) = channel(4, ("a".into(), 1), ("b".into(), 0));
    let mut gate = InputGate::new(vec![(0, rx0), (0, rx1)]);
    let mut h = BarrierHandler::new(2);
    let now = Instant::now();
    let forever = Duration::from_millis(u64::MAX);
    // Either beyond what an `Instant` holds (never) or centuries away: no panic, no switch.
    let far = |d: Option<Instant>| d.is_none_or(|at| at > now + Duration::from_secs(100 * 365 * 86_400));
    h.on_started(1, now, forever, false);
    assert!(far(h.deadline()));
    assert!(h.on_timeout(&mut gate).is_empty());
    let steps = h.on_barrier(0, Barrier::new(1, now, false, Some(forever)), Vec::new(), &mut gate).unwrap();
    assert!(steps.snapshot.is_none(), "aligning");
    assert!(far(h.deadline()));
    let steps = h.on_barrier(1, Barrier::new(1, now, false, Some(forever)), Vec::new(), &mut gate).unwrap();
    assert!(steps.snapshot.is_some_and(|s| !s.unaligned));
}

#[test]
fn a_capture_past_its_byte_limit_is_given_up() {
    let (tx0, rx0) = channel(4, ("a".into(), 0), ("b".into(), 0));
    let (tx1, rx1) = channel(64, ("a".into(), 1), ("b".into(), 0));
    let mut gate = InputGate::new(vec![(0, rx0), (0, rx1)]);
    // Room for two batches of 10 records (10 × 8 bytes + 10 × 16 each), not three.
    let mut h = BarrierHandler::new(2).with_capture_limit(500);
    let now = Instant::now();
    tx0.push_overtaking(Barrier::new(1, now, false, Some(Duration::ZERO))).unwrap();
    let Some(Some(Ok((0, Message::Barrier(b))))) = gate.next(false).now_or_never() else { panic!() };
    let steps = h.on_barrier(0, b, gate.take_overtaken(), &mut gate).unwrap();
    assert!(steps.snapshot.is_some_and(|s| s.unaligned));
    // Channel 1's barrier is still to come: what it delivers is logged, up to the limit.
    let batch = Message::Batch(batch_of(&(0..10).collect::<Vec<_>>()));
    for i in 0..2 {
        assert!(h.taken(1, &batch, &mut gate).is_empty(), "batch {i} is within the limit");
    }
    let steps = h.taken(1, &batch, &mut gate);
    let given_up = steps.abandoned.expect("the third batch passes the limit");
    assert_eq!(given_up.id, 1);
    let reason = given_up.decline.unwrap();
    assert!(reason.contains("channel state passed 500 bytes"), "{reason}");
    assert!(!h.is_pending());
    // Its barrier, when it comes, is ignored; the next checkpoint starts afresh.
    assert!(h.on_barrier(1, Barrier::new(1, now, false, None), Vec::new(), &mut gate).unwrap().is_empty());
    drop((tx0, tx1));
}
