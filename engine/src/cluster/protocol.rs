//! The control session between the controller and a worker: one TCP connection per
//! worker, length-prefixed frames (4-byte big-endian length, [`LengthDelimitedCodec`]),
//! each frame one MessagePack message ([`ToController`] or [`ToWorker`], `rmp-serde` with
//! field names, so a field can be added without breaking an older peer that ignores it).
//!
//! The session opens with the worker's [`Hello`] (protocol version, cluster token, name,
//! data address, slots) and the controller's [`ToWorker::Welcome`] or
//! [`ToWorker::Refused`]; then the worker sends a [`ToController::Heartbeat`] every
//! `heartbeat_interval_ms` and the controller answers each, so both sides notice a dead
//! peer within `heartbeat_timeout_ms`. Every frame is bounded (`max_frame_bytes`); a frame
//! past the bound, a message that does not decode, or a message out of turn closes the
//! session.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt as _, StreamExt as _};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Framed, LengthDelimitedCodec};
use weir_store::{CheckpointMeta, Manifest, ScopeDelta, StateEntry, SubtaskState, SubtaskStats};

use crate::connectors::kafka::KafkaAccess;
use crate::connectors::{SinkConfig, SourceConfig, SourceKind};
use crate::guest::logs::LogLine;
use crate::plan::{NodeBody, Plan};
use crate::runtime::{Control, ToCoordinator};

/// The version of this protocol; a worker speaking another one is refused.
pub const PROTOCOL_VERSION: u32 = 5;

/// What a worker tells the controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToController {
    /// The first message of a session.
    Hello(Hello),
    /// The worker is alive (every `heartbeat_interval_ms`).
    Heartbeat {
        /// Counts up from 1 within a session; the controller echoes it.
        seq: u64,
    },
    /// The worker is leaving (it was asked to stop).
    Goodbye {
        /// Why, for the controller's log and the API.
        reason: String,
    },
    /// The worker set up its part of `attempt` (its input channels are registered), or
    /// could not.
    Deployed {
        /// The attempt.
        attempt: AttemptId,
        /// Why not, when it could not.
        result: Result<(), DeployRefusal>,
    },
    /// A message of one of the attempt's subtasks to the coordinator.
    Coordinator {
        /// The attempt.
        attempt: AttemptId,
        /// The message.
        message: WireToCoordinator,
    },
    /// The counters of the subtasks of the worker's part (every second, and before `Ended`).
    Metrics {
        /// The attempt.
        attempt: AttemptId,
        /// Per subtask here: its totals so far.
        counters: Vec<SubtaskCounters>,
    },
    /// Lines its operators logged (every [`LOGS_EVERY`], and before `Ended`), at most
    /// [`MAX_SHIPPED_LOG_BYTES`] of text per message.
    Logs {
        /// The attempt.
        attempt: AttemptId,
        /// The lines, oldest first (their `attempt` is the controller's to set).
        lines: Vec<LogLine>,
        /// Lines dropped since the last message, per (node, subtask): over an instance's
        /// rate, or over the worker's buffer.
        dropped: Vec<(String, u32, u64)>,
    },
    /// The worker's part of `attempt` ended: every subtask of it ended well, or one failed.
    Ended {
        /// The attempt.
        attempt: AttemptId,
        /// The first failure, if any.
        failure: Option<RemoteFailure>,
    },
    /// A checkpoint storage call of one of the attempt's subtasks (the controller's store
    /// is the single commit point).
    Storage {
        /// The attempt.
        attempt: AttemptId,
        /// Numbers the call within the session; the answers carry it.
        call: u64,
        /// The call.
        request: StorageRequest,
    },
}

/// Why a worker could not set up its part of an attempt, as it tells the controller (on
/// the wire: the reason's text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct DeployRefusal(pub String);

/// A worker's registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the worker.
    pub protocol: u32,
    /// The cluster token (`cluster.token` of the controller): only holders run subtasks.
    pub token: String,
    /// The worker's name (a pod or host name): 1 to 64 bytes of `[A-Za-z0-9._-]`. A new
    /// session under a name that is registered replaces the old one.
    pub name: String,
    /// Where other workers reach its data plane (`host:port`).
    pub data_addr: String,
    /// Subtasks it runs at once.
    pub slots: u32,
    /// The worker's build (`weir` version), shown in the API.
    pub version: String,
}

