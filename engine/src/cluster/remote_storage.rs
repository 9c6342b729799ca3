//! The worker's storage client ([`RemoteStorage`]): the checkpoint storage and the sinks'
//! outboxes of a worker's subtasks, served by the controller's store over the session
//! (the controller's store stays the single commit point). With the controller's chunk
//! store shared, snapshot chunks are put and restores read in the object store here
//! ([`DirectChunks`]), and only ids and sizes travel.
//!
//! Every call is blocking (storage calls run on the blocking pool, or off the runtime's
//! thread: [`RemoteStorage::off_runtime`]) and waits at most [`STORAGE_TIMEOUT`].

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use weir_store::{
    CheckpointMeta, CheckpointStorage, EntryVisitor, ExternalChains, GcReport, Manifest, StateEntry,
    StoreError, SubtaskState, SubtaskWrite,
};

use super::objects::BlockingChunks;
use super::outbox::{OutboxAnswer, OutboxCall};
use super::protocol::{AttemptId, MAX_LEASE, StorageReply, StorageRequest, ToController, WireSubtaskWrite};

/// How long a storage call may wait for the controller's answer.
const STORAGE_TIMEOUT: Duration = Duration::from_secs(600);

/// Storage calls waiting for the controller's answers, by call number (shared by every
/// part of a session: the session's reader hands each answer to its call).
pub(super) type Calls = Arc<Mutex<HashMap<u64, std::sync::mpsc::Sender<StorageReply>>>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Checkpoint storage of a worker's subtasks: their calls go to the controller over the
/// session. Only what subtasks call is served: writing a snapshot, reading channel state,
/// visiting chains to restore. With `direct`, a snapshot's chunks are put in the object
/// store here, under ids leased from the controller, and only their ids and sizes travel.
pub(super) struct RemoteStorage {
    attempt: AttemptId,
    outbox: mpsc::Sender<ToController>,
    calls: Calls,
    next_call: Arc<AtomicU64>,
    direct: Option<DirectChunks>,
}

impl RemoteStorage {
    /// The storage of `attempt`'s subtasks: calls go to `outbox`, numbered from
    /// `next_call`, their answers come back through `calls`.
    pub(super) fn new(
        attempt: AttemptId,
        outbox: mpsc::Sender<ToController>,
        calls: Calls,
        next_call: Arc<AtomicU64>,
        direct: Option<DirectChunks>,
    ) -> Self {
        RemoteStorage { attempt, outbox, calls, next_call, direct }
    }
}

/// Chunk ids leased at once (a lease's unused ids are never used by anyone).
const LEASE_BLOCK: u64 = 4096;

/// Where a worker's subtasks put their chunks, and read the chains they restore, themselves.
pub(super) struct DirectChunks {
    objects: Arc<BlockingChunks>,
    max_chunk_bytes: usize,
    /// Ids leased to this attempt and not used yet.
    lease: Mutex<std::ops::Range<u64>>,
}

impl DirectChunks {
    /// Chunks of at most `max_chunk_bytes` put in `objects`, under ids leased as needed.
    pub(super) fn new(objects: Arc<BlockingChunks>, max_chunk_bytes: usize) -> Self {
        DirectChunks { objects, max_chunk_bytes, lease: Mutex::new(0..0) }
    }

    /// The largest chunk it puts.
    pub(super) fn max_chunk_bytes(&self) -> usize {
        self.max_chunk_bytes
    }
}

fn unavailable(what: &str) -> StoreError {
    StoreError::Remote(format!("{what} is not available on a worker"))
}

impl RemoteStorage {
    /// Sends `request`; the answers arrive on the returned receiver. Blocking: called from
    /// the blocking pool as every storage call is.
    pub(super) fn call(
        &self,
        request: StorageRequest,
    ) -> Result<std::sync::mpsc::Receiver<StorageReply>, StoreError> {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = std::sync::mpsc::channel();
        lock(&self.calls).insert(call, tx);
        let message = ToController::Storage { attempt: self.attempt.clone(), call, request };
        self.outbox
            .blocking_send(message)
            .map_err(|_| StoreError::Remote("the session with the controller ended".into()))?;
        Ok(rx)
    }

