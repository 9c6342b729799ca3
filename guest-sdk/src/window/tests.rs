//! Windows driven through the native harness, against a reference simulation of the
//! semantics the module documents.

use std::collections::BTreeMap;

use super::*;
use crate::testing::{Harness, TestRecord};
use crate::{Context, Operator, Output, States, to_msgpack};

/// Count and sum of the record ids in a window.
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
        acc.1 += id;
    }
    fn merge(&self, acc: &mut (u64, u64), other: (u64, u64)) {
        acc.0 += other.0;
        acc.1 += other.1;
    }
    fn result(&self, acc: (u64, u64)) -> (u64, u64) {
        acc
    }
}

#[derive(Default, States)]
struct Windowed {
    #[state]
    windows: KeyedWindows<CountSum>,
}

/// What a fired window emits: (start, end, count, sum) under the record key.
type Fired = (i64, i64, u64, u64);

impl Operator for Windowed {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.windows.configure(context.config::<WindowSpec>()?)
    }

    fn process(&mut self, record: Record<'_>, _: &mut Output) -> Result<()> {
        let id: u64 = record.value()?;
        self.windows.add(&record, &id)
    }

    fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
        self.windows.fire(key, timestamp, |w, (count, sum)| {
            out.emit_with_key_bytes(key, &(w.start, w.end, count, sum), w.max_timestamp())
        })
    }
}

/// One step of a test stream.
#[derive(Debug, Clone, Copy)]
enum Step {
    Record { key: u32, ts: i64, id: u64 },
    Watermark(i64),
}

fn spec_json(spec: &WindowSpec) -> String {
    serde_json::to_string(spec).unwrap()
}

/// Runs `steps` through the operator (restarting from a checkpoint before the steps listed in
/// `restarts`): what it emitted as (key, fired), in order, the late ids sent to the side output
/// `late`, and the late-dropped counter.
fn run(spec: &WindowSpec, steps: &[Step], restarts: &[usize]) -> (Vec<(u32, Fired)>, Vec<u64>, u64) {
    let mut h = Harness::<Windowed>::new();
    h.open(&spec_json(spec)).unwrap();
    let mut out = Vec::new();
    let mut late = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if restarts.contains(&i) {
            // The host's counters and timers outlive the instance.
            late.extend(h.take_side_outputs().into_iter().map(|(_, r)| r.decode_value::<u64>()));
            h = h.restart().unwrap();
            h.open(&spec_json(spec)).unwrap();
        }
        let emitted = match *step {
            Step::Record { key, ts, id } => h.process(&[TestRecord::keyed(&key, &id, ts)]).unwrap(),
            Step::Watermark(w) => h.watermark(w).unwrap(),
        };
        for r in emitted {
            assert_eq!(
                r.timestamp,
                r.decode_value::<Fired>().1 - 1,
                "a result carries its window's last instant"
            );
            out.push((r.decode_key::<u32>(), r.decode_value::<Fired>()));
        }
    }
    for (name, r) in h.take_side_outputs() {
        assert_eq!(name, "late");
        late.push(r.decode_value::<u64>());
    }
    (out, late, h.counter("late_records_dropped"))
}

/// The documented semantics, computed directly: per (key, window) the records that arrived
/// while the watermark was below the window's fire time; a window fires at the first
/// watermark at or past its fire time, in (fire time, key bytes, start) order; a record
/// every window of which had fired is late. Not for sessions.
fn reference(spec: &WindowSpec, steps: &[Step]) -> (Vec<(u32, Fired)>, Vec<u64>) {
    let mut open: BTreeMap<(u32, Window), (u64, u64)> = BTreeMap::new();
    let (mut wm, mut out, mut late) = (i64::MIN, Vec::new(), Vec::new());
    let mut windows = Vec::new();
    for step in steps {
        match *step {
            Step::Record { key, ts, id } => {
                spec.assign(ts, &mut windows);
                let mut placed = false;
                for w in &windows {
                    if spec.fire_time(*w) > wm {
                        let acc = open.entry((key, *w)).or_default();
                        acc.0 += 1;
                        acc.1 += id;
                        placed = true;
                    }
                }
                if !placed {
                    late.push(id);
                }
            }
            Step::Watermark(w) if w > wm => {
                wm = w;
                let mut due: Vec<_> =
                    open.keys().filter(|(_, win)| spec.fire_time(*win) <= wm).copied().collect();
                due.sort_by_key(|(key, win)| (spec.fire_time(*win), to_msgpack(key).unwrap(), win.start));
                for k in due {
                    let (count, sum) = open.remove(&k).unwrap();
                    out.push((k.0, (k.1.start, k.1.end, count, sum)));
                }
            }
            Step::Watermark(_) => {}
        }
    }
    (out, late)
}

