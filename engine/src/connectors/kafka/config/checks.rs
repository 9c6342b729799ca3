//! The checks of ranges and names that the connection, source and sink share.

use std::ops::RangeInclusive;

use super::error::KafkaConfigError;
use super::limits::{MAX_GROUP_LEN, MAX_TOPIC_LEN};

pub(super) fn in_range(
    name: &'static str,
    value: u64,
    range: &RangeInclusive<u64>,
) -> Result<(), KafkaConfigError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(KafkaConfigError::OutOfRange { name, value, range: range.clone() })
    }
}

/// A printable name of 1 to `max` bytes (no control characters, no spaces at either end).
pub(super) fn check_text(what: &'static str, value: &str, max: usize) -> Result<(), KafkaConfigError> {
    if value.is_empty() || value.len() > max {
        return Err(KafkaConfigError::TextLength { what, len: value.len(), max });
    }
    if value.chars().any(char::is_control) || value.trim() != value {
        return Err(KafkaConfigError::TextCharacters { what });
    }
    Ok(())
}

/// Checks a Kafka topic name: 1 to 249 of `A-Z a-z 0-9 . _ -`, not `.` or `..`.
pub fn check_topic(topic: &str) -> Result<(), KafkaConfigError> {
    let ok = !topic.is_empty()
        && topic.len() <= MAX_TOPIC_LEN
        && topic != "."
        && topic != ".."
        && topic.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok { Ok(()) } else { Err(KafkaConfigError::TopicName(topic.escape_debug().to_string())) }
}

/// Checks a consumer group id or a transactional id prefix.
pub(super) fn check_group(what: &'static str, id: &str) -> Result<(), KafkaConfigError> {
    check_text(what, id, MAX_GROUP_LEN)
}
