//! Bounded channels between subtasks. A full channel makes the sender wait: that is
//! backpressure, and it is the only buffering between tasks.
//!
//! A channel is a queue behind a mutex rather than a plain FIFO because unaligned
//! checkpoints (docs/design.md §6) need three things a FIFO cannot do:
//! - a barrier that **overtakes** the data queued before it ([`Sender::push_overtaking`]):
//!   it is placed after the last barrier still queued (barriers never pass each other) and
//!   records how many messages it passed; the receiver takes a copy of those messages, the
//!   channel's in-flight data, in the same step as the barrier;
//! - a receiver that, when an aligned checkpoint switches to unaligned, takes an aligned
//!   barrier out of the middle of its queue with a copy of what is before it
//!   ([`Receiver::extract_barrier`]);
//! - barriers and end-of-stream that never wait for room: capacity counts batches (and
//!   their bytes: a local channel has room while both are below its capacities), and a
//!   task pushes a whole call's output and then waits for room
//!   ([`Sender::ready`]) before it takes its next input — so a task that waits for room
//!   can still take a barrier (Flink's output buffer overdraft, for the same reason).
//!
//! A channel to a subtask on another worker ([`remote_sender`]) keeps the queue at the
//! receiving end only: the sender holds **credits** (the capacity less the batches sent and
//! not yet taken by the receiver, which hands them back as it takes them: [`CreditSink`])
//! and counts the bytes of the batches outstanding, so `has_room` and `ready` mean what they
//! mean locally (batches and bytes), with the network's delay. Its
//! messages go out in order ([`Outbound`]); an unaligned barrier goes out at once and
//! overtakes, at the receiving end, what is queued there (what the receiver has not taken
//! is all in that queue or on the wire before it, and the wire keeps order).

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;

use super::message::{Barrier, Message};

/// Statistics of one channel, readable while the job runs.
#[derive(Debug)]
pub struct ChannelStats {
    /// Upstream node id and subtask.
    pub from: (String, u32),
    /// Downstream node id and subtask.
    pub to: (String, u32),
    /// Capacity in batches.
    pub capacity: usize,
    /// Capacity in bytes of queued batches (`usize::MAX`: none).
    pub capacity_bytes: usize,
    /// Most batches ever queued at once.
    pub max_depth: AtomicUsize,
    /// Most bytes of batches ever queued at once (local channels and the receiving end of
    /// remote ones).
    pub max_bytes: AtomicUsize,
    /// Batches sent.
    pub batches: AtomicU64,
    /// Nanoseconds the sender waited for room: the upstream subtask's backpressured time.
    pub blocked_ns: AtomicU64,
}

#[derive(Debug, Default)]
struct Queue {
    items: VecDeque<Message>,
    /// Batches queued: what the capacity bounds. (Watermarks and idle notices follow
    /// batches or a task's own progress, which waits for room, so they stay few.)
    data: usize,
    /// Bytes of the batches queued ([`crate::record::Batch::byte_len`]).
    bytes: usize,
    /// Index just past the last barrier in `items` (0 when none): where an overtaking
    /// barrier goes.
    barrier_end: usize,
    rx_waker: Option<Waker>,
    senders: usize,
    receiver_gone: bool,
}

impl Queue {
    fn wake(&mut self) {
        if let Some(w) = self.rx_waker.take() {
            w.wake();
        }
    }
}

#[derive(Debug)]
struct Shared {
    queue: Mutex<Queue>,
    /// Notified when a data message leaves a full queue (or the receiver goes).
    room: Notify,
    capacity: usize,
    capacity_bytes: usize,
    stats: Arc<ChannelStats>,
    /// The remote sender's credits go back through this (the receiving end of a remote
    /// channel).
    credit: Option<Arc<dyn CreditSink>>,
}

/// Where the receiving end of a remote channel hands back credits.
pub trait CreditSink: Send + Sync + std::fmt::Debug {
    /// The receiver took `batches` batches of `bytes` bytes: the sender may send as many more.
    fn taken(&self, batches: u32, bytes: usize);
    /// The receiver is gone: the sender's pushes fail from now on.
    fn gone(&self);
}

/// Where a remote channel's messages go: the data plane's connection to the receiving
/// worker, in order.
pub trait Outbound: Send + Sync + std::fmt::Debug {
    /// Sends `message` after everything sent before; fails once the connection is gone.
    fn send(&self, message: &Message) -> Result<(), Closed>;
    /// Every clone of the sender is gone: the receiving end's sender goes too.
    fn close(&self);
}

