//! The error an operator returns to the host.

use std::fmt;

use crate::__bindings::weir::operator::types::Error as WitError;

/// Why an operator call failed. The host fails the job with this message (and restarts it
/// from its last checkpoint where the job allows it).
///
/// Mirrors the WIT `error` variant of `weir:operator/types`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A record could not be decoded into the type the operator expects.
    InvalidInput(String),
    /// The operator's configuration is missing a field or has a wrong value.
    InvalidConfig(String),
    /// Restored state could not be read (wrong schema or corrupt data).
    InvalidState(String),
    /// Any other failure, described by the operator.
    Other(String),
}

/// The result type of operator code.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::InvalidInput`] with `message`.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }

    /// An [`Error::InvalidConfig`] with `message`.
    pub fn invalid_config(message: impl Into<String>) -> Self {
        Self::InvalidConfig(message.into())
    }

    /// An [`Error::InvalidState`] with `message`.
    pub fn invalid_state(message: impl Into<String>) -> Self {
        Self::InvalidState(message.into())
    }

    /// An [`Error::Other`] with `message`.
    pub fn other(message: impl Into<String>) -> Self {
        Self::Other(message.into())
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidInput(m) | Self::InvalidConfig(m) | Self::InvalidState(m) | Self::Other(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Self::InvalidInput(_) => "invalid input",
            Self::InvalidConfig(_) => "invalid config",
            Self::InvalidState(_) => "invalid state",
            Self::Other(_) => "operator error",
        };
        write!(f, "{kind}: {}", self.message())
    }
}

impl std::error::Error for Error {}

impl From<Error> for WitError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidInput(m) => WitError::InvalidInput(m),
            Error::InvalidConfig(m) => WitError::InvalidConfig(m),
            Error::InvalidState(m) => WitError::InvalidState(m),
            Error::Other(m) => WitError::Other(m),
        }
    }
}
