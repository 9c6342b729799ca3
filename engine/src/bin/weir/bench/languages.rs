//! `weir bench languages`: records per second per core of the same operators written in
//! other languages (Python, JavaScript, C: `examples/<lang>/build.sh`) beside the Rust
//! examples, on the word count and on Nexmark q17.
//!
//! Method: one operator instance per module, called directly (no channels, no checkpoints)
//! on a current-thread runtime, so a figure is what one core gets through the component.
//! Each module first processes the whole input once (warming it up, and checking that it
//! emits as many records as the Rust operator); then passes over the same input are timed
//! until at least `min` has gone by.

use std::path::PathBuf;
use std::time::Duration;

use super::nexmark::{Timer, bid_batches};
use weir::connectors::nexmark::KeyField;
use weir::guest::bindings::Context;
use weir::guest::{GuestHost, InstanceLimits, OperatorInstance, OperatorModule};
use weir::record::Batch;

/// What to measure.
#[derive(Debug, Clone)]
pub struct LanguageBenchOptions {
    /// (language, word count component, q17 component); either component may be missing.
    pub languages: Vec<(String, Option<PathBuf>, Option<PathBuf>)>,
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
    /// `wordcount` or `q17`.
    pub workload: &'static str,
    /// `rust`, `python`, ...
    pub language: String,
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

/// Processes `input` once (returns the records emitted), then times passes for `min`.
async fn measure(
    module: &OperatorModule,
    name: &str,
    input: &[Batch],
    min: Duration,
) -> anyhow::Result<(usize, f64)> {
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
    Ok((emitted, timer.rate(input.iter().map(Batch::len).sum())))
}

/// Runs every measurement: Rust first, then each language, per workload.
pub async fn run(host: &GuestHost, options: &LanguageBenchOptions) -> anyhow::Result<Vec<LanguageResult>> {
    anyhow::ensure!(options.batch_size > 0, "the batch size must be at least 1");
    let mut results = Vec::new();
    let workloads: [(&'static str, &str, Vec<Batch>); 2] = [
        ("wordcount", "wordcount", word_batches(options.records, options.batch_size)),
        ("q17", "nexmark-q17", bid_batches(options.records, options.batch_size, Some(KeyField::Auction))),
    ];
    for (index, (workload, builtin, input)) in workloads.iter().enumerate() {
        let bytes = weir::builtin::get(builtin).expect("builtin module");
        let module = host.load(&format!("builtin:{builtin}"), bytes)?;
        let (expected, rate) = measure(&module, workload, input, options.min).await?;
        results.push(LanguageResult { workload, language: "rust".into(), rate, size: bytes.len() });
        for (language, wordcount, q17) in &options.languages {
            let Some(path) = (if index == 0 { wordcount } else { q17 }) else { continue };
            let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let module = host.load(&path.display().to_string(), &bytes)?;
            let (emitted, rate) = measure(&module, workload, input, options.min).await?;
            anyhow::ensure!(
                emitted == expected,
                "{language} {workload}: emitted {emitted} records on the first pass, Rust {expected}"
            );
            results.push(LanguageResult { workload, language: language.clone(), rate, size: bytes.len() });
        }
    }
    Ok(results)
}

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
