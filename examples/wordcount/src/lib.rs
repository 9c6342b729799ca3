//! Counts words: a keyed, stateful operator.
//!
//! Input: records keyed by a word (MessagePack string) whose value is an increment
//! (MessagePack u64), as the tokenizer emits them. State: the running count of every word,
//! in the keyed state "counts". Output: for each input batch, one record per distinct word of
//! the batch, in first-seen order: key = the word, value = its new total (u64), timestamp =
//! the latest timestamp of the word's records in the batch.

use std::rc::Rc;

use rustc_hash::FxHashMap;
use weir_guest::{KeyedState, Operator, Output, Record, Result, States};

/// The word-count operator.
#[derive(Default, States)]
pub struct WordCount {
    counts: KeyedState<String, u64>,
    /// The distinct words of the batch being processed.
    batch: BatchWords,
}

impl Operator for WordCount {
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
            let total = self.counts.get(&*word).copied().unwrap_or_default();
            out.emit(&*word, &total, timestamp)?;
        }
        self.batch.index.clear();
        Ok(())
    }
}

weir_guest::export_operator!(WordCount, name = "wordcount");

/// Distinct words in first-seen order with their latest timestamp. Kept between batches (and
/// emptied at the end of each) so that its buffers are reused.
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
    use weir_guest::testing::{Harness, TestRecord};

    use super::*;

    fn word(w: &str, n: u64, ts: i64) -> TestRecord {
        TestRecord::keyed(w, &n, ts)
    }

    #[test]
    fn emits_one_total_per_distinct_word_per_batch() {
        let mut harness = Harness::<WordCount>::new();
        harness.open("{}").unwrap();
        let out = harness.process(&[word("b", 1, 5), word("a", 1, 3), word("b", 2, 4)]).unwrap();
        assert_eq!(out, [word("b", 3, 5), word("a", 1, 3)]);
        let out = harness.process(&[word("a", 1, 9)]).unwrap();
        assert_eq!(out, [word("a", 2, 9)]);
        assert!(harness.process(&[]).unwrap().is_empty());
    }

    #[test]
    fn counts_survive_snapshot_and_restore() {
        let mut harness = Harness::<WordCount>::new();
        harness.open("{}").unwrap();
        harness.process(&[word("x", 4, 0), word("y", 1, 0)]).unwrap();
        let first = harness.snapshot(false).unwrap();
        harness.process(&[word("x", 1, 0)]).unwrap();
        let second = harness.snapshot(false).unwrap();
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].key, weir_guest::to_msgpack("x").unwrap());
        assert_eq!(second[0].decode_value::<u64>(), Some(5));

        let mut restored = Harness::<WordCount>::new();
        restored.restore(&first).unwrap();
        restored.restore(&second).unwrap();
        restored.open("{}").unwrap();
        assert_eq!(restored.process(&[word("x", 1, 0)]).unwrap(), [word("x", 6, 0)]);
    }
}
