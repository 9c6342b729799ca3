//! Unaligned checkpoints end to end (docs/design.md §6): under backpressure a checkpoint
//! persists the data in flight; a recovery replays it exactly once; a restore whose channel
//! state is lost or damaged fails with a clear error instead of dropping records; savepoints
//! stay aligned.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use redb::{ReadableTable, TableDefinition};
use weir::runtime::faults::{FaultInjector, FaultKind, FaultPoint, PlannedFault};
use weir_store::{CheckpointStatus, CheckpointStorage, Store};

const N: u64 = 6_000;
const KEYS: u64 = 7;
const RESET: u64 = 40;
const JOB: &str = "unaligned";

/// Ids through a keyed counter into a deliberately slow sink, with small channels: the
/// channels stay full, so an unaligned checkpoint has data in flight to persist.
fn spec(mode: serde_json::Value, restart_attempts: u32) -> serde_json::Value {
    serde_json::json!({
        "name": "unaligned",
        "nodes": [
            { "id": "ids", "kind": "source", "connector": "generator", "parallelism": 2,
              "config": { "mode": "sequence", "count": N, "keys": KEYS, "batch_size": 20 } },
            { "id": "count", "kind": "operator", "module": "test:counter", "parallelism": 2,
              "config": { "reset_at": RESET } },
            { "id": "slow", "kind": "sink", "connector": "blackhole", "parallelism": 2,
              "config": { "pause_ms_per_batch": 1 } }
        ],
        "edges": [
            { "from": "ids", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "slow", "partitioning": "hash" }
        ],
        "settings": {
            "channel_capacity": 4,
            "checkpoint": mode,
            "restart": { "attempts": restart_attempts, "delay_ms": 0 }
        }
    })
}

fn unaligned() -> serde_json::Value {
    serde_json::json!({ "interval_ms": 20, "timeout_ms": 30000, "mode": "unaligned", "tolerable_failures": 100 })
}

/// The counter's final state: per key, the count modulo the reset.
fn expected() -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for id in 0..N {
        *m.entry(id % KEYS).or_insert(0) += 1;
    }
    m.into_iter().map(|(k, n)| (k, n % RESET)).filter(|(_, c)| *c > 0).collect()
}

fn persisted(store: &Store, id: u64) -> u64 {
    let history = store.history(JOB).unwrap();
    let meta = history.iter().find(|c| c.id == id).expect("in the history");
    meta.subtasks.iter().map(|s| s.persisted_in_flight_bytes).sum()
}

#[test]
fn a_recovery_replays_the_persisted_in_flight_data_exactly_once() {
    common::quiet_injected_panics();
    // A fault after some records: the recovery restores a checkpoint that holds data in
    // flight (checked), and the counter's final state is exactly the reference.
    let mut replayed = false;
    for (attempt, after) in [400u64, 700, 1000, 250].into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let faults = vec![PlannedFault { point: FaultPoint::Process, after, kind: FaultKind::Error }];
        let injector = Arc::new(FaultInjector::new(faults));
        let (result, store) = common::run_checkpointed(spec(unaligned(), 3), dir.path(), JOB, |env| {
            env.with_faults(injector.clone())
        });
        let report = result.unwrap_or_else(|e| panic!("attempt {attempt}: the job failed: {e}"));
        assert_eq!(common::final_counts(&store, JOB, "count").unwrap(), expected(), "attempt {attempt}");
        let history = store.history(JOB).unwrap();
        let unaligned = history
            .iter()
            .filter(|c| c.status == CheckpointStatus::Completed && !c.is_final)
            .filter(|c| c.subtasks.iter().any(|s| s.unaligned))
            .count();
        assert!(unaligned > 0, "attempt {attempt}: no unaligned checkpoint completed");
        let final_cp = history.iter().find(|c| c.is_final).expect("a final checkpoint");
        assert!(final_cp.subtasks.iter().all(|s| !s.unaligned), "the final checkpoint is aligned");
        if report.restored_from.iter().any(|&id| persisted(&store, id) > 0) {
            replayed = true;
            break;
        }
    }
    assert!(replayed, "no recovery restored a checkpoint with data in flight");
}

const CHUNK_PIECES: TableDefinition<'_, (&str, u64, u32), &[u8]> = TableDefinition::new("weir.chunk_pieces");