/// What the controller tells a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// The worker is registered.
    Welcome {
        /// Its id for this session (a new one for every session).
        worker: u64,
        /// How often to send a heartbeat.
        heartbeat_interval_ms: u64,
        /// After this long without a message the controller drops the session (and the
        /// worker should, without an answer).
        heartbeat_timeout_ms: u64,
    },
    /// The worker is not registered; the session ends.
    Refused {
        /// Why (the worker prints it).
        reason: String,
        /// Whether trying again later may succeed (the cluster is full), or not (a bad
        /// token, another protocol version, a bad name).
        retry: bool,
    },
    /// The answer to a heartbeat.
    HeartbeatAck {
        /// The heartbeat's `seq`.
        seq: u64,
    },
    /// Set up this worker's part of an attempt (answered with `Deployed`).
    Deploy(Box<Deploy>),
    /// Every part of the attempt is set up: open the output channels and run.
    Start {
        /// The attempt.
        attempt: AttemptId,
    },
    /// The coordinator's message to task `task` (an index in the job's task list).
    Control {
        /// The attempt.
        attempt: AttemptId,
        /// The task.
        task: u32,
        /// The message.
        control: WireControl,
    },
    /// The job is asked to stop (its sources end their input; a final checkpoint follows).
    Stop {
        /// The attempt.
        attempt: AttemptId,
        /// Drain (event time to the end) rather than suspend.
        drain: bool,
        /// The final checkpoint is pinned (a savepoint's).
        pin: bool,
    },
    /// The attempt ended elsewhere (a failure, a cancel): abort its subtasks here.
    Cancel {
        /// The attempt.
        attempt: AttemptId,
    },
    /// An answer to a checkpoint storage call.
    Storage {
        /// The call's number.
        call: u64,
        /// The answer (a visit of chains gives several, the last one `done`).
        reply: StorageReply,
    },
}

/// One attempt of one job. Every job-scoped message names it; a message of an attempt that
/// is not the current one is dropped, so a worker that was paused across a restart (a
/// zombie) changes nothing when it resumes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AttemptId {
    /// The job.
    pub job: String,
    /// The attempt's number: it grows with every attempt the controller starts, across its
    /// own restarts (a leased chunk id).
    pub attempt: u64,
}

/// What a worker needs to run its part of an attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deploy {
    /// The attempt.
    pub attempt: AttemptId,
    /// The job's spec, as JSON (the worker plans it again with the modules below).
    pub spec_json: String,
    /// The operator modules by the reference the spec uses.
    pub modules: BTreeMap<String, ModuleBytes>,
    /// The checkpoint the attempt restores, with its manifest.
    pub restore: Option<(CheckpointMeta, Manifest)>,
    /// Per node (plan order), per subtask: the place (index into `addresses`) that runs it.
    pub places: Vec<Vec<u32>>,
    /// Each place's data address.
    pub addresses: Vec<String>,
    /// The receiving worker's place.
    pub here: u32,
    /// The controller's chunk store, when it is one a worker can share: a worker whose own
    /// chunk store is the same one puts its subtasks' chunks there itself and has the
    /// controller record them ([`StorageRequest::RecordSubtask`]); otherwise its writes
    /// carry the entries to the controller ([`StorageRequest::WriteSubtask`]).
    #[serde(default)]
    pub chunk_store: Option<SharedChunkStore>,
    /// The connection each Kafka node resolved to on the controller (the tenant's grant),
    /// by node id: a worker plans the spec again, and a spec never holds an address.
    #[serde(default)]
    pub kafka: BTreeMap<String, KafkaAccess>,
}

/// The Kafka connection each Kafka node of `plan` resolved to, by node id.
pub fn kafka_access(plan: &Plan) -> BTreeMap<String, KafkaAccess> {
    let mut out = BTreeMap::new();
    for node in &plan.nodes {
        let access = match &node.body {
            NodeBody::Source(SourceConfig { kind: SourceKind::Kafka(c), .. }) => c.access.as_deref(),
            NodeBody::Sink(SinkConfig::Kafka(c)) => c.access.as_deref(),
            _ => None,
        };
        if let Some(access) = access {
            out.insert(node.id.clone(), access.clone());
        }
    }
    out
}

