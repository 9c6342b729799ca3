//! A test component for state schema versions: a second version of `examples/wordcount`
//! whose *logic* changed but whose state did not.
//!
//! State: like the example, the running count of every word in the keyed state "counts"
//! (`KeyedState<String, u64>`), state schema version 0 — so it restores the example's
//! checkpoints as they are. Output: like the example, one record per distinct word of each
//! input batch, in first-seen order, key = the word, timestamp = the latest timestamp of the
//! word's records in the batch; but the value is the map `{"count": total, "version": 2}`
//! instead of the bare total, so a test can tell which version produced a record while it
//! checks that the counts go on from the restored state.

use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde::Serialize;
use weir_guest::{KeyedState, Operator, Output, Record, Result, States};

/// What version 2 emits per word.
#[derive(Debug, Serialize)]
struct Total {
    /// The word's running count.
    count: u64,
    /// Always 2.
    version: u32,
}

/// The word-count operator, version 2.
#[derive(Default, States)]
pub struct WordCountV2 {
    counts: KeyedState<String, u64>,
    /// The distinct words of the batch being processed.
    batch: BatchWords,
}

impl Operator for WordCountV2 {
    // The example's schema: same state names, same encodings.
    const STATE_VERSION: u32 = 0;

    fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
        let word: &str = record.key()?;
        let increment: u64 = record.value()?;
        let count = self.counts.get_or_insert_with(word, || 0);
        *count = count.saturating_add(increment);
        self.batch.touch(word, record.timestamp());
        Ok(())
    }

    fn end_batch(&mut self, _input: u32, out: &mut Output) -> Result<()> {
        for (word, timestamp) in self.batch.words.drain(..) {
            let count = self.counts.get(&*word).copied().unwrap_or_default();
            out.emit(&*word, &Total { count, version: 2 }, timestamp)?;
        }
        self.batch.index.clear();
        Ok(())
    }
}

weir_guest::export_operator!(WordCountV2, name = "wordcount-v2");

/// Distinct words in first-seen order with their latest timestamp.
#[derive(Default)]
struct BatchWords {
    index: FxHashMap<Rc<str>, usize>,
    words: Vec<(Rc<str>, i64)>,
}

impl BatchWords {
    fn touch(&mut self, word: &str, timestamp: i64) {
        match self.index.get(word) {
            Some(&i) => {
                let latest = &mut self.words[i].1;
                *latest = (*latest).max(timestamp);
            }
            None => {
                let word: Rc<str> = Rc::from(word);
                self.index.insert(Rc::clone(&word), self.words.len());
                self.words.push((word, timestamp));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use weir_guest::testing::{Harness, StateChange, TestRecord};
    use weir_guest::to_msgpack;

    use super::*;

    fn word(w: &str, n: u64, ts: i64) -> TestRecord {
        TestRecord::keyed(w, &n, ts)
    }

    fn total(w: &str, count: u64, ts: i64) -> TestRecord {
        TestRecord::keyed(w, &Total { count, version: 2 }, ts)
    }

    #[test]
    fn emits_a_versioned_total_per_distinct_word_per_batch() {
        let mut harness = Harness::<WordCountV2>::new();
        harness.open("{}").unwrap();
        let out = harness.process(&[word("b", 1, 5), word("a", 1, 3), word("b", 2, 4)]).unwrap();
        assert_eq!(out, [total("b", 3, 5), total("a", 1, 3)]);
    }

    #[test]
    fn restores_the_examples_state_as_it_is() {
        let saved = StateChange {
            state: "counts".into(),
            key: to_msgpack("x").unwrap(),
            value: Some(to_msgpack(&4u64).unwrap()),
        };
        let mut harness = Harness::<WordCountV2>::new();
        harness.restore_version(0, &[saved]).unwrap();
        harness.open("{}").unwrap();
        assert_eq!(harness.process(&[word("x", 1, 0)]).unwrap(), [total("x", 5, 0)]);
        assert!(harness.restore_version(1, &[]).is_err(), "no other schema version is read");
    }
}
