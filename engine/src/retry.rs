//! Whether trying again can help: the class every connector and cluster error reports
//! (after Arroyo's `RetryHint`), so that the restart loop can tell a broker that is down
//! for a moment from a config that will never work.

/// Whether the same work, tried again unchanged, may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryHint {
    /// A passing fault: a peer unreachable or restarting, a timeout, a lost connection, a
    /// broker's retriable error code. A restart may get past it.
    Transient,
    /// Retrying cannot help until a person changes something: a bad config, a refused
    /// authorization, malformed input, a quota, a bug.
    Final,
}

impl RetryHint {
    /// True when a retry may help.
    pub fn is_transient(self) -> bool {
        self == RetryHint::Transient
    }
}

/// An error that knows whether a retry may help.
pub trait Retry {
    /// Whether the failed work, tried again unchanged, may succeed.
    fn retry_hint(&self) -> RetryHint;
}

/// A store failure may pass when it is I/O (redb's), the chunk store or a call to the
/// controller; a quota, corrupt or missing data and a refused operation do not.
impl Retry for weir_store::StoreError {
    fn retry_hint(&self) -> RetryHint {
        use weir_store::StoreError;
        match self {
            StoreError::Storage(_) | StoreError::External(_) | StoreError::Remote(_) => RetryHint::Transient,
            _ => RetryHint::Final,
        }
    }
}
