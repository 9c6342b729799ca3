//! The async part of a snapshot: one writer task per subtask stores its snapshots in
//! order, off the processing path, and acks them to the coordinator.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use weir_store::{
    CheckpointStorage, ScopeDelta, StateEntry, StoreError, SubtaskState, SubtaskStats, SubtaskWrite,
};

use super::control::ToCoordinator;
use super::error::TaskError;
use super::faults::{FaultInjector, FaultPoint};
use super::in_flight::{ChannelMessages, encode};
use super::scopes::split_into_scopes;
use super::subtask_blob::TaskState;
use crate::clock::unix_ms;
use crate::guest::bindings::StateDelta;
use crate::local_state::LocalChanges;

/// A snapshot handed from a task to its writer.
#[derive(Debug)]
pub struct WriteRequest {
    /// Checkpoint id.
    pub id: u64,
    /// The guest's changes since its previous snapshot (operators).
    pub delta: Option<StateDelta>,
    /// The changes of the instance's host keyed state since its previous snapshot, with a
    /// snapshot of its local store to read them from (operators that use host state).
    pub host: Option<LocalChanges>,
    /// The task's other state.
    pub state: TaskState,
    /// Statistics of the sync part (the writer adds the async duration and sizes).
    pub stats: SubtaskStats,
    /// Channel state (unaligned checkpoints): per input channel, the in-flight messages.
    pub channels: Vec<ChannelMessages>,
    /// The checkpoint was given up at the task after its snapshot: keep the changes for the
    /// next checkpoint (C4), write nothing, decline with this reason.
    pub decline: Option<String>,
}

impl WriteRequest {
    /// A snapshot with no channel state (yet), not declined.
    pub fn new(id: u64, delta: Option<StateDelta>, state: TaskState, stats: SubtaskStats) -> Self {
        WriteRequest { id, delta, host: None, state, stats, channels: Vec::new(), decline: None }
    }

    /// The same snapshot with the changes of the instance's host keyed state.
    pub fn with_host(mut self, host: Option<LocalChanges>) -> Self {
        self.host = host;
        self
    }
}

#[derive(Debug)]
enum WriterMessage {
    Write(Box<WriteRequest>),
    Completed(u64),
}

/// Where a task sends its snapshots: a queue to its own writer task, which stores them in
/// order without blocking the task.
///
/// Invariant C4 (docs/design.md §6): the writer keeps the guest's deltas since the last
/// *completed* checkpoint and writes, for checkpoint `n`, the chains of that completed
/// checkpoint plus all of them merged. So a checkpoint that fails or is aborted (whatever
/// the timing of the abort) loses nothing: its changes go out again with the next one, and
/// no chain ever builds on chunks that an abort deleted. The task forwards completions
/// ([`SnapshotWriter::completed`]) in order with its snapshots.
#[derive(Debug, Clone)]
pub struct SnapshotWriter {
    tx: mpsc::UnboundedSender<WriterMessage>,
}

impl SnapshotWriter {
    /// Queues a snapshot. Fails only if the writer is gone (its task failed).
    pub fn send(&self, request: WriteRequest) -> Result<(), TaskError> {
        self.tx.send(WriterMessage::Write(Box::new(request))).map_err(|_| TaskError::WriterGone)
    }

    /// Checkpoint `id` completed: its chains become the base of later writes.
    pub fn completed(&self, id: u64) {
        let _ = self.tx.send(WriterMessage::Completed(id));
    }
}

/// Everything a writer needs.
pub struct WriterConfig {
    /// Job id.
    pub job: String,
    /// Node id.
    pub operator: String,
    /// Subtask index.
    pub subtask: u32,
    /// Index of the task in the job.
    pub task: usize,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// Chain bound.
    pub max_chain_length: usize,
    /// The chains of the restored checkpoint (empty for a fresh start).
    pub previous: BTreeMap<u32, Vec<u64>>,
    /// The store.
    pub storage: Arc<dyn CheckpointStorage>,
    /// Where acks go.
    pub coordinator: mpsc::UnboundedSender<ToCoordinator>,
    /// Fault injection.
    pub faults: Option<Arc<FaultInjector>>,
}

type Changes = BTreeMap<u32, BTreeMap<(String, Vec<u8>), Option<Vec<u8>>>>;

/// Creates a writer; the returned future is the writer task (it ends when every
/// [`SnapshotWriter`] is dropped, or fails on an injected fault or a malformed delta).
pub fn snapshot_writer(
    config: WriterConfig,
) -> (SnapshotWriter, impl Future<Output = Result<(), TaskError>> + Send + 'static) {
    let (tx, mut rx) = mpsc::unbounded_channel::<WriterMessage>();
    let fut = async move {
        let mut writer = Writer {
            base: config.previous,
            deltas: Vec::new(),
            written: BTreeMap::new(),
            shared: Arc::new(WriterShared {
                job: config.job,
                operator: config.operator,
                subtask: config.subtask,
                max_parallelism: config.max_parallelism,
                max_chain_length: config.max_chain_length,
                storage: config.storage,
            }),
            task: config.task,
            coordinator: config.coordinator,
            faults: config.faults,
        };
        while let Some(message) = rx.recv().await {
            match message {
                WriterMessage::Completed(id) => writer.completed(id),
                WriterMessage::Write(request) => writer.write(*request).await?,
            }
        }
        Ok(())
    };
    (SnapshotWriter { tx }, fut)
}

