//! `weir bench languages`: records per second per core of the same operators written in
//! other languages (Python, JavaScript, C: `examples/<lang>/build.sh`) beside the Rust
//! examples, on Nexmark q1, the word count and Nexmark q17.
//!
//! Method: one operator instance per module, called directly (no channels, no checkpoints)
//! on a current-thread runtime, so a figure is what one core gets through the component.
//! Each module first processes the whole input once (warming it up, and checking that it
//! emits as many records as the Rust operator); then passes over the same input are timed
//! until at least `min` has gone by. A language directory may also hold `<workload>-records`
//! components (the same operator on its SDK's per-record API), measured beside it.
//! The share of batches that took the `encoded-batches` fast path is reported per module.

use std::path::PathBuf;
use std::time::Duration;

use super::nexmark::{Timer, bid_batches};
use weir::connectors::nexmark::KeyField;
use weir::guest::bindings::Context;
use weir::guest::{
    ENCODED_BATCHES, ENCODED_FALLBACK_BATCHES, GuestHost, InstanceLimits, OperatorInstance, OperatorModule,
};
use weir::record::Batch;

/// What to measure.
#[derive(Debug, Clone)]
pub struct LanguageBenchOptions {
    /// (language, build directory): its `nexmark-q1.wasm`, `wordcount.wasm`,
    /// `nexmark-q17.wasm` and `*-records.wasm` are measured where present.
    pub languages: Vec<(String, PathBuf)>,
    /// Records per pass.
    pub records: usize,
    /// Records per batch.
    pub batch_size: usize,
    /// Minimum time per measurement.
    pub min: Duration,
}

/// One measurement.
#[derive(Debug, Clone)]
pub struct LanguageResult {
    /// `q1`, `wordcount` or `q17`.
    pub workload: &'static str,
    /// `rust`, `python`, `python per record`, ...
    pub language: String,
    /// The share of batches that went through `process-encoded` (0 without the export).
    pub encoded: f64,
    /// Records per second, one core.
    pub rate: f64,
    /// Component size in bytes.
    pub size: usize,
}

/// Word-count input: `records` words (MessagePack string keys, value 1), drawn from 5,000
/// words by a fixed xorshift sequence, in batches.
fn word_batches(records: usize, batch_size: usize) -> Vec<Batch> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::new();
    let mut batch = Batch::with_capacity(batch_size, batch_size * 16);
    for i in 0..records {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let word = format!("word{}", state % 5_000);
        let mut key = Vec::with_capacity(word.len() + 2);
        rmp::encode::write_str(&mut key, &word).expect("vec");
        batch.push(&key, &[1], i as i64);
        if batch.len() == batch_size {
            out.push(std::mem::replace(&mut batch, Batch::with_capacity(batch_size, batch_size * 16)));
        }
    }
    if !batch.is_empty() {
        out.push(batch);
    }
    out
}

/// Processes `input` once (returns the records emitted), then times passes for `min`;
/// returns (records emitted on the first pass, records/s, share of encoded batches).
async fn measure(
    module: &OperatorModule,
    name: &str,
    input: &[Batch],
    min: Duration,
) -> anyhow::Result<(usize, f64, f64)> {
    let mut inst = OperatorInstance::new(module, name, 0, InstanceLimits::default()).await?;
    inst.open(&Context::standalone(name, "{}", 128)).await?;
    let mut emitted = 0;
    for b in input {
        emitted += inst.process(0, b).await?.len();
    }
    let mut timer = Timer::new(min);
    while timer.again() {
        for b in input {
            std::hint::black_box(inst.process(0, b).await?);
        }
    }
    let rate = timer.rate(input.iter().map(Batch::len).sum());
    let counter = |name: &str| inst.counters().get(name).copied().unwrap_or(0) as f64;
    let encoded = counter(ENCODED_BATCHES);
    let share = encoded / (encoded + counter(ENCODED_FALLBACK_BATCHES)).max(1.0);
    Ok((emitted, rate, share))
}

/// Runs every measurement: Rust first, then each language, per workload.
pub async fn run(host: &GuestHost, options: &LanguageBenchOptions) -> anyhow::Result<Vec<LanguageResult>> {
    anyhow::ensure!(options.batch_size > 0, "the batch size must be at least 1");
    let mut results = Vec::new();
    for (workload, component) in WORKLOADS {
        let input = match workload {
            "q1" => bid_batches(options.records, options.batch_size, None),
            "wordcount" => word_batches(options.records, options.batch_size),
            _ => bid_batches(options.records, options.batch_size, Some(KeyField::Auction)),
        };
        let bytes = weir::builtin::get(component).expect("builtin module");
        let module = host.load(&format!("builtin:{component}"), bytes)?;
        let (expected, rate, encoded) = measure(&module, workload, &input, options.min).await?;
        results.push(LanguageResult { workload, language: "rust".into(), rate, encoded, size: bytes.len() });
        for (language, dir) in &options.languages {
            for (suffix, label) in [("", language.clone()), ("-records", format!("{language} per record"))] {
                let path = dir.join(format!("{component}{suffix}.wasm"));
                if !path.is_file() {
                    continue;
                }
                let bytes = std::fs::read(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                let module = host.load(&path.display().to_string(), &bytes)?;
                let (emitted, rate, encoded) = measure(&module, workload, &input, options.min).await?;
                anyhow::ensure!(
                    emitted == expected,
                    "{label} {workload}: emitted {emitted} records on the first pass, Rust {expected}"
                );
                results.push(LanguageResult { workload, language: label, rate, encoded, size: bytes.len() });
            }
        }
    }
    Ok(results)
}

/// (workload, component name: the builtin, and `<name>.wasm` in a language's directory).
pub const WORKLOADS: [(&str, &str); 3] =
    [("q1", "nexmark-q1"), ("wordcount", "wordcount"), ("q17", "nexmark-q17")];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_input_is_keyed_words_with_increments() {
        let batches = word_batches(10, 4);
        assert_eq!(batches.iter().map(Batch::len).collect::<Vec<_>>(), [4, 4, 2]);
        let r = batches[0].iter().next().unwrap();
        let word: String = rmp_serde::from_slice(r.key).unwrap();
        assert!(word.starts_with("word"));
        assert_eq!(rmp_serde::from_slice::<u64>(r.value).unwrap(), 1);
    }
}
