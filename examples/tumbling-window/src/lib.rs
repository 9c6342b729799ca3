//! A keyed event-time tumbling window: count and sum of each key's values per window.
//!
//! Config: `{"size_ms": <u64 greater than 0>}`. Input: records with any key (MessagePack) and
//! a value that decodes as an i64. Each record falls in the window
//! `[start, start + size_ms)` that contains its timestamp. When the watermark passes the
//! window's last millisecond, the operator emits one record per key and window: key = the
//! record key, value = `{ window_start, window_end, count, sum }`, timestamp =
//! `window_end - 1`. Records of windows that already fired are late: they are dropped and
//! counted by the metric `late_records`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use weir_guest::{Context, Error, KeyedState, Operator, Output, RawKey, Record, Result, States, ValueState};

/// The operator's configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Window length in milliseconds.
    size_ms: u64,
}

/// Count and sum of one key's values in one window.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Accumulator {
    count: u64,
    sum: i64,
}

/// What the operator emits for a key and window.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowResult {
    /// First millisecond of the window.
    pub window_start: i64,
    /// First millisecond after the window.
    pub window_end: i64,
    /// Number of records.
    pub count: u64,
    /// Sum of their values.
    pub sum: i64,
}

/// The tumbling-window operator.
#[derive(Default, States)]
pub struct TumblingWindow {
    size: i64,
    /// Per record key (raw key bytes): the open windows by start time.
    windows: KeyedState<RawKey, BTreeMap<i64, Accumulator>>,
    /// The last watermark seen; windows ending at or before it have fired.
    watermark: ValueState<i64>,
    /// Late records of the current batch, added to the metric at the end of the batch.
    late: u64,
}

impl Operator for TumblingWindow {
    fn open(&mut self, context: &Context) -> Result<()> {
        let config: Config = context.config()?;
        self.size = i64::try_from(config.size_ms)
            .ok()
            .filter(|size| *size > 0)
            .ok_or_else(|| Error::invalid_config(format!("size_ms must be between 1 and {}", i64::MAX)))?;
        Ok(())
    }

    fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
        let value: i64 = record.value()?;
        let start = window_start(record.timestamp(), self.size);
        let last = last_millisecond(start, self.size);
        if self.watermark.get().is_some_and(|watermark| last <= *watermark) {
            self.late += 1;
            return Ok(());
        }
        let windows = self.windows.get_or_insert_with_raw(record.key_bytes(), BTreeMap::new);
        let accumulator = windows.entry(start).or_insert_with(|| {
            weir_guest::timers::register_raw(record.key_bytes(), last);
            Accumulator::default()
        });
        accumulator.count += 1;
        accumulator.sum = accumulator.sum.wrapping_add(value);
        Ok(())
    }

    fn end_batch(&mut self, _input: u32, _out: &mut Output) -> Result<()> {
        if self.late > 0 {
            weir_guest::metrics::counter_add("late_records", std::mem::take(&mut self.late));
        }
        Ok(())
    }

    fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
        let start = window_start(timestamp, self.size);
        let Some(windows) = self.windows.get_mut_raw(key) else { return Ok(()) };
        let Some(accumulator) = windows.remove(&start) else { return Ok(()) };
        if windows.is_empty() {
            self.windows.remove_raw(key);
        }
        let result = WindowResult {
            window_start: start,
            window_end: start.saturating_add(self.size),
            count: accumulator.count,
            sum: accumulator.sum,
        };
        out.emit_with_key_bytes(key, &result, timestamp)
    }

    fn on_watermark(&mut self, timestamp: i64, _out: &mut Output) -> Result<()> {
        if self.watermark.get().is_none_or(|watermark| timestamp > *watermark) {
            self.watermark.set(timestamp);
        }
        Ok(())
    }
}

weir_guest::export_operator!(TumblingWindow, name = "tumbling-window");

/// Start of the window of `size` milliseconds that contains `timestamp`.
fn window_start(timestamp: i64, size: i64) -> i64 {
    timestamp - timestamp.rem_euclid(size)
}

