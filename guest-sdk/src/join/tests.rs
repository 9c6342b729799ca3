//! Joins driven through the native harness against a reference: every matching pair of
//! on-time records, exactly once.

use super::*;
use crate::testing::{Harness, TestRecord};
use crate::{Context, Operator, Output, States, to_msgpack};

#[derive(Default, States)]
struct Joined {
    #[state]
    join: KeyedJoin<u64, u64>,
}

impl Operator for Joined {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.join.configure(context.config::<JoinSpec>()?)
    }

    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        let id: u64 = record.value()?;
        let key = record.key_bytes();
        let mut emit =
            |l: &u64, l_ts: i64, r: &u64, r_ts: i64| out.emit_with_key_bytes(key, &(*l, *r), l_ts.max(r_ts));
        match record.input() {
            0 => self.join.process_left(&record, id, &mut emit),
            _ => self.join.process_right(&record, id, &mut emit),
        }
    }

    fn on_timer(&mut self, key: &[u8], timestamp: i64, _: &mut Output) -> Result<()> {
        self.join.expire(key, timestamp)
    }
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Record { input: u32, key: u32, ts: i64, id: u64 },
    Watermark { input: u32, ts: i64 },
}

fn context(spec: &JoinSpec) -> Context {
    let mut c = Context::with_config(serde_json::to_string(spec).unwrap());
    c.inputs = 2;
    c
}

/// (key, left id, right id) of every pair emitted, sorted; the late ids; the pairs' count
/// before sorting (duplicates would show).
fn run(spec: &JoinSpec, steps: &[Step], restarts: &[usize]) -> (Vec<(u32, u64, u64)>, Vec<u64>, u64) {
    let mut h = Harness::<Joined>::new();
    h.open_with(&context(spec)).unwrap();
    let mut pairs = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if restarts.contains(&i) {
            h = h.restart().unwrap();
            h.open_with(&context(spec)).unwrap();
        }
        let out = match *step {
            Step::Record { input, key, ts, id } => {
                h.process_input(input, &[TestRecord::keyed(&key, &id, ts)]).unwrap()
            }
            Step::Watermark { input, ts } => h.input_watermark(input, ts).unwrap(),
        };
        for r in out {
            let (l, rr): (u64, u64) = r.decode_value();
            pairs.push((r.decode_key::<u32>(), l, rr));
        }
    }
    pairs.sort();
    let late = h.take_side_outputs().into_iter().map(|(_, r)| r.decode_value::<u64>()).collect();
    (pairs, late, h.counter("late_records_dropped"))
}

/// Every pair of on-time records that matches; a record is late (when the join expires
/// state) if it is at or below its own input's watermark when it arrives.
fn reference(spec: &JoinSpec, steps: &[Step]) -> (Vec<(u32, u64, u64)>, Vec<u64>) {
    let expires = spec.bounds() != (None, None);
    let mut wm = [i64::MIN; 2];
    let (mut kept, mut late) = (Vec::new(), Vec::new());
    for step in steps {
        match *step {
            Step::Record { input, key, ts, id } => {
                if expires && ts <= wm[input as usize] {
                    late.push(id);
                } else {
                    kept.push((input, key, ts, id));
                }
            }
            Step::Watermark { input, ts } => wm[input as usize] = wm[input as usize].max(ts),
        }
    }
    let mut pairs = Vec::new();
    for &(_, key, l_ts, l) in kept.iter().filter(|r| r.0 == 0) {
        for &(_, _, r_ts, r) in kept.iter().filter(|r| r.0 == 1 && r.1 == key) {
            if spec.matches(l_ts, r_ts) {
                pairs.push((key, l, r));
            }
        }
    }
    pairs.sort();
    (pairs, late)
}

fn stream(seed: u64, n: u64) -> Vec<Step> {
    let mut state = seed.wrapping_mul(31).wrapping_add(7);
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 33
    };
    let (mut steps, mut max) = (Vec::new(), [0i64; 2]);
    for id in 0..n {
        let input = (next() % 2) as u32;
        let i = input as usize;
        max[i] += (next() % 5) as i64;
        let back = if next() % 12 == 0 { 40 } else { (next() % 10) as i64 };
        steps.push(Step::Record { input, key: (next() % 4) as u32, ts: max[i] - back, id });
        if next() % 4 == 0 {
            steps.push(Step::Watermark { input, ts: max[i] - 10 });
        }
    }
    steps.push(Step::Watermark { input: 0, ts: i64::MAX });
    steps.push(Step::Watermark { input: 1, ts: i64::MAX });
    steps
}

fn specs() -> Vec<JoinSpec> {
    vec![
        JoinSpec::regular(None),
        JoinSpec::regular(Some(15)),
        JoinSpec::interval(-10, 5),
        JoinSpec {
            join: JoinKind::Interval {
                lower_ms: 0,
                upper_ms: 20,
                lower_exclusive: true,
                upper_exclusive: true,
            },
            late: LateRecords::SideOutput("late".into()),
        },
    ]
}

