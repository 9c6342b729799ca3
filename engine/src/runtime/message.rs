//! What flows through a channel.

use crate::record::Batch;

/// One message on a channel. Per channel, messages arrive in the order they were sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Records.
    Batch(Batch),
    /// No record with an event time at or before this one will follow on this channel.
    Watermark(i64),
    /// The sender has finished; nothing follows.
    EndOfStream,
}
