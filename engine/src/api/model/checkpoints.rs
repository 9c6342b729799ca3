//! Checkpoints: the history with counts and a min/avg/max summary (Flink's shape), and one
//! checkpoint with per-operator and per-subtask statistics.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use weir_store::{CheckpointMeta, CheckpointStatus, SubtaskStats};

/// A checkpoint in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CheckpointView {
    /// Its id.
    pub id: u64,
    /// `in_progress`, `completed` or `failed`.
    pub status: String,
    /// Taken at the end of the job (input ended, or stopped).
    pub is_final: bool,
    /// The final checkpoint of a stopped job (it resumes from it).
    pub stopped: bool,
    /// Trigger time, unix ms.
    pub trigger_time_ms: u64,
    /// Completion (or failure) time, unix ms.
    pub end_time_ms: Option<u64>,
    /// End-to-end duration.
    pub duration_ms: Option<f64>,
    /// Bytes written by this checkpoint (incremental size).
    pub state_size: u64,
    /// Bytes of the whole state it refers to.
    pub full_size: u64,
    /// Subtasks that acknowledged it.
    pub acknowledged_subtasks: u32,
    /// When the latest acknowledgement arrived, unix ms.
    pub latest_ack_time_ms: Option<u64>,
    /// Subtasks of the job.
    pub total_subtasks: u32,
    /// Longest alignment of a subtask.
    pub max_alignment_ms: f64,
    /// Bytes processed during alignment, all subtasks (Flink's "processed in-flight data").
    pub alignment_bytes: u64,
    /// The same as `alignment_bytes`, under Flink's name: bytes of in-flight records the
    /// subtasks processed before their barriers were aligned.
    pub processed_in_flight_bytes: u64,
    /// Bytes of in-flight records persisted with the checkpoint as channel state (by the
    /// subtasks that took it unaligned), all subtasks.
    pub persisted_in_flight_bytes: u64,
    /// At least one subtask took it unaligned (from its start, or after switching).
    pub unaligned: bool,
    /// How its barriers were handled: `aligned`, `unaligned` (from the start), or
    /// `aligned_then_unaligned` (it began aligned and switched after `aligned_timeout_ms`).
    pub checkpoint_type: CheckpointType,
    /// When the first subtask switched it from aligned to unaligned, unix ms (none when no
    /// subtask switched).
    pub switched_to_unaligned_ms: Option<u64>,
    /// Taken for a savepoint (kept from retention until the savepoint copied it).
    pub pinned: bool,
    /// The savepoint whose state this checkpoint holds (a job's first, when it started from
    /// a savepoint).
    pub savepoint: Option<String>,
    /// Why it failed.
    pub failure: Option<String>,
    /// Its state is still kept (retention removes old ones).
    pub retained: bool,
}

/// How a checkpoint's barriers were handled (Flink's `checkpoint_type`: `CHECKPOINT` or
/// `UNALIGNED_CHECKPOINT`, with the switch from one to the other told apart). Of a checkpoint
/// in progress: as far as its acknowledged subtasks tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointType {
    /// Every subtask aligned its barriers (also every savepoint and final checkpoint).
    Aligned,
    /// Unaligned from its trigger: barriers overtook the in-flight records, which were
    /// persisted with it.
    Unaligned,
    /// It began aligned and at least one subtask switched to unaligned when its alignment
    /// outlasted `aligned_timeout_ms`.
    AlignedThenUnaligned,
}

impl CheckpointType {
    /// The type of a checkpoint whose (acknowledged) subtasks have `stats`.
    pub fn of<'a>(stats: impl IntoIterator<Item = &'a SubtaskStats>) -> Self {
        let mut kind = CheckpointType::Aligned;
        for s in stats {
            if s.switched_to_unaligned_ms.is_some() {
                return CheckpointType::AlignedThenUnaligned;
            }
            if took_unaligned(s) {
                kind = CheckpointType::Unaligned;
            }
        }
        kind
    }
}

/// The subtask took the checkpoint unaligned (from the start, or after switching).
pub(crate) fn took_unaligned(s: &SubtaskStats) -> bool {
    s.unaligned || s.switched_to_unaligned_ms.is_some()
}

/// The view of a checkpoint of a job with `total_subtasks` subtasks.
pub(crate) fn view(meta: &CheckpointMeta, total_subtasks: u32) -> CheckpointView {
    let alignment_bytes = meta.subtasks.iter().map(|s| s.alignment_bytes).sum();
    CheckpointView {
        id: meta.id,
        status: match meta.status {
            CheckpointStatus::InProgress => "in_progress",
            CheckpointStatus::Completed => "completed",
            CheckpointStatus::Failed => "failed",
        }
        .to_string(),
        is_final: meta.is_final,
        stopped: meta.stopped,
        trigger_time_ms: meta.trigger_time_ms,
        end_time_ms: meta.end_time_ms,
        duration_ms: meta.duration_ms,
        state_size: meta.state_size,
        full_size: meta.full_size,
        acknowledged_subtasks: meta.subtasks.len() as u32,
        latest_ack_time_ms: meta.subtasks.iter().map(|s| s.ack_time_ms).max(),
        total_subtasks,
        max_alignment_ms: meta.subtasks.iter().map(|s| s.alignment_ms).fold(0.0, f64::max),
        alignment_bytes,
        processed_in_flight_bytes: alignment_bytes,
        persisted_in_flight_bytes: meta.subtasks.iter().map(|s| s.persisted_in_flight_bytes).sum(),
        unaligned: meta.subtasks.iter().any(took_unaligned),
        checkpoint_type: CheckpointType::of(&meta.subtasks),
        switched_to_unaligned_ms: meta.subtasks.iter().filter_map(|s| s.switched_to_unaligned_ms).min(),
        pinned: meta.pinned,
        savepoint: meta.savepoint.clone(),
        failure: meta.failure.clone(),
        retained: meta.retained,
    }
}