/// A seeded stream: records of `keys` keys with timestamps up to `disorder` behind the
/// running maximum (some much further, to be late), watermarks trailing the maximum.
fn stream(seed: u64, n: usize, keys: u32, disorder: i64) -> Vec<Step> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 33
    };
    let (mut steps, mut max) = (Vec::new(), 0i64);
    for id in 0..n as u64 {
        max += (next() % 7) as i64;
        let back = if next() % 10 == 0 { disorder * 3 } else { (next() as i64) % (disorder + 1) };
        steps.push(Step::Record { key: (next() % keys as u64) as u32, ts: max - back, id });
        if next() % 5 == 0 {
            steps.push(Step::Watermark(max - disorder));
        }
    }
    steps.push(Step::Watermark(i64::MAX));
    steps
}

fn specs() -> Vec<WindowSpec> {
    vec![
        WindowSpec::new(Windows::Tumbling { size_ms: 20, offset_ms: 0 }),
        WindowSpec::new(Windows::Tumbling { size_ms: 15, offset_ms: 4 }).allowed_lateness(10),
        WindowSpec::new(Windows::Sliding { size_ms: 30, slide_ms: 10, offset_ms: 0 }).late_to("late"),
        WindowSpec::new(Windows::Sliding { size_ms: 25, slide_ms: 10, offset_ms: -3 })
            .allowed_lateness(7)
            .late_to("late"),
    ]
}

#[test]
fn tumbling_and_sliding_windows_match_the_reference_in_and_out_of_order() {
    let mut late_per_spec = vec![0; specs().len()];
    for seed in 0..20u64 {
        for (s, spec) in specs().into_iter().enumerate() {
            let steps = stream(seed, 300, 5, 12);
            let (want, want_late) = reference(&spec, &steps);
            let (got, late, dropped) = run(&spec, &steps, &[]);
            assert_eq!(got, want, "seed {seed}, {spec:?}");
            match spec.late {
                LateRecords::Drop => {
                    assert_eq!(dropped, want_late.len() as u64, "seed {seed}, {spec:?}");
                    assert!(late.is_empty());
                }
                LateRecords::SideOutput(_) => {
                    assert_eq!(late, want_late, "seed {seed}, {spec:?}");
                    assert_eq!(dropped, 0);
                }
            }
            late_per_spec[s] += want_late.len();
            // Every on-time record counted once per window it belongs to.
            let records = steps.iter().filter(|s| matches!(s, Step::Record { .. })).count();
            let windows_per_record = match spec.window {
                Windows::Sliding { .. } => 2..=3,
                _ => 1..=1,
            };
            let counted: u64 = got.iter().map(|(_, f)| f.2).sum();
            assert!(counted as usize >= (records - want_late.len()) * windows_per_record.start());
        }
    }
    assert!(late_per_spec.iter().all(|n| *n > 0), "every spec saw late records: {late_per_spec:?}");
}

#[test]
fn a_restart_from_a_checkpoint_changes_nothing() {
    for seed in 0..10u64 {
        for spec in specs() {
            let steps = stream(seed, 200, 4, 12);
            let plain = run(&spec, &steps, &[]);
            let restarts: Vec<usize> =
                (0..steps.len()).filter(|i| (i + seed as usize).is_multiple_of(37)).collect();
            assert_eq!(run(&spec, &steps, &restarts), plain, "seed {seed}, {spec:?}");
        }
    }
}

