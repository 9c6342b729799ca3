//! `weir bench languages --state-keys N`: what a snapshot and a restore of Nexmark q17's
//! keyed state cost per entry in each language's `nexmark-q17.wasm`, through the plain
//! `snapshot` / `restore` and through state documents (`snapshot-encoded` /
//! `restore-encoded`, wit/encoded.wit), where the component has them.
//!
//! Method: one instance takes one bid for each of N auctions (so every key changed), then
//! snapshots; plain and document snapshots alternate, `runs` of each, and the median per
//! entry is reported. The last delta is restored into fresh instances, alternating likewise
//! (instantiation not timed). Both paths store the same bytes (tests:
//! `state::encoded::*`), so only the time differs.

use std::path::PathBuf;
use std::time::Instant;

use weir::guest::bindings::Context;
use weir::guest::{
    ENCODED_RESTORE_CHUNKS, ENCODED_SNAPSHOTS, GuestHost, InstanceLimits, OperatorInstance, OperatorModule,
};
use weir::record::Batch;

/// One language's medians, µs per entry.
#[derive(Debug, Clone)]
pub struct StateCost {
    /// `python`, `js`, ...
    pub language: String,
    /// Snapshot through the plain `snapshot`.
    pub snapshot_plain: f64,
    /// Snapshot as it runs in a job (a document when the component answers with one).
    pub snapshot_doc: f64,
    /// Restore through the plain `restore`.
    pub restore_plain: f64,
    /// Restore as it runs in a job.
    pub restore_doc: f64,
    /// Whether the snapshots and restores of the second kind went through documents.
    pub documents: bool,
}

/// One bid (MessagePack map of auction, bidder, price) for each auction of
/// `first..first + n`, keyed by the auction.
fn auction_bids(first: u64, n: u64) -> Batch {
    let mut batch = Batch::with_capacity(n as usize, n as usize * 48);
    let (mut key, mut value) = (Vec::new(), Vec::new());
    for a in first..first + n {
        key.clear();
        value.clear();
        rmp::encode::write_uint(&mut key, a).expect("vec");
        rmp::encode::write_map_len(&mut value, 3).expect("vec");
        for (field, v) in [("auction", a), ("bidder", a * 7), ("price", 5 + a * 997 % 2_000_000)] {
            rmp::encode::write_str(&mut value, field).expect("vec");
            rmp::encode::write_uint(&mut value, v).expect("vec");
        }
        batch.push(&key, &value, a as i64);
    }
    batch
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

async fn instance(module: &OperatorModule) -> anyhow::Result<OperatorInstance> {
    Ok(OperatorInstance::new(module, "q17", 0, InstanceLimits::default()).await?)
}

/// Measures every language directory holding `nexmark-q17.wasm`.
pub async fn run(
    host: &GuestHost,
    languages: &[(String, PathBuf)],
    keys: u64,
    runs: usize,
) -> anyhow::Result<Vec<StateCost>> {
    let batches: Vec<Batch> =
        (0..keys.div_ceil(1000)).map(|i| auction_bids(i * 1000, 1000.min(keys - i * 1000))).collect();
    let per = |start: Instant| start.elapsed().as_secs_f64() * 1e6 / keys as f64;
    let mut results = Vec::new();
    for (language, dir) in languages {
        let path = dir.join("nexmark-q17.wasm");
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let module = host.load(&path.display().to_string(), &bytes)?;
        let mut inst = instance(&module).await?;
        inst.open(&Context::standalone("q17", "{}", 128)).await?;
        let (mut plain, mut doc, mut last) = (Vec::new(), Vec::new(), None);
        for run in 0..2 * runs.max(1) {
            for b in &batches {
                inst.process(0, b).await?;
            }
            let start = Instant::now();
            let delta = if run % 2 == 0 {
                inst.snapshot_plain(run as u64, false).await?
            } else {
                inst.snapshot(run as u64, false).await?
            };
            let us = per(start);
            anyhow::ensure!(
                delta.entries.len() as u64 == keys,
                "{language}: a snapshot of {} entries, expected {keys}",
                delta.entries.len()
            );
            if run % 2 == 0 {
                plain.push(us)
            } else {
                doc.push(us)
            }
            last = Some(delta);
        }
        let documents = inst.counters().get(ENCODED_SNAPSHOTS).copied().unwrap_or(0) > 0;
        let chunk = last.expect("at least one run");
        let (mut restore_plain, mut restore_doc) = (Vec::new(), Vec::new());
        for run in 0..2 * runs.max(1) {
            let mut fresh = instance(&module).await?;
            let start = Instant::now();
            if run % 2 == 0 {
                fresh.restore_plain(0, &chunk).await?;
                restore_plain.push(per(start));
            } else {
                fresh.restore(0, &chunk).await?;
                restore_doc.push(per(start));
                let through = fresh.counters().get(ENCODED_RESTORE_CHUNKS).copied().unwrap_or(0) > 0;
                anyhow::ensure!(
                    through == documents,
                    "{language}: snapshots and restores took different paths"
                );
            }
        }
        results.push(StateCost {
            language: language.clone(),
            snapshot_plain: median(plain),
            snapshot_doc: median(doc),
            restore_plain: median(restore_plain),
            restore_doc: median(restore_doc),
            documents,
        });
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_keyed_bid_per_auction() {
        let batch = auction_bids(5, 3);
        let keys: Vec<u64> = batch.iter().map(|r| rmp_serde::from_slice(r.key).unwrap()).collect();
        assert_eq!(keys, [5, 6, 7]);
        let bid: std::collections::BTreeMap<String, u64> =
            rmp_serde::from_slice(batch.iter().next().unwrap().value).unwrap();
        assert_eq!(bid["auction"], 5);
        assert_eq!(bid.len(), 3);
    }
}