/// The window's last millisecond, `start + size - 1`, when its timer fires.
fn last_millisecond(start: i64, size: i64) -> i64 {
    start.saturating_add(size - 1)
}

#[cfg(test)]
mod tests {
    use weir_guest::testing::{Harness, TestRecord};
    use weir_guest::to_msgpack;

    use super::*;

    fn result(key: &str, start: i64, count: u64, sum: i64) -> TestRecord {
        let value = WindowResult { window_start: start, window_end: start + 10, count, sum };
        TestRecord::keyed(key, &value, start + 9)
    }

    fn opened() -> Harness<TumblingWindow> {
        let mut harness = Harness::new();
        harness.open(r#"{"size_ms": 10}"#).unwrap();
        harness
    }

    #[test]
    fn config_is_required_and_positive() {
        for config in ["{}", r#"{"size_ms": 0}"#, r#"{"size_ms": -5}"#, r#"{"size": 5}"#] {
            let err = Harness::<TumblingWindow>::new().open(config).unwrap_err();
            assert!(matches!(err, Error::InvalidConfig(_)), "{config}: {err}");
        }
    }

    #[test]
    fn counts_and_sums_per_key_and_window() {
        let mut h = opened();
        let out = h
            .process(&[
                TestRecord::keyed("a", &1i64, 0),
                TestRecord::keyed("a", &2i64, 9),
                TestRecord::keyed("b", &5i64, 3),
                TestRecord::keyed("a", &-4i64, 10),
            ])
            .unwrap();
        assert!(out.is_empty());
        let a = to_msgpack("a").unwrap();
        assert_eq!(h.timers(), [(9, a.clone()), (9, to_msgpack("b").unwrap()), (19, a)]);

        assert_eq!(h.watermark(9).unwrap(), [result("a", 0, 2, 3), result("b", 0, 1, 5)]);
        assert_eq!(h.watermark(25).unwrap(), [result("a", 10, 1, -4)]);
        assert!(h.operator().windows.is_empty());
    }

    #[test]
    fn late_records_are_dropped_and_counted() {
        let mut h = opened();
        h.watermark(19).unwrap();
        h.process(&[
            TestRecord::keyed("a", &1i64, 19),
            TestRecord::keyed("a", &1i64, 5),
            TestRecord::keyed("a", &1i64, 20),
        ])
        .unwrap();
        assert_eq!(h.counter("late_records"), 2);
        assert_eq!(h.watermark(29).unwrap(), [result("a", 20, 1, 1)]);
    }

    #[test]
    fn fired_windows_leave_the_state() {
        let mut h = opened();
        h.process(&[TestRecord::keyed("a", &1i64, 1)]).unwrap();
        let saved = h.snapshot(false).unwrap();
        assert_eq!(saved.len(), 1);
        h.watermark(9).unwrap();
        let changes = h.snapshot(false).unwrap();
        let deleted: Vec<_> = changes.iter().filter(|c| c.state == "windows").collect();
        assert_eq!(deleted.len(), 1);
        assert_eq!((deleted[0].key.clone(), deleted[0].value.clone()), (to_msgpack("a").unwrap(), None));
    }

    #[test]
    fn open_windows_and_the_watermark_are_restored() {
        let mut h = opened();
        h.watermark(4).unwrap();
        h.process(&[TestRecord::keyed(&7u32, &3i64, 5)]).unwrap();
        let saved = h.snapshot(true).unwrap();

        let mut restored = Harness::<TumblingWindow>::new();
        restored.restore(&saved).unwrap();
        restored.open(r#"{"size_ms": 10}"#).unwrap();
        restored.process(&[TestRecord::keyed(&7u32, &1i64, 2), TestRecord::keyed(&7u32, &1i64, 8)]).unwrap();
        let expected = WindowResult { window_start: 0, window_end: 10, count: 3, sum: 5 };
        assert_eq!(
            restored.fire_timer(&to_msgpack(&7u32).unwrap(), 9).unwrap(),
            [TestRecord::keyed(&7u32, &expected, 9)]
        );
        assert_eq!(restored.counter("late_records"), 0);
    }
}
