//! Snapshots in parts (`chunked-snapshot`): a guest-memory state near the instance's memory
//! limit cannot be handed over in one `snapshot` call — the guest would build a second copy
//! of it — but is in parts, with every entry, and a fresh instance restored from them holds
//! the same state.
//!
//! The state is `WEIR_CHUNKED_STATE_MIB` MiB of the counter guest's entries (default 56, in
//! a 128 MiB instance; above 64, a 4 GiB instance): `WEIR_CHUNKED_STATE_MIB=1536` is the
//! 1.5 GiB case of issue 21, run by hand (`--release`, ~8 GiB of host memory).

use crate::common;

use std::sync::Arc;
use std::time::Instant;

use weir::guest::bindings::{ChangeKind, Context, StateDelta};
use weir::guest::{GuestError, InstanceLimits, OperatorInstance};
use weir::runtime::RestoreChunker;
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};

/// Extra bytes per count: an entry is ~1 KiB encoded.
const PAD: usize = 1000;
/// Key and value bytes of one entry: the u64 key (≤ 9 bytes) and `{"count": 0, "pad": ...}`.
const ENTRY_BYTES: usize = PAD + 24;

fn state_mib() -> usize {
    std::env::var("WEIR_CHUNKED_STATE_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(56)
}

/// A 128 MiB instance for the default state, the most a wasm32 memory holds for a larger one.
fn memory_mib(state_mib: usize) -> usize {
    if state_mib <= 64 { 128 } else { 4096 }
}

/// (state, key, value) of every entry, sorted; puts only.
fn sorted_puts(delta: &StateDelta) -> Vec<(&str, &[u8], &[u8])> {
    let mut out: Vec<(&str, &[u8], &[u8])> = weir_flat::Reader::new(&delta.data, &delta.entries)
        .map(|read| {
            let (key, value, e) = read.expect("a checked delta");
            assert_eq!(e.kind, ChangeKind::Put, "a first or full snapshot holds puts only");
            (delta.names[e.state as usize].as_str(), key, value)
        })
        .collect();
    out.sort_unstable();
    out
}

fn context(config: &str, restored: bool) -> Context {
    Context { restored, ..Context::standalone("count", config, 128) }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_near_the_memory_limit_is_snapshotted_in_parts_and_restored() {
    let state = state_mib();
    let keys = (state << 20) / ENTRY_BYTES;
    let limits = InstanceLimits {
        memory_bytes: memory_mib(state) << 20,
        cpu_limit_ms: 600_000,
        wall_limit_ms: 600_000,
        ..InstanceLimits::default()
    };
    let module =
        common::host().load("counter", &std::fs::read(common::guest_path("counter")).unwrap()).unwrap();
    assert!(module.has_chunked_snapshot(), "the guest SDK's components hand snapshots over in parts");
    let config = serde_json::json!({ "fill": keys, "pad": PAD }).to_string();

    let mut a = OperatorInstance::new(&module, "count", 0, limits).await.unwrap();
    let version = a.describe().await.unwrap().state_version;
    let started = Instant::now();
    a.open(&context(&config, false)).await.unwrap();
    eprintln!("{keys} keys filled in {:.2?}", started.elapsed());

    // The first snapshot hands every entry over (all are new), in parts.
    let started = Instant::now();
    let first = a.snapshot(1, false).await.unwrap();
    let took = started.elapsed();
    eprintln!(
        "snapshot in parts: {} entries, {:.1} MiB in {took:.2?} ({:.0} MiB/s)",
        first.entries.len(),
        mib(first.data.len()),
        mib(first.data.len()) / took.as_secs_f64()
    );
    assert_eq!(first.entries.len(), keys, "every entry");
    assert!(first.data.len() >= (state << 20) * 9 / 10, "{} bytes", first.data.len());
    let puts = sorted_puts(&first);
    assert!(puts.windows(2).all(|w| w[0].1 != w[1].1), "every key once");
    assert!(a.snapshot(2, false).await.unwrap().entries.is_empty(), "the parts forgot what they handed over");

    // The same state, full: the reference the restored instance must match.
    let full = a.snapshot(3, true).await.unwrap();
    assert!(sorted_puts(&full) == puts, "a full snapshot in parts holds the same entries");

    // In one call, the guest needs the state and the whole delta (and the delta's buffer
    // as it grows) in its memory: past the limit.
    let e = a.snapshot_whole(4, true).await.unwrap_err();
    assert!(matches!(e, GuestError::MemoryLimit { .. }), "{e}");
    drop(a);

    // A fresh instance restored from the parts, in restore chunks as the runtime makes them.
    let started = Instant::now();
    let mut b = OperatorInstance::new(&module, "count", 0, limits).await.unwrap();
    let mut chunker = RestoreChunker::new(weir::runtime::RESTORE_CHUNK_BYTES);
    for (state, key, value) in &puts {
        if let Some(chunk) = chunker.push(state, key, value) {
            b.restore(version, &chunk).await.unwrap();
            chunker.recycle(chunk);
        }
    }
    if let Some(chunk) = chunker.finish() {
        b.restore(version, &chunk).await.unwrap();
    }
    b.open(&context(&config, true)).await.unwrap();
    eprintln!("restored in {:.2?}", started.elapsed());
    drop(puts);
    drop(first);

    let again = b.snapshot(5, true).await.unwrap();
    assert_eq!(again.entries.len(), keys);
    assert!(sorted_puts(&again) == sorted_puts(&full), "the restored state equals the snapshotted one");
    assert!(b.snapshot(6, false).await.unwrap().entries.is_empty());
}

/// A guest that never says `last` fails the snapshot once its parts pass twice its memory
/// limit (and 64 MiB), or its wall-time limit, and is not entered again: it forgot what it
/// handed over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_never_ends_is_cut_off() {
    let module =
        common::host().load("faulty", &std::fs::read(common::guest_path("faulty")).unwrap()).unwrap();
    let limits = InstanceLimits { memory_bytes: 64 << 20, ..InstanceLimits::default() };
    let mut inst = OperatorInstance::new(&module, "op", 0, limits).await.unwrap();
    inst.open(&context(r#"{"endless_snapshot": true}"#, false)).await.unwrap();
    let e = inst.snapshot(1, false).await.unwrap_err();
    let message = e.to_string();
    assert!(matches!(e, GuestError::Malformed { .. }), "{message}");
    assert!(message.contains(&format!("passed {} bytes", 192 << 20)), "{message}");
    let e = inst.snapshot(2, false).await.unwrap_err().to_string();
    assert!(e.contains("cannot be entered again"), "{e}");

    // All its parts together are one call for the wall-time limit.
    let limits = InstanceLimits { memory_bytes: 4 << 30, wall_limit_ms: 1000, ..InstanceLimits::default() };
    let mut inst = OperatorInstance::new(&module, "op", 0, limits).await.unwrap();
    inst.open(&context(r#"{"endless_snapshot": true}"#, false)).await.unwrap();
    let started = Instant::now();
    let e = inst.snapshot(1, false).await.unwrap_err();
    assert!(matches!(e, GuestError::WallLimit { limit_ms: 1000, .. }), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
}

/// A job with a 128 MiB operator holding ~40 MiB of guest state: its checkpoints go in
/// parts, a failure after the first restores the state from them, and the final
/// checkpoint holds it exactly.
#[test]
fn a_job_checkpoints_and_restores_a_large_guest_state() {
    const FILL: u64 = 40 << 10;
    const RECORDS: u64 = 6000;
    const KEYS: u64 = 5;
    let dir = tempfile::tempdir().unwrap();
    let spec = serde_json::json!({
        "name": "chunked",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "parallelism": 1,
              "config": { "mode": "sequence", "count": RECORDS, "keys": KEYS, "batch_size": 20,
                          "records_per_second": 2000 } },
            { "id": "count", "kind": "operator", "module": "test:counter", "parallelism": 1,
              "config": { "fill": FILL, "pad": PAD } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "in", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": {
            "memory_limit_mb": 128,
            "checkpoint": { "interval_ms": 50, "tolerable_failures": 100 },
            "restart": { "attempts": 3, "delay_ms": 0 }
        }
    });
    // Fails the job once, at the first snapshot after its first completed checkpoint (the
    // final one at the latest): it restarts from that checkpoint.
    let faults = Arc::new(FaultInjector::new(vec![PlannedFault {
        point: FaultPoint::Snapshot,
        after: 0,
        kind: FaultKind::Error,
    }]));
    let (result, store) = common::run_checkpointed(spec, &dir.path().join("data"), "chunked", |env| {
        env.with_faults(faults.clone())
    });
    let report = result.unwrap();
    assert_eq!(faults.fired(), 1);
    assert_eq!(report.restarts, 1);
    assert_eq!(report.restored_from.len(), 1, "restored from a checkpoint");

    let counts = common::final_counts(&store, "chunked", "count").unwrap();
    assert_eq!(counts.len() as u64, FILL, "every filled key (the record keys are among them)");
    for (key, count) in counts {
        let want = if key < KEYS { RECORDS / KEYS } else { 0 };
        assert_eq!(count, want, "key {key}");
    }
}