/// The writer task's state.
struct Writer {
    /// The chains of the last completed checkpoint.
    base: BTreeMap<u32, Vec<u64>>,
    /// The deltas taken since (by checkpoint id; several are kept as their merge).
    deltas: Vec<(u64, Arc<Vec<ScopeDelta>>)>,
    /// The chains written for each pending checkpoint.
    written: BTreeMap<u64, BTreeMap<u32, Vec<u64>>>,
    shared: Arc<WriterShared>,
    task: usize,
    coordinator: mpsc::UnboundedSender<ToCoordinator>,
    faults: Option<Arc<FaultInjector>>,
}

/// What the blocking part of a write made of a snapshot: the delta to keep until a
/// checkpoint completes, and (unless the snapshot was given up) the stored state with the
/// bytes of channel state it holds.
type Written = (Option<Arc<Vec<ScopeDelta>>>, Option<(Result<SubtaskState, StoreError>, u64)>);

impl Writer {
    /// Checkpoint `id` completed: its chains become the base, the deltas it holds go.
    fn completed(&mut self, id: u64) {
        if let Some(chains) = self.written.remove(&id) {
            self.base = chains;
            let (done, rest): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.deltas).into_iter().partition(|(k, _)| *k <= id);
            self.deltas = rest;
            // Freeing a large delta (an allocation per entry) is work too: not on the
            // threads that process records.
            if !done.is_empty() {
                tokio::task::spawn_blocking(move || drop(done));
            }
        }
        self.written.retain(|k, _| *k > id);
    }

    /// Writes one snapshot and acks it, or declines it. Fails (and the task with it) only
    /// on an injected fault or a snapshot that can never be written.
    async fn write(&mut self, request: WriteRequest) -> Result<(), TaskError> {
        let id = request.id;
        if let Some(f) = &self.faults
            && request.decline.is_none()
        {
            f.hit(FaultPoint::AsyncWrite)?;
            if !request.channels.is_empty() {
                f.hit(FaultPoint::ChannelState)?;
            }
        }
        let started = Instant::now();
        let shared = self.shared.clone();
        let previous = self.base.clone();
        let earlier: Vec<Arc<Vec<ScopeDelta>>> = self.deltas.iter().map(|(_, d)| d.clone()).collect();
        let WriteRequest { delta, host, state, mut stats, channels, decline: given_up, .. } = request;
        let decline_reason = given_up.clone();
        let pending =
            Pending { id, delta, host, state, channels, given_up: given_up.is_some(), earlier, previous };
        // Everything heavy (splitting by key group, merging, encoding, redb) runs on the
        // blocking pool, off the threads that process records.
        let result = tokio::task::spawn_blocking(move || pending.write(&shared))
            .await
            .map_err(TaskError::from)
            .and_then(|r| r);
        let written = match result {
            Ok((keep, written)) => {
                match keep {
                    Some(merged) if !self.deltas.is_empty() => self.deltas = vec![(id, merged)],
                    Some(split) => self.deltas.push((id, split)),
                    None => {}
                }
                written
            }
            Err(error) => {
                // A malformed snapshot (or a panic while writing) cannot be written now or
                // later: the task fails and the job recovers.
                self.decline(id, &error);
                return Err(error);
            }
        };
        match written {
            // Given up at the task: its changes go out with the next checkpoint.
            None => self.decline(id, &decline_reason.unwrap_or_default()),
            Some((Ok(state), in_flight_bytes)) => {
                self.written.insert(id, state.chains.clone());
                stats.async_ms = started.elapsed().as_secs_f64() * 1e3;
                stats.state_bytes = state.bytes_written;
                stats.persisted_in_flight_bytes = in_flight_bytes;
                stats.ack_time_ms = unix_ms();
                let _ = self.coordinator.send(ToCoordinator::Ack { id, task: self.task, state, stats });
            }
            // A failed write fails this checkpoint only; its changes go out with the next.
            Some((Err(error), _)) => self.decline(id, &error),
        }
        Ok(())
    }

    fn decline(&self, id: u64, reason: &dyn std::fmt::Display) {
        let _ = self.coordinator.send(ToCoordinator::Decline {
            id,
            task: self.task,
            reason: format!("{}/{}: {reason}", self.shared.operator, self.shared.subtask),
        });
    }
}

