//! Idle sources through the real runtime: a followed stream with two partitions read at
//! parallelism 2, records only ever appended to partition 0 (a feeder keeps appending, in
//! event-time order), into an event-time tumbling window. With `idle_timeout_ms` the
//! subtask of the empty partition goes idle and the windows fire while the job runs;
//! without it they wait until a record arrives on the other partition.
//!
//! The feeder keeps partition 0 active, so that the window sees one active and one idle input
//! (when every input is idle the window moves to the highest of their watermarks instead,
//! docs/design.md §2).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use weir::runtime::{RunEnv, TaskState};
use weir_store::{CheckpointStorage as _, LogRecord, Store};

use crate::common;

const WAIT: Duration = Duration::from_secs(60);
const SIZE: i64 = 100;
/// Record `i` on partition 0 has key `i % 2`, value `i` and time `STEP i`.
const STEP: i64 = 10;

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

/// Every fired window holds exactly partition 0's records of its key and time range (the
/// feeder appends in time order, so a window closes only after all of its records).
fn check(results: &BTreeMap<(u64, i64), (u64, i64)>) {
    for (&(key, start), &actual) in results {
        let mut expected = (0u64, 0i64);
        for i in (start / STEP)..((start + SIZE) / STEP) {
            if i as u64 % 2 == key {
                expected.0 += 1;
                expected.1 += i;
            }
        }
        assert_eq!(actual, expected, "window ({key}, {start})");
    }
}

/// Runs the job on its own thread, with a feeder appending to partition 0 every few
/// milliseconds, while `test` drives it; stops both afterwards (the job: suspend).
fn with_job(idle_timeout_ms: Option<u64>, test: impl FnOnce(&Store, &AtomicU64)) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    store.create_stream("in", 2).unwrap();
    let plan = common::plan_json(spec(idle_timeout_ms)).expect("plan");
    let env = RunEnv::new("idle", store.clone());
    let fed = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let job = scope.spawn(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(weir::runtime::run_job_checkpointed(&plan, &env))
        });
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                let i = fed.load(Ordering::SeqCst);
                store.append("in", 0, &[record(i % 2, i as i64, STEP * i as i64)]).unwrap();
                fed.store(i + 1, Ordering::SeqCst);
                // Pacing, not synchronisation: event time moves on while the job runs.
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        // Stop the feeder and the job even when the test fails, so the scope ends.
        struct Stop<'a>(&'a RunEnv, &'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.1.store(true, Ordering::SeqCst);
                self.0.stop();
            }
        }
        let stop = Stop(&env, &done);
        test(&store, &fed);
        drop(stop);
        job.join().unwrap().expect("the job stops cleanly");
    });
}

#[test]
fn an_idle_partition_does_not_hold_event_time_back() {
    with_job(Some(50), |store, _| {
        // Two windows of each key.
        wait_for("the windows to fire", || results(store).len() >= 4);
        check(&results(store));
        assert_eq!(store.end_offset("in", 1).unwrap(), 0, "nothing ever arrived on partition 1");
    });
}

#[test]
fn without_idleness_the_window_waits_for_every_partition() {
    with_job(None, |store, _| {
        // A completed checkpoint in which the window had a watermark past several windows
        // on one channel, none on the other, and still held the timers of those windows:
        // nothing fired.
        let mut state = Vec::new();
        wait_for("a checkpoint after partition 0 passed several windows", || {
            let Some((_, manifest)) = store.latest_completed("idle").unwrap() else { return false };
            state = manifest["window"].values().map(|s| TaskState::decode(&s.blob).unwrap()).collect();
            state.iter().flat_map(|s| &s.watermarks).any(|w| *w >= 3 * SIZE)
        });
        for s in &state {
            assert!(s.watermarks.contains(&i64::MIN), "a channel without a watermark: {:?}", s.watermarks);
        }
        let closed = |s: &&TaskState| s.timers.iter().filter(|(t, _)| *t < 3 * SIZE).count();
        let timers: usize = state.iter().map(|s| closed(&s)).sum();
        assert_eq!(timers, 6, "three windows of two keys closed on one channel, none fired: {state:?}");
        assert!(results(store).is_empty(), "no window fired");
        // A record on partition 1 far ahead: its watermark releases partition 0's windows.
        store.append("in", 1, &[record(9, 0, 1 << 40)]).unwrap();
        wait_for("the windows to fire", || results(store).len() >= 6);
        check(&results(store));
    });
}
