//! Failure injection for tests: planned faults that fire once each at chosen points of the
//! runtime, so exactly-once can be checked against failures at random but replayable
//! moments.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use super::error::TaskError;

/// Where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultPoint {
    /// Before a task handles a batch (sources: before emitting one).
    Process,
    /// In the synchronous part of a snapshot, before the guest's `snapshot` is called.
    Snapshot,
    /// In the asynchronous part, while a subtask's state is written to the store.
    AsyncWrite,
    /// While a task is restored from a checkpoint.
    Restore,
    /// In the asynchronous part, before the channel state (in-flight data) of an unaligned
    /// checkpoint is written with the subtask's state.
    ChannelState,
}

const POINTS: [FaultPoint; 5] = [
    FaultPoint::Process,
    FaultPoint::Snapshot,
    FaultPoint::AsyncWrite,
    FaultPoint::Restore,
    FaultPoint::ChannelState,
];

/// What an injected fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The task returns an error.
    Error,
    /// The task panics.
    Panic,
}

/// One planned fault: fires at the `after`-th time (0-based) `point` is reached once the
/// injector is armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedFault {
    /// Where.
    pub point: FaultPoint,
    /// How many times the point is passed (after arming) before it fires.
    pub after: u64,
    /// What it does.
    pub kind: FaultKind,
}

/// Planned faults shared by every attempt of a job. Counting starts when the injector is
/// armed (the runtime arms it when the first checkpoint completes, so that every fault is
/// followed by a recovery from a checkpoint).
#[derive(Debug)]
pub struct FaultInjector {
    planned: Mutex<Vec<(PlannedFault, bool)>>,
    counters: [AtomicU64; 5],
    armed: AtomicBool,
    fired: AtomicUsize,
}

impl FaultInjector {
    /// An injector of the given faults.
    pub fn new(faults: Vec<PlannedFault>) -> Self {
        FaultInjector {
            planned: Mutex::new(faults.into_iter().map(|f| (f, false)).collect()),
            counters: Default::default(),
            armed: AtomicBool::new(false),
            fired: AtomicUsize::new(0),
        }
    }

    /// Starts counting.
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// Faults fired so far.
    pub fn fired(&self) -> usize {
        self.fired.load(Ordering::SeqCst)
    }

    /// Faults planned in all.
    pub fn planned(&self) -> usize {
        self.planned.lock().expect("fault plan").len()
    }

    /// Passes `point`: fails (or panics) if a planned fault is due.
    pub fn hit(&self, point: FaultPoint) -> Result<(), TaskError> {
        if !self.armed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let i = POINTS.iter().position(|p| *p == point).expect("known point");
        let n = self.counters[i].fetch_add(1, Ordering::SeqCst);
        let kind = {
            let mut planned = self.planned.lock().expect("fault plan");
            let due = planned.iter_mut().find(|(f, fired)| !*fired && f.point == point && f.after <= n);
            match due {
                Some((f, fired)) => {
                    *fired = true;
                    f.kind
                }
                None => return Ok(()),
            }
        };
        self.fired.fetch_add(1, Ordering::SeqCst);
        match kind {
            FaultKind::Error => Err(TaskError::Injected(format!("injected fault at {point:?} (pass {n})"))),
            FaultKind::Panic => panic!("injected panic at {point:?} (pass {n})"),
        }
    }
}
