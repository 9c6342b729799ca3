//! Keyed two-input joins on event time: a regular join (optionally with a state TTL) and an
//! interval join.
//!
//! [`KeyedJoin`] is a state (register it with `#[state]`). Input 0 is the left side, input 1
//! the right (name them in the job spec: `"inputs": ["left", "right"]`). Per record key it
//! buffers each side's records; a record that arrives is paired with every buffered record
//! of the other side that it matches, then buffered itself, so every matching pair is
//! emitted exactly once, when its second record arrives — whatever order the two inputs
//! interleave in.
//!
//! Which pairs match is decided by event time alone, so a run restarted from a checkpoint
//! pairs exactly what an uninterrupted run pairs:
//! - **regular join** without a TTL: every left and right record of a key. Nothing expires;
//!   the state grows with the input.
//! - **regular join with `ttl_ms`**: a record expires `ttl` after its own event time: a left
//!   and a right record match when their timestamps are at most `ttl` apart. (Flink's state
//!   TTL counts processing time, so what it pairs depends on how fast records arrive.)
//! - **interval join**: `left.ts + lower ≤ right.ts ≤ left.ts + upper`, both ends inclusive
//!   unless `lower_exclusive` / `upper_exclusive` (Flink's `between(lower, upper)`, with
//!   `lowerBoundExclusive()` / `upperBoundExclusive()`).
//!
//! With a TTL or an interval, a buffered record is dropped once the watermark shows that no
//! record of the other side can match it any more (a timer per key, at its earliest such
//! time), and a record at or below its own input's watermark is late: its partners may be
//! gone, so it is dropped and counted in the metric `late_records_dropped`, or sent unchanged
//! on a side output, as [`LateRecords`] says. A pair is emitted with the later of its two
//! timestamps.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::operator_state::{DeltaWriter, KeyedState, RawKey, StateStore};
use crate::window::LateRecords;
use crate::{Error, Record, Result, event_time, metrics, side_output, timers};

/// Which left and right records of a key match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum JoinKind {
    /// Every left and right record of a key; with `ttl_ms`, those at most `ttl_ms` apart.
    Regular {
        /// How long after its event time a record still matches (none: forever).
        #[serde(default)]
        ttl_ms: Option<i64>,
    },
    /// Left and right records with `left.ts + lower_ms ≤ right.ts ≤ left.ts + upper_ms`.
    Interval {
        /// The lower bound of `right.ts − left.ts`.
        lower_ms: i64,
        /// The upper bound of `right.ts − left.ts`.
        upper_ms: i64,
        /// The lower bound itself does not match.
        #[serde(default)]
        lower_exclusive: bool,
        /// The upper bound itself does not match.
        #[serde(default)]
        upper_exclusive: bool,
    },
}

/// A join and its late-record policy, as operators take it from their configuration:
/// `{"join": {"kind": "interval", "lower_ms": -5000, "upper_ms": 5000}, "late": "drop"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinSpec {
    /// Which records match.
    pub join: JoinKind,
    /// What happens to late records (dropped by default).
    #[serde(default)]
    pub late: LateRecords,
}

impl JoinSpec {
    /// A regular join; with `ttl_ms`, of records at most that far apart.
    pub fn regular(ttl_ms: Option<i64>) -> Self {
        Self { join: JoinKind::Regular { ttl_ms }, late: LateRecords::Drop }
    }

    /// An interval join with inclusive bounds `lower_ms ≤ right.ts − left.ts ≤ upper_ms`.
    pub fn interval(lower_ms: i64, upper_ms: i64) -> Self {
        Self {
            join: JoinKind::Interval { lower_ms, upper_ms, lower_exclusive: false, upper_exclusive: false },
            late: LateRecords::Drop,
        }
    }

    /// Sends late records on side output `name`.
    pub fn late_to(mut self, name: &str) -> Self {
        self.late = LateRecords::SideOutput(name.to_owned());
        self
    }

    /// The inclusive range of `right.ts − left.ts` that matches; `None` for no bound.
    pub fn bounds(&self) -> (Option<i64>, Option<i64>) {
        match self.join {
            JoinKind::Regular { ttl_ms: None } => (None, None),
            JoinKind::Regular { ttl_ms: Some(ttl) } => (Some(ttl.saturating_neg()), Some(ttl)),
            JoinKind::Interval { lower_ms, upper_ms, lower_exclusive, upper_exclusive } => (
                Some(lower_ms.saturating_add(i64::from(lower_exclusive))),
                Some(upper_ms.saturating_sub(i64::from(upper_exclusive))),
            ),
        }
    }