/// A remote sender's credits, granted by the data plane as the receiver hands them back.
/// They count batches; the bytes of the batches sent and not yet taken are counted here
/// too (the receiver takes batches in the order they were sent, so a grant of `n` gives
/// back the first `n` outstanding sizes), and bound the channel like a local one's bytes.
#[derive(Debug)]
pub struct Credits {
    /// The capacity less the batches sent and not yet taken (below zero after a push
    /// past the capacity, as a local queue holds more than its capacity then).
    available: AtomicI64,
    capacity: usize,
    /// Capacity in bytes of the batches outstanding.
    capacity_bytes: usize,
    /// Sizes of the batches sent and not yet taken, oldest first, and their sum.
    outstanding: Mutex<(VecDeque<usize>, usize)>,
    closed: AtomicBool,
    room: Notify,
}

impl Credits {
    /// `batches` more may be sent: the receiver took the oldest `batches` outstanding.
    pub fn grant(&self, batches: u32) {
        {
            let mut outstanding = self.outstanding.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for _ in 0..batches {
                let Some(size) = outstanding.0.pop_front() else { break };
                outstanding.1 -= size;
            }
        }
        self.available.fetch_add(i64::from(batches), Ordering::AcqRel);
        self.room.notify_waiters();
    }

    /// Room for more: a credit left and the bytes outstanding below the capacity.
    fn has_room(&self) -> bool {
        let bytes = self.outstanding.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1;
        self.available.load(Ordering::Acquire) > 0 && bytes < self.capacity_bytes
    }

    /// A batch of `bytes` was sent: it holds a credit and its bytes until taken. Returns the
    /// batches and bytes outstanding.
    fn spend(&self, bytes: usize) -> (usize, usize) {
        let queued = {
            let mut outstanding = self.outstanding.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            outstanding.0.push_back(bytes);
            outstanding.1 += bytes;
            outstanding.1
        };
        let left = self.available.fetch_sub(1, Ordering::AcqRel) - 1;
        ((self.capacity as i64 - left).max(0) as usize, queued)
    }

    /// The receiver or the connection is gone: pushes fail, waiters wake.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.room.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// The sending end of a remote channel.
#[derive(Debug)]
struct Remote {
    outbound: Box<dyn Outbound>,
    credits: Arc<Credits>,
    stats: Arc<ChannelStats>,
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.outbound.close();
    }
}

impl Shared {
    /// Below both capacities.
    fn has_room(&self, q: &Queue) -> bool {
        q.data < self.capacity && q.bytes < self.capacity_bytes
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock cannot leave the queue inconsistent (every
        // update is a single step), so a poisoned lock is still usable.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending half: of a local queue, or of a remote channel.
#[derive(Debug)]
pub struct Sender {
    end: End,
}

#[derive(Debug)]
enum End {
    Local(Arc<Shared>),
    Remote(Arc<Remote>),
}

/// The receiving half.
#[derive(Debug)]
pub struct Receiver {
    shared: Arc<Shared>,
}

/// The receiver's task is gone (the job is failing or was cancelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the downstream task is gone")]
pub struct Closed;

fn new_stats(capacity: (usize, usize), from: (String, u32), to: (String, u32)) -> Arc<ChannelStats> {
    Arc::new(ChannelStats {
        from,
        to,
        capacity: capacity.0,
        capacity_bytes: capacity.1,
        max_depth: AtomicUsize::new(0),
        max_bytes: AtomicUsize::new(0),
        batches: AtomicU64::new(0),
        blocked_ns: AtomicU64::new(0),
    })
}

/// A channel of `capacity` batches (of any size).
pub fn channel(capacity: usize, from: (String, u32), to: (String, u32)) -> (Sender, Receiver) {
    bounded_channel((capacity, usize::MAX), from, to)
}

/// A channel of `capacity.0` batches and `capacity.1` bytes of them: it has room while
/// both are below (a task queues a whole call's output past them, then waits).
pub fn bounded_channel(
    capacity: (usize, usize),
    from: (String, u32),
    to: (String, u32),
) -> (Sender, Receiver) {
    let capacity = (capacity.0.max(1), capacity.1.max(1));
    local_channel(capacity, new_stats(capacity, from, to), None)
}

/// The receiving end of a remote channel of `capacity` batches: a local queue whose
/// receiver hands credits back to `credit` (the data plane pushes what arrives into the
/// sender). The remote sender holds the bytes outstanding to its capacity in bytes; the
/// credit sink must hand back credits before the bytes taken reach half of it.
pub fn credited_channel(
    capacity: usize,
    from: (String, u32),
    to: (String, u32),
    credit: Arc<dyn CreditSink>,
) -> (Sender, Receiver) {
    // The remote sender bounds the bytes outstanding (its credits count them): what arrives
    // here is queued whatever its size.
    let capacity = (capacity.max(1), usize::MAX);
    local_channel(capacity, new_stats(capacity, from, to), Some(credit))
}

fn local_channel(
    capacity: (usize, usize),
    stats: Arc<ChannelStats>,
    credit: Option<Arc<dyn CreditSink>>,
) -> (Sender, Receiver) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue { senders: 1, ..Queue::default() }),
        room: Notify::new(),
        capacity: capacity.0,
        capacity_bytes: capacity.1,
        stats,
        credit,
    });
    (Sender { end: End::Local(shared.clone()) }, Receiver { shared })
}

