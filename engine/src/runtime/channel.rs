//! Bounded channels between subtasks. A full channel makes the sender wait: that is
//! backpressure, and it is the only buffering between tasks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::mpsc;

use super::message::Message;

/// Statistics of one channel, readable while the job runs.
#[derive(Debug)]
pub struct ChannelStats {
    /// Upstream node id and subtask.
    pub from: (String, u32),
    /// Downstream node id and subtask.
    pub to: (String, u32),
    /// Capacity in messages.
    pub capacity: usize,
    /// Most messages ever queued at once.
    pub max_depth: AtomicUsize,
    /// Batches sent.
    pub batches: AtomicU64,
    /// Nanoseconds the sender waited for room: the upstream subtask's backpressured time.
    pub blocked_ns: AtomicU64,
}

/// The sending half.
#[derive(Debug, Clone)]
pub struct Sender {
    tx: mpsc::Sender<Message>,
    stats: Arc<ChannelStats>,
}

/// The receiving half.
#[derive(Debug)]
pub struct Receiver {
    pub(crate) rx: mpsc::Receiver<Message>,
    pub(crate) stats: Arc<ChannelStats>,
}

/// The receiver's task is gone (the job is failing or was cancelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the downstream task is gone")]
pub struct Closed;

/// A channel of `capacity` messages.
pub fn channel(capacity: usize, from: (String, u32), to: (String, u32)) -> (Sender, Receiver) {
    let (tx, rx) = mpsc::channel(capacity);
    let stats = Arc::new(ChannelStats {
        from,
        to,
        capacity,
        max_depth: AtomicUsize::new(0),
        batches: AtomicU64::new(0),
        blocked_ns: AtomicU64::new(0),
    });
    (Sender { tx, stats: stats.clone() }, Receiver { rx, stats })
}

impl Sender {
    /// Sends, waiting while the channel is full.
    pub async fn send(&self, message: Message) -> Result<(), Closed> {
        let is_batch = matches!(message, Message::Batch(_));
        match self.tx.try_reserve() {
            Ok(permit) => permit.send(message),
            Err(mpsc::error::TrySendError::Closed(())) => return Err(Closed),
            Err(mpsc::error::TrySendError::Full(())) => {
                let waiting = std::time::Instant::now();
                let sent = self.tx.send(message).await;
                let waited = u64::try_from(waiting.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.stats.blocked_ns.fetch_add(waited, Ordering::Relaxed);
                sent.map_err(|_| Closed)?;
            }
        }
        let depth = self.tx.max_capacity() - self.tx.capacity();
        self.stats.max_depth.fetch_max(depth, Ordering::Relaxed);
        if is_batch {
            self.stats.batches.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The channel's statistics.
    pub fn stats(&self) -> &Arc<ChannelStats> {
        &self.stats
    }
}

impl Receiver {
    /// The channel's statistics.
    pub fn stats(&self) -> &Arc<ChannelStats> {
        &self.stats
    }
}
