//! References for the event-time operators (`builtin:window`, `builtin:join`): the records a
//! one-subtask `generator` source emits with the watermarks it sends after each batch, and
//! what windows and joins make of them, computed directly from the documented semantics
//! (guest-sdk/src/window.rs, join.rs) without the SDK's code.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

/// A `sequence` generator: `count` ids from `offset`, key `id % keys`, event time
/// `start + i·interval` moved back by the disorder options.
#[derive(Debug, Clone, Copy)]
pub struct Generated {
    pub count: u64,
    pub offset: u64,
    pub keys: u64,
    pub interval_ms: i64,
    pub disorder_ms: i64,
    /// Every `n`-th record moved back by a further `late_by_ms`.
    pub late: Option<(u64, i64)>,
    pub batch_size: usize,
    pub out_of_orderness_ms: i64,
}

/// One step of what a source sends down one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Record { key: u64, ts: i64, id: u64 },
    Watermark(i64),
}

impl Generated {
    /// The generator's config (for a source node), paced at `rate` records per second.
    pub fn config(&self, rate: Option<u64>) -> Value {
        let mut c = json!({
            "mode": "sequence", "count": self.count, "offset": self.offset, "keys": self.keys,
            "start_timestamp": 1_000, "interval_ms": self.interval_ms, "disorder_ms": self.disorder_ms,
            "batch_size": self.batch_size, "out_of_orderness_ms": self.out_of_orderness_ms,
            "records_per_second": rate,
        });
        if let Some((every, by)) = self.late {
            c["late_every"] = json!(every);
            c["late_by_ms"] = json!(by);
        }
        c
    }

    fn generator(&self) -> weir::connectors::GeneratorConfig {
        let mut c = self.config(None);
        for k in ["batch_size", "out_of_orderness_ms", "records_per_second"] {
            c.as_object_mut().unwrap().remove(k);
        }
        serde_json::from_value(c).expect("a generator config")
    }

    /// The records and watermarks a one-subtask source sends: after each batch, the highest
    /// event time so far minus `out_of_orderness_ms` minus 1 when it advanced; at the end,
    /// `i64::MAX`.
    pub fn steps(&self) -> Vec<Step> {
        let generator = self.generator();
        let (mut steps, mut max, mut wm) = (Vec::new(), i64::MIN, i64::MIN);
        let ids: Vec<u64> = (0..self.count).collect();
        for batch in ids.chunks(self.batch_size) {
            for &i in batch {
                let ts = generator.event_time(i);
                max = max.max(ts);
                let id = self.offset + i;
                steps.push(Step::Record { key: id % self.keys, ts, id });
            }
            let w = max.saturating_sub(self.out_of_orderness_ms).saturating_sub(1);
            if w > wm {
                wm = w;
                steps.push(Step::Watermark(w));
            }
        }
        steps.push(Step::Watermark(i64::MAX));
        steps
    }
}

/// A window assigner as the operator's config names it.
#[derive(Debug, Clone, Copy)]
pub enum Assigner {
    Tumbling { size: i64 },
    Sliding { size: i64, slide: i64 },
    Session { gap: i64 },
}

impl Assigner {
    pub fn json(&self) -> Value {
        match *self {
            Assigner::Tumbling { size } => json!({ "kind": "tumbling", "size_ms": size }),
            Assigner::Sliding { size, slide } => {
                json!({ "kind": "sliding", "size_ms": size, "slide_ms": slide })
            }
            Assigner::Session { gap } => json!({ "kind": "session", "gap_ms": gap }),
        }
    }
}

/// A fired window: (key, start, end, count, sum of ids).
pub type Fired = (u64, i64, i64, u64, u64);