    /// Checks that the bounds leave something to match.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid_config(format!("join: {m}")));
        if let JoinKind::Regular { ttl_ms: Some(ttl) } = self.join
            && ttl < 0
        {
            return bad(format!("ttl_ms must not be negative, got {ttl}"));
        }
        if let (Some(lo), Some(hi)) = self.bounds()
            && lo > hi
        {
            return bad(format!("the bounds match nothing (right.ts − left.ts from {lo} to {hi})"));
        }
        if let LateRecords::SideOutput(name) = &self.late
            && (name.is_empty() || name.len() > 64)
        {
            return bad("a side output name must be 1 to 64 bytes".to_owned());
        }
        Ok(())
    }

    /// Whether a left record at `l` and a right record at `r` match.
    pub fn matches(&self, l: i64, r: i64) -> bool {
        let d = i128::from(r) - i128::from(l);
        let (lo, hi) = self.bounds();
        lo.is_none_or(|lo| d >= i128::from(lo)) && hi.is_none_or(|hi| d <= i128::from(hi))
    }
}

/// The buffered records of one key — `(timestamp, value)` of the left side, of the right
/// side — and the key's timer: the earliest expiry among them (`i64::MAX`: none). A tuple,
/// so that state holds no field names.
#[derive(Serialize, Deserialize)]
struct Buffers<L, R>(Vec<(i64, L)>, Vec<(i64, R)>, i64);

/// A keyed two-input join: a state. See the [module docs](self).
pub struct KeyedJoin<L, R> {
    spec: Option<JoinSpec>,
    buffers: KeyedState<RawKey, Buffers<L, R>>,
}

impl<L, R> Default for KeyedJoin<L, R> {
    #[track_caller]
    fn default() -> Self {
        Self { spec: None, buffers: KeyedState::default() }
    }
}

impl<L, R> std::fmt::Debug for KeyedJoin<L, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedJoin").field("spec", &self.spec).field("keys", &self.buffers.len()).finish()
    }
}

