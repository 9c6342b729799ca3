//! A test component for state migration: a third version of `examples/wordcount` whose
//! *state schema* changed.
//!
//! State: the keyed state "counts" holds a [`Tally`] per word — its running count and the
//! number of input batches that touched it — state schema version 1. It migrates the
//! example's state (version 0, a bare u64 count per word) to `Tally { count, batches: 0 }`.
//! Output: exactly the example's — one record per distinct word of each input batch, in
//! first-seen order, key = the word, value = its new total (u64), timestamp = the latest
//! timestamp of the word's records in the batch — so results compare with the same
//! reference.

use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use weir_guest::{Error, KeyedState, Operator, Output, Record, Result, States, from_msgpack, to_msgpack};

/// What version 1 of the state schema keeps per word.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// The word's running count.
    pub count: u64,
    /// How many input batches touched the word (since the state was migrated: 0 for
    /// state migrated from version 0, which did not count batches).
    pub batches: u64,
}

/// The word-count operator, version 3.
#[derive(Default, States)]
pub struct WordCountV3 {
    counts: KeyedState<String, Tally>,
    /// The distinct words of the batch being processed.
    batch: BatchWords,
}

impl Operator for WordCountV3 {
    const STATE_VERSION: u32 = 1;
    const MIGRATES_FROM: &'static [u32] = &[0];

    fn migrate(from_version: u32, state: &str, _key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        // Only version 0 is listed in MIGRATES_FROM: `from_version` is 0.
        if state != "counts" {
            return Err(Error::invalid_state(format!(
                "version {from_version} has no state \"{state}\" (only \"counts\")"
            )));
        }
        let count: u64 = from_msgpack(value)?;
        to_msgpack(&Tally { count, batches: 0 }).map(Some)
    }

    fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
        let word: &str = record.key()?;
        let increment: u64 = record.value()?;
        let first_in_batch = self.batch.touch(word, record.timestamp());
        let tally = self.counts.get_or_insert_with(word, Tally::default);
        tally.count = tally.count.saturating_add(increment);
        if first_in_batch {
            tally.batches += 1;
        }
        Ok(())
    }

    fn end_batch(&mut self, _input: u32, out: &mut Output) -> Result<()> {
        for (word, timestamp) in self.batch.words.drain(..) {
            let total = self.counts.get(&*word).map_or(0, |t| t.count);
            out.emit(&*word, &total, timestamp)?;
        }
        self.batch.index.clear();
        Ok(())
    }
}

weir_guest::export_operator!(WordCountV3, name = "wordcount-v3");

/// Distinct words in first-seen order with their latest timestamp.
#[derive(Default)]
struct BatchWords {
    index: FxHashMap<Rc<str>, usize>,
    words: Vec<(Rc<str>, i64)>,
}

impl BatchWords {
    /// Notes `word` at `timestamp`; true the first time the batch sees it.
    fn touch(&mut self, word: &str, timestamp: i64) -> bool {
        match self.index.get(word) {
            Some(&i) => {
                let latest = &mut self.words[i].1;
                *latest = (*latest).max(timestamp);
                false
            }
            None => {
                let word: Rc<str> = Rc::from(word);
                self.index.insert(Rc::clone(&word), self.words.len());
                self.words.push((word, timestamp));
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use weir_guest::testing::{Harness, StateChange, TestRecord};

    use super::*;

    fn word(w: &str, n: u64, ts: i64) -> TestRecord {
        TestRecord::keyed(w, &n, ts)
    }

    fn saved<V: Serialize>(state: &str, w: &str, value: &V) -> StateChange {
        StateChange {
            state: state.into(),
            key: to_msgpack(w).unwrap(),
            value: Some(to_msgpack(value).unwrap()),
        }
    }

    fn tallies(changes: &[StateChange]) -> Vec<(String, Tally)> {
        let mut out: Vec<(String, Tally)> = changes
            .iter()
            .map(|c| (from_msgpack(&c.key).unwrap(), c.decode_value().expect("a put")))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn counts_words_and_the_batches_that_touch_them() {
        let mut harness = Harness::<WordCountV3>::new();
        harness.open("{}").unwrap();
        let out = harness.process(&[word("b", 1, 5), word("a", 1, 3), word("b", 2, 4)]).unwrap();
        assert_eq!(out, [word("b", 3, 5), word("a", 1, 3)]);
        harness.process(&[word("a", 1, 9)]).unwrap();
        assert_eq!(
            tallies(&harness.snapshot(true).unwrap()),
            [("a".into(), Tally { count: 2, batches: 2 }), ("b".into(), Tally { count: 3, batches: 1 })]
        );
    }

    #[test]
    fn migrates_the_counts_of_version_0() {
        let mut harness = Harness::<WordCountV3>::new();
        harness.restore_version(0, &[saved("counts", "x", &4u64), saved("counts", "y", &1u64)]).unwrap();
        harness.open("{}").unwrap();
        assert_eq!(harness.process(&[word("x", 1, 0)]).unwrap(), [word("x", 5, 0)]);
        assert_eq!(
            tallies(&harness.snapshot(true).unwrap()),
            [("x".into(), Tally { count: 5, batches: 1 }), ("y".into(), Tally { count: 1, batches: 0 })]
        );
    }

    #[test]
    fn refuses_what_it_cannot_migrate() {
        let mut harness = Harness::<WordCountV3>::new();
        let e = harness.restore_version(0, &[saved("counts", "x", &"four")]).unwrap_err();
        assert!(matches!(e, Error::InvalidState(_)), "{e}");
        let e = harness.restore_version(0, &[saved("other", "x", &4u64)]).unwrap_err().to_string();
        assert!(e.contains("version 0 has no state \"other\""), "{e}");
        let e = harness.restore_version(2, &[]).unwrap_err().to_string();
        assert!(
            e.contains(
                "state schema version 2 cannot be restored by this operator (version 1, migrates from [0])"
            ),
            "{e}"
        );
    }
}
