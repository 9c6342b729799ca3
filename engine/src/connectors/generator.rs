//! A deterministic generator: sequences of numbers, or a corpus of text lines.
//!
//! Subtask `i` of `p` produces the items `i, i + p, i + 2p, …`, so the union over all
//! subtasks is the same at any parallelism, and the position is the next item index.

use serde::{Deserialize, Serialize};

use super::{ConnectorError, Source, bad_position};
use crate::record::{Batch, to_msgpack};

/// Config of the generator source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum GeneratorConfig {
    /// Values `offset..offset + count` (MessagePack u64); with `keys`, key = `value % keys`
    /// (u64). Record `i` has event time `start_timestamp + i * interval_ms`.
    Sequence {
        /// How many records in all.
        count: u64,
        /// The first value.
        #[serde(default)]
        offset: u64,
        /// Number of distinct keys; absent for unkeyed records.
        #[serde(default)]
        keys: Option<u64>,
        /// Event time of record 0.
        #[serde(default)]
        start_timestamp: i64,
        /// Event time step between consecutive records.
        #[serde(default = "one")]
        interval_ms: i64,
    },
    /// Lines of text (MessagePack string) drawn from a skewed vocabulary (see
    /// [`corpus_line`]).
    Words {
        /// How many lines in all.
        lines: u64,
        /// Words per line.
        #[serde(default = "eight")]
        words_per_line: u32,
        /// Number of distinct words.
        #[serde(default = "thousand")]
        vocabulary: u64,
        /// Seed of the corpus.
        #[serde(default)]
        seed: u64,
        /// Event time step between lines.
        #[serde(default = "one")]
        interval_ms: i64,
    },
}

fn one() -> i64 {
    1
}
fn eight() -> u32 {
    8
}
fn thousand() -> u64 {
    1000
}

impl GeneratorConfig {
    pub(crate) fn validate(&self) -> Result<(), String> {
        match self {
            GeneratorConfig::Sequence { keys: Some(0), .. } => {
                return Err("generator: keys must be at least 1".into());
            }
            GeneratorConfig::Sequence { count, offset, .. } if offset.checked_add(*count).is_none() => {
                return Err(format!("generator: offset + count exceeds {}", u64::MAX));
            }
            GeneratorConfig::Words { vocabulary: 0, .. } => {
                return Err("generator: vocabulary must be at least 1".into());
            }
            GeneratorConfig::Words { words_per_line: 0, .. } => {
                return Err("generator: words_per_line must be at least 1".into());
            }
            _ => {}
        }
        // Every event time must fit in an i64 (checked once here, not per record).
        let (start, interval) = match self {
            GeneratorConfig::Sequence { start_timestamp, interval_ms, .. } => {
                (*start_timestamp, *interval_ms)
            }
            GeneratorConfig::Words { interval_ms, .. } => (0, *interval_ms),
        };
        let last = i128::from(start) + i128::from(interval) * i128::from(self.total().saturating_sub(1));
        if i64::try_from(last).is_err() {
            return Err(format!(
                "generator: the event time of the last record ({last}) does not fit in an i64"
            ));
        }
        Ok(())
    }

    /// Total number of records over all subtasks.
    pub fn total(&self) -> u64 {
        match self {
            GeneratorConfig::Sequence { count, .. } => *count,
            GeneratorConfig::Words { lines, .. } => *lines,
        }
    }
}

/// SplitMix64: a small, fast, well-mixed deterministic generator step.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Line `line` of the corpus: `words_per_line` words `w<n>` with a skewed distribution
/// over `vocabulary` words; some capitalised, some followed by punctuation.
pub fn corpus_line(seed: u64, vocabulary: u64, words_per_line: u32, line: u64) -> String {
    let mut out = String::with_capacity(words_per_line as usize * 7);
    let mut state = splitmix64(seed ^ splitmix64(line));
    for w in 0..words_per_line {
        state = splitmix64(state);
        let a = state % vocabulary;
        let b = (state >> 32) % vocabulary;
        let n = a * b / vocabulary; // skewed towards small numbers
        if w > 0 {
            out.push(' ');
        }
        out.push(if state & 0x700 == 0 { 'W' } else { 'w' });
        out.push_str(&n.to_string());
        match (state >> 12) & 0xF {
            0 => out.push(','),
            1 => out.push('!'),
            _ => {}
        }
    }
    out
}

/// A generator subtask.
#[derive(Debug)]
pub struct GeneratorSource {
    config: GeneratorConfig,
    batch_size: usize,
    next: u64,
    step: u64,
}

