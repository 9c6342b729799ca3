//! The storage quota a local store's disk use is reserved from: [`LocalQuota`] over a
//! [`QuotaLedger`] (the owner's quota in the controller's store, or a cluster worker's
//! answer from the controller), and [`HeldFolder`], which gives a store's reservation back
//! only once its folder is gone.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use weir_store::Store;

/// The store's disk use is checked against the quota every this many written bytes, and
/// reserved from it in steps of this size.
pub(super) const QUOTA_STEP: u64 = 16 << 20;

/// The storage quota the store's disk use is reserved from.
#[derive(Clone, Debug)]
pub struct LocalQuota(pub(super) Arc<dyn QuotaLedger>);

impl LocalQuota {
    /// `owner`'s quota in `store`, with the floor of `store`'s disk.
    pub fn of_owner(store: &Store, owner: &str) -> Self {
        LocalQuota(Arc::new(OwnerQuota { store: store.clone(), owner: owner.to_string() }))
    }

    /// The quota `ledger` keeps.
    pub fn new(ledger: Arc<dyn QuotaLedger>) -> Self {
        LocalQuota(ledger)
    }
}

/// Where a local store's disk use is checked and reserved: the job owner's quota in the
/// controller's store ([`LocalQuota::of_owner`]), or, on a cluster worker, the controller's
/// answer over the session and the worker's own disk floor.
pub trait QuotaLedger: Send + Sync + std::fmt::Debug {
    /// Fails when writing `bytes` more would pass the local disk's free-space floor.
    fn check_disk(&self, bytes: u64) -> Result<(), weir_store::StoreError>;
    /// Reserves `bytes` of the owner's quota; fails with the quota's error.
    fn reserve(&self, bytes: u64) -> Result<(), weir_store::StoreError>;
    /// Gives back `bytes` reserved before.
    fn release(&self, bytes: u64);
}

/// The owner's quota in a store (on the machine that holds the store).
struct OwnerQuota {
    store: Store,
    owner: String,
}

impl std::fmt::Debug for OwnerQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerQuota").field("owner", &self.owner).finish_non_exhaustive()
    }
}

impl QuotaLedger for OwnerQuota {
    fn check_disk(&self, bytes: u64) -> Result<(), weir_store::StoreError> {
        self.store.check_disk(bytes)
    }

    fn reserve(&self, bytes: u64) -> Result<(), weir_store::StoreError> {
        self.store.reserve(&self.owner, bytes)
    }

    fn release(&self, bytes: u64) {
        let _ = self.store.release(&self.owner, bytes);
    }
}

/// An instance's folder and the bytes of its quota reserved for it. The store and every
/// checkpoint's changes (which keep its database open) share it, each holding it in its
/// last field, so it drops after their database handles: the folder is removed first, and
/// only then the reservation given back. The reservation is held until the files are gone:
/// a folder that cannot be removed keeps it (logged), parked until a later attempt —
/// when another store opens or a job's folders are removed ([`retry_parked`]) — succeeds.
#[derive(Debug)]
pub(super) struct HeldFolder {
    pub(super) dir: PathBuf,
    quota: Option<LocalQuota>,
    /// Bytes reserved from `quota` (changed only by the store that owns the folder).
    reserved: AtomicU64,
}

/// Folders that could not be removed, with the reservations they keep.
static PARKED: Mutex<Vec<(PathBuf, Option<LocalQuota>, u64)>> = Mutex::new(Vec::new());

impl HeldFolder {
    pub(super) fn new(dir: PathBuf, quota: Option<LocalQuota>) -> Self {
        HeldFolder { dir, quota, reserved: AtomicU64::new(0) }
    }

    pub(super) fn quota(&self) -> Option<&LocalQuota> {
        self.quota.as_ref()
    }

    /// Bytes reserved for the folder.
    pub(super) fn reserved(&self) -> u64 {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Records that `bytes` are reserved for the folder now.
    pub(super) fn set_reserved(&self, bytes: u64) {
        self.reserved.store(bytes, Ordering::Relaxed);
    }
}

impl Drop for HeldFolder {
    fn drop(&mut self) {
        let reserved = *self.reserved.get_mut();
        remove_then_release(std::mem::take(&mut self.dir), self.quota.take(), reserved);
    }
}

/// Removes `dir` (fjall removed it already when its last handle went, unless that failed)
/// and gives `reserved` back to `quota` once it is gone; a folder that stays is parked with
/// its reservation.
pub(super) fn remove_then_release(dir: PathBuf, quota: Option<LocalQuota>, reserved: u64) {
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            tracing::warn!(
                dir = %dir.display(),
                reserved,
                error = %e,
                "a host state folder cannot be removed: its quota reservation is kept until it is"
            );
            PARKED.lock().unwrap_or_else(PoisonError::into_inner).push((dir, quota, reserved));
        }
        _ => {
            if let Some(quota) = quota
                && reserved > 0
            {
                quota.0.release(reserved);
            }
        }
    }
}

/// Tries again to remove the parked folders, giving back the reservation of each that is
/// gone now; returns how many are still parked.
pub(super) fn retry_parked() -> usize {
    let parked = std::mem::take(&mut *PARKED.lock().unwrap_or_else(PoisonError::into_inner));
    for (dir, quota, reserved) in parked {
        remove_then_release(dir, quota, reserved);
    }
    PARKED.lock().unwrap_or_else(PoisonError::into_inner).len()
}
