//! Workers (`/api/v1/workers`, admin).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::cluster::WorkerInfo;
use crate::server::worker_load::WorkerLoad;

/// A worker registered with this server (`weir worker`), live or lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Worker {
    /// Its id: one per session (a worker that registers again gets a new one).
    pub id: u64,
    /// Its name (a pod or host name).
    pub name: String,
    /// `live`, or `lost` (see `lost_reason`).
    pub status: String,
    /// Why it was lost: `no heartbeat for … ms`, `the session closed`, `left: …`,
    /// `replaced by a new session of the same worker`; `null` while live.
    pub lost_reason: Option<String>,
    /// Where its control session comes from.
    pub peer: String,
    /// Where other workers reach its data plane.
    pub data_addr: String,
    /// Subtasks it runs at once.
    pub slots: u32,
    /// Slots reserved for jobs' running attempts.
    pub used_slots: u32,
    /// Subtasks of running jobs it runs now (0 for a lost worker).
    pub subtasks: u32,
    /// Its build (`weir` version).
    pub version: String,
    /// When it registered, unix ms.
    pub registered_ms: u64,
    /// Milliseconds since its last heartbeat (for a lost worker: when it was lost).
    pub heartbeat_age_ms: u64,
}

impl From<(WorkerInfo, WorkerLoad)> for Worker {
    fn from((w, load): (WorkerInfo, WorkerLoad)) -> Self {
        Worker {
            id: w.id,
            name: w.name,
            status: if w.lost.is_some() { "lost" } else { "live" }.into(),
            lost_reason: w.lost,
            peer: w.peer,
            data_addr: w.data_addr,
            slots: w.slots,
            used_slots: w.reserved.values().sum(),
            subtasks: load.subtasks,
            version: w.version,
            registered_ms: w.registered_ms,
            heartbeat_age_ms: w.heartbeat_age_ms,
        }
    }
}
