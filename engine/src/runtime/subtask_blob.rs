//! A subtask's state that is not keyed state — source position, watermarks, timers, a
//! sink's pending transactions, the state schema version — stored as the subtask's blob
//! ([`TaskState`]), and why saved state cannot be restored into a subtask
//! ([`TaskRestoreError`]).

use serde::{Deserialize, Serialize};
use weir_store::{Manifest, SubtaskState};

/// Per-subtask state that is not keyed state: stored as the subtask's blob.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// Sources: the position at the barrier.
    pub position: Option<serde_json::Value>,
    /// Sources: highest event time seen and watermark emitted.
    pub source_watermark: Option<(i64, i64)>,
    /// Operators: the watermark of every input channel.
    pub watermarks: Vec<i64>,
    /// Operators: registered event-time timers.
    pub timers: Vec<(i64, Vec<u8>)>,
    /// Sinks: pre-committed transactions not yet committed, by checkpoint id.
    pub sink_pending: Vec<(u64, serde_json::Value)>,
    /// Operators: the state schema version of the module that wrote this snapshot (its
    /// `describe().state-version`); `None` in checkpoints written before it was recorded.
    #[serde(default)]
    pub state_version: Option<u32>,
    /// Operators and sinks: the in-flight messages an unaligned checkpoint persisted as
    /// channel state (checked on restore: lost channel state fails the restore).
    #[serde(default)]
    pub in_flight_messages: u64,
}

/// Why saved state cannot be restored into a job's subtask.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskRestoreError {
    /// A subtask's blob does not decode.
    #[error("corrupt task state: {0}")]
    Corrupt(#[from] rmp_serde::decode::Error),
    /// The checkpoint was written by a module of another state schema version.
    #[error(
        "operator `{operator}`: the checkpoint's state has schema version {recorded} but the module has \
         version {module}; start a changed module from a savepoint"
    )]
    StateVersion {
        /// The operator's node id.
        operator: String,
        /// The version recorded in the checkpoint.
        recorded: u32,
        /// The module's version.
        module: u32,
    },
    /// The checkpoint has no state for a node of the job.
    #[error("the checkpoint has no state for node `{0}`")]
    MissingNode(String),
    /// The checkpoint was taken at another parallelism.
    #[error(
        "the checkpoint has {checkpoint} subtask(s) of node `{node}`, the job {job} (changing parallelism \
         needs a savepoint)"
    )]
    Parallelism {
        /// The node id.
        node: String,
        /// Subtasks in the checkpoint.
        checkpoint: usize,
        /// Subtasks in the job.
        job: u32,
    },
    /// The channel state (in-flight data) of an unaligned checkpoint is lost or damaged:
    /// restoring without it would drop records.
    #[error(
        "the checkpoint's channel state (the in-flight data of an unaligned checkpoint) cannot be \
         restored: {0}; resuming without it would lose records"
    )]
    ChannelState(String),
    /// An operator's saved state has no channel watermarks.
    #[error("the checkpoint has no channel watermarks for this operator")]
    NoWatermarks,
}

impl TaskState {
    /// Encodes as MessagePack.
    pub fn encode(&self) -> Vec<u8> {
        rmp_serde::to_vec_named(self).expect("task state encodes")
    }

    /// Decodes, with an error for a corrupt blob.
    pub fn decode(bytes: &[u8]) -> Result<Self, TaskRestoreError> {
        if bytes.is_empty() {
            return Ok(TaskState::default());
        }
        Ok(rmp_serde::from_slice(bytes)?)
    }

    /// Operators: the state schema version to restore operator `operator`'s saved state
    /// with, into a module of version `module_version`. A job's checkpoints are restored
    /// into the module they were taken with, so the recorded version must be the module's
    /// (a checkpoint written before versions were recorded counts as the module's own);
    /// migrating state to a changed module is the work of a savepoint.
    pub fn restore_version(&self, operator: &str, module_version: u32) -> Result<u32, TaskRestoreError> {
        match self.state_version {
            Some(recorded) if recorded != module_version => Err(TaskRestoreError::StateVersion {
                operator: operator.to_string(),
                recorded,
                module: module_version,
            }),
            _ => Ok(module_version),
        }
    }
}

/// Subtask `subtask` of `node` in a manifest.
pub(crate) fn subtask_state<'m>(
    manifest: &'m Manifest,
    node: &str,
    subtask: u32,
) -> Option<&'m SubtaskState> {
    manifest.get(node).and_then(|m| m.get(&subtask))
}

/// The task state a subtask restores (the default when the manifest has none).
pub(crate) fn restored_state(
    manifest: &Manifest,
    node: &str,
    subtask: u32,
) -> Result<TaskState, TaskRestoreError> {
    match subtask_state(manifest, node, subtask) {
        Some(s) => TaskState::decode(&s.blob),
        None => Ok(TaskState::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_an_empty_blob_is_the_default() {
        let state = TaskState {
            position: Some(serde_json::json!({"next": 7})),
            timers: vec![(5, b"k".to_vec())],
            state_version: Some(2),
            ..TaskState::default()
        };
        assert_eq!(TaskState::decode(&state.encode()).unwrap(), state);
        assert_eq!(TaskState::decode(&[]).unwrap(), TaskState::default());
        assert!(matches!(TaskState::decode(&[0xc1]), Err(TaskRestoreError::Corrupt(_))));
    }

    #[test]
    fn restores_only_into_the_recorded_version() {
        let old = TaskState { state_version: None, ..TaskState::default() };
        assert_eq!(old.restore_version("count", 3).unwrap(), 3);
        let v1 = TaskState { state_version: Some(1), ..TaskState::default() };
        assert_eq!(v1.restore_version("count", 1).unwrap(), 1);
        let err = v1.restore_version("count", 2).unwrap_err().to_string();
        assert!(err.contains("schema version 1 but the module has version 2"), "{err}");
    }
}
