//! A keyed two-input join built on `weir_guest::join`: pairs the ids (MessagePack unsigned
//! ints) of left and right records with the same key.
//!
//! Inputs: 0 = left, 1 = right (`"inputs": ["left", "right"]` in the job spec). Config: a
//! [`JoinSpec`], e.g. `{"join": {"kind": "interval", "lower_ms": -10, "upper_ms": 10}}` or
//! `{"join": {"kind": "regular", "ttl_ms": 60000}, "late": {"side_output": "late"}}`.
//!
//! Output, once per matching pair: key = the records' key, value =
//! `{left, right, left_ts, right_ts}`, timestamp = the later of the two.

use serde::Serialize;
use weir_guest::join::{JoinSpec, KeyedJoin};
use weir_guest::{Context, Operator, Output, Record, Result, States};

/// What one pair emits.
#[derive(Serialize)]
struct Pair {
    left: u64,
    right: u64,
    left_ts: i64,
    right_ts: i64,
}

/// The operator.
#[derive(Default, States)]
pub struct JoinPairs {
    #[state]
    join: KeyedJoin<u64, u64>,
}

impl Operator for JoinPairs {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.join.configure(context.config::<JoinSpec>()?)
    }

    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        let id: u64 = record.value()?;
        let key = record.key_bytes();
        let mut emit = |left: &u64, left_ts: i64, right: &u64, right_ts: i64| {
            let pair = Pair { left: *left, right: *right, left_ts, right_ts };
            out.emit_with_key_bytes(key, &pair, left_ts.max(right_ts))
        };
        match record.input() {
            0 => self.join.process_left(&record, id, &mut emit),
            _ => self.join.process_right(&record, id, &mut emit),
        }
    }

    fn on_timer(&mut self, key: &[u8], timestamp: i64, _out: &mut Output) -> Result<()> {
        self.join.expire(key, timestamp)
    }
}

weir_guest::export_operator!(JoinPairs, name = "join");

#[cfg(test)]
mod tests {
    use super::*;
    use weir_guest::Context;
    use weir_guest::testing::{Harness, TestRecord};

    #[test]
    fn pairs_records_of_a_key_within_the_interval() {
        let mut h = Harness::<JoinPairs>::new();
        let mut c = Context::with_config(r#"{"join": {"kind": "interval", "lower_ms": 0, "upper_ms": 5}}"#);
        c.inputs = 2;
        h.open_with(&c).unwrap();
        h.process_input(0, &[TestRecord::keyed(&1u64, &10u64, 100)]).unwrap();
        let out = h
            .process_input(1, &[TestRecord::keyed(&1u64, &20u64, 103), TestRecord::keyed(&1u64, &21u64, 106)])
            .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].timestamp, 103);
    }
}