impl<L, R> KeyedJoin<L, R>
where
    L: Serialize + DeserializeOwned,
    R: Serialize + DeserializeOwned,
{
    /// Sets what matches and the late policy (in `open`; state restored before it is kept).
    pub fn configure(&mut self, spec: JoinSpec) -> Result<()> {
        spec.validate()?;
        self.spec = Some(spec);
        Ok(())
    }

    /// The spec [`KeyedJoin::configure`] set.
    pub fn spec(&self) -> Option<&JoinSpec> {
        self.spec.as_ref()
    }

    /// Joins `value`, the decoded value of `record`, on the side of the record's input
    /// (0: left, 1: right): `emit(left, left_ts, right, right_ts)` for every buffered record
    /// of the other side that it matches, then buffers it. A late record is handled as the
    /// spec says instead.
    pub fn process_left(
        &mut self,
        record: &Record<'_>,
        value: L,
        emit: impl FnMut(&L, i64, &R, i64) -> Result<()>,
    ) -> Result<()> {
        if self.is_late(record)? {
            return self.late(record);
        }
        self.add_left(record.key_bytes(), record.timestamp(), value, emit)
    }

    /// As [`KeyedJoin::process_left`], for a record of the right input.
    pub fn process_right(
        &mut self,
        record: &Record<'_>,
        value: R,
        emit: impl FnMut(&L, i64, &R, i64) -> Result<()>,
    ) -> Result<()> {
        if self.is_late(record)? {
            return self.late(record);
        }
        self.add_right(record.key_bytes(), record.timestamp(), value, emit)
    }

    fn configured(&self) -> Result<&JoinSpec> {
        self.spec.as_ref().ok_or_else(|| Error::other("KeyedJoin used before configure() (call it in open)"))
    }

    /// A record at or below its own input's watermark, in a join whose state expires.
    fn is_late(&self, record: &Record<'_>) -> Result<bool> {
        let spec = self.configured()?;
        Ok(spec.bounds() != (None, None) && record.timestamp() <= event_time::input_watermark(record.input()))
    }

    fn late(&self, record: &Record<'_>) -> Result<()> {
        match &self.configured()?.late {
            LateRecords::Drop => metrics::counter_add("late_records_dropped", 1),
            LateRecords::SideOutput(name) => {
                side_output::emit_raw(name, record.key_bytes(), record.value_bytes(), record.timestamp());
            }
        }
        Ok(())
    }

    /// Joins a left record (key `key`, at `ts`) without the late check.
    pub fn add_left(
        &mut self,
        key: &[u8],
        ts: i64,
        value: L,
        mut emit: impl FnMut(&L, i64, &R, i64) -> Result<()>,
    ) -> Result<()> {
        let spec = self.spec.as_ref().ok_or_else(|| Error::other("KeyedJoin used before configure()"))?;
        // It can meet no right record above `ts + hi` (a later right record is above the
        // watermark): it expires when the watermark reaches that.
        let expiry = spec.bounds().1.map(|hi| ts.saturating_add(hi));
        let buffers = self.buffers.get_or_insert_with_raw(key, Buffers::empty);
        for (r_ts, r) in &buffers.1 {
            if spec.matches(ts, *r_ts) {
                emit(&value, ts, r, *r_ts)?;
            }
        }
        buffers.0.push((ts, value));
        Self::schedule(key, buffers, expiry);
        Ok(())
    }

    /// Joins a right record (key `key`, at `ts`) without the late check.
    pub fn add_right(
        &mut self,
        key: &[u8],
        ts: i64,
        value: R,
        mut emit: impl FnMut(&L, i64, &R, i64) -> Result<()>,
    ) -> Result<()> {
        let spec = self.spec.as_ref().ok_or_else(|| Error::other("KeyedJoin used before configure()"))?;
        // It can meet no left record above `ts − lo`.
        let expiry = spec.bounds().0.map(|lo| ts.saturating_sub(lo));
        let buffers = self.buffers.get_or_insert_with_raw(key, Buffers::empty);
        for (l_ts, l) in &buffers.0 {
            if spec.matches(*l_ts, ts) {
                emit(l, *l_ts, &value, ts)?;
            }
        }
        buffers.1.push((ts, value));
        Self::schedule(key, buffers, expiry);
        Ok(())
    }

    /// Keeps one timer per key, at its earliest expiry.
    fn schedule(key: &[u8], buffers: &mut Buffers<L, R>, expiry: Option<i64>) {
        if let Some(expiry) = expiry
            && expiry < buffers.2
        {
            buffers.2 = expiry;
            timers::register_raw(key, expiry);
        }
    }

    /// Handles the timer of `key` at `timestamp`: drops the key's records that can no
    /// longer match, and moves the timer to the next expiry. Other timers change nothing.
    pub fn expire(&mut self, key: &[u8], timestamp: i64) -> Result<()> {
        let spec = self.configured()?;
        let (lo, hi) = spec.bounds();
        let Some(buffers) = self.buffers.get_raw(key) else { return Ok(()) };
        if buffers.2 > timestamp {
            return Ok(());
        }
        let left_expiry = |ts: i64| hi.map_or(i64::MAX, |hi| ts.saturating_add(hi));
        let right_expiry = |ts: i64| lo.map_or(i64::MAX, |lo| ts.saturating_sub(lo));
        let buffers = self.buffers.get_mut_raw(key).expect("present");
        buffers.0.retain(|(ts, _)| left_expiry(*ts) > timestamp);
        buffers.1.retain(|(ts, _)| right_expiry(*ts) > timestamp);
        if buffers.0.is_empty() && buffers.1.is_empty() {
            self.buffers.remove_raw(key);
            return Ok(());
        }
        let next = buffers
            .0
            .iter()
            .map(|(ts, _)| left_expiry(*ts))
            .chain(buffers.1.iter().map(|(ts, _)| right_expiry(*ts)))
            .min()
            .unwrap_or(i64::MAX);
        buffers.2 = next;
        if next < i64::MAX {
            timers::register_raw(key, next);
        }
        Ok(())
    }

    /// Number of keys with buffered records.
    pub fn keys(&self) -> usize {
        self.buffers.len()
    }

    /// Number of buffered records, (left, right), over all keys.
    pub fn buffered(&self) -> (usize, usize) {
        self.buffers.iter_raw().fold((0, 0), |(l, r), (_, b)| (l + b.0.len(), r + b.1.len()))
    }
}

impl<L, R> Buffers<L, R> {
    fn empty() -> Self {
        Self(Vec::new(), Vec::new(), i64::MAX)
    }
}

impl<L, R> StateStore for KeyedJoin<L, R>
where
    L: Serialize + DeserializeOwned,
    R: Serialize + DeserializeOwned,
{
    fn snapshot(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<()> {
        self.buffers.snapshot(full, delta)
    }

    fn snapshot_part(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<bool> {
        self.buffers.snapshot_part(full, delta)
    }

    fn restore(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.buffers.restore(key, value)
    }
}

#[cfg(test)]
mod tests;
