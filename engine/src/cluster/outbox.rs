//! A sink's outbox on a worker (docs/design.md §13): the calls of [`weir_store::Outbox`]
//! as they cross the worker's session to the controller's store ([`OutboxCall`], answered
//! [`OutboxAnswer`]), and how the controller carries one out ([`OutboxCall::serve`]; it
//! serves only writers of the attempt's job). The worker's side is
//! `remote_storage::RemoteStorage`.

use serde::{Deserialize, Serialize};
use weir_store::StoreError;

/// A [`weir_store::Outbox`] call of a sink on a worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum OutboxCall {
    Stage { writer: String, epoch: u64, records: Vec<serde_bytes::ByteBuf> },
    Epochs { writer: String },
    Read { writer: String, epoch: u64, from: u64, limit: u64 },
    SetNote { writer: String, epoch: u64, note: serde_bytes::ByteBuf },
    Note { writer: String, epoch: u64 },
    Drop { writer: String, upto: u64 },
    DiscardAfter { writer: String, checkpoint: u64 },
}

impl OutboxCall {
    /// The writer it is about.
    pub fn writer(&self) -> &str {
        match self {
            OutboxCall::Stage { writer, .. }
            | OutboxCall::Epochs { writer }
            | OutboxCall::Read { writer, .. }
            | OutboxCall::SetNote { writer, .. }
            | OutboxCall::Note { writer, .. }
            | OutboxCall::Drop { writer, .. }
            | OutboxCall::DiscardAfter { writer, .. } => writer,
        }
    }
}

/// The answer to an [`OutboxCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum OutboxAnswer {
    Done,
    Epochs(Vec<u64>),
    Records(Vec<(u64, serde_bytes::ByteBuf)>),
    Note(Option<serde_bytes::ByteBuf>),
    Count(u64),
}

impl OutboxCall {
    /// Carries the call out on `outbox`.
    pub fn serve(self, outbox: &dyn weir_store::Outbox) -> Result<OutboxAnswer, StoreError> {
        use serde_bytes::ByteBuf;
        Ok(match self {
            OutboxCall::Stage { writer, epoch, records } => {
                let records: Vec<Vec<u8>> = records.into_iter().map(ByteBuf::into_vec).collect();
                outbox.outbox_stage(&writer, epoch, &records)?;
                OutboxAnswer::Done
            }
            OutboxCall::Epochs { writer } => OutboxAnswer::Epochs(outbox.outbox_epochs(&writer)?),
            OutboxCall::Read { writer, epoch, from, limit } => {
                let limit = usize::try_from(limit.min(MAX_OUTBOX_READ)).unwrap_or(usize::MAX);
                let records = outbox.outbox_read(&writer, epoch, from, limit)?;
                OutboxAnswer::Records(records.into_iter().map(|(seq, r)| (seq, ByteBuf::from(r))).collect())
            }
            OutboxCall::SetNote { writer, epoch, note } => {
                outbox.outbox_set_note(&writer, epoch, &note)?;
                OutboxAnswer::Done
            }
            OutboxCall::Note { writer, epoch } => {
                OutboxAnswer::Note(outbox.outbox_note(&writer, epoch)?.map(ByteBuf::from))
            }
            OutboxCall::Drop { writer, upto } => OutboxAnswer::Count(outbox.outbox_drop(&writer, upto)?),
            OutboxCall::DiscardAfter { writer, checkpoint } => {
                OutboxAnswer::Count(outbox.outbox_discard_after(&writer, checkpoint)?)
            }
        })
    }
}

/// The most records one [`OutboxCall::Read`] returns.
pub const MAX_OUTBOX_READ: u64 = 65_536;
