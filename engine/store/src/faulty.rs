//! [`FaultyStorage`]: a [`CheckpointStorage`] wrapper that fails writes at random, for chaos
//! tests of the checkpoint protocol.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::checkpoint::put::PutSubtaskWrite;
use crate::checkpoint::{CheckpointStorage, GcReport, SubtaskWrite};
use crate::error::StoreError;
use crate::manifest::{Manifest, StateEntry, SubtaskState};
use crate::meta::CheckpointMeta;

/// Wraps a [`CheckpointStorage`] and makes `write_subtask` and `complete` fail with
/// [`StoreError::Injected`] with a fixed probability, before the inner storage is touched.
/// The failures are drawn from a seeded generator (SplitMix64), so a given sequence of calls
/// fails the same way every run. Every other method passes through.
#[derive(Debug)]
pub struct FaultyStorage<S> {
    inner: S,
    probability: f64,
    rng: Mutex<u64>,
    enabled: AtomicBool,
    failures: AtomicU64,
}

impl<S: CheckpointStorage> FaultyStorage<S> {
    /// Wraps `inner`; each `write_subtask`/`complete` fails with `write_failure_probability`
    /// (clamped to 0..=1).
    pub fn new(inner: S, seed: u64, write_failure_probability: f64) -> Self {
        let probability =
            if write_failure_probability.is_nan() { 0.0 } else { write_failure_probability.clamp(0.0, 1.0) };
        FaultyStorage {
            inner,
            probability,
            rng: Mutex::new(seed),
            enabled: AtomicBool::new(true),
            failures: AtomicU64::new(0),
        }
    }

    /// How many failures were injected so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::SeqCst)
    }

    /// Turns injection on or off (on after `new`). While off, no random numbers are drawn.
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::SeqCst);
    }

    /// Whether injection is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::SeqCst)
    }

    /// The wrapped storage.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Unwraps the storage.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn maybe_fail(&self, what: &str) -> Result<(), StoreError> {
        if !self.is_enabled() {
            return Ok(());
        }
        let draw = {
            // A poisoned lock only means another thread panicked while drawing; the state is a
            // plain integer and still usable.
            let mut state = self.rng.lock().unwrap_or_else(|e| e.into_inner());
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        // 53 random bits → uniform in [0, 1).
        let unit = (draw >> 11) as f64 / (1u64 << 53) as f64;
        if unit < self.probability {
            let n = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
            return Err(StoreError::Injected(format!("{what} (injected failure #{n})")));
        }
        Ok(())
    }
}

impl<S: CheckpointStorage> CheckpointStorage for FaultyStorage<S> {
    fn begin(&self, meta: &CheckpointMeta) -> Result<(), StoreError> {
        self.inner.begin(meta)
    }

    fn write_subtask(&self, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
        self.maybe_fail(&format!(
            "write of subtask {}/{} for checkpoint {} of job `{}`",
            write.operator, write.subtask, write.checkpoint, write.job
        ))?;
        self.inner.write_subtask(write)
    }

    fn complete(
        &self,
        meta: &CheckpointMeta,
        manifest: &Manifest,
        retain: usize,
    ) -> Result<GcReport, StoreError> {
        self.maybe_fail(&format!("completion of checkpoint {} of job `{}`", meta.id, meta.job))?;
        self.inner.complete(meta, manifest, retain)
    }

    fn abort(&self, meta: &CheckpointMeta) -> Result<(), StoreError> {
        self.inner.abort(meta)
    }

    fn latest_completed(&self, job: &str) -> Result<Option<(CheckpointMeta, Manifest)>, StoreError> {
        self.inner.latest_completed(job)
    }

    fn checkpoint(
        &self,
        job: &str,
        id: u64,
    ) -> Result<Option<(CheckpointMeta, Option<Manifest>)>, StoreError> {
        self.inner.checkpoint(job, id)
    }

    fn read_chain(&self, job: &str, chain: &[u64]) -> Result<Vec<StateEntry>, StoreError> {
        self.inner.read_chain(job, chain)
    }

    fn history(&self, job: &str) -> Result<Vec<CheckpointMeta>, StoreError> {
        self.inner.history(job)
    }

    fn last_checkpoint_id(&self, job: &str) -> Result<u64, StoreError> {
        self.inner.last_checkpoint_id(job)
    }

    fn recover(&self, job: &str) -> Result<(), StoreError> {
        self.inner.recover(job)
    }

    fn chunk_usage(&self, job: &str) -> Result<(u64, u64), StoreError> {
        self.inner.chunk_usage(job)
    }

    fn lease_chunk_ids(&self, count: u64) -> Result<std::ops::Range<u64>, StoreError> {
        self.inner.lease_chunk_ids(count)
    }

    fn record_subtask(&self, write: PutSubtaskWrite) -> Result<SubtaskState, StoreError> {
        self.maybe_fail(&format!(
            "record of subtask {}/{} for checkpoint {} of job `{}`",
            write.operator, write.subtask, write.checkpoint, write.job
        ))?;
        self.inner.record_subtask(write)
    }
}