/// Sets the connections of [`kafka_access`] into a plan made from the same spec.
pub fn set_kafka_access(plan: &mut Plan, access: &BTreeMap<String, KafkaAccess>) {
    for node in &mut plan.nodes {
        let Some(access) = access.get(&node.id) else { continue };
        let access = Some(std::sync::Arc::new(access.clone()));
        match &mut node.body {
            NodeBody::Source(SourceConfig { kind: SourceKind::Kafka(c), .. }) => c.access = access,
            NodeBody::Sink(SinkConfig::Kafka(c)) => c.access = access,
            _ => {}
        }
    }
}

/// The controller's chunk store, as a [`Deploy`] names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedChunkStore {
    /// Where it is ([`super::objects::ObjectStoreConfig::location`]).
    pub location: String,
    /// The largest chunk the controller's store writes: a worker's chunks are cut alike.
    pub max_chunk_bytes: u64,
}

/// An operator module's bytes (the worker compiles them, or takes them from its cache).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleBytes {
    /// The module's name.
    pub name: String,
    /// The component.
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

/// A subtask's counters (totals of the attempt) and where its event time stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct SubtaskCounters {
    /// The task (index in the job's task list).
    pub task: u64,
    pub records_in: u64,
    pub records_out: u64,
    pub batches_in: u64,
    pub batches_out: u64,
    /// Time it waited for room downstream.
    pub blocked_ns: u64,
    #[serde(default)]
    pub bytes_in: u64,
    #[serde(default)]
    pub bytes_out: u64,
    /// Time it spent on records.
    #[serde(default)]
    pub busy_ns: u64,
    /// The watermark it last sent downstream.
    #[serde(default)]
    pub watermark: Option<i64>,
    /// Its output is idle.
    #[serde(default)]
    pub idle: bool,
    /// A Kafka source's lag: (topic, partition, records behind the partition's end).
    #[serde(default)]
    pub kafka_lag: Vec<(String, i32, i64)>,
    /// The operator's own counters (at most [`crate::runtime::GUEST_COUNTERS`]).
    #[serde(default)]
    pub guest_counters: Vec<(String, u64)>,
}

/// How often a worker ships its operators' log lines.
pub const LOGS_EVERY: Duration = Duration::from_millis(250);

/// Most bytes of log text in one [`ToController::Logs`] (and held by a worker's part
/// between two of them: what is over it is dropped and counted).
pub const MAX_SHIPPED_LOG_BYTES: usize = 256 << 10;

/// How a subtask on a worker failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteFailure {
    /// Its node.
    pub node: String,
    /// Its subtask.
    pub subtask: u32,
    /// The error.
    pub message: String,
    /// The failure merely follows from another one (a channel that closed).
    pub secondary: bool,
}

/// [`Control`] on the wire: instants travel as their age.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireControl {
    /// [`Control::Trigger`].
    Trigger {
        /// Checkpoint id.
        id: u64,
        /// Microseconds since the trigger.
        age_us: u64,
        /// The final checkpoint.
        is_final: bool,
        /// When it may switch to unaligned, in microseconds.
        unaligned_after_us: Option<u64>,
    },
    /// [`Control::Started`].
    Started {
        /// Checkpoint id.
        id: u64,
        /// Microseconds since the trigger.
        age_us: u64,
        /// When it switches to unaligned, in microseconds after the trigger.
        unaligned_after_us: u64,
    },
    /// [`Control::Completed`].
    Completed(u64),
    /// [`Control::Aborted`].
    Aborted(u64),
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn since(age_us: u64) -> Instant {
    let now = Instant::now();
    now.checked_sub(Duration::from_micros(age_us)).unwrap_or(now)
}

impl From<Control> for WireControl {
    fn from(control: Control) -> Self {
        match control {
            Control::Trigger { id, triggered, is_final, unaligned_after } => WireControl::Trigger {
                id,
                age_us: micros(triggered.elapsed()),
                is_final,
                unaligned_after_us: unaligned_after.map(micros),
            },
            Control::Started { id, triggered, unaligned_after } => WireControl::Started {
                id,
                age_us: micros(triggered.elapsed()),
                unaligned_after_us: micros(unaligned_after),
            },
            Control::Completed(id) => WireControl::Completed(id),
            Control::Aborted(id) => WireControl::Aborted(id),
        }
    }
}

