//! Word count through two Wasm operators with a hash shuffle, against a reference.

use crate::common;

use std::collections::BTreeMap;

use serde_json::json;
use weir::connectors::generator::corpus_line;

/// The tokenizer's rules, written again natively.
fn tokenize(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|w| !w.is_empty())
}

#[test]
fn word_count_at_parallelism_two_equals_reference() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, words_per_line, vocabulary, seed) = (6_000u64, 9u32, 400u64, 11u64);
    let report = common::run(json!({
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "words", "lines": lines, "words_per_line": words_per_line,
                          "vocabulary": vocabulary, "seed": seed, "batch_size": 256 } },
            { "id": "split", "kind": "operator", "module": "builtin:tokenizer", "parallelism": 2 },
            { "id": "count", "kind": "operator", "module": "builtin:wordcount", "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "file", "config": { "path": dir.path() } }
        ],
        "edges": [
            { "from": "lines", "to": "split", "partitioning": "forward" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out" }
        ]
    }))
    .expect("job runs");

    let mut reference: BTreeMap<String, u64> = BTreeMap::new();
    let mut total_words = 0;
    for i in 0..lines {
        for w in tokenize(&corpus_line(seed, vocabulary, words_per_line, i)) {
            *reference.entry(w).or_default() += 1;
            total_words += 1;
        }
    }
    assert!(reference.len() > 100, "the corpus should have many distinct words");

    // The count operator emits the new total of each word it saw in a batch; the last total
    // per word is its count. Totals of one word only grow (one subtask owns each word).
    let mut last: BTreeMap<String, u64> = BTreeMap::new();
    for r in common::read_output(dir.path()) {
        let word = r["key"].as_str().expect("key is the word").to_string();
        let count = r["value"].as_u64().expect("value is the count");
        if let Some(prev) = last.insert(word.clone(), count) {
            assert!(count > prev, "count of {word} went from {prev} to {count}");
        }
    }
    assert_eq!(last, reference);
    assert_eq!(report.node("split").unwrap().records_in, lines);
    assert_eq!(report.node("split").unwrap().records_out, total_words);
    assert_eq!(report.node("count").unwrap().records_in, total_words);
}
