//! Beyond one machine (issue 22, docs/design.md §13): `weir serve` is the controller and
//! `weir worker` processes register with it over a control session each
//! ([`protocol`]). The controller keeps the registry of workers ([`Workers`]): who is
//! live, with what data address and slots, and who was lost and why (heartbeat timeout,
//! broken session, replaced). While any worker is live, each attempt of a job runs on the
//! workers ([`Cluster`], `deploy`; the worker's side is `executor`), its channels crossing
//! processes over the data plane ([`data`]). Without a cluster listener (the default)
//! nothing here runs and every job runs in the server's process.

mod admission;
mod controller;
pub mod data;
mod deploy;
mod executor;
pub mod objects;
pub mod outbox;
pub mod placement;
pub mod protocol;
mod quota;
mod remote_storage;
mod storage_service;
pub mod tls;
pub mod workdir;
pub mod worker;

pub use controller::{
    AttemptInbox, ClusterConfig, ClusterConfigError, MAX_LOST, WorkerEvent, WorkerInfo, Workers, accept,
};
pub use deploy::{Cluster, ClusterStartError};
pub use executor::{ExecutorConfig, WorkerChunks};
