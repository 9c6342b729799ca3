//! A sink's outbox on a worker (docs/design.md §13): the calls of [`weir_store::Outbox`]
//! carried over the worker's session to the controller's store ([`OutboxCall`]), which
//! serves only writers of the attempt's job.

use serde::{Deserialize, Serialize};
use weir_store::StoreError;

use super::executor::RemoteStorage;
use super::protocol::{StorageReply, StorageRequest};

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

impl RemoteStorage {
    /// An outbox call. A sink makes some from its task (staging at a barrier), as it calls
    /// the embedded store there ([`RemoteStorage::off_runtime`]).
    fn outbox(&self, call: OutboxCall) -> Result<OutboxAnswer, StoreError> {
        self.off_runtime(|| {
            let rx = self.call(StorageRequest::Outbox(call))?;
            match Self::answer(&rx)? {
                StorageReply::Outbox(answer) => Ok(answer),
                other => Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        })
    }
}

fn out_of_turn(answer: OutboxAnswer) -> StoreError {
    StoreError::Remote(format!("an outbox answer out of turn: {answer:?}"))
}

/// A sink's outbox on a worker: the controller's, over the session.
impl weir_store::Outbox for RemoteStorage {
    fn outbox_stage(&self, writer: &str, epoch: u64, records: &[Vec<u8>]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let records = records.iter().map(|r| serde_bytes::ByteBuf::from(r.clone())).collect();
        match self.outbox(OutboxCall::Stage { writer: writer.into(), epoch, records })? {
            OutboxAnswer::Done => Ok(()),
            other => Err(out_of_turn(other)),
        }
    }

    fn outbox_epochs(&self, writer: &str) -> Result<Vec<u64>, StoreError> {
        match self.outbox(OutboxCall::Epochs { writer: writer.into() })? {
            OutboxAnswer::Epochs(epochs) => Ok(epochs),
            other => Err(out_of_turn(other)),
        }
    }

    fn outbox_read(
        &self,
        writer: &str,
        epoch: u64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let call = OutboxCall::Read { writer: writer.into(), epoch, from, limit: limit as u64 };
        match self.outbox(call)? {
            OutboxAnswer::Records(records) => {
                Ok(records.into_iter().map(|(seq, r)| (seq, r.into_vec())).collect())
            }
            other => Err(out_of_turn(other)),
        }
    }

    fn outbox_set_note(&self, writer: &str, epoch: u64, note: &[u8]) -> Result<(), StoreError> {
        let call = OutboxCall::SetNote { writer: writer.into(), epoch, note: note.to_vec().into() };
        match self.outbox(call)? {
            OutboxAnswer::Done => Ok(()),
            other => Err(out_of_turn(other)),
        }
    }

    fn outbox_note(&self, writer: &str, epoch: u64) -> Result<Option<Vec<u8>>, StoreError> {
        match self.outbox(OutboxCall::Note { writer: writer.into(), epoch })? {
            OutboxAnswer::Note(note) => Ok(note.map(serde_bytes::ByteBuf::into_vec)),
            other => Err(out_of_turn(other)),
        }
    }

    fn outbox_drop(&self, writer: &str, upto: u64) -> Result<u64, StoreError> {
        match self.outbox(OutboxCall::Drop { writer: writer.into(), upto })? {
            OutboxAnswer::Count(n) => Ok(n),
            other => Err(out_of_turn(other)),
        }
    }

    fn outbox_discard_after(&self, writer: &str, checkpoint: u64) -> Result<u64, StoreError> {
        match self.outbox(OutboxCall::DiscardAfter { writer: writer.into(), checkpoint })? {
            OutboxAnswer::Count(n) => Ok(n),
            other => Err(out_of_turn(other)),
        }
    }
}
