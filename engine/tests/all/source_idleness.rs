//! Idle sources through the real runtime: a followed stream with two partitions read at
//! parallelism 2, records only ever on partition 0, into an event-time tumbling window.
//! With `idle_timeout_ms` the subtask of the empty partition goes idle and the window fires
//! while the job runs; without it the window waits for the other partition.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use weir::runtime::{RunEnv, TaskState};
use weir_store::{CheckpointStorage as _, LogRecord, Store};

use crate::common;

const WAIT: Duration = Duration::from_secs(60);
/// Records on partition 0: record `i` has key `i % 2`, value `i`, time `10 i`.
const RECORDS: u64 = 26;
const SIZE: i64 = 100;

fn spec(idle_timeout_ms: Option<u64>) -> serde_json::Value {
    json!({
        "nodes": [
            { "id": "in", "kind": "source", "connector": "stream", "parallelism": 2,
              "config": { "stream": "in", "follow": true, "idle_timeout_ms": idle_timeout_ms,
                          "out_of_orderness_ms": 0 } },
            { "id": "window", "kind": "operator", "module": "builtin:tumbling-window", "parallelism": 2,
              "config": { "size_ms": SIZE } },
            { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": "out", "partitions": 1 } }
        ],
        "edges": [
            { "from": "in", "to": "window", "partitioning": "hash" },
            { "from": "window", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 50 } }
    })
}

fn record(key: u64, value: i64, timestamp: i64) -> LogRecord {
    LogRecord { key: rmp_serde::to_vec(&key).unwrap(), value: rmp_serde::to_vec(&value).unwrap(), timestamp }
}

fn store(dir: &std::path::Path) -> Store {
    let store = Store::open(&dir.join("weir.redb")).unwrap();
    store.create_stream("in", 2).unwrap();
    let records: Vec<LogRecord> = (0..RECORDS).map(|i| record(i % 2, i as i64, 10 * i as i64)).collect();
    store.append("in", 0, &records).unwrap();
    store
}

/// Waits until `condition` holds, failing with `what` after [`WAIT`].
fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The committed window results: (key, window start) → (count, sum).
fn results(store: &Store) -> BTreeMap<(u64, i64), (u64, i64)> {
    let mut out = BTreeMap::new();
    // The sink creates the stream when it opens.
    let Ok(end) = store.end_offset("out", 0) else { return out };
    for (_, r) in store.read("out", 0, 0, end as usize).unwrap() {
        let key: u64 = rmp_serde::from_slice(&r.key).unwrap();
        let v: rmpv::Value = rmp_serde::from_slice(&r.value).unwrap();
        let field = |name: &str| {
            v.as_map().unwrap().iter().find(|(k, _)| k.as_str() == Some(name)).unwrap().1.clone()
        };
        let start = field("window_start").as_i64().unwrap();
        let prev =
            out.insert((key, start), (field("count").as_u64().unwrap(), field("sum").as_i64().unwrap()));
        assert!(prev.is_none(), "window ({key}, {start}) fired twice");
    }
    out
}

/// The windows of partition 0's records that a watermark of 249 (its highest time, 250,
/// minus one) closes: [0, 100) and [100, 200) of both keys.
fn expected() -> BTreeMap<(u64, i64), (u64, i64)> {
    let mut e: BTreeMap<(u64, i64), (u64, i64)> = BTreeMap::new();
    for i in 0..RECORDS {
        let start = (10 * i as i64).div_euclid(SIZE) * SIZE;
        if start + SIZE - 1 <= 249 {
            let acc = e.entry((i % 2, start)).or_default();
            acc.0 += 1;
            acc.1 += i as i64;
        }
    }
    e
}

/// Runs the job on its own thread while `test` drives it; stops it (suspend) afterwards.
fn with_job(idle_timeout_ms: Option<u64>, test: impl FnOnce(&Store)) {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let plan = common::plan_json(spec(idle_timeout_ms)).expect("plan");
    let env = RunEnv::new("idle", store.clone());
    std::thread::scope(|scope| {
        let job = scope.spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(weir::runtime::run_job_checkpointed(&plan, &env))
        });
        // Stop the job even when the test fails, so the scope ends.
        struct StopOnDrop<'a>(&'a RunEnv);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.stop();
            }
        }
        let stop = StopOnDrop(&env);
        test(&store);
        drop(stop);
        job.join().unwrap().expect("the job stops cleanly");
    });
}

#[test]
fn an_idle_partition_does_not_hold_event_time_back() {
    with_job(Some(50), |store| {
        wait_for("the windows to fire", || results(store).len() >= expected().len());
        assert_eq!(results(store), expected());
        assert_eq!(store.end_offset("in", 1).unwrap(), 0, "nothing ever arrived on partition 1");
    });
}

#[test]
fn without_idleness_the_window_waits_for_every_partition() {
    with_job(None, |store| {
        // A completed checkpoint taken after the source read all of partition 0 (its barrier
        // followed the watermark of 249): the window had that watermark from one channel,
        // none from the other, and still held every window's timer — nothing fired.
        let mut state = None;
        wait_for("a checkpoint after partition 0 was read", || {
            let Some((_, manifest)) = store.latest_completed("idle").unwrap() else { return false };
            let position = TaskState::decode(&manifest["in"][&0].blob).unwrap().position;
            if position.as_ref().and_then(|p| p["offsets"]["0"].as_u64()) != Some(RECORDS) {
                return false;
            }
            state = Some(
                manifest["window"].values().map(|s| TaskState::decode(&s.blob).unwrap()).collect::<Vec<_>>(),
            );
            true
        });
        let state = state.unwrap();
        let timers: usize = state.iter().map(|s| s.timers.len()).sum();
        assert_eq!(timers, 6, "three windows of two keys, none fired: {state:?}");
        for s in &state {
            let mut watermarks = s.watermarks.clone();
            watermarks.sort();
            assert_eq!(watermarks, vec![i64::MIN, 249], "one channel at 249, the idle one at none");
        }
        assert!(results(store).is_empty(), "no window fired");
        // A record on partition 1 far ahead: its watermark releases the windows up to 249.
        store.append("in", 1, &[record(9, 0, 10_000)]).unwrap();
        wait_for("the windows to fire", || results(store).len() >= expected().len());
        assert_eq!(results(store), expected());
    });
}