impl GeneratorSource {
    /// Subtask `index` of `parallelism`.
    pub fn new(config: GeneratorConfig, batch_size: usize, index: u32, parallelism: u32) -> Self {
        GeneratorSource { config, batch_size, next: u64::from(index), step: u64::from(parallelism) }
    }
}

impl Source for GeneratorSource {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        let total = self.config.total();
        if self.next >= total {
            return Ok(None);
        }
        let mut batch = Batch::with_capacity(self.batch_size, self.batch_size * 16);
        while batch.len() < self.batch_size && self.next < total {
            let i = self.next;
            match &self.config {
                GeneratorConfig::Sequence { keys, offset, start_timestamp, interval_ms, .. } => {
                    let v = offset + i;
                    let key = keys.map(|k| to_msgpack(&(v % k))).unwrap_or_default();
                    let ts = start_timestamp + interval_ms * i as i64;
                    batch.push_with(&key, ts, |buf| rmp::encode::write_uint(buf, v).map(drop).expect("vec"));
                }
                GeneratorConfig::Words { words_per_line, vocabulary, seed, interval_ms, .. } => {
                    let line = corpus_line(*seed, *vocabulary, *words_per_line, i);
                    batch.push(&[], &to_msgpack(&line), interval_ms * i as i64);
                }
            }
            self.next += self.step;
        }
        Ok(Some(batch))
    }

    fn position(&self) -> serde_json::Value {
        serde_json::json!({ "next": self.next })
    }

    fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError> {
        let next = position.get("next").and_then(|v| v.as_u64()).ok_or_else(|| bad_position(position))?;
        if next % self.step != self.next % self.step {
            return Err(bad_position(position));
        }
        self.next = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_at_a_saved_position() {
        let config = GeneratorConfig::Sequence {
            count: 1000,
            offset: 0,
            keys: Some(3),
            start_timestamp: 0,
            interval_ms: 1,
        };
        let values = |s: &mut GeneratorSource| {
            let mut out = Vec::new();
            while let Some(b) = s.next_batch().unwrap() {
                out.extend(b.iter().map(|r| r.value.to_vec()));
            }
            out
        };
        let all = values(&mut GeneratorSource::new(config.clone(), 16, 1, 2));
        let mut first = GeneratorSource::new(config.clone(), 16, 1, 2);
        let head: Vec<_> = first.next_batch().unwrap().unwrap().iter().map(|r| r.value.to_vec()).collect();
        let mut resumed = GeneratorSource::new(config.clone(), 16, 1, 2);
        resumed.seek(&first.position()).unwrap();
        assert_eq!([head, values(&mut resumed)].concat(), all);
        // A position of another subtask, or no position at all, is refused.
        assert!(resumed.seek(&serde_json::json!({ "next": 2 })).is_err());
        assert!(resumed.seek(&serde_json::json!({ "offset": 1 })).is_err());
    }

    #[test]
    fn parallel_subtasks_cover_the_sequence_once() {
        let config = GeneratorConfig::Sequence {
            count: 100,
            offset: 0,
            keys: Some(3),
            start_timestamp: 10,
            interval_ms: 2,
        };
        let mut seen = Vec::new();
        for i in 0..3 {
            let mut s = GeneratorSource::new(config.clone(), 7, i, 3);
            while let Some(b) = s.next_batch().unwrap() {
                assert!(b.len() <= 7);
                for r in b.iter() {
                    let v: u64 = rmp_serde::from_slice(r.value).unwrap();
                    let k: u64 = rmp_serde::from_slice(r.key).unwrap();
                    assert_eq!(k, v % 3);
                    assert_eq!(r.timestamp, 10 + 2 * v as i64);
                    seen.push(v);
                }
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn configs_whose_values_or_times_overflow_are_refused() {
        let seq = |count, offset, start_timestamp, interval_ms| GeneratorConfig::Sequence {
            count,
            offset,
            keys: None,
            start_timestamp,
            interval_ms,
        };
        assert!(seq(10, u64::MAX - 5, 0, 1).validate().unwrap_err().contains("offset + count"));
        assert!(seq(3, 0, i64::MAX - 1, 1).validate().unwrap_err().contains("does not fit in an i64"));
        assert!(seq(u64::MAX, 0, 0, -2).validate().unwrap_err().contains("does not fit"));
        assert!(seq(3, 0, i64::MAX - 2, 1).validate().is_ok());
    }

    #[test]
    fn corpus_is_deterministic() {
        assert_eq!(corpus_line(1, 50, 6, 9), corpus_line(1, 50, 6, 9));
        assert_ne!(corpus_line(1, 50, 6, 9), corpus_line(2, 50, 6, 9));
        assert_eq!(corpus_line(1, 50, 6, 9).split(' ').count(), 6);
    }
}
