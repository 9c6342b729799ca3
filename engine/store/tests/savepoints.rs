//! Savepoints against a real redb file: copies of real chains, listing, deletion, survival of
//! checkpoint GC and damaged data. Pins are tested with retention in `checkpoints.rs`.

mod common;

use std::collections::BTreeMap;

use common::*;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::json;
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, Manifest, OPERATOR_SCOPE_BASE, SavepointInfo,
    ScopeDelta, StateEntry, Store, StoreError, SubtaskWrite,
};

const SOURCE: &str = "source";
const COUNT: &str = "count";
const WINDOW: &str = "window";

fn open_small_chunks() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap().with_max_chunk_bytes(300);
    (dir, store)
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// The writes of checkpoint `id`, per (operator, subtask): COUNT has two subtasks with four key
/// groups each and operator state, WINDOW one subtask with values larger than a stored piece,
/// SOURCE only blobs. Keys are overwritten and deleted from one checkpoint to the next, and
/// key group 7 is emptied from checkpoint 3 on.
fn deltas(id: u64) -> Vec<(&'static str, u32, Vec<ScopeDelta>)> {
    let n = id as u32;
    let mut writes = Vec::new();
    for subtask in 0..2u32 {
        let mut scopes = Vec::new();
        for group in subtask * 4..subtask * 4 + 4 {
            let entries = (0..6u32)
                .map(|i| {
                    let k = key(group * 100 + i);
                    if (group == 7 && id >= 3) || (i + n).is_multiple_of(4) {
                        del("n", &k)
                    } else {
                        put("n", &k, format!("{id}-{i}").as_bytes())
                    }
                })
                .collect();
            scopes.push(scope(group, entries));
        }
        scopes
            .push(scope(OPERATOR_SCOPE_BASE + subtask, vec![put("offsets", b"", id.to_string().as_bytes())]));
        writes.push((COUNT, subtask, scopes));
    }
    let window = vec![scope(
        3,
        vec![
            put("pane", format!("p{}", id % 3).as_bytes(), &vec![id as u8; 5_000]),
            put("sum", b"x", &[n as u8]),
        ],
    )];
    writes.push((WINDOW, 0, window));
    writes.push((SOURCE, 0, Vec::new()));
    writes.push((SOURCE, 1, Vec::new()));
    writes
}

/// Begins, writes and completes checkpoint `id` of every (operator, subtask) of `deltas(id)` on
/// top of `previous`; returns the manifest.
fn take_checkpoint(store: &Store, id: u64, previous: &Manifest, retain: usize, pinned: bool) -> Manifest {
    let meta = CheckpointMeta { pinned, ..CheckpointMeta::new(JOB, id, 1_000 + id) };
    store.begin(&meta).unwrap();
    let mut manifest = Manifest::new();
    for (operator, subtask, scopes) in deltas(id) {
        let previous =
            previous.get(operator).and_then(|subtasks| subtasks.get(&subtask)).map(|s| s.chains.clone());
        let state = store
            .write_subtask(SubtaskWrite {
                job: JOB.to_owned(),
                checkpoint: id,
                operator: operator.to_owned(),
                subtask,
                full: false,
                scopes: scopes.into(),
                previous: previous.unwrap_or_default(),
                blob: format!("{operator}/{subtask}@{id}").into_bytes(),
                max_chain_length: 3,
            })
            .unwrap();
        manifest.entry(operator.to_owned()).or_default().insert(subtask, state);
    }
    let completed =
        CheckpointMeta { status: CheckpointStatus::Completed, end_time_ms: Some(2_000 + id), ..meta };
    store.complete(&completed, &manifest, retain).unwrap();
    manifest
}

/// Checkpoints 1 to `last`; returns the last manifest.
fn build_job(store: &Store, last: u64, retain: usize) -> Manifest {
    let mut manifest = Manifest::new();
    for id in 1..=last {
        manifest = take_checkpoint(store, id, &manifest, retain, false);
    }
    manifest
}

/// Per operator and scope, the live entries of `manifest` (non-empty scopes only).
fn chain_contents(store: &Store, manifest: &Manifest) -> BTreeMap<(String, u32), Vec<StateEntry>> {
    let mut contents = BTreeMap::new();
    for (operator, subtasks) in manifest {
        for state in subtasks.values() {
            for (scope, chain) in &state.chains {
                let entries = store.read_chain(JOB, chain).unwrap();
                if !entries.is_empty() {
                    contents.insert((operator.clone(), *scope), entries);
                }
            }
        }
    }
    contents
}

