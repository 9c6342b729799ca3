//! Host state on a worker's disk, held to its tenant's storage quota as on the controller.
//!
//! A local store reserves its disk use from the job owner's quota in steps
//! ([`crate::local_state::QuotaLedger`]). In process the store is at hand; on a worker the
//! reservation is asked of the controller over the session ([`StorageRequest::Reserve`],
//! [`StorageRequest::Release`]), which reserves it in its store for the attempt
//! ([`Reservations`]) and gives back whatever the attempt still holds when it ends — a
//! worker that dies or is fenced cannot keep a tenant's room. The worker's own disk has a
//! free-space floor of its own (`min_free_bytes`, as the controller's), checked locally.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use weir_store::{DiskFloor, Store, StoreError};

use super::protocol::{AttemptId, StorageReply, StorageRequest};
use super::remote_storage::RemoteStorage;
use crate::local_state::QuotaLedger;

/// The bytes an attempt's workers reserved from its job owner's quota (controller side).
/// Cheap to clone; the last clone dropped gives back what is still held.
#[derive(Debug, Clone)]
pub(super) struct Reservations(Arc<Held>);

#[derive(Debug)]
struct Held {
    store: Store,
    job: String,
    /// The job's owner (`None`: no quota, nothing is reserved), looked up at the first call.
    owner: Mutex<Option<Option<String>>>,
    bytes: Mutex<u64>,
}

impl Reservations {
    pub(super) fn new(store: Store, job: &str) -> Self {
        Reservations(Arc::new(Held {
            store,
            job: job.to_string(),
            owner: Mutex::new(None),
            bytes: Mutex::new(0),
        }))
    }

    fn owner(&self) -> Result<Option<String>, StoreError> {
        let mut owner = self.0.owner.lock().unwrap_or_else(PoisonError::into_inner);
        if owner.is_none() {
            *owner = Some(self.0.store.job_owner(&self.0.job)?);
        }
        Ok(owner.clone().flatten())
    }

    /// Reserves `bytes` more for the attempt; fails with the quota's error.
    pub(super) fn reserve(&self, bytes: u64) -> Result<(), StoreError> {
        let Some(owner) = self.owner()? else {
            return Ok(());
        };
        let mut held = self.0.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        self.0.store.reserve(&owner, bytes)?;
        *held = held.saturating_add(bytes);
        Ok(())
    }

    /// Gives back `bytes` (at most what the attempt holds).
    pub(super) fn release(&self, bytes: u64) -> Result<(), StoreError> {
        let Some(owner) = self.owner()? else {
            return Ok(());
        };
        let mut held = self.0.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        let bytes = bytes.min(*held);
        self.0.store.release(&owner, bytes)?;
        *held -= bytes;
        Ok(())
    }

    /// Bytes held now.
    #[cfg(test)]
    fn held(&self) -> u64 {
        *self.0.bytes.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let held = *self.bytes.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let (true, Some(Some(owner))) =
            (held > 0, self.owner.get_mut().unwrap_or_else(PoisonError::into_inner))
        {
            let _ = self.store.release(owner, held);
        }
    }
}

/// What a worker's part of an ended attempt still holds on the controller, kept until the
/// worker says that part ended (`Ended`: its subtasks are gone, and with them their host
/// state folders) or the worker is lost: the attempt's quota [`Reservations`]. An attempt
/// can end here (a failure elsewhere, a stop) while its parts still run and their folders
/// are still on the workers' disks; giving their room back then would let the next attempt
/// reserve it again beside them.
#[derive(Default, Clone)]
pub(super) struct HeldUntilEnded(Arc<Mutex<HeldByWorker>>);

/// Worker id → (attempt, its reservations) per ended attempt whose part there still runs.
type HeldByWorker = HashMap<u64, Vec<(AttemptId, Reservations)>>;

impl std::fmt::Debug for HeldUntilEnded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldUntilEnded").field("workers", &self.lock().len()).finish()
    }
}

impl HeldUntilEnded {
    fn lock(&self) -> std::sync::MutexGuard<'_, HeldByWorker> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds `reservations` until worker `worker`'s part of `attempt` ended.
    pub(super) fn hold(&self, worker: u64, attempt: &AttemptId, reservations: Reservations) {
        self.lock().entry(worker).or_default().push((attempt.clone(), reservations));
    }

    /// Worker `worker`'s part of `attempt` ended: what it held goes.
    pub(super) fn ended(&self, worker: u64, attempt: &AttemptId) {
        let gone: Vec<_> = {
            let mut held = self.lock();
            let Some(list) = held.get_mut(&worker) else { return };
            let (gone, kept) = std::mem::take(list).into_iter().partition(|(a, _)| a == attempt);
            *list = kept;
            if list.is_empty() {
                held.remove(&worker);
            }
            gone
        };
        release_later(gone);
    }

    /// Worker `worker` is lost: everything it held goes.
    pub(super) fn lost(&self, worker: u64) {
        let gone = self.lock().remove(&worker).unwrap_or_default();
        release_later(gone);
    }
}

/// Drops `gone` (a store write each) off the caller's thread when on a runtime.
fn release_later(gone: Vec<(AttemptId, Reservations)>) {
    if gone.is_empty() {
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => drop(handle.spawn_blocking(move || drop(gone))),
        Err(_) => drop(gone),
    }
}

/// A worker's quota for its local stores: the controller's reservations, the worker's disk
/// floor.
pub(super) struct RemoteQuota {
    pub(super) storage: Arc<RemoteStorage>,
    pub(super) floor: Arc<DiskFloor>,
}

impl std::fmt::Debug for RemoteQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteQuota").field("floor", &self.floor).finish_non_exhaustive()
    }
}

impl QuotaLedger for RemoteQuota {
    fn check_disk(&self, bytes: u64) -> Result<(), StoreError> {
        self.floor.check(bytes)
    }

    fn reserve(&self, bytes: u64) -> Result<(), StoreError> {
        self.storage.off_runtime(|| {
            let rx = self.storage.call(StorageRequest::Reserve { bytes })?;
            match RemoteStorage::answer(&rx)? {
                StorageReply::Done => Ok(()),
                other => Err(StoreError::Remote(format!("an answer out of turn: {other:?}"))),
            }
        })
    }

    fn release(&self, bytes: u64) {
        // Not waited for: a store is released as it is dropped, and an attempt that ended
        // (its reservations given back already) answers nothing.
        let _ = self.storage.off_runtime(|| self.storage.call(StorageRequest::Release { bytes }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_gives_back_what_it_holds_when_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        store.set_owners(&[("job/j".to_string(), "tenant".to_string())]).unwrap();
        store.set_limit("tenant", Some(100 << 20)).unwrap();
        let reservations = Reservations::new(store.clone(), "j");
        reservations.reserve(40 << 20).unwrap();
        reservations.clone().reserve(40 << 20).unwrap();
        let err = reservations.reserve(40 << 20).unwrap_err();
        assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
        assert_eq!(store.usage("tenant").unwrap(), 80 << 20);
        // A release gives back at most what the attempt holds.
        reservations.release(100 << 20).unwrap();
        assert_eq!((reservations.held(), store.usage("tenant").unwrap()), (0, 0));
        reservations.reserve(30 << 20).unwrap();
        drop(reservations);
        assert_eq!(store.usage("tenant").unwrap(), 0, "the ended attempt's reservation is given back");
        // A job without an owner reserves nothing.
        let unowned = Reservations::new(store.clone(), "other");
        unowned.reserve(1 << 40).unwrap();
        assert_eq!(store.usage("tenant").unwrap(), 0);
    }
}