impl From<WireControl> for Control {
    fn from(wire: WireControl) -> Self {
        match wire {
            WireControl::Trigger { id, age_us, is_final, unaligned_after_us } => Control::Trigger {
                id,
                triggered: since(age_us),
                is_final,
                unaligned_after: unaligned_after_us.map(Duration::from_micros),
            },
            WireControl::Started { id, age_us, unaligned_after_us } => Control::Started {
                id,
                triggered: since(age_us),
                unaligned_after: Duration::from_micros(unaligned_after_us),
            },
            WireControl::Completed(id) => Control::Completed(id),
            WireControl::Aborted(id) => Control::Aborted(id),
        }
    }
}

/// [`ToCoordinator`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WireToCoordinator {
    /// [`ToCoordinator::Ack`].
    Ack {
        /// Checkpoint id.
        id: u64,
        /// The task.
        task: u64,
        /// Its state handles.
        state: SubtaskState,
        /// Its statistics.
        stats: SubtaskStats,
    },
    /// [`ToCoordinator::Decline`].
    Decline {
        /// Checkpoint id.
        id: u64,
        /// The task.
        task: u64,
        /// Why.
        reason: String,
    },
    /// [`ToCoordinator::SourceFinished`].
    SourceFinished {
        /// The task.
        task: u64,
        /// It ended because the job is stopping.
        stopped: bool,
    },
}

impl From<ToCoordinator> for WireToCoordinator {
    fn from(message: ToCoordinator) -> Self {
        match message {
            ToCoordinator::Ack { id, task, state, stats } => {
                WireToCoordinator::Ack { id, task: task as u64, state, stats }
            }
            ToCoordinator::Decline { id, task, reason } => {
                WireToCoordinator::Decline { id, task: task as u64, reason }
            }
            ToCoordinator::SourceFinished { task, stopped } => {
                WireToCoordinator::SourceFinished { task: task as u64, stopped }
            }
        }
    }
}

impl WireToCoordinator {
    /// The task it is about.
    pub fn task(&self) -> u64 {
        match self {
            WireToCoordinator::Ack { task, .. }
            | WireToCoordinator::Decline { task, .. }
            | WireToCoordinator::SourceFinished { task, .. } => *task,
        }
    }

    /// Back to the coordinator's message (the controller checked the task index).
    pub fn into_message(self) -> ToCoordinator {
        match self {
            WireToCoordinator::Ack { id, task, state, stats } => {
                ToCoordinator::Ack { id, task: task as usize, state, stats }
            }
            WireToCoordinator::Decline { id, task, reason } => {
                ToCoordinator::Decline { id, task: task as usize, reason }
            }
            WireToCoordinator::SourceFinished { task, stopped } => {
                ToCoordinator::SourceFinished { task: task as usize, stopped }
            }
        }
    }
}

/// A checkpoint storage call of a subtask on a worker (the job is the attempt's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StorageRequest {
    /// [`weir_store::CheckpointStorage::write_subtask`].
    WriteSubtask(WireSubtaskWrite),
    /// [`weir_store::CheckpointStorage::read_chain`].
    ReadChain {
        /// The chain.
        chain: Vec<u64>,
    },
    /// [`weir_store::CheckpointStorage::visit_chains`]: the live entries come back in
    /// batches.
    VisitChains {
        /// The chains.
        chains: Vec<Vec<u64>>,
    },
    /// Chunk ids for the worker's own puts ([`weir_store::CheckpointStorage::lease_chunk_ids`];
    /// at most [`MAX_LEASE`]); answered [`StorageReply::Leased`].
    LeaseChunkIds {
        /// How many.
        count: u64,
    },
    /// [`weir_store::CheckpointStorage::record_subtask`]: chunks the worker put under ids
    /// leased to this attempt (the job is the attempt's, whatever the write says).
    RecordSubtask(weir_store::PutSubtaskWrite),
    /// A sink's outbox call ([`weir_store::Outbox`]), against the controller's store; its
    /// writer must be one of the attempt's job. Answered [`StorageReply::Outbox`].
    Outbox(super::outbox::OutboxCall),
    /// Reserves bytes of the job owner's storage quota for host state on the worker's disk;
    /// answered [`StorageReply::Done`] or the quota's error. What the attempt holds when it
    /// ends is given back.
    Reserve {
        /// How many.
        bytes: u64,
    },
    /// Gives back bytes reserved before (at most what the attempt holds).
    Release {
        /// How many.
        bytes: u64,
    },
}