    /// `count` chunk ids of this attempt's lease, leasing more from the controller when it
    /// runs short.
    fn take_ids(&self, direct: &DirectChunks, count: u64) -> Result<std::ops::Range<u64>, StoreError> {
        let mut lease = lock(&direct.lease);
        if lease.end - lease.start < count {
            let want = count.max(LEASE_BLOCK);
            if want > MAX_LEASE {
                return Err(StoreError::Remote(format!("a snapshot of {count} chunks is more than a lease")));
            }
            let rx = self.call(StorageRequest::LeaseChunkIds { count: want })?;
            match Self::answer(&rx)? {
                StorageReply::Leased { first, end } if end.saturating_sub(first) >= count => {
                    *lease = first..end
                }
                other => return Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        }
        let ids = lease.start..lease.start + count;
        lease.start += count;
        Ok(ids)
    }

    /// Writes a snapshot's chunks to the object store and has the controller record them.
    fn put_subtask(&self, direct: &DirectChunks, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
        let encoded = weir_store::encode_subtask(&write, direct.max_chunk_bytes)?;
        let ids = self.take_ids(direct, encoded.count() as u64)?;
        let (recorded, puts) = encoded.assign(write, ids);
        direct.objects.put_all(&self.attempt.job, puts)?;
        let rx = self.call(StorageRequest::RecordSubtask(recorded))?;
        match Self::answer(&rx)? {
            StorageReply::Written(state) => Ok(state),
            other => Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
        }
    }

    /// Visits `chains` as the controller reads them, batch by batch.
    fn visit_through_controller(
        &self,
        chains: Vec<Vec<u64>>,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        let rx = self.call(StorageRequest::VisitChains { chains })?;
        loop {
            match Self::answer(&rx)? {
                StorageReply::Entries { entries, done } => {
                    for entry in &entries {
                        if let Some(value) = &entry.value
                            && visit(&entry.state, &entry.key, value).is_break()
                        {
                            return Ok(ControlFlow::Break(()));
                        }
                    }
                    if done {
                        return Ok(ControlFlow::Continue(()));
                    }
                }
                other => return Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        }
    }

    /// Runs `wait` (a call that waits for the controller) where waiting is allowed: from a
    /// task of the runtime, the runtime's thread goes to the other tasks meanwhile
    /// (`block_in_place`), as subtasks call storage from their tasks (a sink staging at a
    /// barrier, a local store reserving room).
    pub(super) fn off_runtime<T>(&self, wait: impl FnOnce() -> T) -> T {
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }

    pub(super) fn answer(rx: &std::sync::mpsc::Receiver<StorageReply>) -> Result<StorageReply, StoreError> {
        match rx.recv_timeout(STORAGE_TIMEOUT) {
            Ok(StorageReply::Failed(reason)) => Err(StoreError::Remote(reason)),
            Ok(reply) => Ok(reply),
            Err(_) => Err(StoreError::Remote("no answer from the controller".into())),
        }
    }
}

impl CheckpointStorage for RemoteStorage {
    fn begin(&self, _meta: &CheckpointMeta) -> Result<(), StoreError> {
        Err(unavailable("begin"))
    }

    fn write_subtask(&self, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
        if let Some(direct) = &self.direct {
            return self.put_subtask(direct, write);
        }
        let wire = WireSubtaskWrite {
            checkpoint: write.checkpoint,
            operator: write.operator,
            subtask: write.subtask,
            full: write.full,
            scopes: Arc::unwrap_or_clone(write.scopes),
            previous: write.previous,
            blob: write.blob,
            channel_state: write.channel_state,
            max_chain_length: write.max_chain_length as u64,
        };
        let rx = self.call(StorageRequest::WriteSubtask(wire))?;
        match Self::answer(&rx)? {
            StorageReply::Written(state) => Ok(state),
            other => Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
        }
    }

    fn complete(&self, _: &CheckpointMeta, _: &Manifest, _: usize) -> Result<GcReport, StoreError> {
        Err(unavailable("complete"))
    }

    fn abort(&self, _meta: &CheckpointMeta) -> Result<(), StoreError> {
        Err(unavailable("abort"))
    }

    fn latest_completed(&self, _job: &str) -> Result<Option<(CheckpointMeta, Manifest)>, StoreError> {
        Err(unavailable("latest_completed"))
    }

    fn checkpoint(&self, _: &str, _: u64) -> Result<Option<(CheckpointMeta, Option<Manifest>)>, StoreError> {
        Err(unavailable("checkpoint"))
    }

    fn read_chain(&self, _job: &str, chain: &[u64]) -> Result<Vec<StateEntry>, StoreError> {
        if let Some(direct) = &self.direct
            && let Some(entries) =
                ExternalChains::default().read_chain(direct.objects.as_ref(), &self.attempt.job, chain)?
        {
            return Ok(entries);
        }
        let rx = self.call(StorageRequest::ReadChain { chain: chain.to_vec() })?;
        let mut all = Vec::new();
        loop {
            match Self::answer(&rx)? {
                StorageReply::Entries { entries, done } => {
                    all.extend(entries);
                    if done {
                        return Ok(all);
                    }
                }
                other => return Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        }
    }

    fn visit_chains(
        &self,
        _job: &str,
        chains: &[Vec<u64>],
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        if chains.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        let Some(direct) = &self.direct else {
            return self.visit_through_controller(chains.to_vec(), visit);
        };
        // Each chain from the objects, or (a chunk the controller keeps in its file) through
        // the controller: every chain is visited once either way.
        let mut objects = ExternalChains::default();
        let mut through_controller = 0;
        let mut flow = ControlFlow::Continue(());
        for chain in chains {
            flow = match objects.visit_chain(direct.objects.as_ref(), &self.attempt.job, chain, visit)? {
                Some(flow) => flow,
                None => {
                    through_controller += 1;
                    self.visit_through_controller(vec![chain.clone()], visit)?
                }
            };
            if flow.is_break() {
                break;
            }
        }
        tracing::info!(
            job = self.attempt.job,
            attempt = self.attempt.attempt,
            "restored {} chains ({} bytes) from the object store, {through_controller} through the controller",
            chains.len() - through_controller,
            objects.bytes
        );
        Ok(flow)
    }

    fn history(&self, _job: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        Err(unavailable("history"))
    }

    fn last_checkpoint_id(&self, _job: &str) -> Result<u64, StoreError> {
        Err(unavailable("last_checkpoint_id"))
    }

    fn recover(&self, _job: &str) -> Result<(), StoreError> {
        Err(unavailable("recover"))
    }

    fn chunk_usage(&self, _job: &str) -> Result<(u64, u64), StoreError> {
        Err(unavailable("chunk_usage"))
    }
}

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
