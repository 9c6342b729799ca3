//! Staged chunks written once: staging stores each chunk's body once (`weir.log_bodies`) and a
//! reference to it, a commit moves the reference into the log. Against a real redb file:
//! stores written before bodies (inline chunks only) read unchanged, and a damaged reference or
//! a missing body is `StoreError::Corrupt`, never a panic or a wrong offset.

mod stream_support;

use std::collections::BTreeMap;

use redb::{Durability, ReadableDatabase, ReadableTable, TableDefinition};
use stream_support::{inline_chunk, made, stage_inline};
use weir_store::{LogRecord, Store, StoreError};

const LOG: TableDefinition<'_, (&str, u32, u64), &[u8]> = TableDefinition::new("weir.log_chunks");
const STAGED: TableDefinition<'_, (&str, &str, u64, u64, u32), &[u8]> =
    TableDefinition::new("weir.log_staged_chunks");
const BODIES: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("weir.log_bodies");

/// A reference as the store writes it: version 2, count, body id, body length.
const REF_LEN: usize = 17;

fn fresh() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    store.create_stream("s", 2).unwrap();
    store.set_owners(&[("stream/s".into(), "t".into())]).unwrap();
    store.rebuild_usage(&BTreeMap::new()).unwrap();
    (dir, store)
}

fn records_of(store: &Store, partition: u32) -> Vec<LogRecord> {
    store.read("s", partition, 0, usize::MAX).unwrap().into_iter().map(|(_, r)| r).collect()
}

fn ledger_is_recount(store: &Store) {
    let ledger = store.usage_ledger().unwrap().get("t").copied();
    assert_eq!(ledger, store.scan_usage().unwrap().get("t").copied(), "ledger = recount");
}

/// Every value of `table` in key order, as owned bytes.
macro_rules! rows {
    ($store:expr, $table:expr) => {{
        let db = $store.database().unwrap();
        let txn = db.begin_read().unwrap();
        let table = txn.open_table($table).unwrap();
        table.iter().unwrap().map(|i| i.unwrap().1.value().to_vec()).collect::<Vec<Vec<u8>>>()
    }};
}

/// Changes the value at `key` of `table` (`None` from `change`: removes it), not durably.
macro_rules! rewrite {
    ($store:expr, $table:expr, $key:expr, $change:expr) => {{
        let db = $store.database().unwrap();
        let mut txn = db.begin_write().unwrap();
        txn.set_durability(Durability::None).unwrap();
        {
            let mut t = txn.open_table($table).unwrap();
            let old = t.get($key).unwrap().expect("a value there").value().to_vec();
            match apply(old, $change) {
                Some(new) => {
                    t.insert($key, new.as_slice()).unwrap();
                }
                None => {
                    t.remove($key).unwrap();
                }
            }
        }
        txn.commit().unwrap();
    }};
}

fn apply(old: Vec<u8>, change: impl FnOnce(Vec<u8>) -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    change(old)
}

fn is_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::Corrupt { .. }))
}