#[test]
fn every_matching_pair_exactly_once_against_the_reference_with_restarts() {
    for seed in 0..20u64 {
        for spec in specs() {
            let steps = stream(seed, 300);
            let (want, want_late) = reference(&spec, &steps);
            assert!(!want.is_empty());
            let restarts: Vec<usize> =
                (0..steps.len()).filter(|i| (i + seed as usize).is_multiple_of(41)).collect();
            for restarts in [&[][..], &restarts[..]] {
                let (got, late, dropped) = run(&spec, &steps, restarts);
                assert_eq!(got, want, "seed {seed}, {spec:?}, restarts {restarts:?}");
                match spec.late {
                    LateRecords::Drop => assert_eq!(dropped as usize, want_late.len(), "seed {seed}"),
                    LateRecords::SideOutput(_) => assert_eq!(late, want_late, "seed {seed}"),
                }
            }
        }
    }
}

#[test]
fn state_expires_with_the_ttl_and_timers_follow() {
    let spec = JoinSpec::regular(Some(10));
    let mut h = Harness::<Joined>::new();
    h.open_with(&context(&spec)).unwrap();
    for i in 0..100u64 {
        let (input, ts) = ((i % 2) as u32, i as i64);
        h.process_input(input, &[TestRecord::keyed(&(i % 10), &i, ts)]).unwrap();
    }
    assert_eq!(h.operator().join.buffered(), (50, 50));
    assert_eq!(h.timers().len(), 10, "one timer per key");
    let before =
        h.snapshot(true).unwrap().iter().map(|c| c.value.as_ref().map_or(0, Vec::len)).sum::<usize>();
    // Up to watermark 60: records at or below 50 can match nothing any more.
    h.watermark(60).unwrap();
    let (l, r) = h.operator().join.buffered();
    assert_eq!(l + r, 49, "records 51..=99 remain");
    let after = h.snapshot(true).unwrap().iter().map(|c| c.value.as_ref().map_or(0, Vec::len)).sum::<usize>();
    assert!(after * 10 < before * 6, "state bytes {before} → {after}");
    h.watermark(i64::MAX).unwrap();
    assert_eq!(h.operator().join.keys(), 0);
    assert!(h.timers().is_empty());
    // Deletes reach the host's copy.
    assert!(h.snapshot(false).unwrap().iter().all(|c| c.value.is_none()));
}

#[test]
fn interval_bounds_are_inclusive_unless_told_otherwise() {
    let pairs = |lower_exclusive: bool, upper_exclusive: bool| {
        let spec = JoinSpec {
            join: JoinKind::Interval { lower_ms: -5, upper_ms: 5, lower_exclusive, upper_exclusive },
            late: LateRecords::Drop,
        };
        let mut h = Harness::<Joined>::new();
        h.open_with(&context(&spec)).unwrap();
        h.process_input(0, &[TestRecord::keyed(&1u32, &100u64, 100)]).unwrap();
        let rights: Vec<TestRecord> =
            [94, 95, 100, 105, 106].iter().map(|t| TestRecord::keyed(&1u32, &(*t as u64), *t)).collect();
        let out = h.process_input(1, &rights).unwrap();
        out.iter().map(|r| r.decode_value::<(u64, u64)>().1).collect::<Vec<_>>()
    };
    assert_eq!(pairs(false, false), vec![95, 100, 105]);
    assert_eq!(pairs(true, false), vec![100, 105]);
    assert_eq!(pairs(false, true), vec![95, 100]);
    assert_eq!(pairs(true, true), vec![100]);
}

#[test]
fn specs_read_from_json_and_validate() {
    let spec: JoinSpec =
        crate::parse_config(r#"{"join": {"kind": "interval", "lower_ms": -5000, "upper_ms": 5000}}"#)
            .unwrap();
    assert_eq!(spec, JoinSpec::interval(-5000, 5000));
    let spec: JoinSpec =
        crate::parse_config(r#"{"join": {"kind": "regular"}, "late": {"side_output": "x"}}"#).unwrap();
    assert_eq!(spec, JoinSpec::regular(None).late_to("x"));
    let bad = |j: &str| crate::parse_config::<JoinSpec>(j).unwrap().validate().unwrap_err().to_string();
    assert!(
        bad(r#"{"join": {"kind": "interval", "lower_ms": 5, "upper_ms": 5, "upper_exclusive": true}}"#)
            .contains("match nothing")
    );
    assert!(bad(r#"{"join": {"kind": "regular", "ttl_ms": -1}}"#).contains("ttl_ms"));
    // A regular join without a TTL keeps everything: late records still pair.
    let spec = JoinSpec::regular(None);
    let mut h = Harness::<Joined>::new();
    h.open_with(&context(&spec)).unwrap();
    h.process_input(0, &[TestRecord::keyed(&1u32, &1u64, 0)]).unwrap();
    h.watermark(1000).unwrap();
    let out = h.process_input(1, &[TestRecord::keyed(&1u32, &2u64, 5)]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(to_msgpack(&1u32).unwrap(), out[0].key);
}