/// Counts by status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Counts {
    /// Every checkpoint.
    pub total: u64,
    /// In progress.
    pub in_progress: u64,
    /// Completed.
    pub completed: u64,
    /// Failed.
    pub failed: u64,
    /// Completed ones taken unaligned (by at least one subtask, from the start or after a
    /// switch).
    pub unaligned: u64,
    /// Completed ones that began aligned and switched to unaligned (part of `unaligned`).
    pub switched_to_unaligned: u64,
}

/// Minimum, average and maximum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MinAvgMax {
    /// Minimum.
    pub min: f64,
    /// Average.
    pub avg: f64,
    /// Maximum.
    pub max: f64,
}

impl MinAvgMax {
    /// Over `values` (all zero when there are none).
    pub(crate) fn of(values: impl Iterator<Item = f64>) -> Self {
        let (mut n, mut sum, mut min, mut max) = (0u64, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for v in values {
            n += 1;
            sum += v;
            min = min.min(v);
            max = max.max(v);
        }
        if n == 0 { MinAvgMax::default() } else { MinAvgMax { min, avg: sum / n as f64, max } }
    }
}

/// Summary over the completed checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Summary {
    /// End-to-end duration, ms.
    pub duration_ms: MinAvgMax,
    /// Incremental size, bytes.
    pub state_size: MinAvgMax,
    /// Full size, bytes.
    pub full_size: MinAvgMax,
    /// Longest alignment of a subtask, ms.
    pub max_alignment_ms: MinAvgMax,
    /// Bytes processed during alignment.
    pub alignment_bytes: MinAvgMax,
    /// Bytes of in-flight records persisted with the checkpoint.
    pub persisted_in_flight_bytes: MinAvgMax,
}

/// The latest checkpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Latest {
    /// The latest completed one.
    pub completed: Option<CheckpointView>,
    /// The latest failed one.
    pub failed: Option<CheckpointView>,
}

/// The checkpoint history of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct History {
    /// Counts by status.
    pub counts: Counts,
    /// Summary over the completed checkpoints.
    pub summary: Summary,
    /// The latest ones.
    pub latest: Latest,
    /// Checkpoints, newest first (at most `limit`).
    pub data: Vec<CheckpointView>,
}

/// Statistics of one subtask's part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SubtaskView {
    /// Node id.
    pub operator: String,
    /// Subtask index.
    pub subtask: u32,
    /// Acknowledgement time, unix ms.
    pub ack_time_ms: u64,
    /// Synchronous part (the snapshot on the processing path), ms.
    pub sync_ms: f64,
    /// Asynchronous part (writing to the store), ms.
    pub async_ms: f64,
    /// Alignment duration, ms.
    pub alignment_ms: f64,
    /// Bytes processed during alignment.
    pub alignment_bytes: u64,
    /// The same as `alignment_bytes`, under Flink's name.
    pub processed_in_flight_bytes: u64,
    /// It took the checkpoint unaligned: its barrier overtook in-flight records, persisted
    /// with the checkpoint.
    pub unaligned: bool,
    /// Bytes of in-flight records it persisted as channel state.
    pub persisted_in_flight_bytes: u64,
    /// When it switched from aligned to unaligned, unix ms (none when it did not switch).
    pub switched_to_unaligned_ms: Option<u64>,
    /// From the trigger to the first barrier's arrival, ms.
    pub start_delay_ms: f64,
    /// Bytes written.
    pub state_bytes: u64,
    /// Bytes of the subtask's whole state.
    pub full_state_bytes: u64,
}

/// One operator's part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OperatorView {
    /// Node id.
    pub id: String,
    /// Subtasks that acknowledged.
    pub acknowledged_subtasks: u32,
    /// Bytes written.
    pub state_size: u64,
    /// Bytes of the whole state.
    pub full_size: u64,
    /// Slowest subtask's end-to-end time from trigger to acknowledgement, ms.
    pub max_end_to_end_ms: f64,
    /// Sync part over subtasks.
    pub sync_ms: MinAvgMax,
    /// Async part over subtasks.
    pub async_ms: MinAvgMax,
    /// Alignment duration over subtasks.
    pub alignment_ms: MinAvgMax,
    /// Alignment bytes over subtasks.
    pub alignment_bytes: MinAvgMax,
    /// Bytes processed during alignment, summed over subtasks.
    pub processed_in_flight_bytes: u64,
    /// Bytes of in-flight records persisted, summed over subtasks.
    pub persisted_in_flight_bytes: u64,
    /// Subtasks that took the checkpoint unaligned.
    pub unaligned_subtasks: u32,
    /// When its first subtask switched from aligned to unaligned, unix ms.
    pub switched_to_unaligned_ms: Option<u64>,
    /// Start delay over subtasks.
    pub start_delay_ms: MinAvgMax,
}

/// One checkpoint with per-operator and per-subtask statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CheckpointDetail {
    /// The checkpoint.
    #[serde(flatten)]
    pub checkpoint: CheckpointView,
    /// Per operator, in graph order.
    pub operators: Vec<OperatorView>,
    /// Per subtask.
    pub subtasks: Vec<SubtaskView>,
}

/// A triggered checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Triggered {
    /// Its id: poll `GET .../checkpoints/{id}` for its status.
    pub id: u64,
}

/// Paging of the history.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
pub struct HistoryQuery {
    /// Most checkpoints listed, newest first (default 100, at most 100000).
    pub limit: Option<usize>,
}
