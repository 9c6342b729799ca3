//! The controller's side of the storage calls of an attempt's workers
//! ([`StorageService`]; the worker's side is `remote_storage::RemoteStorage`): snapshot
//! writes and records, chain reads and visits, chunk id leases, sinks' outbox calls and
//! quota reservations, each served on the blocking pool against the controller's store
//! (the single commit point) for the attempt's job only.

use std::sync::Arc;

use weir_store::{CheckpointStorage, PutSubtaskWrite, StateEntry, SubtaskWrite};

use super::controller::Workers;
use super::outbox::OutboxCall;
use super::protocol::{MAX_LEASE, StorageReply, StorageRequest, ToWorker, WireSubtaskWrite};
use super::quota::Reservations;

/// Entries of a visit travel in batches of about this many bytes.
const VISIT_BATCH_BYTES: usize = 4 << 20;

/// Chunk ids leased to an attempt's workers: what they may record, and what a sweep spares.
#[derive(Debug, Clone, Default)]
pub(super) struct Leases(Arc<std::sync::Mutex<Vec<std::ops::Range<u64>>>>);

impl Leases {
    pub(super) fn add(&self, ids: std::ops::Range<u64>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(ids);
    }

    pub(super) fn contains(&self, id: u64) -> bool {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().any(|r| r.contains(&id))
    }
}

/// What serves an attempt's storage calls.
#[derive(Clone)]
pub(super) struct StorageService {
    pub(super) workers: Workers,
    pub(super) storage: Arc<dyn CheckpointStorage>,
    pub(super) job: String,
    /// Chunk ids leased to the attempt's workers.
    pub(super) leases: Leases,
    /// The store: sinks' outboxes, the sweep of unrecorded chunk objects.
    pub(super) store: weir_store::Store,
    /// Quota the attempt's workers reserved for host state (given back when it ends).
    pub(super) reservations: Reservations,
}

fn failed(e: weir_store::StoreError) -> StorageReply {
    StorageReply::Failed(e.to_string())
}

impl StorageService {
    /// Serves call `call` of `worker` on the blocking pool and sends the answer back.
    pub(super) async fn serve_call(self, worker: u64, call: u64, request: StorageRequest) {
        let workers = self.workers.clone();
        let handle = tokio::runtime::Handle::current();
        let served = tokio::task::spawn_blocking(move || self.serve(request, worker, call, &handle)).await;
        let reply = match served {
            Ok(Some(reply)) => reply,
            Ok(None) => return,
            Err(e) => StorageReply::Failed(format!("the storage call failed: {e}")),
        };
        workers.send(worker, ToWorker::Storage { call, reply }).await;
    }

    /// The answer to `request` (call `call` of `worker`); `None` when the worker is gone.
    /// Blocking.
    fn serve(
        self,
        request: StorageRequest,
        worker: u64,
        call: u64,
        handle: &tokio::runtime::Handle,
    ) -> Option<StorageReply> {
        Some(match request {
            StorageRequest::LeaseChunkIds { count } => self.lease(count),
            StorageRequest::Reserve { bytes } => {
                self.reservations.reserve(bytes).map_or_else(failed, |()| StorageReply::Done)
            }
            StorageRequest::Release { bytes } => {
                self.reservations.release(bytes).map_or_else(failed, |()| StorageReply::Done)
            }
            StorageRequest::Outbox(call) => self.outbox(call),
            StorageRequest::RecordSubtask(write) => self.record(write),
            StorageRequest::WriteSubtask(wire) => self.write(wire),
            StorageRequest::ReadChain { chain } => self
                .storage
                .read_chain(&self.job, &chain)
                .map_or_else(failed, |entries| StorageReply::Entries { entries, done: true }),
            StorageRequest::VisitChains { chains } => return self.visit(&chains, worker, call, handle),
        })
    }

    /// Leases `count` chunk ids to the attempt.
    fn lease(&self, count: u64) -> StorageReply {
        if count == 0 || count > MAX_LEASE {
            return StorageReply::Failed(format!("a lease of {count} ids; 1 to {MAX_LEASE}"));
        }
        self.storage.lease_chunk_ids(count).map_or_else(failed, |ids| {
            self.leases.add(ids.clone());
            StorageReply::Leased { first: ids.start, end: ids.end }
        })
    }

    /// A sink's outbox call: its own job's outbox only (writers `<job>/...`).
    fn outbox(&self, call: OutboxCall) -> StorageReply {
        if !call.writer().strip_prefix(self.job.as_str()).is_some_and(|rest| rest.starts_with('/')) {
            return StorageReply::Failed(format!(
                "outbox writer `{}` is not one of this job's",
                call.writer()
            ));
        }
        call.serve(&self.store).map_or_else(failed, StorageReply::Outbox)
    }

    /// Records chunks a worker put: only ids this attempt leased (a worker cannot claim
    /// another's chunks).
    fn record(self, mut write: PutSubtaskWrite) -> StorageReply {
        // W5: only ids leased to this attempt are recorded.
        if let Some(chunk) = write.chunks().find(|c| !self.leases.contains(c.id)) {
            return StorageReply::Failed(format!("chunk {} was not leased to this attempt", chunk.id));
        }
        write.job = self.job;
        self.storage.record_subtask(write).map_or_else(failed, StorageReply::Written)
    }

    /// Writes a snapshot whose entries the worker sent.
    fn write(self, wire: WireSubtaskWrite) -> StorageReply {
        let WireSubtaskWrite {
            checkpoint,
            operator,
            subtask,
            full,
            scopes,
            previous,
            blob,
            channel_state,
            max_chain_length,
        } = wire;
        let write = SubtaskWrite {
            job: self.job,
            checkpoint,
            operator,
            subtask,
            full,
            scopes: Arc::new(scopes),
            previous,
            blob,
            channel_state,
            max_chain_length: usize::try_from(max_chain_length).unwrap_or(usize::MAX),
        };
        self.storage.write_subtask(write).map_or_else(failed, StorageReply::Written)
    }

    /// Visits `chains`, sending the live entries in batches of about
    /// [`VISIT_BATCH_BYTES`]; returns the last batch, or `None` when the worker is gone.
    fn visit(
        &self,
        chains: &[Vec<u64>],
        worker: u64,
        call: u64,
        handle: &tokio::runtime::Handle,
    ) -> Option<StorageReply> {
        let mut batch: Vec<StateEntry> = Vec::new();
        let mut bytes = 0usize;
        let mut gone = false;
        let visited = self.storage.visit_chains(&self.job, chains, &mut |state, key, value| {
            bytes += state.len() + key.len() + value.len() + 16;
            batch.push(StateEntry {
                state: state.to_string(),
                key: key.to_vec(),
                value: Some(value.to_vec()),
            });
            if bytes >= VISIT_BATCH_BYTES {
                bytes = 0;
                let reply = StorageReply::Entries { entries: std::mem::take(&mut batch), done: false };
                if !handle.block_on(self.workers.send(worker, ToWorker::Storage { call, reply })) {
                    gone = true;
                    return std::ops::ControlFlow::Break(());
                }
            }
            std::ops::ControlFlow::Continue(())
        });
        match visited {
            Err(e) => Some(failed(e)),
            Ok(_) if gone => None,
            Ok(_) => Some(StorageReply::Entries { entries: batch, done: true }),
        }
    }
}