/// Per operator and scope, the entries of savepoint `id`, read through the public API.
fn savepoint_contents(store: &Store, id: &str) -> BTreeMap<(String, u32), Vec<StateEntry>> {
    let mut contents = BTreeMap::new();
    for operator in store.savepoint_operators(id).unwrap() {
        for scope in store.savepoint_scopes(id, &operator).unwrap() {
            contents
                .insert((operator.clone(), scope), store.read_savepoint_scope(id, &operator, scope).unwrap());
        }
    }
    contents
}

fn savepoint_blobs(store: &Store, id: &str) -> BTreeMap<String, BTreeMap<u32, Vec<u8>>> {
    let operators = store.savepoint_operators(id).unwrap();
    operators.into_iter().map(|op| (op.clone(), store.savepoint_blobs(id, &op).unwrap())).collect()
}

fn manifest_blobs(manifest: &Manifest) -> BTreeMap<String, BTreeMap<u32, Vec<u8>>> {
    manifest
        .iter()
        .map(|(op, subtasks)| {
            (op.clone(), subtasks.iter().map(|(s, state)| (*s, state.blob.clone())).collect())
        })
        .collect()
}

fn info(id: &str, owner: &str, checkpoint: u64, created_ms: u64) -> SavepointInfo {
    SavepointInfo {
        id: id.to_owned(),
        owner: owner.to_owned(),
        job: JOB.to_owned(),
        checkpoint,
        created_ms,
        bytes: 0,
        entries: 0,
        origin: None,
        description: json!({"parallelism": {COUNT: 2, WINDOW: 1}, "versions": [1, 2.5, -3], "note": null}),
    }
}

/// Rows that belong to savepoint `id`, in every savepoint table.
fn rows_of(store: &Store, id: &str) -> usize {
    const INFOS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("weir.savepoints");
    const OWNERS: TableDefinition<'_, (&str, &str), ()> = TableDefinition::new("weir.savepoint_owners");
    const SCOPES: TableDefinition<'_, (&str, &str, u32), (u32, u64)> =
        TableDefinition::new("weir.savepoint_scopes");
    const PIECES: TableDefinition<'_, (&str, &str, u32, u32, u32), &[u8]> =
        TableDefinition::new("weir.savepoint_pieces");
    const BLOBS: TableDefinition<'_, (&str, &str, u32), &[u8]> = TableDefinition::new("weir.savepoint_blobs");
    let txn = store.database().begin_read().unwrap();
    let mut rows = 0;
    for item in txn.open_table(INFOS).unwrap().iter().unwrap() {
        rows += usize::from(item.unwrap().0.value() == id);
    }
    for item in txn.open_table(OWNERS).unwrap().iter().unwrap() {
        rows += usize::from(item.unwrap().0.value().1 == id);
    }
    for item in txn.open_table(SCOPES).unwrap().iter().unwrap() {
        rows += usize::from(item.unwrap().0.value().0 == id);
    }
    for item in txn.open_table(PIECES).unwrap().iter().unwrap() {
        rows += usize::from(item.unwrap().0.value().0 == id);
    }
    for item in txn.open_table(BLOBS).unwrap().iter().unwrap() {
        rows += usize::from(item.unwrap().0.value().0 == id);
    }
    rows
}

