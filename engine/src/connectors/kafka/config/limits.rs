//! The limits of the Kafka settings that the connection, source and sink share.

/// Most bootstrap servers of one connection.
pub const MAX_BOOTSTRAP_SERVERS: usize = 64;
/// Most topics a source lists.
pub const MAX_TOPICS: usize = 1000;
/// Longest `topic_pattern`, in bytes.
pub const MAX_PATTERN_LEN: usize = 1000;
/// Longest group id or transactional id prefix, in bytes.
pub const MAX_GROUP_LEN: usize = 255;
/// Kafka's longest topic name.
pub const MAX_TOPIC_LEN: usize = 249;
