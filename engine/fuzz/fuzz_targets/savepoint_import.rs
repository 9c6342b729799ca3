//! A savepoint file, as `POST /api/v1/savepoints` imports it: the store's reader
//! (`Store::import_savepoint`: every frame, its order, the checksum and the counts), then the
//! engine's check of the description it carries (`Description::read`). A file that imports
//! must export again, and that export must import.
//!
//! Random bytes would almost never carry the right SHA-256, so when the first input byte is
//! odd the target repairs the file first (see [`repair`]): the fuzzer then reaches what
//! comes after the checksum as well.

#![no_main]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use sha2::{Digest, Sha256};
use weir::savepoint::Description;
use weir_store::{Store, StoreError};

/// One store for the whole run (opening redb per input would dominate): a failed import
/// stores nothing, a successful one is deleted again.
fn store() -> &'static Store {
    static STORE: OnceLock<(tempfile::TempDir, Store)> = OnceLock::new();
    &STORE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temporary directory");
            let store = Store::open(&dir.path().join("fuzz.redb")).expect("open the store");
            (dir, store)
        })
        .1
}

/// Rewrites, in the end frame (kind 255), the SHA-256 and (when it is a small integer) the
/// frame count to what the frames before it hash and count to.
fn repair(file: &mut [u8]) {
    const FRAMES: &[u8] = b"\xa6frames";
    const SHA256: &[u8] = b"\xa6sha256\xc4\x20";
    let mut at = 12; // magic and version
    let mut frames = 0u64;
    while at + 5 <= file.len() {
        let len = u32::from_le_bytes([file[at + 1], file[at + 2], file[at + 3], file[at + 4]]) as usize;
        let Some(end) = (at + 5).checked_add(len).filter(|&e| e <= file.len()) else { return };
        if file[at] == 255 {
            let digest: [u8; 32] = Sha256::digest(&file[..at]).into();
            let payload = &mut file[at + 5..end];
            if let Some(i) = find(payload, SHA256)
                && let Some(hash) = payload.get_mut(i + SHA256.len()..i + SHA256.len() + 32)
            {
                hash.copy_from_slice(&digest);
            }
            if let Some(i) = find(payload, FRAMES)
                && let Some(count) = payload.get_mut(i + FRAMES.len())
                && *count < 0x80
                && frames < 0x80
            {
                *count = frames as u8;
            }
            return;
        }
        frames += 1;
        at = end;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, file)) = data.split_first() else { return };
    let mut file = file.to_vec();
    if mode & 1 == 1 {
        repair(&mut file);
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = format!("fuzz-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let store = store();
    let info = match store.import_savepoint(&mut file.as_slice(), &id, "tenant") {
        Ok(info) => info,
        Err(StoreError::BadSavepointFile(_)) => {
            assert!(store.savepoint(&id).expect("read").is_none(), "a refused file stored something");
            return;
        }
        Err(e) => panic!("an import failed with an error other than a bad file: {e}"),
    };
    // What the server does next with an import (it deletes the savepoint when this fails).
    let _ = Description::read(&info);

    // What imported exports, and the export imports as the same savepoint.
    let mut exported = Vec::new();
    store.export_savepoint(&id, &mut exported).expect("export an imported savepoint");
    let again = format!("{id}-again");
    let copy =
        store.import_savepoint(&mut exported.as_slice(), &again, "tenant").expect("re-import an export");
    assert_eq!((copy.bytes, copy.entries, &copy.job), (info.bytes, info.entries, &info.job));
    for id in [id, again] {
        assert!(store.delete_savepoint(&id).expect("delete"), "savepoint {id} was not stored");
    }
});
