//! Checkpoints, recovery and savepoints: the coordinator's limits, recovery paths one at a
//! time, the exactly-once chaos trials (failures injected and SIGKILL), unaligned checkpoints
//! and how they show in the API, the checkpoint history, and savepoints — restored below the
//! API and driven through it (upgrades, rescaling, schemas, object storage).

mod coordinator;
mod exactly_once;
mod history;
mod poison;
mod poison_python;
mod recovery;
mod savepoint_restore;
mod savepoints;
mod unaligned;
mod unaligned_view;