/// The sending end of a remote channel of `capacity` (batches, bytes) whose messages go to
/// `outbound`; the data plane grants the returned credits as the receiver takes batches.
pub fn remote_sender(
    capacity: (usize, usize),
    from: (String, u32),
    to: (String, u32),
    outbound: Box<dyn Outbound>,
) -> (Sender, Arc<Credits>) {
    let capacity = (capacity.0.max(1), capacity.1.max(1));
    let credits = Arc::new(Credits {
        available: AtomicI64::new(capacity.0 as i64),
        capacity: capacity.0,
        capacity_bytes: capacity.1,
        outstanding: Mutex::new((VecDeque::new(), 0)),
        closed: AtomicBool::new(false),
        room: Notify::new(),
    });
    let remote = Remote { outbound, credits: credits.clone(), stats: new_stats(capacity, from, to) };
    (Sender { end: End::Remote(Arc::new(remote)) }, credits)
}

impl Clone for Sender {
    fn clone(&self) -> Self {
        match &self.end {
            End::Local(shared) => {
                shared.lock().senders += 1;
                Sender { end: End::Local(shared.clone()) }
            }
            End::Remote(remote) => Sender { end: End::Remote(remote.clone()) },
        }
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        if let End::Local(shared) = &self.end {
            let mut q = shared.lock();
            q.senders -= 1;
            if q.senders == 0 {
                q.wake();
            }
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let mut q = self.shared.lock();
        q.receiver_gone = true;
        q.items.clear();
        q.data = 0;
        q.bytes = 0;
        q.barrier_end = 0;
        drop(q);
        self.shared.room.notify_waiters();
        if let Some(credit) = &self.shared.credit {
            credit.gone();
        }
    }
}

impl Sender {
    /// Queues `message` at the end without waiting for room (an aligned barrier, a
    /// watermark, or data a task already produced); the task waits with [`Sender::ready`]
    /// before it produces more.
    pub fn push(&self, message: Message) -> Result<(), Closed> {
        let shared = match &self.end {
            End::Local(shared) => shared,
            End::Remote(remote) => return remote.push(&message),
        };
        let bytes = match &message {
            Message::Batch(b) => Some(b.byte_len()),
            _ => None,
        };
        let mut q = shared.lock();
        if q.receiver_gone {
            return Err(Closed);
        }
        let barrier = matches!(message, Message::Barrier(_));
        q.items.push_back(message);
        if barrier {
            q.barrier_end = q.items.len();
        }
        if let Some(bytes) = bytes {
            q.data += 1;
            q.bytes = q.bytes.saturating_add(bytes);
        }
        let (depth, queued) = (q.data, q.bytes);
        q.wake();
        drop(q);
        shared.stats.max_depth.fetch_max(depth, Ordering::Relaxed);
        if bytes.is_some() {
            shared.stats.max_bytes.fetch_max(queued, Ordering::Relaxed);
            shared.stats.batches.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Queues an unaligned barrier ahead of the data queued after the last barrier (which
    /// it overtakes; barriers never pass each other). Returns how many messages it
    /// overtook (0 for a remote channel: the receiving end counts them when the barrier
    /// arrives).
    pub fn push_overtaking(&self, mut barrier: Barrier) -> Result<usize, Closed> {
        let shared = match &self.end {
            End::Local(shared) => shared,
            End::Remote(remote) => {
                barrier.unaligned = true;
                barrier.overtaken = 0;
                return remote.push(&Message::Barrier(barrier)).map(|()| 0);
            }
        };
        let mut q = shared.lock();
        if q.receiver_gone {
            return Err(Closed);
        }
        let at = q.barrier_end;
        barrier.unaligned = true;
        barrier.overtaken = q.items.len() - at;
        q.items.insert(at, Message::Barrier(barrier));
        q.barrier_end = at + 1;
        q.wake();
        Ok(barrier.overtaken)
    }

    /// True when the channel has room for more data (or its receiver is gone: the next
    /// push reports that).
    pub fn has_room(&self) -> bool {
        match &self.end {
            End::Local(shared) => {
                let q = shared.lock();
                shared.has_room(&q) || q.receiver_gone
            }
            End::Remote(remote) => remote.credits.has_room() || remote.credits.is_closed(),
        }
    }

    fn room(&self) -> &Notify {
        match &self.end {
            End::Local(shared) => &shared.room,
            End::Remote(remote) => &remote.credits.room,
        }
    }

    /// Waits until the channel has room for more data. Cancel-safe.
    pub async fn ready(&self) {
        let mut waited = None;
        loop {
            let mut notified = pin!(self.room().notified());
            notified.as_mut().enable();
            if self.has_room() {
                break;
            }
            waited.get_or_insert_with(std::time::Instant::now);
            notified.await;
        }
        if let Some(t) = waited {
            let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.stats().blocked_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }

    /// Waits for room, then queues `message`.
    pub async fn send(&self, message: Message) -> Result<(), Closed> {
        self.ready().await;
        self.push(message)
    }

    /// The channel's statistics.
    pub fn stats(&self) -> &Arc<ChannelStats> {
        match &self.end {
            End::Local(shared) => &shared.stats,
            End::Remote(remote) => &remote.stats,
        }
    }
}

impl Remote {
    fn push(&self, message: &Message) -> Result<(), Closed> {
        if self.credits.is_closed() {
            return Err(Closed);
        }
        self.outbound.send(message)?;
        // W3: a batch spends a credit and holds its bytes until the receiver takes it; the
        // receiving end's queue bounds what is outstanding.
        if let Message::Batch(b) = message {
            let (batches, bytes) = self.credits.spend(b.byte_len());
            self.stats.max_depth.fetch_max(batches, Ordering::Relaxed);
            self.stats.max_bytes.fetch_max(bytes, Ordering::Relaxed);
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// What [`Receiver::poll_recv`] may take from the head of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Any message.
    Any,
    /// Barriers only (a task waiting for room on its outputs takes no data).
    Barriers,
    /// Unaligned barriers only (restored messages are still to be delivered before
    /// anything else the channel holds, except a barrier that overtakes them).
    UnalignedBarriers,
}

/// What [`Receiver::poll_recv`] delivers.
#[derive(Debug)]
pub enum Received {
    /// The next message. For an unaligned barrier: with a copy of the messages it
    /// overtook (they stay queued, and are delivered next, barriers aside).
    Message(Message, Vec<Message>),
    /// Every sender is gone.
    Closed,
}

impl Received {
    fn into_message(self) -> Option<Message> {
        match self {
            Received::Message(m, _) => Some(m),
            Received::Closed => None,
        }
    }
}

impl Receiver {
    /// The channel's statistics.
    pub fn stats(&self) -> &Arc<ChannelStats> {
        &self.shared.stats
    }

    /// Takes the message at the head of the queue if it is `wanted`.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>, wanted: Wanted) -> Poll<Received> {
        let mut q = self.shared.lock();
        let take = match q.items.front() {
            Some(Message::Barrier(b)) => b.unaligned || wanted != Wanted::UnalignedBarriers,
            Some(_) => wanted == Wanted::Any,
            None => false,
        };
        if !take {
            if q.items.is_empty() && q.senders == 0 {
                return Poll::Ready(Received::Closed);
            }
            if q.rx_waker.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
                q.rx_waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        let message = q.items.pop_front().expect("a message at the head");
        if let Message::Barrier(b) = &message {
            q.barrier_end -= 1;
            let overtaken = if b.unaligned {
                q.items
                    .iter()
                    .filter(|m| !matches!(m, Message::Barrier(_)))
                    .take(b.overtaken)
                    .cloned()
                    .collect()
            } else {
                Vec::new()
            };
            return Poll::Ready(Received::Message(message, overtaken));
        }
        q.barrier_end = q.barrier_end.saturating_sub(1);
        let was_full = !self.shared.has_room(&q);
        let taken = match &message {
            Message::Batch(b) => Some(b.byte_len()),
            _ => None,
        };
        if let Some(bytes) = taken {
            q.data -= 1;
            q.bytes = q.bytes.saturating_sub(bytes);
        }
        drop(q);
        if was_full {
            self.shared.room.notify_waiters();
        }
        if let (Some(bytes), Some(credit)) = (taken, &self.shared.credit) {
            credit.taken(1, bytes);
        }
        Poll::Ready(Received::Message(message, Vec::new()))
    }

    /// The next message (`None` once every sender is gone and the queue is empty).
    pub async fn recv(&mut self) -> Option<Message> {
        std::future::poll_fn(|cx| self.poll_recv(cx, Wanted::Any)).await.into_message()
    }

    /// Takes barrier `id` out of the queue if it is there, with a copy of the messages
    /// before it (and, an unaligned barrier, of those it overtook): they stay queued, and
    /// are the channel's in-flight data when a checkpoint switches to unaligned. `None`
    /// when the barrier has not arrived yet.
    pub fn extract_barrier(&mut self, id: u64) -> Option<(Barrier, Vec<Message>)> {
        let mut q = self.shared.lock();
        let at = q.items.iter().position(|m| matches!(m, Message::Barrier(b) if b.id == id))?;
        let Some(Message::Barrier(barrier)) = q.items.remove(at) else { unreachable!("found above") };
        // What is before it, and what it overtook if it is unaligned (it was placed ahead of
        // those messages, which belong before it too).
        let overtaken = if barrier.unaligned { barrier.overtaken } else { 0 };
        let before: Vec<Message> = q
            .items
            .iter()
            .take(at)
            .chain(q.items.iter().skip(at).filter(|m| !matches!(m, Message::Barrier(_))).take(overtaken))
            .cloned()
            .collect();
        q.barrier_end = q.items.iter().rposition(|m| matches!(m, Message::Barrier(_))).map_or(0, |i| i + 1);
        Some((barrier, before))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use futures::FutureExt as _;

    use super::*;
    use crate::record::Batch;

    fn data(v: u8) -> Message {
        let mut b = Batch::empty();
        b.push(&[], &[v], 0);
        Message::Batch(b)
    }

    fn recv(rx: &mut Receiver, barriers_only: bool) -> Option<Received> {
        let waker = futures::task::noop_waker();
        let wanted = if barriers_only { Wanted::Barriers } else { Wanted::Any };
        match rx.poll_recv(&mut Context::from_waker(&waker), wanted) {
            Poll::Ready(r) => Some(r),
            Poll::Pending => None,
        }
    }

    #[test]
    fn an_overtaking_barrier_passes_data_but_not_barriers() {
        let (tx, mut rx) = channel(8, ("a".into(), 0), ("b".into(), 0));
        tx.push(data(1)).unwrap();
        tx.push(Message::Barrier(Barrier::new(1, Instant::now(), false, None))).unwrap();
        tx.push(data(2)).unwrap();
        tx.push(data(3)).unwrap();
        let n = tx.push_overtaking(Barrier::new(2, Instant::now(), false, Some(Default::default()))).unwrap();
        assert_eq!(n, 2, "it overtook the data after barrier 1");
        tx.push(data(4)).unwrap();
        let order: Vec<String> = std::iter::from_fn(|| match recv(&mut rx, false)? {
            Received::Message(Message::Barrier(b), over) => Some(format!("b{}:{}", b.id, over.len())),
            Received::Message(Message::Batch(b), _) => {
                Some(format!("d{}", b.iter().next().unwrap().value[0]))
            }
            _ => None,
        })
        .collect();
        assert_eq!(order, ["d1", "b1:0", "b2:2", "d2", "d3", "d4"]);
    }

    fn sized(bytes: usize) -> Message {
        let mut b = Batch::empty();
        b.push(&[], &vec![7u8; bytes], 0);
        Message::Batch(b)
    }

    #[test]
    fn capacity_counts_bytes_too() {
        // Room for 8 batches but 2,500 bytes of them: the third 1,000-byte batch fills it.
        let (tx, mut rx) = bounded_channel((8, 2500), ("a".into(), 0), ("b".into(), 0));
        tx.push(sized(1000)).unwrap();
        tx.push(sized(1000)).unwrap();
        assert!(tx.has_room());
        tx.push(sized(1000)).unwrap();
        assert!(!tx.has_room(), "3,000 bytes queued");
        assert!(tx.ready().now_or_never().is_none(), "full");
        // A whole call's output goes in past the capacity; the sender then waits.
        tx.push(sized(5000)).unwrap();
        assert_eq!(tx.stats().max_bytes.load(Ordering::Relaxed), 8000);
        for _ in 0..3 {
            assert!(matches!(recv(&mut rx, false), Some(Received::Message(Message::Batch(_), _))));
            assert!(!tx.has_room(), "the 5,000-byte batch alone is past the capacity");
        }
        assert!(matches!(recv(&mut rx, false), Some(Received::Message(Message::Batch(_), _))));
        assert!(tx.ready().now_or_never().is_some(), "room again once it is taken");
        assert_eq!(tx.stats().capacity_bytes, 2500);
    }

    #[test]
    fn capacity_counts_data_and_barriers_never_wait() {
        let (tx, mut rx) = channel(2, ("a".into(), 0), ("b".into(), 0));
        tx.push(data(1)).unwrap();
        assert!(tx.has_room());
        tx.push(data(2)).unwrap();
        assert!(!tx.has_room());
        assert!(tx.ready().now_or_never().is_none(), "full");
        tx.push(Message::Barrier(Barrier::new(1, Instant::now(), false, None))).unwrap();
        assert!(recv(&mut rx, true).is_none(), "only a barrier at the head is taken while backpressured");
        assert!(matches!(recv(&mut rx, false), Some(Received::Message(Message::Batch(_), _))));
        assert!(tx.ready().now_or_never().is_some(), "room again");
        let (b, before) = rx.extract_barrier(1).expect("queued");
        assert_eq!((b.id, before.len()), (1, 1));
        assert!(rx.extract_barrier(1).is_none());
        drop(tx);
        assert!(matches!(recv(&mut rx, false), Some(Received::Message(Message::Batch(_), _))));
        assert!(matches!(recv(&mut rx, false), Some(Received::Closed)));
    }

    #[derive(Debug)]
    struct Wire(Mutex<Vec<Message>>);

    impl Outbound for Arc<Wire> {
        fn send(&self, message: &Message) -> Result<(), Closed> {
            self.0.lock().unwrap().push(message.clone());
            Ok(())
        }
        fn close(&self) {}
    }

    #[test]
    fn a_remote_sender_counts_the_bytes_outstanding_too() {
        // Credits for 8 batches but 2,500 bytes of them.
        let wire = Arc::new(Wire(Mutex::new(Vec::new())));
        let (tx, credits) =
            remote_sender((8, 2500), ("a".into(), 0), ("b".into(), 0), Box::new(wire.clone()));
        tx.push(sized(1000)).unwrap();
        tx.push(sized(1000)).unwrap();
        assert!(tx.has_room());
        tx.push(sized(1000)).unwrap();
        assert!(!tx.has_room(), "3,000 bytes outstanding with 5 credits left");
        assert!(tx.ready().now_or_never().is_none());
        // A whole call's output goes out past the capacity; then the sender waits.
        tx.push(sized(5000)).unwrap();
        assert_eq!(tx.stats().max_bytes.load(Ordering::Relaxed), 8000);
        assert_eq!(tx.stats().capacity_bytes, 2500);
        // The receiver took the first three: the 5,000 bytes still outstanding hold it.
        credits.grant(3);
        assert!(!tx.has_room(), "the 5,000-byte batch alone is past the capacity");
        credits.grant(1);
        assert!(tx.ready().now_or_never().is_some(), "room again once it is taken");
        assert_eq!(wire.0.lock().unwrap().len(), 4, "everything went out, in order");
        // Credits still count batches.
        for _ in 0..8 {
            tx.push(data(1)).unwrap();
        }
        assert!(!tx.has_room(), "no credit left");
        credits.grant(1);
        assert!(tx.has_room());
    }
}
