//! The `kafka` source's settings: topics (by name or pattern), where to start, formats,
//! event time, idleness, discovery and fetch sizes.

use std::ops::RangeInclusive;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::checks::{check_group, check_text, check_topic, in_range};
use super::connection::{ConnectionConfig, KafkaAccess, check_connection};
use super::error::KafkaConfigError;
use super::limits::{MAX_PATTERN_LEN, MAX_TOPICS};
use crate::connectors::kafka::format::Format;

const IDLE_TIMEOUT_MS: RangeInclusive<u64> = 1..=86_400_000;
const DISCOVERY_INTERVAL_MS: RangeInclusive<u64> = 100..=86_400_000;
/// With a `topic_pattern`: each discovery is a metadata request for the whole cluster.
const PATTERN_DISCOVERY_INTERVAL_MS: RangeInclusive<u64> = 5_000..=86_400_000;
const FETCH_MAX_WAIT_MS: RangeInclusive<u64> = 0..=30_000;
const FETCH_MAX_BYTES: RangeInclusive<u64> = 1024..=(64 << 20);
const MAX_PARTITION_FETCH_BYTES: RangeInclusive<u64> = 1024..=(16 << 20);

/// Where a source starts reading a partition that its checkpoint has no offset for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartFrom {
    /// The partition's first record.
    #[default]
    Earliest,
    /// After the partition's last record when the job starts.
    Latest,
    /// The offsets the consumer group (`group_id`) committed; earliest where it has none.
    Group,
    /// The first record at or after this time (unix ms).
    Timestamp(i64),
}

/// Where a source's records take their event time from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventTime {
    /// The Kafka record's timestamp.
    #[default]
    Kafka,
    /// An integer field (ms) of the JSON or MessagePack value (a map).
    Field(String),
}

fn default_discovery_interval_ms() -> Option<u64> {
    Some(10_000)
}
fn default_fetch_max_wait_ms() -> u64 {
    500
}
fn default_fetch_max_bytes() -> u64 {
    8 << 20
}
fn default_max_partition_fetch_bytes() -> u64 {
    1 << 20
}

/// The `kafka` source's settings (besides the common `batch_size`, `out_of_orderness_ms`
/// and `records_per_second`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSourceConfig {
    /// A connection the server's admin configured (`kafka_connections`). Exactly one of
    /// `connection` and `brokers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    /// An inline connection: `weir run` only (the server refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brokers: Option<ConnectionConfig>,
    /// The topics to read. Exactly one of `topics` and `topic_pattern`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topics: Vec<String>,
    /// A regular expression (Rust `regex` syntax) that a whole topic name must match;
    /// topics are matched at run time, and again at each partition discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_pattern: Option<String>,
    /// Where to start a partition that the checkpoint has no offset for.
    #[serde(default)]
    pub start: StartFrom,
    /// The consumer group: required by `start: "group"` and by `commit_offsets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// Commit the offsets of each completed checkpoint to the group, for lag tools only:
    /// the checkpoint's offsets are what the job resumes from.
    #[serde(default)]
    pub commit_offsets: bool,
    /// How record keys are encoded.
    #[serde(default)]
    pub key_format: Format,
    /// How record values are encoded.
    #[serde(default)]
    pub value_format: Format,
    /// Where event times come from.
    #[serde(default)]
    pub event_time: EventTime,
    /// A subtask that receives nothing for this long is idle (its watermark does not hold
    /// the job back); `None`: never idle.
    #[serde(default)]
    pub idle_timeout_ms: Option<u64>,
    /// How often to look for new partitions and (with a pattern) new topics; `None`: never.
    #[serde(default = "default_discovery_interval_ms")]
    pub discovery_interval_ms: Option<u64>,
    /// Longest a fetch waits at the broker for records, in ms.
    #[serde(default = "default_fetch_max_wait_ms")]
    pub fetch_max_wait_ms: u64,
    /// Most bytes one fetch returns.
    #[serde(default = "default_fetch_max_bytes")]
    pub fetch_max_bytes: u64,
    /// Most bytes one fetch returns per partition.
    #[serde(default = "default_max_partition_fetch_bytes")]
    pub max_partition_fetch_bytes: u64,
    /// End at the offsets that were each partition's end when the job started (a bounded
    /// read: the job finishes), instead of reading forever.
    #[serde(default)]
    pub bounded: bool,
    /// `read_uncommitted` (default: every record) or `read_committed` (records of committed
    /// transactions only, up to the last stable offset).
    #[serde(default)]
    pub isolation_level: IsolationLevel,
    /// What the connection resolved to (never deserialised: see [`KafkaAccess`]).
    #[serde(skip)]
    pub access: Option<Arc<KafkaAccess>>,
}

