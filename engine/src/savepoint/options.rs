//! How to start a job from a savepoint ([`RestoreOptions`]).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How to start a job from a savepoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RestoreOptions {
    /// Start even if some of the savepoint's state has no place in the new job (a node that
    /// is gone or changed kind, operator state of subtasks removed by scaling down): that
    /// state is dropped.
    #[serde(default)]
    pub allow_non_restored_state: bool,
}
