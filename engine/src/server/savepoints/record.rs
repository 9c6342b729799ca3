//! A savepoint as the server records it: how it was asked for, where it is in its life,
//! and the table of records (one row per savepoint, keyed by tenant and id). The store
//! holds the copied state under the same id.

use redb::TableDefinition;
use serde::{Deserialize, Serialize};

use crate::savepoint::Description;
use crate::server::codec::{decode_record, encode_record};
use crate::server::error::ServerResult;

/// (tenant, savepoint id) → savepoint record (JSON).
pub(crate) const SAVEPOINTS: TableDefinition<'_, (&str, &str), &[u8]> =
    TableDefinition::new("weir.savepoint_records");

/// What happens to the job when its savepoint is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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

impl SavepointMode {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            SavepointMode::KeepRunning => "keep_running",
            SavepointMode::Cancel => "cancel",
            SavepointMode::Stop => "stop",
            SavepointMode::Drain => "drain",
        }
    }
}

/// Where a savepoint is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SavepointStatus {
    /// Its checkpoint is being taken or copied.
    Pending,
    /// Complete: it can be restored, exported, inspected.
    Completed,
    /// It could not be taken (`error` says why); nothing of it is stored.
    Failed,
}

/// A savepoint of a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavepointRecord {
    /// Its id (32 hex digits).
    pub id: String,
    /// The owning tenant.
    #[serde(skip)]
    pub tenant: String,
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

#[derive(Serialize, Deserialize)]
struct StoredSavepoint {
    tenant: String,
    #[serde(flatten)]
    record: SavepointRecord,
}

/// A savepoint record from its stored row.
pub(super) fn decode(bytes: &[u8]) -> ServerResult<SavepointRecord> {
    let stored: StoredSavepoint = decode_record(bytes)?;
    let mut record = stored.record;
    record.tenant = stored.tenant;
    Ok(record)
}

/// The stored row of `record`, a savepoint of `tenant`.
pub(super) fn encode(tenant: &str, record: &SavepointRecord) -> ServerResult<Vec<u8>> {
    encode_record(&StoredSavepoint { tenant: tenant.to_string(), record: record.clone() })
}
