//! Snapshots in parts (`chunked-snapshot`) through the native harness: the parts hold what
//! one `snapshot` call would, in order, cut at the part budget, and the census of states
//! still fails a snapshot that misses one.

use weir_guest::testing::{Harness, StateChange, TestRecord};
use weir_guest::{KeyedState, Operator, Output, Record, Result, States, ValueState};

#[derive(Default, States)]
struct Words {
    counts: KeyedState<String, u64>,
    last: ValueState<String>,
}

impl Operator for Words {
    fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
        let word: String = record.value()?;
        *self.counts.get_or_insert_with(&word, || 0) += 1;
        if word.len().is_multiple_of(7) {
            self.counts.remove(&word);
        }
        self.last.set(word);
        Ok(())
    }
}

fn words(from: u32, to: u32) -> Vec<TestRecord> {
    (from..to).map(|i| TestRecord::unkeyed(&format!("word-{}", i % 150), 0)).collect()
}

/// Two harnesses fed the same records.
fn twins() -> (Harness<Words>, Harness<Words>) {
    let (mut a, mut b) = (Harness::<Words>::new(), Harness::<Words>::new());
    for h in [&mut a, &mut b] {
        h.open("{}").unwrap();
        h.process(&words(0, 400)).unwrap();
    }
    (a, b)
}

fn bytes(c: &StateChange) -> usize {
    c.key.len() + c.value.as_ref().map_or(0, Vec::len) + 16
}

#[test]
fn parts_cut_at_the_budget_hold_the_whole_snapshot() {
    let (mut a, mut b) = twins();
    for full in [false, true, false] {
        let parts = a.snapshot_parts(full, 256).unwrap();
        assert!(parts.len() > 5, "{} parts", parts.len());
        for part in &parts[..parts.len() - 1] {
            let before_last: usize = part[..part.len() - 1].iter().map(bytes).sum();
            assert!(
                !part.is_empty() && before_last < 256,
                "a part ends at the entry that reaches the budget"
            );
        }
        assert_eq!(parts.concat(), b.snapshot_whole(full).unwrap(), "full: {full}");
        for h in [&mut a, &mut b] {
            h.process(&words(400, 520)).unwrap();
        }
    }
}

#[test]
fn a_state_restored_from_parts_carries_on_the_same() {
    let (mut a, mut b) = twins();
    let saved = a.snapshot_parts(true, 100).unwrap().concat();
    let mut restored = Harness::<Words>::new();
    restored.restore(&saved).unwrap();
    restored.open("{}").unwrap();
    assert_eq!(restored.snapshot(false).unwrap(), [], "restored entries count as saved");
    for h in [&mut restored, &mut b] {
        h.process(&words(400, 700)).unwrap();
    }
    let (mut x, mut y) = (restored.snapshot(true).unwrap(), b.snapshot(true).unwrap());
    x.sort_by(|p, q| (&p.state, &p.key).cmp(&(&q.state, &q.key)));
    y.sort_by(|p, q| (&p.state, &p.key).cmp(&(&q.state, &q.key)));
    assert_eq!(x, y);
}

/// Keeps a state out of `states()`.
#[derive(Default)]
struct Hidden {
    seen: KeyedState<String, u64>,
    hidden: ValueState<u64>,
}

impl States for Hidden {
    fn states<'a>(&'a mut self, registry: &mut weir_guest::StateRegistry<'a>) {
        registry.register("seen", &mut self.seen);
    }
}

impl Operator for Hidden {
    fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
        self.seen.insert(&record.value::<String>()?, 1);
        self.hidden.set(1);
        Ok(())
    }
}

#[test]
fn a_snapshot_in_parts_that_misses_a_state_fails_after_its_last_part() {
    let mut h = Harness::<Hidden>::new();
    h.open("{}").unwrap();
    h.process(&words(0, 100)).unwrap();
    let e = h.snapshot_parts(false, 64).unwrap_err().to_string();
    assert!(e.contains("state `ValueState<u64>` was created at") && e.contains("(registered: seen)"), "{e}");
}