#[test]
fn a_savepoint_copies_the_live_state_of_every_scope_and_every_blob() {
    let (_dir, store) = open_small_chunks();
    let manifest = build_job(&store, 5, 2);
    let expected = chain_contents(&store, &manifest);
    // The chains hold overwrites and deletes, some several chunks, and key group 7 is empty.
    assert!(
        manifest[COUNT][&1]
            .chains
            .get(&7)
            .is_none_or(|chain| store.read_chain(JOB, chain).unwrap().is_empty())
    );
    assert!(manifest[WINDOW][&0].chains[&3].len() > 1, "{:?}", manifest[WINDOW][&0].chains);

    let created = store.create_savepoint(info("sp1", "alice", 5, 20), &manifest).unwrap();
    let entries: u64 = expected.values().map(|e| e.len() as u64).sum();
    let entry_bytes: usize =
        expected.values().flatten().map(|e| e.key.len() + e.value.as_ref().unwrap().len()).sum();
    let blob_bytes: usize = manifest.values().flat_map(|s| s.values()).map(|s| s.blob.len()).sum();
    assert_eq!(
        created,
        SavepointInfo { entries, bytes: (entry_bytes + blob_bytes) as u64, ..info("sp1", "alice", 5, 20) }
    );
    assert!(entries > 20 && entry_bytes > 10_000, "{entries} entries, {entry_bytes} bytes");
    assert_eq!(store.savepoint("sp1").unwrap(), Some(created.clone()));

    assert_eq!(savepoint_contents(&store, "sp1"), expected);
    assert_eq!(store.savepoint_operators("sp1").unwrap(), vec![COUNT, SOURCE, WINDOW]);
    assert_eq!(
        store.savepoint_scopes("sp1", COUNT).unwrap(),
        vec![0, 1, 2, 3, 4, 5, 6, OPERATOR_SCOPE_BASE, OPERATOR_SCOPE_BASE + 1]
    );
    assert!(store.savepoint_scopes("sp1", SOURCE).unwrap().is_empty());
    assert_eq!(savepoint_blobs(&store, "sp1"), manifest_blobs(&manifest));
    assert_eq!(store.savepoint_blobs("sp1", SOURCE).unwrap()[&1], b"source/1@5");
    assert!(store.read_savepoint_scope("sp1", COUNT, 7).unwrap().is_empty());
    assert!(store.savepoint_blobs("sp1", "nobody").unwrap().is_empty());

    // Listing: per owner, oldest first (then by id); usage adds up the owner's bytes.
    store.create_savepoint(info("sp0", "alice", 5, 30), &manifest).unwrap();
    store.create_savepoint(info("sp2", "alice", 5, 10), &manifest).unwrap();
    let bobs = store.create_savepoint(info("bob1", "bob", 5, 5), &manifest).unwrap();
    let listed = |owner| store.savepoints(owner).unwrap().into_iter().map(|i| i.id).collect::<Vec<_>>();
    assert_eq!(listed("alice"), vec!["sp2", "sp1", "sp0"]);
    assert_eq!(listed("bob"), vec!["bob1"]);
    assert!(listed("alic").is_empty() && listed("alice2").is_empty());
    assert_eq!(store.savepoint_usage("alice").unwrap(), 3 * created.bytes);
    assert_eq!(store.savepoint_usage("carol").unwrap(), 0);

    let err = store.create_savepoint(info("sp1", "bob", 4, 1), &manifest).unwrap_err();
    assert!(matches!(&err, StoreError::SavepointExists { id } if id == "sp1"), "{err}");
    assert_eq!(err.to_string(), "savepoint `sp1` already exists");
    assert_eq!(store.savepoint("sp1").unwrap(), Some(created));

    // Deleting removes every row of the savepoint and nothing of the others.
    let rows = rows_of(&store, "sp1");
    assert!(rows > 30, "{rows} rows");
    assert!(store.delete_savepoint("sp1").unwrap());
    assert_eq!(rows_of(&store, "sp1"), 0);
    assert!(!store.delete_savepoint("sp1").unwrap());
    assert_eq!(store.savepoint("sp1").unwrap(), None);
    assert_eq!(listed("alice"), vec!["sp2", "sp0"]);
    for result in [
        store.savepoint_operators("sp1").map(drop),
        store.savepoint_scopes("sp1", COUNT).map(drop),
        store.read_savepoint_scope("sp1", COUNT, 0).map(drop),
        store.savepoint_blobs("sp1", COUNT).map(drop),
    ] {
        let err = result.unwrap_err();
        assert!(matches!(&err, StoreError::UnknownSavepoint { id } if id == "sp1"), "{err}");
        assert_eq!(err.to_string(), "savepoint `sp1` does not exist");
    }
    assert_eq!(store.savepoint("bob1").unwrap(), Some(bobs));
    assert_eq!(savepoint_contents(&store, "bob1"), expected);
    assert_eq!(rows_of(&store, "sp0"), rows);
}

#[test]
fn a_savepoint_outlives_the_checkpoints_and_chunks_it_was_copied_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.redb");
    let store = Store::open(&path).unwrap().with_max_chunk_bytes(300);
    let manifest = build_job(&store, 4, 2);
    let expected = chain_contents(&store, &manifest);
    store.create_savepoint(info("sp", "alice", 4, 1), &manifest).unwrap();

    // The job drops all its state: retention removes checkpoint 4 and GC every chunk.
    begin(&store, 5);
    let empty = store
        .write_subtask(SubtaskWrite { full: true, ..subtask_write(5, true, Vec::new(), &BTreeMap::new(), 3) })
        .unwrap();
    let report = store.complete(&completed_meta(5, &empty), &Manifest::new(), 1).unwrap();
    assert_eq!(report.removed_checkpoints, vec![3, 4]);
    assert_eq!(store.chunk_usage(JOB).unwrap(), (0, 0));
    assert!(store.checkpoint(JOB, 4).unwrap().unwrap().1.is_none());
    let chain = &manifest[COUNT][&0].chains[&0];
    assert!(matches!(store.read_chain(JOB, chain), Err(StoreError::MissingChunk { .. })));

    assert_eq!(savepoint_contents(&store, "sp"), expected);
    assert_eq!(savepoint_blobs(&store, "sp"), manifest_blobs(&manifest));
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(savepoint_contents(&store, "sp"), expected, "after reopening");
    assert_eq!(store.savepoints("alice").unwrap().len(), 1);
}

