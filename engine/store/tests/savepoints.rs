//! Savepoints against a real redb file: copies of real chains, listing, deletion, survival of
//! checkpoint GC, damaged data, export and import (including damaged files). Pins are tested
//! with retention in `checkpoints.rs`.

mod common;

use std::collections::BTreeMap;

use common::*;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::json;
use sha2::{Digest, Sha256};
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, Manifest, OPERATOR_SCOPE_BASE, SavepointInfo,
    ScopeDelta, StateEntry, Store, StoreError, SubtaskWrite,
};

const SOURCE: &str = "source";
const COUNT: &str = "count";
const WINDOW: &str = "window";
/// A scope of WINDOW that checkpoint 6 fills with more than a state frame holds.
const BIG_SCOPE: u32 = 9;

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
    let mut window = vec![scope(
        3,
        vec![
            put("pane", format!("p{}", id % 3).as_bytes(), &vec![id as u8; 5_000]),
            put("sum", b"x", &[n as u8]),
        ],
    )];
    if id == 6 {
        let big = (0..260u32).map(|i| put("big", &i.to_be_bytes(), &[i as u8; 5_000])).collect();
        window.push(scope(BIG_SCOPE, big));
    }
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
                channel_state: Vec::new(),
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
    let txn = store.database().unwrap().begin_read().unwrap();
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
        store.export_savepoint("sp1", &mut Vec::new()).map(drop),
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
        let txn = store.database().unwrap().begin_read().unwrap();
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
        let txn = store.database().unwrap().begin_write().unwrap();
        change(&mut txn.open_table(PIECES).unwrap());
        txn.commit().unwrap();
    };
    let check = |expected: &str| {
        for err in [
            store.read_savepoint_scope("sp", WINDOW, 3).unwrap_err(),
            store.export_savepoint("sp", &mut Vec::new()).unwrap_err(),
        ] {
            assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
            let message = err.to_string();
            assert!(message.contains("scope 3 of operator `window` in savepoint `sp`"), "{message}");
            assert!(message.contains(expected), "{message}");
        }
    };
    let original = |chunk, piece| {
        let txn = store.database().unwrap().begin_read().unwrap();
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

// ---------------------------------------------------------------------------------------------
// Export and import

/// The frames of an export file: (kind, payload), the end frame included.
fn frames(file: &[u8]) -> Vec<(u8, Vec<u8>)> {
    assert_eq!(&file[..8], b"WEIRSAVE");
    assert_eq!(&file[8..12], &1u32.to_le_bytes());
    let mut pos = 12;
    let mut frames = Vec::new();
    while pos < file.len() {
        let len = u32::from_le_bytes(file[pos + 1..pos + 5].try_into().unwrap()) as usize;
        frames.push((file[pos], file[pos + 5..pos + 5 + len].to_vec()));
        pos += 5 + len;
    }
    assert_eq!(pos, file.len());
    frames
}

/// A file of `frames` (no end frame among them) sealed with an end frame that says `count`
/// frames and `entries` entries, with the right checksum.
fn seal(frames: &[(u8, Vec<u8>)], count: u64, entries: u64) -> Vec<u8> {
    let mut file = b"WEIRSAVE".to_vec();
    file.extend_from_slice(&1u32.to_le_bytes());
    for (kind, payload) in frames {
        file.push(*kind);
        file.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        file.extend_from_slice(payload);
    }
    let digest = Sha256::digest(&file);
    let mut end = Vec::new();
    rmp::encode::write_map_len(&mut end, 3).unwrap();
    rmp::encode::write_str(&mut end, "frames").unwrap();
    rmp::encode::write_uint(&mut end, count).unwrap();
    rmp::encode::write_str(&mut end, "entries").unwrap();
    rmp::encode::write_uint(&mut end, entries).unwrap();
    rmp::encode::write_str(&mut end, "sha256").unwrap();
    rmp::encode::write_bin(&mut end, &digest).unwrap();
    file.push(255);
    file.extend_from_slice(&(end.len() as u32).to_le_bytes());
    file.extend_from_slice(&end);
    file
}

/// A state frame payload with `entries` (state, key) whose values are `v`.
fn state_payload(operator: &str, scope: u32, entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    rmp::encode::write_map_len(&mut out, 3).unwrap();
    rmp::encode::write_str(&mut out, "operator").unwrap();
    rmp::encode::write_str(&mut out, operator).unwrap();
    rmp::encode::write_str(&mut out, "scope").unwrap();
    rmp::encode::write_uint(&mut out, u64::from(scope)).unwrap();
    rmp::encode::write_str(&mut out, "entries").unwrap();
    rmp::encode::write_array_len(&mut out, entries.len() as u32).unwrap();
    for (state, key) in entries {
        rmp::encode::write_array_len(&mut out, 3).unwrap();
        rmp::encode::write_str(&mut out, state).unwrap();
        rmp::encode::write_bin(&mut out, key).unwrap();
        rmp::encode::write_bin(&mut out, b"v").unwrap();
    }
    out
}

fn header(payload: &[u8]) -> serde_json::Value {
    rmp_serde::from_slice(payload).unwrap()
}

fn export(store: &Store, id: &str) -> Vec<u8> {
    let mut file = Vec::new();
    let written = store.export_savepoint(id, &mut file).unwrap();
    assert_eq!(written, file.len() as u64);
    file
}

#[test]
fn an_export_imports_into_another_store_with_the_same_contents() {
    let (_dir, store) = open_small_chunks();
    let manifest = build_job(&store, 6, 2);
    let original = store.create_savepoint(info("sp1", "alice", 6, 77), &manifest).unwrap();
    let file = export(&store, "sp1");

    // The frames: a header, state frames in (operator, scope) order with the big scope cut into
    // several, blobs in (operator, subtask) order, the end.
    let frames = frames(&file);
    let kinds: Vec<u8> = frames.iter().map(|(kind, _)| *kind).collect();
    assert_eq!(kinds[0], 1);
    assert_eq!(kinds.last(), Some(&255));
    let blobs = manifest.values().map(|s| s.len()).sum::<usize>();
    assert!(kinds[kinds.len() - 1 - blobs..kinds.len() - 1].iter().all(|k| *k == 3), "{kinds:?}");
    assert!(kinds[1..kinds.len() - 1 - blobs].iter().all(|k| *k == 2), "{kinds:?}");
    let big_frames = frames.iter().filter(|(kind, payload)| *kind == 2 && payload.len() > 200_000).count();
    assert!(big_frames >= 2, "the big scope spans several frames");
    assert!(frames.iter().all(|(_, payload)| payload.len() < (1 << 20) + 10_000));
    assert_eq!(
        header(&frames[0].1),
        json!({"id": "sp1", "job": JOB, "checkpoint": 6, "created_ms": 77, "bytes": original.bytes,
               "entries": original.entries, "description": original.description})
    );

    let (_dir2, other) = open();
    let imported = other.import_savepoint(&mut file.as_slice(), "copy", "carol").unwrap();
    assert_eq!(
        imported,
        SavepointInfo {
            id: "copy".to_owned(),
            owner: "carol".to_owned(),
            origin: Some("sp1".to_owned()),
            ..original.clone()
        }
    );
    assert_eq!(other.savepoint("copy").unwrap(), Some(imported.clone()));
    assert_eq!(other.savepoints("carol").unwrap(), vec![imported]);
    let contents = savepoint_contents(&store, "sp1");
    assert_eq!(contents[&(WINDOW.to_owned(), BIG_SCOPE)].len(), 260);
    assert_eq!(savepoint_contents(&other, "copy"), contents);
    assert_eq!(savepoint_blobs(&other, "copy"), savepoint_blobs(&store, "sp1"));
    assert_eq!(store.savepoint_operators("sp1").unwrap(), other.savepoint_operators("copy").unwrap());

    // Exporting the copy gives the same file but for the id in the header (and the checksum).
    let again = export(&other, "copy");
    let again_frames = self::frames(&again);
    assert_eq!(again_frames.len(), frames.len());
    assert_eq!(again_frames[1..again_frames.len() - 1], frames[1..frames.len() - 1]);
    let mut expected_header = header(&frames[0].1);
    expected_header["id"] = json!("copy");
    assert_eq!(header(&again_frames[0].1), expected_header);
    // Imported under its original id (into a store that chunks differently), the file
    // exports byte for byte the same.
    let (_dir3, third) = open();
    third.import_savepoint(&mut file.as_slice(), "sp1", "dave").unwrap();
    assert_eq!(export(&third, "sp1"), file);

    // An import never replaces an existing savepoint.
    let err = other.import_savepoint(&mut file.as_slice(), "copy", "erin").unwrap_err();
    assert!(matches!(&err, StoreError::SavepointExists { id } if id == "copy"), "{err}");
    assert!(other.savepoints("erin").unwrap().is_empty());
}

/// A store with one small savepoint `sp` (two scopes and a blob) and its export.
fn small_export() -> (tempfile::TempDir, Store, Vec<u8>) {
    let (dir, store) = open();
    let scopes = vec![
        scope(0, vec![put("s", b"a", b"1"), put("s", b"b", b"2"), put("t", b"a", b"3")]),
        scope(OPERATOR_SCOPE_BASE, vec![put("offsets", b"", b"10")]),
    ];
    let state = checkpoint(&store, 1, true, scopes, &BTreeMap::new(), 5, 1);
    store.create_savepoint(info("sp", "alice", 1, 5), &manifest_of(&state)).unwrap();
    let file = export(&store, "sp");
    (dir, store, file)
}

/// Imports `file` into `store` as `bad` of owner `mallory`, expects a BadSavepointFile error,
/// checks that nothing was stored and returns the message.
fn import_fails(store: &Store, file: &[u8]) -> String {
    let result = store.import_savepoint(&mut &file[..], "bad", "mallory");
    assert!(store.savepoints("mallory").unwrap().is_empty(), "{result:?}");
    assert_eq!(rows_of(store, "bad"), 0, "{result:?}");
    match result {
        Err(StoreError::BadSavepointFile(message)) => message,
        other => panic!("expected a bad file error, got {other:?}"),
    }
}

#[test]
fn a_truncated_file_stores_nothing() {
    let (_dir, store, file) = small_export();
    assert!(file.len() < 1_000, "{} bytes", file.len());
    for len in 0..file.len() {
        let message = import_fails(&store, &file[..len]);
        assert!(message.starts_with("the file is truncated ("), "cut at {len}: {message}");
    }
    assert_eq!(import_fails(&store, &[]), "the file is truncated (it is empty)");
    assert_eq!(
        import_fails(&store, &file[..20]),
        "the file is truncated (it ends inside frame 1, after 3 of its ".to_owned()
            + &frames(&file)[0].1.len().to_string()
            + " payload bytes)"
    );
    let without_end = file.len() - 5 - frames(&file).last().unwrap().1.len();
    let frame_count = frames(&file).len() - 1;
    assert_eq!(
        import_fails(&store, &file[..without_end]),
        format!("the file is truncated (it ends after frame {frame_count} without an end frame)")
    );
    // The whole file still imports.
    store.import_savepoint(&mut file.as_slice(), "whole", "mallory").unwrap();
}

#[test]
fn every_damaged_byte_is_detected_and_stores_nothing() {
    let (_dir, store, file) = small_export();
    let mut kinds = BTreeMap::new();
    for offset in 0..file.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut damaged = file.clone();
            damaged[offset] ^= flip;
            let message = import_fails(&store, &damaged);
            let kind = message.split([':', '(']).next().unwrap().to_owned();
            *kinds.entry(kind).or_insert(0) += 1;
        }
    }
    // Most damage is caught by the checksum; the rest by the structure of the file.
    assert!(kinds.get("checksum mismatch").copied().unwrap_or(0) > file.len() / 2, "{kinds:?}");
    assert!(kinds.keys().any(|k| k.starts_with("frame ")), "{kinds:?}");
    assert!(kinds.contains_key("not a Weir savepoint file"), "{kinds:?}");
}

