//! Splits lines of text into words: the first operator of the word-count example.
//!
//! Input: records whose value is a MessagePack string (a line of text); keys are ignored.
//! Output: one record per word, keyed by the word (a MessagePack string, lowercase, without
//! leading or trailing non-alphanumeric characters) with the value `1` (MessagePack u64) and
//! the line's timestamp.

use std::borrow::Cow;

/// The words of `line`, each with a count of 1. Words borrow from the batch unless they had
/// to be lowercased.
#[weir_guest::flat_map(keyed, name = "tokenizer")]
fn tokenize(line: &str) -> impl Iterator<Item = (Cow<'_, str>, u64)> {
    line.split_whitespace().filter_map(|word| normalize(word).map(|word| (word, 1)))
}

/// Lowercases `word` and strips non-alphanumeric characters at both ends; `None` if nothing
/// remains.
fn normalize(word: &str) -> Option<Cow<'_, str>> {
    let word = if !word.is_ascii() {
        Cow::Owned(strip(&word.to_lowercase()).to_owned())
    } else if word.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(strip(word).to_ascii_lowercase())
    } else {
        Cow::Borrowed(strip(word))
    };
    (!word.is_empty()).then_some(word)
}

fn strip(word: &str) -> &str {
    word.trim_matches(|c: char| !c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use weir_guest::testing::{Harness, TestRecord};

    use super::*;

    #[test]
    fn splits_lowercases_and_strips() {
        let words: Vec<_> = tokenize("  The cat's \"HAT\" -- is  Ünïcode, (ok)!\n").map(|(w, _)| w).collect();
        assert_eq!(words, ["the", "cat's", "hat", "is", "ünïcode", "ok"]);
        assert_eq!(tokenize(" ... ").count(), 0);
    }

    #[test]
    fn emits_word_keys_with_count_one_and_the_line_timestamp() {
        let mut harness = Harness::<tokenize>::new();
        harness.open("{}").unwrap();
        let out = harness
            .process(&[
                TestRecord::unkeyed("To be, or", 7),
                TestRecord::unkeyed("", 8),
                TestRecord::unkeyed("BE", 9),
            ])
            .unwrap();
        let expected =
            [("to", 7), ("be", 7), ("or", 7), ("be", 9)].map(|(w, ts)| TestRecord::keyed(w, &1u64, ts));
        assert_eq!(out, expected);
    }

    #[test]
    fn a_value_that_is_not_a_string_is_invalid_input() {
        let mut harness = Harness::<tokenize>::new();
        let err = harness.process(&[TestRecord::unkeyed(&5u64, 0)]).unwrap_err();
        assert!(matches!(err, weir_guest::Error::InvalidInput(_)), "{err}");
    }
}
