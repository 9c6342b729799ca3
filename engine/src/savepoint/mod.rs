//! Savepoints seen from the engine: what a savepoint says about the job it was taken from
//! ([`Description`]), and starting a job from one ([`restore_into`], checked beforehand with
//! [`check_restore`]).
//!
//! The store keeps a savepoint as a self-contained copy: per operator, the live entries of
//! every scope (a key group, or one subtask's operator state) and every subtask's blob
//! ([`TaskState`](crate::runtime::TaskState)). Starting a job from it writes the job's *first checkpoint* from that
//! copy, mapped onto the new job, after checking that it fits; the runtime then restores that
//! checkpoint like any other. Mapping, by node id:
//!
//! - keyed state moves by key group: new subtask `i` of `p` gets the groups
//!   [`key_group_range`](crate::key_groups::key_group_range)`(i, p, max_parallelism)`, whatever the old parallelism was (the
//!   number of key groups, `max_parallelism`, must stay the same);
//! - operator (non-keyed) state and timers without a key belong to a subtask index: new
//!   subtask `i` gets old subtask `i`'s. Scaling down would drop the state of the removed
//!   subtasks, so it needs `allow_non_restored_state`;
//! - keyed timers follow their key's group;
//! - source positions are kept per subtask, or merged and re-split by the connector when the
//!   parallelism changes ([`SourceConfig::rescale_positions`](crate::connectors::SourceConfig::rescale_positions));
//! - sinks start clean: the transactions a savepoint's checkpoint owns belong to the job it
//!   was taken from, which commits them;
//! - event time restarts: watermarks are not restored (a drained savepoint's watermark is
//!   the end of time), timers are;
//! - an operator whose module has another state schema version is migrated by the new
//!   module once, here: restore with the old version, open, and a full snapshot in the new
//!   format. A version the module cannot migrate from is refused before anything is written.
//!
//! Where things are (imports go down this list, never up):
//! - `restore`: [`restore_into`], the steps of starting a job from a savepoint;
//! - `first_checkpoint`: the new job's first checkpoint, written subtask by subtask;
//! - `migration`: a subtask's state migrated to the new module's schema version;
//! - `node_plan`: what each node of the new job gets, loaded and checked;
//! - `description`: [`Description`] and [`DescriptionError`];
//! - `options`, `report`: [`RestoreOptions`] and [`RestoreReport`];
//! - `store_call`: store calls on the blocking pool;
//! - `error`: [`RestoreError`].

mod description;
mod error;
mod first_checkpoint;
mod migration;
mod node_plan;
mod options;
mod report;
mod restore;
mod store_call;

pub use description::{DESCRIPTION_FORMAT, Description, DescriptionError, NodeDescription};
pub use error::RestoreError;
pub use options::RestoreOptions;
pub use report::{NodeCheck, NodeRestore, RestoreCheck, RestoreReport};
pub use restore::{check_restore, restore_into};