/// Runs the job until a fault fails it for good (no restarts) after a checkpoint with data
/// in flight completed; returns that checkpoint's channel chunks.
fn failed_run_with_channel_state(dir: &Path) -> Vec<u64> {
    for after in [600u64, 900, 1200, 1500, 2000] {
        let _ = std::fs::remove_dir_all(dir);
        let faults = vec![PlannedFault { point: FaultPoint::Process, after, kind: FaultKind::Error }];
        let injector = Arc::new(FaultInjector::new(faults));
        let (result, store) =
            common::run_checkpointed(spec(unaligned(), 0), dir, JOB, |env| env.with_faults(injector.clone()));
        assert!(result.is_err(), "the fault fails the job");
        let (_, manifest) = store.latest_completed(JOB).unwrap().expect("a checkpoint completed");
        let chunks: Vec<u64> = manifest
            .values()
            .flat_map(|subtasks| subtasks.values())
            .flat_map(|s| s.channel.clone())
            .collect();
        if !chunks.is_empty() {
            return chunks;
        }
    }
    panic!("no run ended with data in flight in its latest checkpoint");
}

/// Edits the pieces of the store's chunks directly in the redb file (the store is closed).
fn edit_pieces(dir: &Path, edit: impl FnOnce(&mut redb::Table<'_, (&str, u64, u32), &[u8]>)) {
    let db = redb::Database::open(dir.join("weir.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    edit(&mut txn.open_table(CHUNK_PIECES).unwrap());
    txn.commit().unwrap();
}

fn restore_error(dir: &Path) -> String {
    common::quiet_injected_panics();
    let (result, _) = common::run_checkpointed(spec(unaligned(), 1), dir, JOB, |env| env);
    let error = result.expect_err("the restore must fail").to_string();
    assert!(error.contains("channel state"), "{error}");
    assert!(error.contains("would lose records"), "{error}");
    error
}

#[test]
fn a_restore_whose_channel_state_is_lost_fails_clearly() {
    common::quiet_injected_panics();
    let dir = tempfile::tempdir().unwrap();
    let chunks = failed_run_with_channel_state(dir.path());
    edit_pieces(dir.path(), |pieces| {
        let doomed: Vec<u32> = pieces
            .range((JOB, chunks[0], 0)..=(JOB, chunks[0], u32::MAX))
            .unwrap()
            .map(|p| p.unwrap().0.value().2)
            .collect();
        assert!(!doomed.is_empty());
        for piece in doomed {
            pieces.remove((JOB, chunks[0], piece)).unwrap();
        }
    });
    let error = restore_error(dir.path());
    assert!(error.contains(&format!("chunk {}", chunks[0])), "{error}");
}

#[test]
fn a_restore_whose_channel_state_is_damaged_fails_clearly() {
    common::quiet_injected_panics();
    let dir = tempfile::tempdir().unwrap();
    let chunks = failed_run_with_channel_state(dir.path());
    edit_pieces(dir.path(), |pieces| {
        let mut bytes = pieces.get((JOB, chunks[0], 0)).unwrap().unwrap().value().to_vec();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x5a;
        pieces.insert((JOB, chunks[0], 0), bytes.as_slice()).unwrap();
    });
    let error = restore_error(dir.path());
    assert!(error.contains("corrupt") || error.contains("damaged") || error.contains("checksum"), "{error}");
}

#[test]
fn unaligned_checkpoints_need_one_checkpoint_at_a_time() {
    let mut checkpoint = unaligned();
    checkpoint["max_concurrent"] = 2.into();
    checkpoint["retained"] = 3.into();
    let error = common::plan_json(spec(checkpoint, 0)).expect_err("refused").to_string();
    assert!(error.contains("max_concurrent 1"), "{error}");
}

/// A savepoint of a job in unaligned mode is taken aligned (no data in flight, so it is
/// portable and rescalable), while the job's periodic checkpoints around it are unaligned;
/// the savepoint then starts the job at another parallelism with exactly the counts.
#[test]
fn a_savepoint_of_an_unaligned_job_is_aligned_and_rescales() {
    use weir::runtime::{JobEvent, RunEnv};
    use weir::savepoint::{RestoreOptions, restore_into};

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let spec = spec(unaligned(), 0);
    let plan = common::plan_json(spec.clone()).unwrap();
    let env = Arc::new(RunEnv::new(JOB, store.clone()));
    let mut events = env.subscribe();
    let trigger = env.trigger_handle();
    let stopper = env.clone();
    let pinned = rt.spawn(async move {
        // After a few unaligned checkpoints: a savepoint's checkpoint, then a stop.
        let mut completed = 0;
        while let Ok(event) = events.recv().await {
            if let JobEvent::CheckpointCompleted { .. } = event {
                completed += 1;
                if completed == 3 {
                    break;
                }
            }
        }
        let id = trigger.trigger_pinned().await.expect("triggered");
        while let Ok(event) = events.recv().await {
            if matches!(event, JobEvent::CheckpointCompleted { id: done, .. } if done == id) {
                break;
            }
        }
        stopper.stop();
        id
    });
    let report = rt.block_on(weir::runtime::run_job_checkpointed(&plan, &env)).expect("job runs");
    let pinned = rt.block_on(pinned).unwrap();
    assert!(report.stopped || report.final_checkpoint.is_some());
    let history = store.history(JOB).unwrap();
    let meta = history.iter().find(|c| c.id == pinned).unwrap();
    assert_eq!(meta.status, CheckpointStatus::Completed);
    assert!(meta.pinned);
    assert!(meta.subtasks.iter().all(|s| !s.unaligned && s.persisted_in_flight_bytes == 0), "{meta:?}");
    assert!(
        history.iter().any(|c| c.id < pinned && c.subtasks.iter().any(|s| s.unaligned)),
        "the periodic checkpoints before it were unaligned"
    );

    // The savepoint, then the rest of the input at parallelism 3.
    let (meta, manifest) = store.checkpoint(JOB, pinned).unwrap().unwrap();
    let manifest = manifest.unwrap();
    assert!(manifest.values().flat_map(|s| s.values()).all(|s| s.channel.is_empty()));
    let info = common::savepoint(&store, &spec, JOB, meta.id);
    let mut rescaled = spec.clone();
    rescaled["nodes"][1]["parallelism"] = 3.into();
    let plan = common::plan_json(rescaled).unwrap();
    rt.block_on(restore_into(&store, "rescaled", &plan, &info, RestoreOptions::default())).expect("restores");
    let env = RunEnv::new("rescaled", store.clone());
    let report = rt.block_on(weir::runtime::run_job_checkpointed(&plan, &env)).expect("resumes");
    assert_eq!(report.restored_from, vec![1]);
    // The generator resumes where the savepoint's position says: the counts end exact.
    assert_eq!(common::final_counts(&store, "rescaled", "count").unwrap(), expected());
}

/// Restoring an unaligned checkpoint at another parallelism is refused (as for any
/// checkpoint), saying to take a savepoint — which is aligned and rescales.
#[test]
fn an_unaligned_checkpoint_is_not_restored_at_another_parallelism() {
    common::quiet_injected_panics();
    let dir = tempfile::tempdir().unwrap();
    failed_run_with_channel_state(dir.path());
    let mut rescaled = spec(unaligned(), 1);
    rescaled["nodes"][1]["parallelism"] = 3.into();
    let (result, _) = common::run_checkpointed(rescaled, dir.path(), JOB, |env| env);
    let error = result.expect_err("refused").to_string();
    assert!(error.contains("changing parallelism needs a savepoint"), "{error}");
}

/// `aligned` with a small `aligned_timeout_ms`: checkpoints start aligned, switch once the
/// timeout passed behind the backlog (the switch is recorded), and the counts stay exact.
#[test]
fn an_aligned_checkpoint_switches_after_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mode = serde_json::json!({ "interval_ms": 20, "timeout_ms": 30000, "mode": "aligned",
                                   "aligned_timeout_ms": 1, "tolerable_failures": 100 });
    let (result, store) = common::run_checkpointed(spec(mode, 0), dir.path(), JOB, |env| env);
    result.expect("the job runs");
    assert_eq!(common::final_counts(&store, JOB, "count").unwrap(), expected());
    let history = store.history(JOB).unwrap();
    let switched = history
        .iter()
        .filter(|c| c.status == CheckpointStatus::Completed && !c.is_final)
        .filter(|c| c.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some() && s.unaligned))
        .count();
    assert!(switched > 0, "no checkpoint switched: {history:?}");
    // The sources never switch (they send aligned barriers without waiting).
    assert!(history.iter().flat_map(|c| &c.subtasks).filter(|s| s.operator == "ids").all(|s| !s.unaligned));
}
