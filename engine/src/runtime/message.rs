//! What flows through a channel.

use std::time::{Duration, Instant};

use crate::record::Batch;

/// One message on a channel. Per channel, messages arrive in the order they were sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Records.
    Batch(Batch),
    /// No record with an event time at or before this one will follow on this channel.
    Watermark(i64),
    /// The sender has no input right now (Flink's `WatermarkStatus.IDLE`): the receiver's
    /// watermark no longer waits for this channel until it delivers a batch or a watermark.
    /// A source sends it when [`crate::connectors::Source::idle`] says so; an operator when
    /// every one of its inputs is idle.
    Idle,
    /// Checkpoint barrier: every message before it belongs to the checkpoint, none after.
    Barrier(Barrier),
    /// The sender has finished; nothing follows.
    EndOfStream,
}

/// A checkpoint barrier, injected by the sources and forwarded by every task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Barrier {
    /// The checkpoint id.
    pub id: u64,
    /// When the coordinator triggered the checkpoint (for the start delay).
    pub triggered: Instant,
    /// The final checkpoint, taken when every source has ended.
    pub is_final: bool,
    /// How long after its trigger the checkpoint may switch from aligned to unaligned
    /// (zero: it is unaligned from the start); `None`: it must be aligned (savepoints, the
    /// final checkpoint, jobs in aligned mode without a timeout).
    pub unaligned_after: Option<Duration>,
    /// Sent unaligned: the barrier overtook `overtaken` messages queued in the channel
    /// before it (set by [`crate::runtime::Sender::push_overtaking`]). Those messages
    /// belong before the barrier: they are the channel's in-flight data for the checkpoint.
    pub unaligned: bool,
    /// How many messages this barrier overtook in its channel (0 for an aligned barrier).
    pub overtaken: usize,
}

impl Barrier {
    /// An aligned barrier of checkpoint `id` (tests, and the source's starting point).
    pub fn new(id: u64, triggered: Instant, is_final: bool, unaligned_after: Option<Duration>) -> Self {
        Barrier { id, triggered, is_final, unaligned_after, unaligned: false, overtaken: 0 }
    }
}