#[test]
fn a_missing_chunk_or_a_scope_in_two_subtasks_stores_nothing() {
    let (_dir, store) = open_small_chunks();
    let mut manifest = build_job(&store, 2, 1);
    let mut bad = manifest.clone();
    bad.get_mut(WINDOW).unwrap().get_mut(&0).unwrap().chains.insert(12, vec![9_999]);
    let err = store.create_savepoint(info("sp", "alice", 2, 1), &bad).unwrap_err();
    assert!(matches!(err, StoreError::MissingChunk { chunk: 9_999, .. }), "{err}");
    assert_eq!(rows_of(&store, "sp"), 0);
    assert!(store.savepoints("alice").unwrap().is_empty());

    let shared = manifest[COUNT][&0].chains[&0].clone();
    manifest.get_mut(COUNT).unwrap().get_mut(&1).unwrap().chains.insert(0, shared);
    let err = store.create_savepoint(info("sp", "alice", 2, 1), &manifest).unwrap_err();
    assert!(matches!(err, StoreError::InvalidMeta { id: 2, .. }), "{err}");
    assert!(
        err.to_string().contains("scope 0 of operator `count` is in the chains of subtasks 0 and 1"),
        "{err}"
    );
    assert_eq!(rows_of(&store, "sp"), 0);
}

#[test]
fn damaged_savepoint_data_is_reported_not_returned() {
    type Key = (&'static str, &'static str, u32, u32, u32);
    type Pieces<'t> = redb::Table<'t, Key, &'static [u8]>;
    const PIECES: TableDefinition<'_, Key, &[u8]> = TableDefinition::new("weir.savepoint_pieces");
    let (_dir, store) = open_small_chunks();
    let manifest = build_job(&store, 2, 1);
    store.create_savepoint(info("sp", "alice", 2, 1), &manifest).unwrap();
    let pieces = |store: &Store| {
        let txn = store.database().begin_read().unwrap();
        let table = txn.open_table(PIECES).unwrap();
        let range = ("sp", WINDOW, 3, 0, 0)..=("sp", WINDOW, 3, u32::MAX, u32::MAX);
        table
            .range(range)
            .unwrap()
            .map(|item| {
                let (_, _, _, chunk, piece) = item.unwrap().0.value();
                (chunk, piece)
            })
            .collect::<Vec<_>>()
    };
    // Two 5000-byte panes (two pieces each) and a small sum, one chunk each.
    assert_eq!(pieces(&store), vec![(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]);
    assert_eq!(store.read_savepoint_scope("sp", WINDOW, 3).unwrap().len(), 3);
    let edit = |change: &dyn Fn(&mut Pieces<'_>)| {
        let txn = store.database().begin_write().unwrap();
        change(&mut txn.open_table(PIECES).unwrap());
        txn.commit().unwrap();
    };
    let check = |expected: &str| {
        let err = store.read_savepoint_scope("sp", WINDOW, 3).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains("scope 3 of operator `window` in savepoint `sp`"), "{message}");
        assert!(message.contains(expected), "{message}");
    };
    let original = |chunk, piece| {
        let txn = store.database().begin_read().unwrap();
        txn.open_table(PIECES)
            .unwrap()
            .get(("sp", WINDOW, 3, chunk, piece))
            .unwrap()
            .unwrap()
            .value()
            .to_vec()
    };
    let (first, last) = (original(0, 1), original(2, 0));

    let mut damaged = first.clone();
    damaged[10] ^= 1;
    edit(&|table| drop(table.insert(("sp", WINDOW, 3, 0, 1), damaged.as_slice()).unwrap()));
    check("chunk 0: checksum mismatch");
    edit(&|table| drop(table.remove(("sp", WINDOW, 3, 0, 1)).unwrap()));
    check("chunk 0: ");
    edit(&|table| drop(table.insert(("sp", WINDOW, 3, 0, 1), first.as_slice()).unwrap()));
    edit(&|table| drop(table.remove(("sp", WINDOW, 3, 1, 0)).unwrap()));
    check("chunk 1: piece 1 where piece 0 was expected");
    edit(&|table| drop(table.remove(("sp", WINDOW, 3, 1, 1)).unwrap()));
    check("chunk 1 is missing");
    edit(&|table| drop(table.remove(("sp", WINDOW, 3, 2, 0)).unwrap()));
    check("1 chunks with 1 entries are stored, the index says 3 chunks with 3 entries");
    edit(&|table| drop(table.insert(("sp", WINDOW, 3, 2, 0), last.as_slice()).unwrap()));
    check("chunk 1 is missing");
    // Other scopes are unaffected.
    assert!(!store.read_savepoint_scope("sp", COUNT, 0).unwrap().is_empty());
}
