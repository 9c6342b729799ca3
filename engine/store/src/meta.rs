//! The history row of a checkpoint ([`CheckpointMeta`]), kept forever: its life cycle
//! ([`CheckpointStatus`]) and its statistics ([`SubtaskStats`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The life cycle of a checkpoint. Only `Completed` checkpoints are ever restored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// Triggered, not yet complete.
    #[default]
    InProgress,
    /// Every subtask acknowledged; the manifest was stored durably.
    Completed,
    /// Aborted, timed out, or interrupted by a restart.
    Failed,
}

impl fmt::Display for CheckpointStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CheckpointStatus::InProgress => "in progress",
            CheckpointStatus::Completed => "completed",
            CheckpointStatus::Failed => "failed",
        })
    }
}

/// Statistics of one subtask's part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubtaskStats {
    /// The operator (node) id.
    pub operator: String,
    /// The subtask index.
    pub subtask: u32,
    /// When the acknowledgement arrived (unix ms).
    pub ack_time_ms: u64,
    /// Time spent in the synchronous part of the snapshot.
    pub sync_ms: f64,
    /// Time spent writing the snapshot.
    pub async_ms: f64,
    /// Time spent aligning barriers.
    pub alignment_ms: f64,
    /// Bytes buffered during alignment.
    pub alignment_bytes: u64,
    /// Time between the trigger and the first barrier reaching the subtask.
    pub start_delay_ms: f64,
    /// Bytes written by this subtask for this checkpoint.
    pub state_bytes: u64,
    /// Total size of the chunks of the subtask's chains and of its channel state
    /// ([`CheckpointStorage::complete`] fills it in), so that the subtasks' figures add up to
    /// [`CheckpointMeta::full_size`].
    ///
    /// [`CheckpointStorage::complete`]: crate::CheckpointStorage::complete
    pub full_state_bytes: u64,
    /// The subtask took this checkpoint unaligned: its barrier overtook in-flight records,
    /// which were persisted with the checkpoint as channel state.
    #[serde(default)]
    pub unaligned: bool,
    /// Bytes of in-flight records (and watermarks) persisted as channel state.
    #[serde(default)]
    pub persisted_in_flight_bytes: u64,
    /// When the subtask switched this checkpoint from aligned to unaligned (its alignment
    /// waited longer than `aligned_timeout_ms`), unix ms; `None` when it did not switch (an
    /// aligned checkpoint, or one unaligned from its start).
    #[serde(default)]
    pub switched_to_unaligned_ms: Option<u64>,
}

/// The history row of a checkpoint (kept forever, also after retention removed its manifest).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// The job.
    pub job: String,
    /// The checkpoint id (increasing per job, never reused).
    pub id: u64,
    /// Where the checkpoint is in its life cycle.
    pub status: CheckpointStatus,
    /// The checkpoint taken at the end of the input.
    pub is_final: bool,
    /// The final checkpoint was taken because the job was stopped, not because its input
    /// ended: the job resumes from it when started again.
    #[serde(default)]
    pub stopped: bool,
    /// Taken for a savepoint: retention keeps its manifest (and chunks) until
    /// [`Store::unpin`].
    ///
    /// [`Store::unpin`]: crate::Store::unpin
    #[serde(default)]
    pub pinned: bool,
    /// This checkpoint holds a savepoint's state, written when the job was started from
    /// savepoint `savepoint` (it is the job's first).
    #[serde(default)]
    pub savepoint: Option<String>,
    /// When it was triggered (unix ms).
    pub trigger_time_ms: u64,
    /// Completion or failure time (unix ms).
    pub end_time_ms: Option<u64>,
    /// End minus trigger time.
    pub duration_ms: Option<f64>,
    /// Bytes written by this checkpoint (its incremental size; the engine sums
    /// [`SubtaskState::bytes_written`], which includes channel state).
    ///
    /// [`SubtaskState::bytes_written`]: crate::SubtaskState::bytes_written
    pub state_size: u64,
    /// Total bytes of every chunk the manifest references, channel state included: it
    /// belongs to the checkpoint ([`CheckpointStorage::complete`] fills it in).
    ///
    /// [`CheckpointStorage::complete`]: crate::CheckpointStorage::complete
    pub full_size: u64,
    /// Why it failed.
    pub failure: Option<String>,
    /// Per-subtask statistics.
    pub subtasks: Vec<SubtaskStats>,
    /// Whether its manifest is still kept (false once retention removed it, and for
    /// checkpoints that never completed).
    pub retained: bool,
}

impl CheckpointMeta {
    /// A new in-progress checkpoint.
    pub fn new(job: impl Into<String>, id: u64, trigger_time_ms: u64) -> Self {
        CheckpointMeta { job: job.into(), id, trigger_time_ms, ..CheckpointMeta::default() }
    }
}