/// The most chunk ids one [`StorageRequest::LeaseChunkIds`] gets.
pub const MAX_LEASE: u64 = 1 << 20;

/// [`weir_store::SubtaskWrite`] on the wire (the job is the attempt's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct WireSubtaskWrite {
    pub checkpoint: u64,
    pub operator: String,
    pub subtask: u32,
    pub full: bool,
    pub scopes: Vec<ScopeDelta>,
    pub previous: BTreeMap<u32, Vec<u64>>,
    #[serde(with = "serde_bytes")]
    pub blob: Vec<u8>,
    pub channel_state: Vec<StateEntry>,
    pub max_chain_length: u64,
}

/// An answer to a [`StorageRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StorageReply {
    /// The subtask's new state handles (a write).
    Written(SubtaskState),
    /// Entries of a read (all of them) or a visit (a batch; `done` with the last).
    Entries {
        /// The entries.
        entries: Vec<StateEntry>,
        /// The last batch.
        done: bool,
    },
    /// Chunk ids leased to the attempt: `first..end`.
    Leased {
        /// The first.
        first: u64,
        /// One past the last.
        end: u64,
    },
    /// The answer to an outbox call.
    Outbox(super::outbox::OutboxAnswer),
    /// The call succeeded and has nothing to say.
    Done,
    /// The call failed.
    Failed(String),
}

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The connection failed, or a frame was past the size bound.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A frame did not hold a message of the protocol.
    #[error("a message that does not decode: {0}")]
    Decode(#[from] rmp_serde::decode::Error),
    /// A message could not be encoded.
    #[error("a message that does not encode: {0}")]
    Encode(#[from] rmp_serde::encode::Error),
    /// Frames that do not make a message: an unknown tag, parts past the message bound.
    #[error("bad framing: {0}")]
    Framing(String),
}

/// A frame's first byte: the frame is a whole message, or a part of one (more follow), or
/// its last part. A message longer than a frame (a module, a snapshot) crosses as parts; the
/// receiver joins them up to its message bound.
const WHOLE: u8 = 0;
const PART: u8 = 1;
const LAST: u8 = 2;

/// One end of a session: typed messages over length-prefixed frames.
pub struct Session<S> {
    writer: SessionWriter<S>,
    reader: SessionReader<S>,
}

impl<S> std::fmt::Debug for Session<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").finish_non_exhaustive()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Session<S> {
    /// A session over `io` whose frames (both ways) are at most `max_frame_bytes`, and
    /// whose messages are at most one frame until [`set_max_message`](Self::set_max_message).
    pub fn new(io: S, max_frame_bytes: usize) -> Self {
        let codec = LengthDelimitedCodec::builder().max_frame_length(max_frame_bytes).new_codec();
        let (sink, stream) = Framed::new(io, codec).split();
        Session {
            writer: SessionWriter { sink, max_frame_bytes },
            reader: SessionReader { stream, partial: Vec::new(), max_message_bytes: max_frame_bytes },
        }
    }

    /// Frames of up to `bytes` both ways from now on (what was read stays buffered): a small
    /// bound for the hello, raised once the peer proved the cluster token.
    pub fn with_max_frame(self, bytes: usize) -> Self {
        let SessionReader { stream, partial, max_message_bytes } = self.reader;
        let Ok(mut framed) = stream.reunite(self.writer.sink) else {
            unreachable!("the two halves of one split reunite")
        };
        framed.codec_mut().set_max_frame_length(bytes);
        let (sink, stream) = framed.split();
        Session {
            writer: SessionWriter { sink, max_frame_bytes: bytes },
            reader: SessionReader { stream, partial, max_message_bytes: max_message_bytes.max(bytes) },
        }
    }

    /// Accepts messages of up to `bytes` (in parts) from now on: after the peer proved it
    /// holds the cluster token.
    pub fn set_max_message(&mut self, bytes: usize) {
        self.reader.max_message_bytes = bytes;
    }

    /// Sends `message` (flushed).
    pub async fn send<T: Serialize>(&mut self, message: &T) -> Result<(), SessionError> {
        self.writer.send(message).await
    }

    /// The next message; `None` when the peer closed the connection. Cancel-safe (a frame
    /// read in part, and the parts of a message read so far, stay buffered), so it can race
    /// a timer in `select!`.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, SessionError> {
        self.reader.recv().await
    }

    /// The two directions apart, so that one task can send while another receives (a
    /// long message each way at once must not wait on each other).
    pub fn split(self) -> (SessionWriter<S>, SessionReader<S>) {
        (self.writer, self.reader)
    }
}

