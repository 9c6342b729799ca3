//! A keyed event-time window operator built on `weir_guest::window`: counts the records of
//! each key and window and sums their ids (MessagePack unsigned ints, as the `generator`
//! source's `sequence` mode emits).
//!
//! Config: a [`WindowSpec`], e.g.
//! `{"window": {"kind": "sliding", "size_ms": 10000, "slide_ms": 2000},
//!   "allowed_lateness_ms": 500, "late": {"side_output": "late"}}`.
//!
//! Output, once per key and window when the watermark reaches the window's end minus one
//! plus the allowed lateness: key = the records' key, value = `{start, end, count, sum}`,
//! timestamp = `end - 1`. Late records go where `late` says (dropped and counted in the
//! metric `late_records_dropped` by default).

use serde::Serialize;
use weir_guest::window::{AggregateFunction, KeyedWindows, WindowSpec};
use weir_guest::{Context, Operator, Output, Record, Result, States};

/// Count and sum of ids.
#[derive(Default)]
struct CountSum;

impl AggregateFunction for CountSum {
    type Input = u64;
    type Acc = (u64, u64);
    type Output = (u64, u64);

    fn create(&self) -> (u64, u64) {
        (0, 0)
    }

    fn add(&self, acc: &mut (u64, u64), id: &u64) {
        acc.0 += 1;
        acc.1 = acc.1.wrapping_add(*id);
    }

    fn merge(&self, acc: &mut (u64, u64), other: (u64, u64)) {
        acc.0 += other.0;
        acc.1 = acc.1.wrapping_add(other.1);
    }

    fn result(&self, acc: (u64, u64)) -> (u64, u64) {
        acc
    }
}

/// What one window emits.
#[derive(Serialize)]
struct Fired {
    start: i64,
    end: i64,
    count: u64,
    sum: u64,
}

/// The operator.
#[derive(Default, States)]
pub struct WindowCount {
    #[state]
    windows: KeyedWindows<CountSum>,
}

impl Operator for WindowCount {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.windows.configure(context.config::<WindowSpec>()?)
    }

    fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
        let id: u64 = record.value()?;
        self.windows.add(&record, &id)
    }

    fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
        self.windows.fire(key, timestamp, |w, (count, sum)| {
            out.emit_with_key_bytes(key, &Fired { start: w.start, end: w.end, count, sum }, w.max_timestamp())
        })
    }
}

weir_guest::export_operator!(WindowCount, name = "window");

#[cfg(test)]
mod tests {
    use super::*;
    use weir_guest::testing::{Harness, TestRecord};

    #[test]
    fn counts_and_sums_a_sliding_window_per_key() {
        let mut h = Harness::<WindowCount>::new();
        h.open(r#"{"window": {"kind": "sliding", "size_ms": 10, "slide_ms": 5}}"#).unwrap();
        h.process(&[TestRecord::keyed(&1u64, &3u64, 7), TestRecord::keyed(&1u64, &4u64, 12)]).unwrap();
        let out = h.watermark(100).unwrap();
        let fired: Vec<(i64, i64, u64, u64)> = out
            .iter()
            .map(|r| {
                let v: std::collections::BTreeMap<String, i64> = r.decode_value();
                (v["start"], v["end"], v["count"] as u64, v["sum"] as u64)
            })
            .collect();
        assert_eq!(fired, vec![(0, 10, 1, 3), (5, 15, 2, 7), (10, 20, 1, 4)]);
    }
}
