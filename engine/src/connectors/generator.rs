//! A deterministic generator: sequences of numbers, or a corpus of text lines.
//!
//! Subtask `i` of `p` produces the items `i, i + p, i + 2p, …`, so the union over all
//! subtasks is the same at any parallelism, and the position is the next item index.

use serde::{Deserialize, Serialize};

use super::{BatchLimit, ConfigError, ConnectorError, Source, bad_position};
use crate::record::{Batch, to_msgpack};

/// Config of the generator source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum GeneratorConfig {
    /// Values `offset..offset + count` (MessagePack u64; record `i` has value `offset + i`);
    /// with `keys`, key = `value % keys` (u64). Record `i` has event time
    /// [`GeneratorConfig::event_time`]`(i)`:
    ///
    /// `start_timestamp + i·interval_ms − disorder(i) − (late(i) ? late_by_ms : 0)`
    ///
    /// where `disorder(i) = splitmix64(i) % (disorder_ms + 1)` and `late(i)` is
    /// `i % late_every == late_every − 1`.
    ///
    /// **Which records are late.** A source sends, after each batch, the watermark `highest
    /// event time so far − out_of_orderness_ms − 1` (§2 of docs/design.md), so record `i` of
    /// a subtask is behind its own source's watermark exactly when `event_time(i) ≤ max
    /// event_time(j) − out_of_orderness_ms − 1` over the records `j` of that subtask's
    /// *earlier* batches ([`GeneratorConfig::late_records`] replays this; batch boundaries are
    /// deterministic, also across restarts, since a restored subtask resumes at a batch
    /// boundary with its watermark). Hence, with `interval_ms ≥ 0`:
    /// - a record with `late(i)` false is never late when `disorder_ms ≤ out_of_orderness_ms`;
    /// - with one subtask and `late_every ≥ 2`, a record with `late(i)` and
    ///   `i > batch_size` is late when `late_by_ms > out_of_orderness_ms + disorder_ms +
    ///   (batch_size + 1)·interval_ms` (some record of an earlier batch is far enough ahead).
    ///
    /// An operator fed by several source subtasks sees the minimum of their watermarks, which
    /// depends on how their batches interleave: lateness is only deterministic per source
    /// subtask (for instance one source subtask per operator subtask on a `forward` edge).
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
        /// Each record's event time moves back by a pseudo-random amount in
        /// `[0, disorder_ms]`, a function of its index (out of order, not late while
        /// `disorder_ms ≤ out_of_orderness_ms`). At least 0.
        #[serde(default, skip_serializing_if = "is_zero")]
        disorder_ms: i64,
        /// Records `i` with `i % late_every == late_every − 1` move back a further
        /// `late_by_ms`. At least 1.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        late_every: Option<u64>,
        /// How far the `late_every` records move back. At least 0; needs `late_every`.
        #[serde(default, skip_serializing_if = "is_zero")]
        late_by_ms: i64,
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
fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl GeneratorConfig {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        match self {
            GeneratorConfig::Sequence { keys: Some(0), .. } => {
                return Err(ConfigError::OutOfRange("generator: keys must be at least 1".into()));
            }
            GeneratorConfig::Sequence { count, offset, .. } if offset.checked_add(*count).is_none() => {
                return Err(ConfigError::OutOfRange(format!(
                    "generator: offset + count exceeds {}",
                    u64::MAX
                )));
            }
            GeneratorConfig::Sequence { disorder_ms, .. } if *disorder_ms < 0 => {
                return Err(ConfigError::OutOfRange(format!(
                    "generator: disorder_ms must be at least 0, got {disorder_ms}"
                )));
            }
            GeneratorConfig::Sequence { late_by_ms, .. } if *late_by_ms < 0 => {
                return Err(ConfigError::OutOfRange(format!(
                    "generator: late_by_ms must be at least 0, got {late_by_ms}"
                )));
            }
            GeneratorConfig::Sequence { late_every: Some(0), .. } => {
                return Err(ConfigError::OutOfRange("generator: late_every must be at least 1".into()));
            }
            GeneratorConfig::Sequence { late_every: None, late_by_ms, .. } if *late_by_ms > 0 => {
                return Err(ConfigError::OutOfRange(
                    "generator: late_by_ms needs late_every (which records to make late)".into(),
                ));
            }
            GeneratorConfig::Words { vocabulary: 0, .. } => {
                return Err(ConfigError::OutOfRange("generator: vocabulary must be at least 1".into()));
            }
            GeneratorConfig::Words { words_per_line: 0, .. } => {
                return Err(ConfigError::OutOfRange("generator: words_per_line must be at least 1".into()));
            }
            _ => {}
        }
        // Every event time must fit in an i64 (checked once here, not per record): the
        // unshifted times run monotonically from the first to the last record, and the
        // shifts only move them back, by at most `disorder_ms + late_by_ms`.
        let (start, interval, back) = match self {
            GeneratorConfig::Sequence { start_timestamp, interval_ms, disorder_ms, late_by_ms, .. } => {
                (*start_timestamp, *interval_ms, i128::from(*disorder_ms) + i128::from(*late_by_ms))
            }
            GeneratorConfig::Words { interval_ms, .. } => (0, *interval_ms, 0),
        };
        let first = i128::from(start);
        let last = first + i128::from(interval) * i128::from(self.total().saturating_sub(1));
        if i64::try_from(last).is_err() {
            return Err(ConfigError::OutOfRange(format!(
                "generator: the event time of the last record ({last}) does not fit in an i64"
            )));
        }
        let lowest = first.min(last) - back;
        if i64::try_from(lowest).is_err() {
            return Err(ConfigError::OutOfRange(format!(
                "generator: event times reach down to {lowest} (the earliest unshifted time minus \
                 disorder_ms and late_by_ms), which does not fit in an i64"
            )));
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

    /// The event time of record `i` (see [`GeneratorConfig::Sequence`]); for a config that
    /// passed validation (another is clamped to the i64 range).
    pub fn event_time(&self, i: u64) -> i64 {
        let (start, interval, back) = match self {
            GeneratorConfig::Sequence { start_timestamp, interval_ms, disorder_ms, late_by_ms, .. } => {
                let disorder = match u64::try_from(*disorder_ms) {
                    Ok(d) if d > 0 => splitmix64(i) % (d + 1),
                    _ => 0,
                };
                let late = if self.made_late(i) { *late_by_ms } else { 0 };
                (*start_timestamp, *interval_ms, i128::from(disorder) + i128::from(late))
            }
            GeneratorConfig::Words { interval_ms, .. } => (0, *interval_ms, 0),
        };
        let t = i128::from(start) + i128::from(interval) * i128::from(i) - back;
        t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// Whether record `i` is one that `late_every` moves back by `late_by_ms`.
    pub fn made_late(&self, i: u64) -> bool {
        match self {
            GeneratorConfig::Sequence { late_every: Some(n), late_by_ms, .. }
                if *n > 0 && *late_by_ms > 0 =>
            {
                i % n == n - 1
            }
            _ => false,
        }
    }

    /// The indices of the records that subtask `index` of `parallelism`, in batches of
    /// `batch_size` (sequence records are a few bytes each: a batch is cut at its default
    /// `batch_bytes` only past ~50,000 of them), emits behind its own watermark (`out_of_orderness_ms` as in the source's
    /// config): the records an operator fed by that subtask alone sees as late. Replays the
    /// source task's rule; see [`GeneratorConfig::Sequence`].
    pub fn late_records(
        &self,
        index: u32,
        parallelism: u32,
        batch_size: usize,
        out_of_orderness_ms: i64,
    ) -> Vec<u64> {
        let step = u64::from(parallelism.max(1));
        let mut watermark = i64::MIN;
        let mut max_ts = i64::MIN;
        let mut late = Vec::new();
        let mut i = u64::from(index);
        while i < self.total() {
            for _ in 0..batch_size.max(1) {
                if i >= self.total() {
                    break;
                }
                let ts = self.event_time(i);
                if ts <= watermark {
                    late.push(i);
                }
                max_ts = max_ts.max(ts);
                i += step;
            }
            watermark = watermark.max(max_ts.saturating_sub(out_of_orderness_ms).saturating_sub(1));
        }
        late
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
    batch: BatchLimit,
    next: u64,
    step: u64,
}

impl GeneratorSource {
    /// Subtask `index` of `parallelism`.
    pub fn new(config: GeneratorConfig, batch: impl Into<BatchLimit>, index: u32, parallelism: u32) -> Self {
        GeneratorSource { config, batch: batch.into(), next: u64::from(index), step: u64::from(parallelism) }
    }
}

impl Source for GeneratorSource {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        let total = self.config.total();
        if self.next >= total {
            return Ok(None);
        }
        let (records, bytes) = self.batch.reserve(16);
        let mut batch = Batch::with_capacity(records, bytes);
        while !self.batch.is_full(&batch) && self.next < total {
            let i = self.next;
            match &self.config {
                GeneratorConfig::Sequence { keys, offset, .. } => {
                    let v = offset + i;
                    let key = keys.map(|k| to_msgpack(&(v % k))).unwrap_or_default();
                    let ts = self.config.event_time(i);
                    batch.push_with(&key, ts, |buf| rmp::encode::write_uint(buf, v).map(drop).expect("vec"));
                }
                GeneratorConfig::Words { words_per_line, vocabulary, seed, .. } => {
                    let line = corpus_line(*seed, *vocabulary, *words_per_line, i);
                    batch.push(&[], &to_msgpack(&line), self.config.event_time(i));
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
            disorder_ms: 0,
            late_every: None,
            late_by_ms: 0,
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
            disorder_ms: 0,
            late_every: None,
            late_by_ms: 0,
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
            disorder_ms: 0,
            late_every: None,
            late_by_ms: 0,
        };
        assert!(seq(10, u64::MAX - 5, 0, 1).validate().unwrap_err().to_string().contains("offset + count"));
        assert!(
            seq(3, 0, i64::MAX - 1, 1).validate().unwrap_err().to_string().contains("does not fit in an i64")
        );
        assert!(seq(u64::MAX, 0, 0, -2).validate().unwrap_err().to_string().contains("does not fit"));
        assert!(seq(3, 0, i64::MAX - 2, 1).validate().is_ok());
    }

    fn disordered(disorder_ms: i64, late_every: Option<u64>, late_by_ms: i64) -> GeneratorConfig {
        GeneratorConfig::Sequence {
            count: 2000,
            offset: 5,
            keys: None,
            start_timestamp: 1_000,
            interval_ms: 3,
            disorder_ms,
            late_every,
            late_by_ms,
        }
    }

    #[test]
    fn disorder_and_late_records_are_deterministic_shifts() {
        let config = disordered(40, Some(10), 1_000);
        config.validate().unwrap();
        let mut seen_back = std::collections::BTreeSet::new();
        let mut out_of_order = 0;
        let mut records = Vec::new();
        for index in 0..2 {
            let mut s = GeneratorSource::new(config.clone(), 16, index, 2);
            while let Some(b) = s.next_batch().unwrap() {
                for r in b.iter() {
                    let v: u64 = rmp_serde::from_slice(r.value).unwrap();
                    records.push((v - 5, r.timestamp));
                }
            }
        }
        records.sort_unstable();
        assert_eq!(records.len(), 2000);
        for (i, ts) in records.iter().copied() {
            assert_eq!(ts, config.event_time(i));
            let base = 1_000 + 3 * i as i64;
            let back = base - ts;
            assert_eq!(config.made_late(i), i % 10 == 9);
            let disorder = if config.made_late(i) { back - 1_000 } else { back };
            assert!((0..=40).contains(&disorder), "record {i}: moved back {back}");
            seen_back.insert(disorder);
            if i > 0 && ts < config.event_time(i - 1) {
                out_of_order += 1;
            }
        }
        // The shifts cover the range and really reorder records.
        assert!(seen_back.contains(&0) && seen_back.contains(&40), "{seen_back:?}");
        assert!(seen_back.len() > 30);
        assert!(out_of_order > 500, "{out_of_order}");
        // Without the options the times are those of before.
        let plain = disordered(0, None, 0);
        assert!((0..2000).all(|i| plain.event_time(i) == 1_000 + 3 * i as i64));
        assert!(!(0..2000).any(|i| plain.made_late(i)));
    }

    #[test]
    fn late_records_are_exactly_the_made_late_ones_past_the_documented_bound() {
        let (ooo, batch) = (50i64, 16usize);
        // Disorder within the out-of-orderness: nothing is late.
        let config = disordered(ooo, None, 0);
        assert!(config.late_records(0, 1, batch, ooo).is_empty());
        assert!(config.late_records(1, 3, batch, ooo).is_empty());
        // Disorder beyond it: some records are late.
        assert!(!disordered(ooo * 4, None, 0).late_records(0, 1, batch, ooo).is_empty());
        // late_by_ms past the documented bound makes exactly the late_every records late
        // (after the first batch and one).
        let bound = ooo + ooo + (batch as i64 + 1) * 3;
        let config = disordered(ooo, Some(7), bound + 1);
        let late = config.late_records(0, 1, batch, ooo);
        let expected: Vec<u64> = (batch as u64 + 1..2000).filter(|i| i % 7 == 6).collect();
        assert_eq!(late.iter().filter(|i| **i > batch as u64).copied().collect::<Vec<_>>(), expected);
        assert!(late.iter().all(|i| config.made_late(*i)));
        // A small late_by_ms is still within the out-of-orderness.
        assert!(disordered(10, Some(7), 20).late_records(0, 1, batch, ooo).is_empty());
    }

    #[test]
    fn bad_disorder_settings_are_refused() {
        let err = |c: GeneratorConfig| c.validate().unwrap_err().to_string();
        assert_eq!(err(disordered(-1, None, 0)), "generator: disorder_ms must be at least 0, got -1");
        assert_eq!(err(disordered(0, Some(3), -5)), "generator: late_by_ms must be at least 0, got -5");
        assert_eq!(err(disordered(0, Some(0), 5)), "generator: late_every must be at least 1");
        assert!(err(disordered(0, None, 5)).contains("late_by_ms needs late_every"));
        // The shifts count in the range check, and huge shifts cannot overflow it.
        let low = |start_timestamp, disorder_ms, late_by_ms| GeneratorConfig::Sequence {
            count: 10,
            offset: 0,
            keys: None,
            start_timestamp,
            interval_ms: -1,
            disorder_ms,
            late_every: Some(2),
            late_by_ms,
        };
        assert!(low(i64::MIN + 19, 5, 5).validate().is_ok());
        assert!(err(low(i64::MIN + 19, 5, 6)).contains("reach down to"));
        assert!(err(low(i64::MIN + 9, i64::MAX, i64::MAX)).contains("does not fit in an i64"));
        assert!((i64::MIN..=i64::MIN + 5).contains(&low(i64::MIN + 19, 5, 5).event_time(9)));
        // Negative values in JSON are refused with the same messages at plan time.
        let parsed: GeneratorConfig =
            serde_json::from_value(serde_json::json!({ "mode": "sequence", "count": 1, "disorder_ms": -3 }))
                .unwrap();
        assert!(parsed.validate().unwrap_err().to_string().contains("disorder_ms must be at least 0"));
    }

    #[test]
    fn corpus_is_deterministic() {
        assert_eq!(corpus_line(1, 50, 6, 9), corpus_line(1, 50, 6, 9));
        assert_ne!(corpus_line(1, 50, 6, 9), corpus_line(2, 50, 6, 9));
        assert_eq!(corpus_line(1, 50, 6, 9).split(' ').count(), 6);
    }
}
