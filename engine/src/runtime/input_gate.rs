//! The input side of a task: reads its input channels fairly, in per-channel FIFO order.

use std::future::poll_fn;
use std::task::Poll;

use super::channel::Receiver;
use super::message::Message;

struct Input {
    rx: Receiver,
    port: u32,
    ended: bool,
    blocked: bool,
}

/// Several input channels read as one stream of `(channel, message)`.
pub struct InputGate {
    inputs: Vec<Input>,
    next: usize,
    open: usize,
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
                .map(|(port, rx)| Input { rx, port, ended: false, blocked: false })
                .collect(),
            next: 0,
            open,
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

    /// Stops (or resumes) reading channel `channel`; its messages stay queued in order.
    pub fn set_blocked(&mut self, channel: usize, blocked: bool) {
        self.inputs[channel].blocked = blocked;
    }

    /// The next message of any unblocked channel, taking channels in turn. Returns `None`
    /// once every channel delivered end-of-stream. A channel is marked ended when its
    /// end-of-stream is returned.
    pub async fn next(&mut self) -> Option<Result<(usize, Message), UpstreamGone>> {
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
                match input.rx.rx.poll_recv(cx) {
                    Poll::Ready(Some(m)) => {
                        self.next = (i + 1) % n;
                        return Poll::Ready(Ok((i, m)));
                    }
                    Poll::Ready(None) => return Poll::Ready(Err(UpstreamGone(i))),
                    Poll::Pending => {}
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
