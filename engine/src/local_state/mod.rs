//! Keyed state kept by the host on local disk (the WIT import `keyed-state`): one embedded
//! LSM store ([fjall]) per operator instance, so a subtask's state is bounded by the disk
//! and its tenant's storage quota rather than by the guest's memory (Flink's RocksDB
//! backend).
//!
//! The local store is a working copy, never the state of record: checkpoints are. At every
//! barrier the instance hands its writer the keys changed since the last snapshot together
//! with an MVCC snapshot of the store ([`LocalStore::checkpoint`], O(1) on the task); the
//! writer reads their values off the task ([`LocalChanges::into_scopes`]) and stores them in
//! the normal chains as entries of the state `@host/<name>`, key `len ‖ record key ‖ field`,
//! in the scope of the record key's key group. So retention, savepoints, rescale by key
//! group, export/import and inspection treat them as any keyed state; a restore puts them
//! back into a fresh local store ([`LocalRestorer`]) before `open`. A store left behind by a
//! process that died is deleted when the job runs again ([`remove_job_dirs`]).
//!
//! Where things are (imports go down this list, never up):
//! - `restore`: [`LocalRestorer`], filling a fresh store from a checkpoint by bulk ingestion;
//! - `place`: [`LocalPlace`], where one instance's store goes and which key groups it owns;
//! - `store`: [`LocalStore`], one instance's store (reads, writes, scans, spills, the quota
//!   reservation, the sync part of a checkpoint);
//! - `changes`: [`LocalChanges`], one checkpoint's changed keys read into checkpoint entries;
//! - `config`: [`LocalStateConfig`], a job's folder and quota, and [`remove_job_dirs`];
//! - `quota`: [`LocalQuota`] and [`QuotaLedger`], where the disk use is reserved;
//! - `keys`: the checkpoint key and local key layouts ([`chain_key`], [`record_key`] …);
//! - `limits`: the limits on states, keys, fields, values and scans;
//! - `error`: [`LocalStateError`].

mod changes;
mod config;
mod error;
mod keys;
mod limits;
mod place;
mod quota;
mod restore;
mod store;
#[cfg(test)]
mod tests;

pub use changes::LocalChanges;
pub use config::{LocalStateConfig, remove_job_dirs};
pub use error::LocalStateError;
pub use keys::{HOST_STATE_PREFIX, chain_key, is_host_state, record_key, split_chain_key};
pub use limits::{
    CACHE_BYTES, MAX_FIELD_BYTES, MAX_KEY_BYTES, MAX_NAME_BYTES, MAX_SCAN_BYTES, MAX_STATES, MAX_VALUE_BYTES,
};
pub use place::LocalPlace;
pub use quota::{LocalQuota, QuotaLedger};
pub use restore::LocalRestorer;
pub use store::{FieldValue, LocalStore};