#[test]
fn bad_files_are_rejected_with_precise_messages() {
    let (_dir, store, file) = small_export();
    let frames = frames(&file);
    let body = &frames[..frames.len() - 1];
    let count = body.len() as u64;
    assert_eq!(seal(body, count, 4), file, "the test builds files like the store does");

    let mut other = file.clone();
    other[..8].copy_from_slice(b"PK\x03\x04....");
    assert_eq!(import_fails(&store, &other), "not a Weir savepoint file");
    assert_eq!(import_fails(&store, b"{\"json\": true}"), "not a Weir savepoint file");
    assert_eq!(
        import_fails(&store, b"WEI"),
        "the file is truncated (it ends after 3 of the 12 bytes of the magic and the version)"
    );
    let mut future = file.clone();
    future[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert_eq!(
        import_fails(&store, &future),
        "savepoint format version 2 is not supported (this build reads version 1)"
    );
    let mut trailing = file.clone();
    trailing.push(0);
    assert_eq!(import_fails(&store, &trailing), "unexpected data after the end frame");
    trailing.extend_from_slice(&file);
    assert_eq!(import_fails(&store, &trailing), "unexpected data after the end frame");

    // Damage the checksum cannot see (the file is resealed) is caught by the frame rules.
    let blob = frames.iter().position(|(kind, _)| *kind == 3).unwrap();
    let mut swapped = body.to_vec();
    swapped.swap(1, 2);
    assert_eq!(
        import_fails(&store, &seal(&swapped, count, 4)),
        "frame 3: scope 0 of operator `op` after scope 2147483648 of operator `op` (state frames must \
         be in (operator, scope) order)"
    );
    let mut state_after_blob = body.to_vec();
    state_after_blob.push(body[1].clone());
    assert!(import_fails(&store, &seal(&state_after_blob, count + 1, 7)).starts_with(&format!(
        "frame {}: a state frame after the blob of operator `op` subtask 0",
        count + 1
    )));
    let mut blob_twice = body.to_vec();
    blob_twice.push(body[blob].clone());
    assert!(
        import_fails(&store, &seal(&blob_twice, count + 1, 4))
            .contains("blob frames must be in (operator, subtask) order")
    );
    let mut repeated_scope = body.to_vec();
    repeated_scope.insert(2, body[1].clone());
    assert_eq!(
        import_fails(&store, &seal(&repeated_scope, count + 1, 7)),
        "frame 3: entry 1 (state `s`) is not after the last entry of the previous frame of the scope (the \
         entries of a scope must be sorted by state and key, without duplicates)"
    );
    for (entries, bad) in [
        (vec![("s", &b"b"[..]), ("s", b"a"), ("t", b"a")], "entry 2 (state `s`)"),
        (vec![("s", &b"a"[..]), ("t", b"a"), ("t", b"a")], "entry 3 (state `t`)"),
        (vec![("t", &b"a"[..]), ("s", b"z")], "entry 2 (state `s`)"),
    ] {
        let mut unsorted = body.to_vec();
        unsorted[1].1 = state_payload("op", 0, &entries);
        assert_eq!(
            import_fails(&store, &seal(&unsorted, count, 4)),
            format!(
                "frame 2: {bad} is not after the entry before it (the entries of a scope must be \
                 sorted by state and key, without duplicates)"
            )
        );
    }
    let mut empty = body.to_vec();
    empty[1].1 = state_payload("op", 0, &[]);
    assert_eq!(import_fails(&store, &seal(&empty, count, 1)), "frame 2: a state frame without entries");
    let mut two_headers = body.to_vec();
    two_headers.insert(1, body[0].clone());
    assert_eq!(import_fails(&store, &seal(&two_headers, count + 1, 4)), "frame 2: a second header frame");
    assert_eq!(
        import_fails(&store, &seal(&body[1..], count - 1, 4)),
        "frame 1: the first frame must be the header (kind 1), not kind 2"
    );
    let mut unknown = body.to_vec();
    unknown.push((7, vec![0x80]));
    assert_eq!(
        import_fails(&store, &seal(&unknown, count + 1, 4)),
        format!("frame {}: unknown frame kind 7", count + 1)
    );
    let mut garbage = body.to_vec();
    garbage[1].1 = vec![0x93, 1, 2, 3];
    assert_eq!(
        import_fails(&store, &seal(&garbage, count, 4)),
        "frame 2: the state frame must be a map, not an array"
    );

    // Counts that do not match what the file holds.
    assert_eq!(
        import_fails(&store, &seal(body, count + 1, 4)),
        format!("frame count mismatch: the end frame says {} frames, the file has {count}", count + 1)
    );
    assert_eq!(
        import_fails(&store, &seal(body, count, 5)),
        "entry count mismatch: the end frame says 5 entries, the state frames hold 4"
    );
    let mut lying_header = body.to_vec();
    let mut fields = header(&body[0].1);
    fields["entries"] = json!(3);
    lying_header[0].1 = rmp_serde::to_vec_named(&fields).unwrap();
    assert_eq!(
        import_fails(&store, &seal(&lying_header, count, 4)),
        "entry count mismatch: the header says 3 entries, the state frames hold 4"
    );
    fields["entries"] = json!(4);
    fields["bytes"] = json!(1);
    lying_header[0].1 = rmp_serde::to_vec_named(&fields).unwrap();
    assert!(
        import_fails(&store, &seal(&lying_header, count, 4))
            .starts_with("byte count mismatch: the header says 1 bytes")
    );
    fields["extra"] = json!(1);
    lying_header[0].1 = rmp_serde::to_vec_named(&fields).unwrap();
    assert!(import_fails(&store, &seal(&lying_header, count, 4)).contains("unknown field `extra`"));

    // A frame longer than the limit is refused before it is read.
    let mut huge = file[..12].to_vec();
    huge.push(1);
    huge.extend_from_slice(&(64u32 << 20 | 1).to_le_bytes());
    assert_eq!(import_fails(&store, &huge), "frame 1: a payload of 67108865 bytes is over the 64 MiB limit");

    // A checksum mismatch proper: one byte of a blob changed.
    let at = file.windows(6).position(|w| w == b"blob 1").unwrap();
    let mut altered = file.clone();
    altered[at + 5] = b'2';
    assert_eq!(import_fails(&store, &altered), "checksum mismatch: the file was altered or damaged");
    assert!(store.savepoints("mallory").unwrap().is_empty());
}
