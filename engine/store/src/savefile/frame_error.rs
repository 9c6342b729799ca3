//! [`FrameError`]: what is wrong with a frame of a savepoint file. The reader reports it as
//! [`StoreError::BadSavepointFile`](crate::StoreError::BadSavepointFile), prefixed with the
//! frame's number.

/// What is wrong with the payload of a frame, or with where the frame is in the file.
#[derive(Debug, thiserror::Error)]
pub(super) enum FrameError {
    /// A value needs more bytes than the payload has left.
    #[error("{what} needs {len} bytes but only {left} are left")]
    Short {
        /// The value being read, e.g. "`scope`".
        what: String,
        /// The bytes it needs.
        len: usize,
        /// The bytes left.
        left: usize,
    },
    /// A value of another MessagePack type than expected.
    #[error("{what} must be {expected}, not {found}")]
    WrongType {
        /// The value being read.
        what: String,
        /// The type it must have, e.g. "a map".
        expected: &'static str,
        /// The type it has.
        found: &'static str,
    },
    /// A string that is not UTF-8.
    #[error("{what} is not valid UTF-8")]
    NotUtf8 {
        /// The value being read.
        what: String,
    },
    /// A negative integer where an unsigned one is expected.
    #[error("{what} must not be negative")]
    Negative {
        /// The value being read.
        what: String,
    },
    /// An integer that must fit 32 bits does not.
    #[error("{what} is {value}, more than 32 bits")]
    Over32Bits {
        /// The value being read.
        what: String,
        /// Its value.
        value: u64,
    },
    /// A map with a field the format does not have.
    #[error("{what} has an unknown field `{name}`")]
    UnknownField {
        /// The map.
        what: String,
        /// The field's name.
        name: String,
    },
    /// A map with a field twice.
    #[error("{what} has the field `{name}` twice")]
    DuplicateField {
        /// The map.
        what: String,
        /// The field's name.
        name: String,
    },
    /// A map without a field the format requires.
    #[error("{what} has no field `{name}`")]
    MissingField {
        /// The map.
        what: String,
        /// The field's name.
        name: String,
    },
    /// Bytes left after the payload's value.
    #[error("{extra} unexpected bytes after {what}")]
    TrailingBytes {
        /// How many.
        extra: u64,
        /// The value they follow.
        what: String,
    },
    /// A header frame without a payload.
    #[error("the header is empty")]
    EmptyHeader,
    /// A header that does not decode.
    #[error("the header: {0}")]
    Header(#[source] rmp_serde::decode::Error),
    /// An entry that is not a (state, key, value) array.
    #[error("{what} must be an array of 3 items (state, key, value), not {items}")]
    EntryItems {
        /// The entry, e.g. "entry 3".
        what: String,
        /// Its item count.
        items: u64,
    },
    /// A checksum of another length than SHA-256's.
    #[error("`sha256` must be 32 bytes, not {0}")]
    Sha256Length(usize),
    /// A second header frame.
    #[error("a second header frame")]
    SecondHeader,
    /// A frame kind the format does not have.
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// A state frame after a blob frame.
    #[error(
        "a state frame after the blob of operator `{operator}` subtask {subtask} (state frames come \
         before blob frames)"
    )]
    StateAfterBlob {
        /// The operator of the blob before it.
        operator: String,
        /// The subtask of the blob before it.
        subtask: u32,
    },
    /// A state frame that holds no entry.
    #[error("a state frame without entries")]
    NoEntries,
    /// A state frame of a scope that comes before the previous frame's.
    #[error(
        "scope {scope} of operator `{operator}` after scope {previous_scope} of operator \
         `{previous_operator}` (state frames must be in (operator, scope) order)"
    )]
    ScopeOrder {
        /// The frame's scope.
        scope: u32,
        /// The frame's operator.
        operator: String,
        /// The previous frame's scope.
        previous_scope: u32,
        /// The previous frame's operator.
        previous_operator: String,
    },
    /// An entry that is not after the one before it in (state, key) order.
    #[error(
        "entry {number} (state `{state}`) is not after {previous} (the entries of a scope must be \
         sorted by state and key, without duplicates)"
    )]
    EntryOrder {
        /// The entry's number in its frame, from 1.
        number: usize,
        /// Its state.
        state: String,
        /// The entry it should follow: "the entry before it", or "the last entry of the
        /// previous frame of the scope".
        previous: &'static str,
    },
    /// A blob frame that is not after the previous one in (operator, subtask) order.
    #[error(
        "the blob of operator `{operator}` subtask {subtask} after the blob of operator \
         `{previous_operator}` subtask {previous_subtask} (blob frames must be in (operator, \
         subtask) order, each once)"
    )]
    BlobOrder {
        /// The frame's operator.
        operator: String,
        /// The frame's subtask.
        subtask: u32,
        /// The previous blob's operator.
        previous_operator: String,
        /// The previous blob's subtask.
        previous_subtask: u32,
    },
}