#[test]
fn a_window_fires_once_at_its_end_plus_lateness_and_late_records_go_to_the_side_output() {
    let spec =
        WindowSpec::new(Windows::Tumbling { size_ms: 10, offset_ms: 0 }).allowed_lateness(5).late_to("late");
    let mut h = Harness::<Windowed>::new();
    h.open(&spec_json(&spec)).unwrap();
    h.process(&[TestRecord::keyed(&1u32, &1u64, 3), TestRecord::keyed(&1u32, &2u64, 9)]).unwrap();
    assert_eq!(h.timers().len(), 1, "one timer per key");
    assert!(h.watermark(9).unwrap().is_empty(), "the end passed, the lateness not");
    // Behind the watermark but within the lateness: counted.
    h.process(&[TestRecord::keyed(&1u32, &4u64, 2)]).unwrap();
    let fired = h.watermark(14).unwrap();
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].decode_value::<Fired>(), (0, 10, 3, 7));
    assert_eq!(fired[0].timestamp, 9);
    // The window fired: a record for it is late, unchanged on the side output.
    h.process(&[TestRecord::keyed(&1u32, &8u64, 5)]).unwrap();
    assert!(h.watermark(100).unwrap().is_empty(), "fires exactly once");
    let late = h.take_side_outputs();
    assert_eq!(late, vec![("late".to_string(), TestRecord::keyed(&1u32, &8u64, 5))]);
    assert_eq!(h.operator().windows.keys(), 0, "fired windows are forgotten");
    assert!(h.timers().is_empty());
}

#[test]
fn session_windows_merge_when_a_record_bridges_them() {
    let spec = WindowSpec::new(Windows::Session { gap_ms: 10 });
    let mut h = Harness::<Windowed>::new();
    h.open(&spec_json(&spec)).unwrap();
    let r = |id: u64, ts: i64| TestRecord::keyed(&7u32, &id, ts);
    h.process(&[r(1, 0), r(2, 25), r(4, 12)]).unwrap();
    let key = to_msgpack(&7u32).unwrap();
    let windows = |h: &mut Harness<Windowed>| h.operator().windows.windows_of(&key);
    assert_eq!(
        windows(&mut h),
        vec![Window { start: 0, end: 10 }, Window { start: 12, end: 22 }, Window { start: 25, end: 35 }]
    );
    // [9, 19) overlaps [0, 10) and [12, 22): they become [0, 22); [25, 35) stays apart...
    // until 21 joins [0, 22) and [25, 35) through [21, 31).
    h.process(&[r(8, 9)]).unwrap();
    assert_eq!(windows(&mut h), vec![Window { start: 0, end: 22 }, Window { start: 25, end: 35 }]);
    // A record at a session's end starts a new one: [10, 20) only touches [0, 10).
    let other = to_msgpack(&8u32).unwrap();
    h.process(&[TestRecord::keyed(&8u32, &0u64, 0), TestRecord::keyed(&8u32, &0u64, 10)]).unwrap();
    assert_eq!(
        h.operator().windows.windows_of(&other),
        vec![Window { start: 0, end: 10 }, Window { start: 10, end: 20 }]
    );
    let decode = |fired: Vec<TestRecord>| -> Vec<(u32, Fired)> {
        fired.iter().map(|f| (f.decode_key(), f.decode_value())).collect()
    };
    assert_eq!(decode(h.watermark(20).unwrap()), vec![(8, (0, 10, 1, 0)), (8, (10, 20, 1, 0))]);
    h.process(&[r(16, 21)]).unwrap();
    assert_eq!(windows(&mut h), vec![Window { start: 0, end: 35 }]);
    assert_eq!(decode(h.watermark(34).unwrap()), vec![(7, (0, 35, 5, 31))]);
    // A record whose session would have fired is late.
    h.process(&[r(32, 20)]).unwrap();
    assert_eq!(h.counter("late_records_dropped"), 1);
    assert!(h.timers().is_empty());
}

