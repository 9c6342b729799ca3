//! The server's side of the storage ledger (kept by `weir_store`, see its `usage` module):
//! every byte a tenant makes the server keep is charged to the tenant in the write
//! transaction that stores it, and checked there against `max_storage_bytes`.
//!
//! - The store charges what it keeps itself: stream records (appended over the API or
//!   written by jobs), checkpoints (chunks of every retained one, manifests, history rows)
//!   and savepoints. It knows the owner of a job (`job/<id>`, registered when the job is
//!   created) and of a stream (the tenant's namespace `stream/<tenant>.`, registered with the
//!   tenant).
//! - The server charges its own rows with `charge_row`: job records, module records (plus
//!   the module file's bytes) and savepoint records (names, descriptions).
//! - Uploads in flight (a savepoint import's spooled file) hold a reservation
//!   (`Store::reserve`) as they grow.
//! - A data directory written before the ledger existed is recounted once at open
//!   (`super::recount::prepare`).
//!
//! A leaf: every writer of a server table charges through it; the recount, which reads
//! every writer's table, sits above them in `recount.rs`.

use redb::WriteTransaction;
use weir_store::{charge_owner, entry_bytes};

use super::error::ServerResult;

/// Charges `tenant` in `txn` for a row of a server table whose key is `key_len` bytes: its
/// value went from `old` to `new` bytes (`None`: no row), plus `extra` bytes kept outside the
/// store (positive when stored, negative when removed). With `check`, growth past the
/// tenant's limit fails with a quota error.
pub(crate) fn charge_row(
    txn: &WriteTransaction,
    tenant: &str,
    key_len: usize,
    (old, new): (Option<usize>, Option<usize>),
    extra: i64,
    check: bool,
) -> ServerResult<()> {
    let size = |v: Option<usize>| v.map_or(0, |v| entry_bytes(key_len, v));
    Ok(charge_owner(txn, tenant, size(new) - size(old) + extra, check)?)
}

/// The stream namespace of `tenant` in the store's owner registry.
pub(crate) fn stream_namespace(tenant: &str) -> String {
    format!("stream/{tenant}.")
}

/// Job `job` in the store's owner registry: what the job stores (checkpoints, restored
/// state) is charged to the owner registered under this name.
pub(crate) fn job_owner(job: &str) -> String {
    format!("job/{job}")
}
