//! Errors of loading and running Wasm operators.

use super::bindings::GuestOperatorError;

/// The export or call in which an operator failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `describe`
    Describe,
    /// `open`
    Open,
    /// `process`
    Process,
    /// `on-watermark`
    OnWatermark,
    /// `on-timer`
    OnTimer,
    /// `snapshot`
    Snapshot,
    /// `restore`
    Restore,
    /// instantiation
    Instantiate,
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Call::Describe => "describe",
            Call::Open => "open",
            Call::Process => "process",
            Call::OnWatermark => "on-watermark",
            Call::OnTimer => "on-timer",
            Call::Snapshot => "snapshot",
            Call::Restore => "restore",
            Call::Instantiate => "instantiation",
        })
    }
}

/// Why a module could not be loaded or an operator call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GuestError {
    /// The bytes are not a WebAssembly component at all.
    #[error("module `{module}` is not a WebAssembly component: {reason}")]
    NotAComponent {
        /// The module's name.
        module: String,
        /// The parser's explanation.
        reason: String,
    },
    /// A valid component that does not implement `weir:operator/operator-world`.
    #[error("module `{module}` does not implement the weir:operator@0.2.0 operator world: {reason}")]
    WrongWorld {
        /// The module's name.
        module: String,
        /// What is missing or unexpected.
        reason: String,
    },
    /// The module could not be read or the compiled-module cache failed.
    #[error("module `{module}`: {reason}")]
    Load {
        /// The module's name.
        module: String,
        /// What failed.
        reason: String,
    },
    /// The guest trapped (panic, out-of-bounds access, memory limit, stack overflow...).
    /// The instance cannot be used again.
    #[error("operator `{operator}` (subtask {subtask}) trapped in {call}: {message}")]
    Trap {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that trapped.
        call: Call,
        /// The guest's last error log line (its panic message) and the trap.
        message: String,
    },
    /// The guest ran past its CPU time limit in one call and was stopped.
    #[error(
        "operator `{operator}` (subtask {subtask}) exceeded its CPU limit of {limit_ms} ms in one {call} call and was stopped"
    )]
    CpuLimit {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that ran too long.
        call: Call,
        /// The limit.
        limit_ms: u64,
    },
    /// One call took longer than the job's wall-time limit (`wall_limit_ms`), waiting
    /// included — a guest that sleeps or polls — and was stopped.
    #[error(
        "operator `{operator}` (subtask {subtask}) took longer than its wall-time limit of {limit_ms} ms in one {call} call (wall_limit_ms; waiting in a sleep or poll counts) and was stopped"
    )]
    WallLimit {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that took too long.
        call: Call,
        /// The limit.
        limit_ms: u64,
    },
    /// The guest registered more timers (or timer key bytes) than its instance may hold.
    #[error("operator `{operator}` (subtask {subtask}) was stopped in {call}: {reason}")]
    TimerLimit {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that registered too many.
        call: Call,
        /// The limits and what was registered.
        reason: String,
    },
    /// The guest emitted on side outputs past a limit (bytes per call, name length, names).
    #[error("operator `{operator}` (subtask {subtask}) was stopped in {call}: {reason}")]
    SideOutputLimit {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that emitted.
        call: Call,
        /// The limit and what was emitted.
        reason: String,
    },
    /// A request on host keyed state was refused (a limit, a key of another subtask's key
    /// group, the storage quota, the local store failing).
    #[error("operator `{operator}` (subtask {subtask}) failed in {call}: host keyed state: {reason}")]
    KeyedState {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that made the request.
        call: Call,
        /// What was refused and why.
        reason: String,
    },
    /// The guest grew its linear memory past the instance's limit and was stopped.
    #[error(
        "operator `{operator}` (subtask {subtask}) trapped in {call}: it reached its memory limit of {} MiB ({limit})",
        limit_bytes >> 20
    )]
    MemoryLimit {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that asked for more memory.
        call: Call,
        /// The limit the instance ran with.
        limit_bytes: usize,
        /// Which setting the limit comes from.
        limit: String,
    },
    /// One call returned more output than the job allows per call.
    #[error(
        "operator `{operator}` (subtask {subtask}) returned more than {limit_bytes} bytes of output from one {call} call and was stopped (the job's max_output_bytes_per_call, counting key and value bytes plus 16 bytes per record)"
    )]
    OutputLimit {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call.
        call: Call,
        /// The limit.
        limit_bytes: usize,
    },
    /// The engine's instance pool is full: as many operator instances are alive as the
    /// server allows.
    #[error(
        "cannot instantiate operator `{operator}` (subtask {subtask}): the instance pool is full ({reason}); the server runs at most {max_instances} operator instances at once (max_instances): stop a job or raise max_instances"
    )]
    PoolExhausted {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The pool's size.
        max_instances: u32,
        /// Which of the pool's resources ran out.
        reason: String,
    },
    /// The operator returned its own error.
    #[error("operator `{operator}` (subtask {subtask}) failed in {call}: {error}")]
    Operator {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call that failed.
        call: Call,
        /// The operator's error.
        error: OperatorError,
    },
    /// The guest returned a malformed batch or state delta.
    #[error("operator `{operator}` (subtask {subtask}) returned malformed data from {call}: {reason}")]
    Malformed {
        /// The operator's node id.
        operator: String,
        /// The subtask index.
        subtask: u32,
        /// The call.
        call: Call,
        /// What is wrong.
        reason: String,
    },
}

/// An error an operator returned (the WIT `error` variant).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OperatorError {
    /// A record could not be decoded.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The configuration is wrong.
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// Restored state could not be read.
    #[error("invalid state: {0}")]
    InvalidState(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

impl From<GuestOperatorError> for OperatorError {
    fn from(e: GuestOperatorError) -> Self {
        match e {
            GuestOperatorError::InvalidInput(s) => OperatorError::InvalidInput(s),
            GuestOperatorError::InvalidConfig(s) => OperatorError::InvalidConfig(s),
            GuestOperatorError::InvalidState(s) => OperatorError::InvalidState(s),
            GuestOperatorError::Other(s) => OperatorError::Other(s),
        }
    }
}
