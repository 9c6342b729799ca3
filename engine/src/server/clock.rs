//! The server's clock: times it records (creation, start, end) are unix milliseconds.

/// Now, in unix milliseconds.
pub fn now_ms() -> u64 {
    crate::runtime::checkpoint::unix_ms()
}
