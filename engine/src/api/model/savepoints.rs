//! Savepoints, and pages of an operator's state (in a savepoint or a checkpoint).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::savepoint::Description;
use crate::server;

/// What happens to the job when its savepoint is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SavepointMode {
    /// The job keeps running (the savepoint copies an extra checkpoint).
    #[default]
    KeepRunning,
    /// The job is cancelled once the savepoint is complete.
    Cancel,
    /// The job stops: sources stop at a batch boundary, the final checkpoint is the
    /// savepoint, and the job ends `stopped` (it can be restarted from it).
    Stop,
    /// Stop with drain: sources stop, the end-of-input watermark fires every timer, the
    /// pipeline empties, the final checkpoint is the savepoint, and the job ends `finished`.
    Drain,
}

impl From<server::savepoints::SavepointMode> for SavepointMode {
    fn from(m: server::savepoints::SavepointMode) -> Self {
        use server::savepoints::SavepointMode as M;
        match m {
            M::KeepRunning => SavepointMode::KeepRunning,
            M::Cancel => SavepointMode::Cancel,
            M::Stop => SavepointMode::Stop,
            M::Drain => SavepointMode::Drain,
        }
    }
}

impl From<SavepointMode> for server::savepoints::SavepointMode {
    fn from(m: SavepointMode) -> Self {
        use server::savepoints::SavepointMode as M;
        match m {
            SavepointMode::KeepRunning => M::KeepRunning,
            SavepointMode::Cancel => M::Cancel,
            SavepointMode::Stop => M::Stop,
            SavepointMode::Drain => M::Drain,
        }
    }
}

/// Where a savepoint is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SavepointStatus {
    /// Its checkpoint is being taken or copied.
    Pending,
    /// Complete: it can be restored, exported, inspected.
    Completed,
    /// It could not be taken (`error` says why); nothing of it is stored.
    Failed,
}

impl From<server::savepoints::SavepointStatus> for SavepointStatus {
    fn from(s: server::savepoints::SavepointStatus) -> Self {
        use server::savepoints::SavepointStatus as S;
        match s {
            S::Pending => SavepointStatus::Pending,
            S::Completed => SavepointStatus::Completed,
            S::Failed => SavepointStatus::Failed,
        }
    }
}

/// A savepoint of a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SavepointRecord {
    /// Its id (32 hex digits).
    pub id: String,
    /// The job it was taken from (for an imported one: the job on the server it came from).
    pub job: String,
    /// The job's name.
    pub job_name: String,
    /// How it was triggered (none for an imported one).
    pub mode: Option<SavepointMode>,
    /// Pending, completed or failed.
    pub status: SavepointStatus,
    /// The job's checkpoint it copies (once known).
    pub checkpoint: Option<u64>,
    /// Why it failed.
    pub error: Option<String>,
    /// When it was triggered (or imported), unix ms.
    pub created_ms: u64,
    /// When it completed or failed, unix ms.
    pub completed_ms: Option<u64>,
    /// Bytes of state (keys, values and subtask blobs).
    pub bytes: u64,
    /// Keyed and operator state entries.
    pub entries: u64,
    /// Imported: the id it had on the server it was exported from.
    pub origin: Option<String>,
    /// The job it was taken from: nodes, parallelism, modules, state schema versions.
    pub description: Option<Description>,
}

impl From<server::savepoints::SavepointRecord> for SavepointRecord {
    fn from(r: server::savepoints::SavepointRecord) -> Self {
        SavepointRecord {
            id: r.id,
            job: r.job,
            job_name: r.job_name,
            mode: r.mode.map(Into::into),
            status: r.status.into(),
            checkpoint: r.checkpoint,
            error: r.error,
            created_ms: r.created_ms,
            completed_ms: r.completed_ms,
            bytes: r.bytes,
            entries: r.entries,
            origin: r.origin,
            description: r.description,
        }
    }
}

/// How to take a savepoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerSavepoint {
    /// What happens to the job: `keep_running` (default), `cancel`, `stop`, or `drain`
    /// (stop with drain: the pipeline empties and the job finishes).
    #[serde(default)]
    pub mode: SavepointMode,
}

/// Paging of state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StateQuery {
    /// Only entries of this named state.
    pub state: Option<String>,
    /// Where to continue: the `next` of the previous page.
    pub cursor: Option<String>,
    /// Entries per page (default 100, at most 1000).
    pub limit: Option<usize>,
}

impl From<StateQuery> for server::state_pages::StateQuery {
    fn from(q: StateQuery) -> Self {
        server::state_pages::StateQuery { state: q.state, cursor: q.cursor, limit: q.limit, max_bytes: None }
    }
}

/// One state entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StateItem {
    /// Keyed state: its key group.
    pub key_group: Option<u32>,
    /// Operator (non-keyed) state: the subtask it belongs to.
    pub subtask: Option<u32>,
    /// The state's name.
    pub state: String,
    /// The key, decoded from MessagePack (`{"hex": ...}` when it is not MessagePack). For
    /// host keyed state (a state named `@host/<name>`), the record key.
    pub key: serde_json::Value,
    /// Host keyed state: the entry's field within its record key, decoded likewise (absent
    /// for the empty field and for guest state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<serde_json::Value>,
    /// The value, decoded likewise.
    pub value: serde_json::Value,
}

impl From<server::state_pages::StateItem> for StateItem {
    fn from(i: server::state_pages::StateItem) -> Self {
        StateItem {
            key_group: i.key_group,
            subtask: i.subtask,
            state: i.state,
            key: i.key,
            field: i.field,
            value: i.value,
        }
    }
}

/// A page of an operator's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatePage {
    /// The operator.
    pub operator: String,
    /// The entries, by key group (then operator state by subtask), then state name and key.
    pub data: Vec<StateItem>,
    /// The cursor of the next page; absent on the last.
    pub next: Option<String>,
}

impl From<server::state_pages::StatePage> for StatePage {
    fn from(p: server::state_pages::StatePage) -> Self {
        StatePage { operator: p.operator, data: p.data.into_iter().map(Into::into).collect(), next: p.next }
    }
}
