//! Opening the store file: every table and the migrations of older formats. The crate's top
//! layer, the one file that knows every feature's tables.

use std::path::Path;

use redb::Database;

use crate::error::StoreError;
use crate::store::Store;
use crate::tables::{self, RESERVED};

/// Opens the database at `path` (creating it if `create`) and its tables, migrating a stream
/// log of the one-record-per-key format (`stream::migrate`).
fn open_database(path: &Path, create: bool) -> Result<Database, StoreError> {
    let db = if create { Database::create(path) } else { Database::open(path) };
    let db = db.map_err(|source| StoreError::Open { path: path.to_owned(), source })?;
    let txn = db.begin_write()?;
    tables::create_all(&txn)?;
    // Reservations live only as long as the process that made them.
    txn.open_table(RESERVED)?.retain(|_, _| false)?;
    crate::stream::migrate(&txn)?;
    txn.commit()?;
    Ok(db)
}

impl Store {
    /// Opens the store file at `path`, creating it and its tables if needed. A file can be open
    /// only once per process: clone the `Store` to share it.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Ok(Store::new(path, open_database(path, true)?))
    }

    /// Closes the database and opens the file again, for every clone: the way out of an I/O
    /// error (a full disk), after which redb fails every call. The file recovers to its last
    /// durable commit, so nothing acknowledged is lost; transactions of the old database fail.
    /// From the close on, calls fail with [`StoreError::Reopening`]; when the open fails
    /// (the disk is still full, the file is missing: a new empty file is never made in its
    /// place) they go on failing so, and the next `reopen` tries again.
    pub fn reopen(&self) -> Result<(), StoreError> {
        // Never a new empty file in place of one that went missing.
        self.swap_database(|path| open_database(path, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::LogRecord;

    #[test]
    fn a_reopen_swaps_the_database_of_every_clone_and_keeps_what_was_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        let clone = store.clone();
        let run = store.for_this_open();
        store.create_stream("s", 1).unwrap();
        let record = LogRecord { key: b"k".to_vec(), value: b"v".to_vec(), timestamp: 1 };
        store.append("s", 0, std::slice::from_ref(&record)).unwrap();
        store.probe().unwrap();

        // Someone holding the old database past the wait keeps the file open: the reopen
        // fails, calls meanwhile say the store is reopening, and the next reopen succeeds.
        let held = store.database().unwrap();
        let err = clone.reopen().unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err}");
        assert!(matches!(store.database(), Err(StoreError::Reopening)));
        assert!(matches!(store.end_offset("s", 0), Err(StoreError::Reopening)));
        assert!(store.probe().unwrap_err().is_io_failure());
        drop(held);
        clone.reopen().unwrap();

        assert_eq!(store.end_offset("s", 0).unwrap(), 1, "the committed append is kept");
        store.append("s", 0, &[record]).unwrap();
        assert_eq!(clone.end_offset("s", 0).unwrap(), 2, "every clone writes to the new database");
        store.probe().unwrap();
        assert!(matches!(run.end_offset("s", 0), Err(StoreError::Reopening)), "a pinned clone is over");
        assert_eq!(store.for_this_open().end_offset("s", 0).unwrap(), 2);
    }
}