/// A store as the version before bodies left it — inline chunks in the log (appends still
/// write those) and inline chunks staged, its ledger charged for them — opens with no
/// migration and reads the same records; its staged chunks commit and discard, and referenced
/// chunks committed after them read on in the same partitions, across a reopen.
#[test]
fn a_store_of_inline_chunks_reads_unchanged_and_mixes_with_references() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.redb");
    let p0 = made(2500, 11, true);
    let p1 = made(30, 12, false);
    let old_staged: Vec<(u32, LogRecord)> =
        made(40, 13, false).into_iter().enumerate().map(|(i, r)| ((i % 2) as u32, r)).collect();
    {
        let store = Store::open(&path).unwrap();
        store.create_stream("s", 2).unwrap();
        store.set_owners(&[("stream/s".into(), "t".into())]).unwrap();
        store.rebuild_usage(&BTreeMap::new()).unwrap();
        store.append("s", 0, &p0).unwrap();
        store.append("s", 1, &p1).unwrap();
        stage_inline(&store, "s", "w", 1, &old_staged[..20], "t");
        stage_inline(&store, "s", "w", 2, &old_staged[20..], "t");
        stage_inline(&store, "s", "w", 3, &old_staged[..4], "t");
        // Make the non-durable stages durable.
        store.set_limit("other", None).unwrap();
        assert!(rows!(store, BODIES).is_empty(), "no bodies yet");
        assert!(rows!(store, LOG).iter().all(|v| v[0] == 1), "the log holds inline chunks only");
    }
    let store = Store::open(&path).unwrap();
    assert!(records_of(&store, 0) == p0, "partition 0 as written");
    assert_eq!(records_of(&store, 1), p1);
    for from in [0u64, 1023, 1024, 2047, 2499] {
        let got = store.read("s", 0, from, 3).unwrap();
        let want: Vec<_> = (from..).zip(p0.iter().skip(from as usize).take(3).cloned()).collect();
        assert!(got == want, "from {from}");
    }
    ledger_is_recount(&store);
    assert_eq!(store.staged_count("s", "w").unwrap(), 44);

    // New stages (references) land after the inline ones of the same epoch.
    let new: Vec<(u32, LogRecord)> = made(1500, 14, false).into_iter().map(|r| (0, r)).collect();
    store.stage("s", "w", 1, &new).unwrap();
    let bodies = rows!(store, BODIES).len();
    assert!(bodies >= 2, "{bodies} bodies");
    assert_eq!(rows!(store, STAGED).iter().filter(|v| v.len() == REF_LEN).count(), bodies);
    assert_eq!(store.discard_staged("s", "w", 2).unwrap(), 4, "an inline stage discards");
    assert_eq!(store.commit_staged("s", "w", 2).unwrap(), 1540);
    let mut want0 = p0.clone();
    want0.extend(old_staged[..20].iter().filter(|(p, _)| *p == 0).map(|(_, r)| r.clone()));
    want0.extend(new.iter().map(|(_, r)| r.clone()));
    want0.extend(old_staged[20..].iter().filter(|(p, _)| *p == 0).map(|(_, r)| r.clone()));
    let mut want1 = p1.clone();
    want1.extend(old_staged.iter().filter(|(p, _)| *p == 1).map(|(_, r)| r.clone()));
    assert!(records_of(&store, 0) == want0, "inline, referenced, inline");
    assert_eq!(records_of(&store, 1), want1);
    let log = rows!(store, LOG);
    assert_eq!(log.iter().filter(|v| v.len() == REF_LEN && v[0] == 2).count(), bodies, "references moved");
    ledger_is_recount(&store);
    assert_eq!(store.staged_count("s", "w").unwrap(), 0);
    drop(store);
    let store = Store::open(&path).unwrap();
    assert!(records_of(&store, 0) == want0, "after a reopen");
    for from in [2509u64, 2510, 3533, 3534, 4009] {
        let got = store.read("s", 0, from, 2).unwrap();
        let want: Vec<_> = (from..).zip(want0.iter().skip(from as usize).take(2).cloned()).collect();
        assert!(got == want, "from {from}");
    }
    ledger_is_recount(&store);
}

