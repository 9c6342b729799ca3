//! The storage quota a local store's disk use is reserved from: [`LocalQuota`] over a
//! [`QuotaLedger`] (the owner's quota in the controller's store, or a cluster worker's
//! answer from the controller).

use std::sync::Arc;

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