/// One snapshot on its way to the blocking pool, with the deltas still pending before it.
struct Pending {
    id: u64,
    delta: Option<StateDelta>,
    host: Option<LocalChanges>,
    state: TaskState,
    channels: Vec<ChannelMessages>,
    given_up: bool,
    earlier: Vec<Arc<Vec<ScopeDelta>>>,
    /// The chains of the last completed checkpoint.
    previous: BTreeMap<u32, Vec<u64>>,
}

impl Pending {
    /// Splits the snapshot by key group, merges it with the pending deltas and (unless it
    /// was given up) writes it.
    fn write(self, shared: &WriterShared) -> Result<Written, TaskError> {
        let Pending { id, delta, host, state, channels, given_up, earlier, previous } = self;
        let mut split = match &delta {
            Some(d) => Some(split_into_scopes(d, shared.max_parallelism, shared.subtask)?),
            None => None,
        };
        drop(delta);
        // Host keyed state: the values of the changed keys, read from the local store's
        // snapshot of the barrier.
        if let Some(host) = host {
            let scopes = host.into_scopes()?;
            split = Some(match split {
                Some(guest) => join_scopes(guest, scopes),
                None => scopes,
            });
        }
        let split = split.map(Arc::new);
        let mut all = earlier;
        all.extend(split.clone());
        let scopes = merge(&all);
        // Several pending deltas are kept as their merge from now on (bounded by the keys
        // changed, however many checkpoints fail in a row).
        let keep = if all.len() > 1 { Some(scopes.clone()) } else { split };
        if given_up {
            return Ok((keep, None));
        }
        let (channel_state, in_flight_bytes) = encode(&channels);
        drop(channels);
        let blob = state.encode();
        let written = shared.storage.write_subtask(SubtaskWrite {
            job: shared.job.clone(),
            checkpoint: id,
            operator: shared.operator.clone(),
            subtask: shared.subtask,
            full: false,
            scopes,
            previous,
            blob,
            max_chain_length: shared.max_chain_length,
            channel_state,
        });
        Ok((keep, Some((written, in_flight_bytes))))
    }
}

/// The scopes of two deltas of one snapshot that change disjoint states (guest and host
/// state), one delta per scope.
fn join_scopes(a: Vec<ScopeDelta>, b: Vec<ScopeDelta>) -> Vec<ScopeDelta> {
    if b.is_empty() {
        return a;
    }
    let mut by_scope: BTreeMap<u32, Vec<StateEntry>> = BTreeMap::new();
    for s in a.into_iter().chain(b) {
        by_scope.entry(s.scope).or_default().extend(s.entries);
    }
    by_scope.into_iter().map(|(scope, entries)| ScopeDelta { scope, entries }).collect()
}

/// Merges deltas in order (a later change of a key wins) into one delta per scope.
fn merge(deltas: &[Arc<Vec<ScopeDelta>>]) -> Arc<Vec<ScopeDelta>> {
    match deltas {
        [] => return Arc::new(Vec::new()),
        [only] => return only.clone(),
        _ => {}
    }
    let mut changes: Changes = BTreeMap::new();
    for scopes in deltas {
        for scope in scopes.iter() {
            let m = changes.entry(scope.scope).or_default();
            for e in &scope.entries {
                m.insert((e.state.clone(), e.key.clone()), e.value.clone());
            }
        }
    }
    Arc::new(
        changes
            .into_iter()
            .map(|(scope, m)| ScopeDelta {
                scope,
                entries: m
                    .into_iter()
                    .map(|((state, key), value)| StateEntry { state, key, value })
                    .collect(),
            })
            .collect(),
    )
}

struct WriterShared {
    job: String,
    operator: String,
    subtask: u32,
    max_parallelism: u32,
    max_chain_length: usize,
    storage: Arc<dyn CheckpointStorage>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (state, key, value or tombstone)
    type Change<'a> = (&'a str, &'a [u8], Option<&'a [u8]>);

    fn scope(scope: u32, entries: &[Change<'_>]) -> ScopeDelta {
        ScopeDelta {
            scope,
            entries: entries
                .iter()
                .map(|(s, k, v)| StateEntry {
                    state: s.to_string(),
                    key: k.to_vec(),
                    value: v.map(<[u8]>::to_vec),
                })
                .collect(),
        }
    }

    #[test]
    fn merge_keeps_the_latest_change_of_every_key() {
        let first = Arc::new(vec![scope(1, &[("a", b"x", Some(b"1")), ("a", b"y", Some(b"1"))])]);
        let second = Arc::new(vec![scope(1, &[("a", b"x", None)]), scope(2, &[("a", b"z", Some(b"2"))])]);
        let merged = merge(&[first, second]);
        assert_eq!(
            *merged,
            vec![
                scope(1, &[("a", b"x", None), ("a", b"y", Some(b"1"))]),
                scope(2, &[("a", b"z", Some(b"2"))])
            ]
        );
    }
}