/// A commit moves references and leaves every body as staging wrote it; a discard removes the
/// bodies with their references; the ledger counts each body once, and a stage over the quota
/// stores no body.
#[test]
fn commits_move_references_and_discards_drop_bodies() {
    let (_dir, store) = fresh();
    let records: Vec<(u32, LogRecord)> =
        made(3000, 21, false).into_iter().enumerate().map(|(i, r)| ((i % 3 == 0) as u32, r)).collect();
    let before = store.usage("t").unwrap();
    store.stage("s", "w", 1, &records).unwrap();
    store.stage("s", "w", 2, &records[..10]).unwrap();
    let bodies = rows!(store, BODIES);
    assert!(bodies.len() >= 4, "{}", bodies.len());
    let body_bytes: usize = bodies.iter().map(Vec::len).sum();
    assert!(store.usage("t").unwrap() - before >= body_bytes as u64, "bodies are charged when staged");
    assert!(rows!(store, STAGED).iter().all(|v| v.len() == REF_LEN), "staging holds references");
    ledger_is_recount(&store);

    assert_eq!(store.commit_staged("s", "w", 1).unwrap(), 3000);
    let after = rows!(store, BODIES);
    assert_eq!(after, bodies, "every body as staged");
    assert!(rows!(store, LOG).iter().all(|v| v.len() == REF_LEN));
    let by_partition = |p: u32| -> Vec<LogRecord> {
        records.iter().filter(|(q, _)| *q == p).map(|(_, r)| r.clone()).collect()
    };
    assert!(records_of(&store, 0) == by_partition(0));
    assert!(records_of(&store, 1) == by_partition(1));
    ledger_is_recount(&store);

    let used = store.usage("t").unwrap();
    assert_eq!(store.discard_staged("s", "w", 1).unwrap(), 10);
    assert!(rows!(store, BODIES).len() < bodies.len(), "discarded bodies are gone");
    assert!(store.usage("t").unwrap() < used);
    ledger_is_recount(&store);

    // Over the quota: refused, and no body stays behind.
    let count = rows!(store, BODIES).len();
    store.set_limit("t", Some(store.usage("t").unwrap() + 1000)).unwrap();
    let err = store.stage("s", "w", 3, &records).unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert_eq!(rows!(store, BODIES).len(), count);
    assert_eq!(store.staged_count("s", "w").unwrap(), 0);
    ledger_is_recount(&store);
}

/// Every kind of damage to a staged reference or its body fails the commit with `Corrupt`
/// and commits nothing; a missing body fails a discard the same way.
#[test]
fn a_damaged_staged_reference_commits_nothing() {
    type Change = fn(Vec<u8>) -> Option<Vec<u8>>;
    let reference: [(&str, Change); 9] = [
        ("version", |mut v| {
            v[0] = 3;
            Some(v)
        }),
        ("count 0", |mut v| {
            v[1..5].copy_from_slice(&0u32.to_le_bytes());
            Some(v)
        }),
        ("count above the chunk bound", |mut v| {
            v[1..5].copy_from_slice(&1025u32.to_le_bytes());
            Some(v)
        }),
        ("count above the body's", |mut v| {
            v[1..5].copy_from_slice(&3u32.to_le_bytes());
            Some(v)
        }),
        ("count below the body's", |mut v| {
            v[1..5].copy_from_slice(&1u32.to_le_bytes());
            Some(v)
        }),
        ("a missing body", |mut v| {
            v[5..13].copy_from_slice(&999u64.to_le_bytes());
            Some(v)
        }),
        ("length", |mut v| {
            v[13] ^= 1;
            Some(v)
        }),
        ("truncated", |mut v| {
            v.pop();
            Some(v)
        }),
        ("longer", |mut v| {
            v.push(0);
            Some(v)
        }),
    ];
    let body: [(&str, Change); 3] = [
        ("removed", |_| None),
        ("its count", |mut v| {
            v[1..5].copy_from_slice(&1u32.to_le_bytes());
            Some(v)
        }),
        ("its length", |mut v| {
            v.push(0);
            Some(v)
        }),
    ];
    let two = made(2, 31, false);
    for (what, change, in_body) in
        reference.iter().map(|(w, c)| (w, c, false)).chain(body.iter().map(|(w, c)| (w, c, true)))
    {
        let (_dir, store) = fresh();
        store.append("s", 0, &made(5, 30, false)).unwrap();
        store.stage("s", "w", 1, &[(0, two[0].clone()), (0, two[1].clone())]).unwrap();
        store.stage("s", "w", 2, &[(1, two[0].clone())]).unwrap();
        if in_body {
            let id = {
                let r = rows!(store, STAGED)[0].clone();
                u64::from_le_bytes(r[5..13].try_into().unwrap())
            };
            rewrite!(store, BODIES, ("s", id), *change);
        } else {
            rewrite!(store, STAGED, ("s", "w", 1u64, 0u64, 0u32), *change);
        }
        let err = store.commit_staged("s", "w", 2).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{what}: {err}");
        assert_eq!(store.end_offset("s", 0).unwrap(), 5, "{what}: nothing committed");
        assert_eq!(store.end_offset("s", 1).unwrap(), 0, "{what}: nothing committed");
        assert_eq!(records_of(&store, 0).len(), 5, "{what}");
        if *what == "removed" || *what == "a missing body" {
            assert!(is_corrupt(store.discard_staged("s", "w", 0)), "{what}: discard");
            assert_eq!(rows!(store, STAGED).len(), 2, "{what}: nothing discarded");
        }
    }
}

