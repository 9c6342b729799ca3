//! An instance's keyed store ([`KeyedStates`]): the local disk store
//! ([`crate::local_state`]) that serves the guest's `keyed-state` import (its host-kept keyed
//! state), opened when the guest first asks for a state (or a restore brings one). The import
//! itself is in `imports.rs`.
//!
//! A refused request (a limit, a foreign key, the quota, a store failure) answers the guest
//! with nothing and fails the call when it returns, like the timer limits: the guest's
//! functions stay infallible, and the instance is poisoned (its changes may be partly
//! applied; recovery restores the last checkpoint).

use std::ops::Range;

use crate::local_state::{LocalChanges, LocalPlace, LocalStateConfig, LocalStateError, LocalStore};

/// Most bytes of changed keys one instance's host state holds in host memory.
pub const MAX_DIRTY_BYTES: usize = 64 << 20;

/// The host state of one instance.
#[derive(Debug)]
pub struct KeyedStates {
    /// Where the store goes and the instance's key groups, set by the task before restore
    /// and open (a temporary folder when not set).
    place: Option<LocalPlace>,
    store: Option<LocalStore>,
    refusal: Option<String>,
    /// Most bytes of changed keys the host holds in memory for the instance; past it they
    /// are spilled to the store ([`LocalStore::spill`]).
    dirty_limit: usize,
}

impl KeyedStates {
    /// Host state of an instance whose memory limit is `memory_limit` bytes: the keys it
    /// changes between two barriers are held in host memory up to a quarter of that and at
    /// most [`MAX_DIRTY_BYTES`], then spilled to the local store.
    pub(crate) fn new(memory_limit: usize) -> Self {
        let dirty_limit = (memory_limit / 4).min(MAX_DIRTY_BYTES);
        KeyedStates { place: None, store: None, refusal: None, dirty_limit }
    }

    /// The spill threshold instead of the one from the memory limit (tests).
    #[doc(hidden)]
    pub fn set_dirty_limit(&mut self, bytes: usize) {
        self.dirty_limit = bytes;
    }

    /// Sets where the store goes and which key groups the instance owns.
    pub fn set_place(&mut self, place: LocalPlace) {
        self.place = Some(place);
    }

    /// Where the store goes, once set.
    pub fn place(&self) -> Option<&LocalPlace> {
        self.place.as_ref()
    }

    /// Sets the key groups from the instance's context when the task did not set a place.
    pub(crate) fn default_place(
        &mut self,
        operator: &str,
        subtask: u32,
        max_parallelism: u32,
        owned: Range<u32>,
    ) {
        if self.place.is_none() {
            self.set_place(LocalPlace {
                config: LocalStateConfig::temporary("standalone"),
                operator: operator.to_string(),
                subtask,
                max_parallelism,
                owned,
            });
        }
    }

    fn open_store(&mut self) -> Result<&mut LocalStore, LocalStateError> {
        if self.store.is_none() {
            let place = self.place.as_ref().ok_or_else(|| {
                LocalStateError::Store("host state is used before the instance was opened".into())
            })?;
            self.store = Some(place.open()?);
        }
        Ok(self.store.as_mut().expect("just opened"))
    }

    /// Installs the store a restore filled.
    pub fn restored(&mut self, store: LocalStore) {
        self.store = Some(store);
    }

    /// The sync part of a checkpoint: what changed since the last one (none when nothing
    /// did or no state was ever opened).
    pub fn checkpoint(&mut self) -> Option<LocalChanges> {
        self.store.as_mut().and_then(LocalStore::checkpoint)
    }

    /// The store, if host state was used.
    pub fn store(&self) -> Option<&LocalStore> {
        self.store.as_ref()
    }

    /// The refusal of the current call, if any (taken: the next call starts clean).
    pub(crate) fn take_refusal(&mut self) -> Option<String> {
        self.refusal.take()
    }

    fn refuse(&mut self, e: LocalStateError) {
        if self.refusal.is_none() {
            self.refusal = Some(e.to_string());
        }
    }

    /// Runs `f` on the store (opened on first use, spilled past the dirty limit); after a
    /// refusal, and on one, answers `default` and keeps the first refusal for the call.
    pub(super) fn with<T>(
        &mut self,
        default: T,
        f: impl FnOnce(&mut LocalStore) -> Result<T, LocalStateError>,
    ) -> T {
        if self.refusal.is_some() {
            return default;
        }
        let limit = self.dirty_limit;
        let result = self.open_store().and_then(|s| {
            let v = f(s)?;
            if s.dirty_bytes() > limit {
                s.spill()?;
            }
            Ok(v)
        });
        match result {
            Ok(v) => v,
            Err(e) => {
                self.refuse(e);
                default
            }
        }
    }
}