/// Sessions computed directly: per key, the sorted on-time timestamps grouped where the next
/// is at most `gap` after the previous; here no record is late (watermarks trail far enough).
#[test]
fn session_windows_match_the_reference_with_restarts() {
    let gap = 10;
    let spec = WindowSpec::new(Windows::Session { gap_ms: gap });
    for seed in 0..20u64 {
        // Sparse keys so sessions both form and close; watermarks well behind the records.
        let mut steps = Vec::new();
        let mut state = seed.wrapping_add(99);
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 33
        };
        let mut max = 0i64;
        for id in 0..250u64 {
            max += (next() % 4) as i64;
            let ts = max - (next() % 8) as i64;
            steps.push(Step::Record { key: (next() % 6) as u32, ts, id });
            if next() % 6 == 0 {
                steps.push(Step::Watermark(max - 8));
            }
        }
        steps.push(Step::Watermark(i64::MAX));
        let mut by_key: BTreeMap<u32, Vec<(i64, u64)>> = BTreeMap::new();
        for s in &steps {
            if let Step::Record { key, ts, id } = *s {
                by_key.entry(key).or_default().push((ts, id));
            }
        }
        let mut want = Vec::new();
        for (key, mut records) in by_key {
            records.sort();
            let mut session: Option<Fired> = None;
            for (ts, id) in records {
                session = match session {
                    Some((start, end, n, sum)) if ts < end => {
                        Some((start, end.max(ts + gap), n + 1, sum + id))
                    }
                    Some(done) => {
                        want.push((key, done));
                        Some((ts, ts + gap, 1, id))
                    }
                    None => Some((ts, ts + gap, 1, id)),
                };
            }
            want.extend(session.map(|s| (key, s)));
        }
        want.sort();
        let restarts: Vec<usize> =
            (0..steps.len()).filter(|i| (i + seed as usize).is_multiple_of(29)).collect();
        for restarts in [&[][..], &restarts[..]] {
            let (mut got, late, dropped) = run(&spec, &steps, restarts);
            assert_eq!((late.len(), dropped), (0, 0), "seed {seed}");
            got.sort();
            assert_eq!(got, want, "seed {seed}");
        }
    }
}

#[test]
fn specs_are_validated_and_read_from_json() {
    let spec: WindowSpec = crate::parse_config(
        r#"{"window": {"kind": "sliding", "size_ms": 10000, "slide_ms": 2000},
            "allowed_lateness_ms": 1000, "late": {"side_output": "late"}}"#,
    )
    .unwrap();
    assert_eq!(
        spec,
        WindowSpec::new(Windows::Sliding { size_ms: 10_000, slide_ms: 2_000, offset_ms: 0 })
            .allowed_lateness(1000)
            .late_to("late")
    );
    let bad =
        |json: &str| crate::parse_config::<WindowSpec>(json).unwrap().validate().unwrap_err().to_string();
    assert!(bad(r#"{"window": {"kind": "tumbling", "size_ms": 0}}"#).contains("size_ms must be positive"));
    assert!(
        bad(r#"{"window": {"kind": "sliding", "size_ms": 100000, "slide_ms": 1}}"#).contains("1000 windows")
    );
    assert!(bad(r#"{"window": {"kind": "session", "gap_ms": -1}}"#).contains("gap_ms"));
    assert!(
        bad(r#"{"window": {"kind": "tumbling", "size_ms": 5}, "allowed_lateness_ms": -1}"#)
            .contains("lateness")
    );
    assert!(
        crate::parse_config::<WindowSpec>(r#"{"window": {"kind": "tumbling", "size_ms": 5}, "latenes": 1}"#)
            .is_err()
    );
}

#[test]
fn assignment_handles_negative_times_and_offsets() {
    let mut w = Vec::new();
    WindowSpec::new(Windows::Tumbling { size_ms: 10, offset_ms: 0 }).assign(-1, &mut w);
    assert_eq!(w, vec![Window { start: -10, end: 0 }]);
    WindowSpec::new(Windows::Sliding { size_ms: 10, slide_ms: 4, offset_ms: 1 }).assign(9, &mut w);
    assert_eq!(
        w,
        vec![Window { start: 1, end: 11 }, Window { start: 5, end: 15 }, Window { start: 9, end: 19 }]
    );
    WindowSpec::new(Windows::Tumbling { size_ms: 10, offset_ms: 0 }).assign(i64::MIN, &mut w);
    assert_eq!(w.len(), 1);
    WindowSpec::new(Windows::Sliding { size_ms: 10, slide_ms: 3, offset_ms: 0 }).assign(i64::MAX, &mut w);
    assert!(!w.is_empty() && w.len() <= 4);
}