/// A committed reference that is damaged, or whose body is missing or damaged, reads as
/// `Corrupt` (the chunks before it still read); no flipped byte of a reference panics.
#[test]
fn a_damaged_reference_in_the_log_reads_as_corrupt() {
    let (_dir, store) = fresh();
    // Small records: chunks of 1024.
    let records: Vec<(u32, LogRecord)> = (0..2500u64)
        .map(|i| (0, LogRecord { key: Vec::new(), value: i.to_le_bytes().to_vec(), timestamp: i as i64 }))
        .collect();
    store.stage("s", "w", 1, &records).unwrap();
    store.commit_staged("s", "w", 1).unwrap();
    let firsts: Vec<u64> = {
        let db = store.database().unwrap();
        let txn = db.begin_read().unwrap();
        let log = txn.open_table(LOG).unwrap();
        log.iter().unwrap().map(|i| i.unwrap().0.value().2).collect()
    };
    assert_eq!(firsts, vec![0, 1024, 2048]);
    let body_of = |store: &Store, first: u64| -> u64 {
        let db = store.database().unwrap();
        let txn = db.begin_read().unwrap();
        let v = txn.open_table(LOG).unwrap().get(("s", 0, first)).unwrap().unwrap().value().to_vec();
        u64::from_le_bytes(v[5..13].try_into().unwrap())
    };
    let id = body_of(&store, 1024);
    let reads = |store: &Store| {
        assert_eq!(store.read("s", 0, 0, 1024).unwrap().len(), 1024, "the chunk before still reads");
        assert!(is_corrupt(store.read("s", 0, 0, 3000)));
        assert!(is_corrupt(store.read("s", 0, 1500, 1)));
    };
    let snapshot = rows!(store, BODIES);
    rewrite!(store, BODIES, ("s", id), |mut v| {
        v[1..5].copy_from_slice(&1000u32.to_le_bytes());
        Some(v)
    });
    let err = store.read("s", 0, 1024, 1).unwrap_err();
    assert!(err.to_string().contains("holds 1000 records"), "{err}");
    reads(&store);
    rewrite!(store, BODIES, ("s", id), |_| None);
    let err = store.read("s", 0, 1024, 1).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    reads(&store);
    // Put the body back as it was: the partition reads whole again.
    let original = snapshot[1].clone();
    {
        let db = store.database().unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(BODIES).unwrap().insert(("s", id), original.as_slice()).unwrap();
        txn.commit().unwrap();
    }
    assert_eq!(store.read("s", 0, 0, 3000).unwrap().len(), 2500);

    // Every flipped byte of a reference: records or Corrupt.
    for at in 0..REF_LEN {
        for flip in [0x01u8, 0x80, 0xff] {
            rewrite!(store, LOG, ("s", 0u32, 1024u64), |mut v| {
                v[at] ^= flip;
                Some(v)
            });
            match store.read("s", 0, 0, 3000) {
                Ok(read) => assert!(read.len() <= 2500),
                Err(StoreError::Corrupt { .. }) => {}
                Err(e) => panic!("byte {at}: {e}"),
            }
            rewrite!(store, LOG, ("s", 0u32, 1024u64), |mut v| {
                v[at] ^= flip;
                Some(v)
            });
        }
    }
    let all: Vec<LogRecord> = records_of(&store, 0);
    assert!(all.iter().eq(records.iter().map(|(_, r)| r)), "whole again");
    // An inline chunk where a reference was also reads (the log takes both kinds).
    let second: Vec<&LogRecord> = records[1024..2048].iter().map(|(_, r)| r).collect();
    let inline = inline_chunk(second);
    rewrite!(store, LOG, ("s", 0u32, 1024u64), |_| Some(inline));
    assert!(records_of(&store, 0).iter().eq(records.iter().map(|(_, r)| r)));
}