/// The windows that fire and the ids of late records, for the steps of one channel: a
/// window `[s, e)` takes the records that arrive while the watermark is below
/// `e − 1 + lateness` and fires when it reaches that; a record none of whose windows is
/// open any more is late. Sessions: a record at `t` opens `[t, t + gap)`, overlapping
/// sessions merge.
pub fn windows(assigner: Assigner, lateness: i64, steps: &[Step]) -> (BTreeSet<Fired>, Vec<u64>) {
    let fire = |e: i64| e - 1 + lateness;
    // (key, start, end) → (count, sum)
    let mut open: BTreeMap<(u64, i64, i64), (u64, u64)> = BTreeMap::new();
    let (mut wm, mut fired, mut late) = (i64::MIN, BTreeSet::new(), Vec::new());
    for step in steps {
        match *step {
            Step::Record { key, ts, id } => match assigner {
                Assigner::Tumbling { .. } | Assigner::Sliding { .. } => {
                    let (size, slide) = match assigner {
                        Assigner::Tumbling { size } => (size, size),
                        Assigner::Sliding { size, slide } => (size, slide),
                        Assigner::Session { .. } => unreachable!(),
                    };
                    let mut placed = false;
                    let mut start = ts - ts.rem_euclid(slide);
                    while start > ts - size {
                        if fire(start + size) > wm {
                            let acc = open.entry((key, start, start + size)).or_default();
                            acc.0 += 1;
                            acc.1 += id;
                            placed = true;
                        }
                        start -= slide;
                    }
                    if !placed {
                        late.push(id);
                    }
                }
                Assigner::Session { gap } => {
                    let (mut s, mut e, mut n, mut sum) = (ts, ts + gap, 1, id);
                    let overlapping: Vec<_> = open
                        .iter()
                        .filter(|((k, ps, pe), _)| *k == key && *ps < ts + gap && *pe > ts)
                        .map(|(k, v)| (*k, *v))
                        .collect();
                    for ((_, ps, pe), (pn, psum)) in &overlapping {
                        s = s.min(*ps);
                        e = e.max(*pe);
                        n += pn;
                        sum += psum;
                    }
                    if fire(e) <= wm {
                        late.push(id);
                    } else {
                        for (k, _) in overlapping {
                            open.remove(&k);
                        }
                        open.insert((key, s, e), (n, sum));
                    }
                }
            },
            Step::Watermark(w) => {
                wm = w;
                let due: Vec<_> = open.keys().filter(|(_, _, e)| fire(*e) <= wm).copied().collect();
                for k in due {
                    let (n, sum) = open.remove(&k).unwrap();
                    assert!(fired.insert((k.0, k.1, k.2, n, sum)), "a window fires once");
                }
            }
        }
    }
    assert!(open.is_empty(), "the final watermark fires every window");
    (fired, late)
}

/// Decodes the `builtin:window` output lines (a file sink's JSON) into fired windows,
/// failing on a window that fired twice or a timestamp other than its last instant.
pub fn fired_windows(lines: &[Value]) -> BTreeSet<Fired> {
    let mut fired = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for r in lines {
        let v = &r["value"];
        let (start, end) = (v["start"].as_i64().unwrap(), v["end"].as_i64().unwrap());
        let key = r["key"].as_u64().unwrap();
        assert_eq!(r["timestamp"].as_i64().unwrap(), end - 1, "{r}");
        assert!(seen.insert((key, start, end)), "window fired twice: {r}");
        fired.insert((key, start, end, v["count"].as_u64().unwrap(), v["sum"].as_u64().unwrap()));
    }
    fired
}

/// A join pair: (key, left id, right id).
pub type Pair = (u64, u64, u64);

/// Which pairs match: `lo ≤ right.ts − left.ts ≤ hi` (inclusive; `None`: unbounded).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

/// Every pair of on-time records of the two channels' steps that matches; with bounds, a
/// record at or below its own input's watermark when it arrives is late.
pub fn join(bounds: Bounds, left: &[Step], right: &[Step]) -> (BTreeSet<Pair>, Vec<u64>) {
    let expires = bounds.lo.is_some() || bounds.hi.is_some();
    let on_time = |steps: &[Step], late: &mut Vec<u64>| {
        let mut wm = i64::MIN;
        let mut kept = Vec::new();
        for s in steps {
            match *s {
                Step::Record { ts, id, .. } if expires && ts <= wm => late.push(id),
                Step::Record { key, ts, id } => kept.push((key, ts, id)),
                Step::Watermark(w) => wm = w,
            }
        }
        kept
    };
    let mut late = Vec::new();
    let (l, r) = (on_time(left, &mut late), on_time(right, &mut late));
    let mut by_key: BTreeMap<u64, Vec<(i64, u64)>> = BTreeMap::new();
    for &(key, ts, id) in &r {
        by_key.entry(key).or_default().push((ts, id));
    }
    let mut pairs = BTreeSet::new();
    for &(key, l_ts, l_id) in &l {
        for &(r_ts, r_id) in by_key.get(&key).map_or(&[][..], Vec::as_slice) {
            let d = r_ts - l_ts;
            if bounds.lo.is_none_or(|lo| d >= lo) && bounds.hi.is_none_or(|hi| d <= hi) {
                pairs.insert((key, l_id, r_id));
            }
        }
    }
    late.sort_unstable();
    (pairs, late)
}

/// Decodes the `builtin:join` output lines into pairs, failing on a pair emitted twice or a
/// timestamp other than the later of the two.
pub fn joined_pairs(lines: &[Value]) -> BTreeSet<Pair> {
    let mut pairs = BTreeSet::new();
    for r in lines {
        let v = &r["value"];
        let pair = (r["key"].as_u64().unwrap(), v["left"].as_u64().unwrap(), v["right"].as_u64().unwrap());
        let ts = v["left_ts"].as_i64().unwrap().max(v["right_ts"].as_i64().unwrap());
        assert_eq!(r["timestamp"].as_i64().unwrap(), ts, "{r}");
        assert!(pairs.insert(pair), "pair emitted twice: {r}");
    }
    pairs
}

/// The ids of records on a side-output sink (values are the records' ids).
pub fn ids(lines: &[Value]) -> Vec<u64> {
    let mut ids: Vec<u64> = lines.iter().map(|r| r["value"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids
}
