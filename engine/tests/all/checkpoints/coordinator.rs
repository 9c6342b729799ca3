//! The coordinator's limits (timeout, tolerable failures) and incremental state restored
//! through the guest from the oldest retained checkpoint.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;

use weir::guest::bindings::Context;
use weir::guest::{InstanceLimits, OperatorInstance};
use weir::plan::ModuleLoader;
use weir::runtime::restore_chunks;
use weir_store::{CheckpointStatus, CheckpointStorage, FaultyStorage};

fn job(sink: serde_json::Value, checkpoint: serde_json::Value, restart_attempts: u32) -> serde_json::Value {
    serde_json::json!({
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": 3000, "keys": 50, "batch_size": 20,
                          "records_per_second": 10000 } },
            { "id": "count", "kind": "operator", "module": "test:counter", "parallelism": 2,
              "config": { "reset_at": 7 } },
            sink
        ],
        "edges": [
            { "from": "in", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": checkpoint, "restart": { "attempts": restart_attempts, "delay_ms": 0 } }
    })
}

fn blackhole(pause_ms: u64) -> serde_json::Value {
    serde_json::json!({ "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": 2,
        "config": { "pause_ms_per_batch": pause_ms } })
}

#[test]
fn a_checkpoint_that_times_out_is_aborted_and_the_job_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // A slow sink holds barriers behind full channels far longer than the timeout.
    let spec = job(
        blackhole(15),
        serde_json::json!({ "interval_ms": 5, "timeout_ms": 40, "tolerable_failures": 1000 }),
        0,
    );
    let (result, store) = common::run_checkpointed(spec, dir.path(), "slow", |env| env);
    let report = result.unwrap();
    assert_eq!(report.restarts, 0);
    let history = store.history("slow").unwrap();
    let expired: Vec<_> = history
        .iter()
        .filter(|c| {
            c.status == CheckpointStatus::Failed && c.failure.as_deref().unwrap_or("").contains("expired")
        })
        .collect();
    assert!(!expired.is_empty(), "some checkpoint expired: {history:?}");
    assert!(
        history.last().unwrap().is_final && history.last().unwrap().status == CheckpointStatus::Completed
    );
    // An expired checkpoint is never recovered from and keeps no state.
    for c in expired {
        let (_, manifest) = store.checkpoint("slow", c.id).unwrap().unwrap();
        assert!(manifest.is_none());
    }
}

#[test]
fn too_many_consecutive_failed_checkpoints_fail_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let spec = job(blackhole(0), serde_json::json!({ "interval_ms": 5, "tolerable_failures": 2 }), 0);
    let (result, store) = common::run_checkpointed(spec, dir.path(), "broken", |env| {
        let s = Arc::new(FaultyStorage::new(env.storage.clone(), 1, 1.0));
        env.with_storage(s)
    });
    let message = result.unwrap_err().to_string();
    assert!(message.contains("3 consecutive checkpoints failed (tolerable: 2)"), "{message}");
    assert!(message.contains("injected"), "names the last cause: {message}");
    let history = store.history("broken").unwrap();
    assert!(history.iter().all(|c| c.status == CheckpointStatus::Failed), "{history:?}");
}

#[test]
fn the_oldest_retained_checkpoint_restores_through_the_guest_after_gc() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let sink = serde_json::json!({ "id": "out", "kind": "sink", "connector": "file", "parallelism": 2,
        "config": { "path": out } });
    // Short chains (compaction), deletes (reset_at), two retained checkpoints (GC).
    let spec = job(sink, serde_json::json!({ "interval_ms": 5, "retained": 2, "max_chain_length": 2 }), 0);
    let (result, store) = common::run_checkpointed(spec, &dir.path().join("data"), "gc", |env| env);
    result.unwrap();
    let history = store.history("gc").unwrap();
    let completed: Vec<_> = history.iter().filter(|c| c.status == CheckpointStatus::Completed).collect();
    assert!(completed.len() >= 4, "enough checkpoints for GC: {}", completed.len());
    let retained: Vec<u64> = completed.iter().filter(|c| c.retained).map(|c| c.id).collect();
    assert_eq!(retained.len(), 2, "two retained");
    for c in completed.iter().filter(|c| !c.retained) {
        assert!(
            store.checkpoint("gc", c.id).unwrap().unwrap().1.is_none(),
            "checkpoint {} was removed",
            c.id
        );
    }
    // Both retained checkpoints restore, the oldest one included. (Keys reset in step — 50
    // keys in order, reset at 7 — so one of them may hold no key at all; the final one holds
    // every key.)
    let module = common::TestModules.load("test:counter").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut restored_keys = 0;
    for id in &retained {
        let (_, manifest) = store.checkpoint("gc", *id).unwrap().unwrap();
        let manifest = manifest.expect("a retained checkpoint keeps its manifest");
        for (subtask, state) in &manifest["count"] {
            let mut stored = BTreeSet::new();
            let mut inst = rt
                .block_on(OperatorInstance::new(&module, "count", *subtask, InstanceLimits::default()))
                .unwrap();
            let version = rt.block_on(inst.describe()).unwrap().state_version;
            for chain in state.chains.values() {
                let entries = store.read_chain("gc", chain).unwrap();
                for e in &entries {
                    assert!(e.value.is_some(), "no tombstone survives a restore");
                    stored.insert((e.key.clone(), e.value.clone().unwrap()));
                }
                for chunk in restore_chunks(entries, 1 << 20) {
                    rt.block_on(inst.restore(version, &chunk)).unwrap();
                }
            }
            let mut context = Context::standalone("count", "{}", 128);
            context.restored = true;
            rt.block_on(inst.open(&context)).unwrap();
            // The guest's full snapshot is exactly what was stored: deleted keys stayed deleted.
            let full = rt.block_on(inst.snapshot(99, true)).unwrap();
            let mut from_guest = BTreeSet::new();
            let mut at = 0usize;
            for e in &full.entries {
                let k = full.data[at..at + e.key_len as usize].to_vec();
                at += e.key_len as usize;
                let v = full.data[at..at + e.value_len as usize].to_vec();
                at += e.value_len as usize;
                from_guest.insert((k, v));
            }
            assert_eq!(from_guest, stored, "checkpoint {id} subtask {subtask}");
            restored_keys += stored.len();
        }
    }
    assert!(restored_keys > 0);
}
