//! The word-count workload of the API tests: lines pushed into stream `lines`, a job counting
//! words into stream `counts`, and the exactly-once check of its output.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Api;

/// How long the output may take.
const LONG: Duration = Duration::from_secs(120);

/// stream `lines` → tokenizer → word count (hash) → stream `counts`, parallelism 2,
/// checkpoints every 200 ms. Modules by id or name.
pub fn spec(name: &str, tokenizer: &str, wordcount: &str) -> Value {
    spec_to(name, tokenizer, wordcount, "counts")
}

/// [`spec`] writing to stream `out`.
pub fn spec_to(name: &str, tokenizer: &str, wordcount: &str, out: &str) -> Value {
    json!({
        "name": name,
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "stream", "config": { "stream": "lines", "follow": true } },
            { "id": "split", "kind": "operator", "module": tokenizer, "parallelism": 2 },
            { "id": "count", "kind": "operator", "module": wordcount, "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "stream", "parallelism": 2,
              "config": { "stream": out, "partitions": 2 } }
        ],
        "edges": [
            { "from": "lines", "to": "split", "partitioning": "rebalance" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": 200 } }
    })
}

/// Lines `from..to`: line i has words w(i % 7), w(i % 11 + 7), w(i % 13 + 18).
pub fn lines(from: u64, to: u64) -> Vec<Value> {
    (from..to).map(|i| json!({ "value": format!("w{} w{} w{}", i % 7, i % 11 + 7, i % 13 + 18) })).collect()
}

/// Each word's total over lines `0..n`.
pub fn expected_counts(n: u64) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in lines(0, n) {
        for w in line["value"].as_str().unwrap().split(' ') {
            *m.entry(w.to_string()).or_default() += 1;
        }
    }
    m
}

/// Appends records to stream `lines`, 500 per request.
pub async fn push(api: &Api, records: Vec<Value>) {
    for chunk in records.chunks(500) {
        let (status, v) = api.post("/api/v1/streams/lines/records", &json!({ "records": chunk })).await;
        assert_eq!(status, 201, "{v}");
    }
}

/// Each word's running counts, in the order the sink committed them.
pub async fn output(api: &Api) -> BTreeMap<String, Vec<u64>> {
    output_of(api, "counts").await
}

/// Each word's running counts in stream `stream`, in the order the sink committed them.
pub async fn output_of(api: &Api, stream: &str) -> BTreeMap<String, Vec<u64>> {
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, _, key, value) in api.read_all(stream).await {
        seen.entry(key.as_str().unwrap().to_string()).or_default().push(value.as_u64().unwrap());
    }
    seen
}

/// Waits until every word's latest count is its total over `n_lines` lines.
pub async fn wait_output(api: &Api, n_lines: u64) {
    wait_output_of(api, "counts", n_lines).await
}

/// [`wait_output`] of stream `stream`.
pub async fn wait_output_of(api: &Api, stream: &str, n_lines: u64) {
    let expected = expected_counts(n_lines);
    let deadline = Instant::now() + LONG;
    loop {
        let seen = output_of(api, stream).await;
        if expected.iter().all(|(w, n)| seen.get(w).and_then(|c| c.iter().max()) == Some(n)) {
            return;
        }
        assert!(Instant::now() < deadline, "the output did not reach the totals of {n_lines} lines");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Exactly once. The word count emits one running count per word and input batch, so each
/// word's counts must rise strictly (a replayed batch would repeat or lower a count; lost state
/// would start again low) and end at its total.
pub async fn check_exactly_once(api: &Api, n_lines: u64) {
    check_exactly_once_of(api, "counts", n_lines).await
}

/// [`check_exactly_once`] of stream `stream`.
pub async fn check_exactly_once_of(api: &Api, stream: &str, n_lines: u64) {
    let expected = expected_counts(n_lines);
    let seen = output_of(api, stream).await;
    assert_eq!(seen.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "words differ");
    for (word, counts) in &seen {
        assert!(counts.windows(2).all(|w| w[0] < w[1]), "counts of `{word}` repeat or fall: {counts:?}");
        assert_eq!(counts.last(), Some(&expected[word]), "final count of `{word}`");
    }
}