/// Which records a source reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationLevel {
    /// Every record.
    #[default]
    ReadUncommitted,
    /// Committed transactions only.
    ReadCommitted,
}

/// The anchored regular expression of a `topic_pattern` (a whole topic name must match).
pub fn topic_regex(pattern: &str) -> Result<regex::Regex, KafkaConfigError> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(KafkaConfigError::PatternLength(pattern.len()));
    }
    regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(1 << 20)
        .build()
        .map_err(|e| KafkaConfigError::Pattern(e.to_string()))
}

/// Literal prefixes that every topic `pattern` matches starts with, or `None` when no
/// literal bounds them (`.*`, `a|.*`). A grant check holds each of them to the allowed
/// prefixes (the source filters matched topics to them again at run time).
pub fn pattern_prefixes(pattern: &str) -> Option<Vec<String>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
    let literals = seq.literals()?;
    if literals.is_empty() {
        // Matches nothing: nothing to allow or refuse.
        return Some(Vec::new());
    }
    literals.iter().map(|l| String::from_utf8(l.as_bytes().to_vec()).ok()).collect()
}

impl KafkaSourceConfig {
    /// Checks the settings (at plan time); an inline connection becomes the `access`.
    pub fn validate(&mut self) -> Result<(), KafkaConfigError> {
        let inline = check_connection(self.connection.as_deref(), self.brokers.as_ref())?;
        match (self.topics.is_empty(), &self.topic_pattern) {
            (false, Some(_)) => return Err(KafkaConfigError::TopicsAndPattern),
            (true, None) => return Err(KafkaConfigError::NoTopics),
            (false, None) => {
                if self.topics.len() > MAX_TOPICS {
                    return Err(KafkaConfigError::TopicCount(self.topics.len()));
                }
                let mut seen = std::collections::BTreeSet::new();
                for t in &self.topics {
                    check_topic(t)?;
                    if !seen.insert(t) {
                        return Err(KafkaConfigError::TopicTwice(t.clone()));
                    }
                }
            }
            (true, Some(p)) => {
                topic_regex(p)?;
            }
        }
        if let Some(g) = &self.group_id {
            check_group("group_id", g)?;
        }
        if self.group_id.is_none() {
            if self.start == StartFrom::Group {
                return Err(KafkaConfigError::NeedsGroup("start \"group\""));
            }
            if self.commit_offsets {
                return Err(KafkaConfigError::NeedsGroup("commit_offsets"));
            }
        }
        if let StartFrom::Timestamp(ms) = self.start
            && ms < 0
        {
            return Err(KafkaConfigError::StartTimestamp(ms));
        }
        if let EventTime::Field(field) = &self.event_time {
            check_text("event_time field", field, 256)?;
            if self.value_format == Format::Raw {
                return Err(KafkaConfigError::EventTimeNeedsFormat);
            }
        }
        if let Some(ms) = self.idle_timeout_ms {
            in_range("idle_timeout_ms", ms, &IDLE_TIMEOUT_MS)?;
        }
        if let Some(ms) = self.discovery_interval_ms {
            // A pattern's discovery asks for every topic's metadata, once per subtask.
            let range = if self.topic_pattern.is_some() {
                &PATTERN_DISCOVERY_INTERVAL_MS
            } else {
                &DISCOVERY_INTERVAL_MS
            };
            in_range("discovery_interval_ms", ms, range)?;
        }
        in_range("fetch_max_wait_ms", self.fetch_max_wait_ms, &FETCH_MAX_WAIT_MS)?;
        in_range("fetch_max_bytes", self.fetch_max_bytes, &FETCH_MAX_BYTES)?;
        in_range("max_partition_fetch_bytes", self.max_partition_fetch_bytes, &MAX_PARTITION_FETCH_BYTES)?;
        if self.max_partition_fetch_bytes > self.fetch_max_bytes {
            return Err(KafkaConfigError::PartitionFetchBytes {
                partition: self.max_partition_fetch_bytes,
                fetch: self.fetch_max_bytes,
            });
        }
        self.access = inline;
        Ok(())
    }

    /// The anchored `topic_pattern`, if the source has one.
    pub fn pattern(&self) -> Result<Option<regex::Regex>, KafkaConfigError> {
        self.topic_pattern.as_deref().map(topic_regex).transpose()
    }
}
