//! Why a request on host state was refused.

/// Why a request on host state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalStateError {
    /// A name, key, field, value or the number of states is past its limit.
    #[error("{0}")]
    Limit(String),
    /// The key belongs to a key group the instance does not own.
    #[error("the key belongs to key group {group}, which is not one of this subtask's ({start}..{end})")]
    ForeignKey {
        /// The key's group.
        group: u32,
        /// The subtask's first group.
        start: u32,
        /// One past its last group.
        end: u32,
    },
    /// The tenant's storage quota or the disk's free-space floor.
    #[error("{0}")]
    Quota(String),
    /// The local store failed (I/O).
    #[error("the local state store failed: {0}")]
    Store(String),
}

/// A failure of the local store (fjall, the file system) as a [`LocalStateError::Store`].
pub(super) fn store_error(e: impl std::fmt::Display) -> LocalStateError {
    LocalStateError::Store(e.to_string())
}