/// The sending half of a session.
pub struct SessionWriter<S> {
    sink: SplitSink<Framed<S, LengthDelimitedCodec>, bytes::Bytes>,
    max_frame_bytes: usize,
}

impl<S: AsyncRead + AsyncWrite + Unpin> SessionWriter<S> {
    /// Sends `message` (flushed), in parts when it is longer than a frame.
    pub async fn send<T: Serialize>(&mut self, message: &T) -> Result<(), SessionError> {
        let encoded = rmp_serde::to_vec_named(message)?;
        let room = self.max_frame_bytes.saturating_sub(1).max(1);
        if encoded.len() <= room {
            let mut frame = Vec::with_capacity(encoded.len() + 1);
            frame.push(WHOLE);
            frame.extend_from_slice(&encoded);
            self.sink.send(bytes::Bytes::from(frame)).await?;
            return Ok(());
        }
        let parts = encoded.chunks(room).count();
        for (i, part) in encoded.chunks(room).enumerate() {
            let mut frame = Vec::with_capacity(part.len() + 1);
            frame.push(if i + 1 == parts { LAST } else { PART });
            frame.extend_from_slice(part);
            self.sink.feed(bytes::Bytes::from(frame)).await?;
        }
        self.sink.flush().await?;
        Ok(())
    }
}

/// Sends whatever arrives on `outgoing`, in order, on its own task (so that the session's
/// reader never waits on a long send). Returns the task and where the first send failure's
/// reason arrives (the task then ends).
pub fn spawn_writer<S, T>(
    mut writer: SessionWriter<S>,
    mut outgoing: tokio::sync::mpsc::Receiver<T>,
) -> (tokio::task::JoinHandle<()>, tokio::sync::oneshot::Receiver<String>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: Serialize + Send + Sync + 'static,
{
    let (failed_tx, failed) = tokio::sync::oneshot::channel::<String>();
    let task = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            if let Err(e) = writer.send(&message).await {
                let _ = failed_tx.send(format!("the session failed: {e}"));
                return;
            }
        }
    });
    (task, failed)
}

/// The receiving half of a session.
pub struct SessionReader<S> {
    stream: SplitStream<Framed<S, LengthDelimitedCodec>>,
    /// The parts of a message received so far.
    partial: Vec<u8>,
    max_message_bytes: usize,
}

impl<S: AsyncRead + AsyncWrite + Unpin> SessionReader<S> {
    /// See [`Session::recv`].
    pub async fn recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, SessionError> {
        loop {
            let frame = match self.stream.next().await {
                None => return Ok(None),
                // A TLS peer that went away without its close_notify (killed, or a plain
                // close) has closed the session all the same.
                Some(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                Some(frame) => frame?,
            };
            let Some((&tag, body)) = frame.split_first() else {
                return Err(SessionError::Framing("an empty frame".into()));
            };
            match tag {
                WHOLE if self.partial.is_empty() => return Ok(Some(rmp_serde::from_slice(body)?)),
                PART | LAST => {
                    if self.partial.len() + body.len() > self.max_message_bytes {
                        return Err(SessionError::Framing(format!(
                            "a message longer than {} bytes",
                            self.max_message_bytes
                        )));
                    }
                    self.partial.extend_from_slice(body);
                    if tag == LAST {
                        let whole = std::mem::take(&mut self.partial);
                        return Ok(Some(rmp_serde::from_slice(&whole)?));
                    }
                }
                _ => return Err(SessionError::Framing(format!("a frame tagged {tag} out of turn"))),
            }
        }
    }
}

/// Whether `name` is a valid worker name: 1 to 64 bytes of `[A-Za-z0-9._-]`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests;
