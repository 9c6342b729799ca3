//! The input side of a task: reads its input channels fairly, in per-channel FIFO order.
//!
//! A restored task's gate first delivers, per channel, the in-flight messages persisted by
//! an unaligned checkpoint ([`InputGate::replay`]), then what arrives on the channel.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::task::Poll;

use super::channel::{Received, Receiver, Wanted};
use super::message::{Barrier, Message};

struct Input {
    rx: Receiver,
    port: u32,
    ended: bool,
    blocked: bool,
    /// Restored in-flight messages, delivered before anything the channel holds.
    replay: VecDeque<Message>,
}

/// Several input channels read as one stream of `(channel, message)`.
pub struct InputGate {
    inputs: Vec<Input>,
    next: usize,
    open: usize,
    /// The in-flight messages the last unaligned barrier returned by [`InputGate::next`]
    /// overtook (see [`InputGate::take_overtaken`]).
    overtaken: Vec<Message>,
}

impl std::fmt::Debug for InputGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputGate").field("channels", &self.inputs.len()).field("open", &self.open).finish()
    }
}

/// A channel's sender vanished without sending end-of-stream (its task failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("input channel {0} closed without end of stream")]
pub struct UpstreamGone(pub usize);

impl InputGate {
    /// A gate over `(port, receiver)` pairs; the channel index is the position in the list.
    pub fn new(inputs: Vec<(u32, Receiver)>) -> Self {
        let open = inputs.len();
        InputGate {
            inputs: inputs
                .into_iter()
                .map(|(port, rx)| Input { rx, port, ended: false, blocked: false, replay: VecDeque::new() })
                .collect(),
            next: 0,
            open,
            overtaken: Vec::new(),
        }
    }

    /// Number of channels.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// True when the gate has no channel.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// The input port (upstream edge) of channel `channel`.
    pub fn port(&self, channel: usize) -> u32 {
        self.inputs[channel].port
    }

    /// The upstream subtask of channel `channel`.
    pub fn upstream_subtask(&self, channel: usize) -> u32 {
        self.inputs[channel].rx.stats().from.1
    }

    /// The channel of input port `port` from upstream subtask `subtask`.
    pub fn channel_of(&self, port: u32, subtask: u32) -> Option<usize> {
        self.inputs.iter().position(|i| i.port == port && i.rx.stats().from.1 == subtask)
    }

    /// Delivers `messages` on channel `channel` before anything it receives (restored
    /// in-flight data, in its original order).
    pub fn replay(&mut self, channel: usize, messages: impl IntoIterator<Item = Message>) {
        self.inputs[channel].replay.extend(messages);
    }

    /// Stops (or resumes) reading channel `channel`; its messages stay queued in order.
    pub fn set_blocked(&mut self, channel: usize, blocked: bool) {
        self.inputs[channel].blocked = blocked;
    }

    /// The messages the unaligned barrier just returned by [`InputGate::next`] overtook on
    /// its channel (restored ones not yet delivered first): they stay queued, and are the
    /// channel's in-flight data for the barrier's checkpoint.
    pub fn take_overtaken(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.overtaken)
    }

    /// Takes aligned barrier `id` out of channel `channel` if it is queued there, with a
    /// copy of the messages before it (restored ones first), which stay queued: the
    /// channel's in-flight data when a checkpoint switches to unaligned.
    pub fn extract_barrier(&mut self, channel: usize, id: u64) -> Option<(Barrier, Vec<Message>)> {
        let input = &mut self.inputs[channel];
        let (barrier, queued) = input.rx.extract_barrier(id)?;
        let mut before: Vec<Message> = input.replay.iter().cloned().collect();
        before.extend(queued);
        Some((barrier, before))
    }

    /// The next message of any unblocked channel, taking channels in turn; with
    /// `barriers_only`, only barriers at the head of a channel (a task waiting for room on
    /// its outputs). Returns `None` once every channel delivered end-of-stream. A channel is
    /// marked ended when its end-of-stream is returned.
    pub async fn next(&mut self, barriers_only: bool) -> Option<Result<(usize, Message), UpstreamGone>> {
        if self.open == 0 {
            return None;
        }
        let n = self.inputs.len();
        let result = poll_fn(|cx| {
            for k in 0..n {
                let i = (self.next + k) % n;
                let input = &mut self.inputs[i];
                if input.ended || input.blocked {
                    continue;
                }
                // Restored messages come first, but an unaligned barrier overtakes them too.
                let replaying = !input.replay.is_empty();
                let wanted = match (replaying, barriers_only) {
                    (true, _) => Wanted::UnalignedBarriers,
                    (false, true) => Wanted::Barriers,
                    (false, false) => Wanted::Any,
                };
                match input.rx.poll_recv(cx, wanted) {
                    Poll::Ready(Received::Message(m, overtaken)) => {
                        self.overtaken = if replaying {
                            input.replay.iter().cloned().chain(overtaken).collect()
                        } else {
                            overtaken
                        };
                        self.next = (i + 1) % n;
                        return Poll::Ready(Ok((i, m)));
                    }
                    Poll::Ready(Received::Closed) if !replaying => return Poll::Ready(Err(UpstreamGone(i))),
                    Poll::Ready(Received::Closed) | Poll::Pending => {}
                }
                if replaying && !barriers_only {
                    let m = input.replay.pop_front().expect("replaying");
                    self.next = (i + 1) % n;
                    return Poll::Ready(Ok((i, m)));
                }
            }
            Poll::Pending
        })
        .await;
        if let Ok((i, Message::EndOfStream)) = &result {
            self.inputs[*i].ended = true;
            self.open -= 1;
        }
        Some(result)
    }
}
