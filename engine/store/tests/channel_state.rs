//! Channel state of unaligned checkpoints against a real redb file: written as chunks of its
//! checkpoint, read back in replay order, retained, collected, aborted and charged with it,
//! checked for damage, and refused by savepoints.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use redb::{ReadableDatabase, TableDefinition};
use tempfile::TempDir;
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, FaultyStorage, Manifest, SavepointInfo, StateEntry,
    Store, StoreError, SubtaskState, SubtaskWrite,
};

const OWNER: &str = "alice";
const CHANNEL: &str = "in-flight";
const CHUNK_PIECES: TableDefinition<'_, (&str, u64, u32), &[u8]> = TableDefinition::new("weir.chunk_pieces");
const MANIFESTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("weir.manifests");

/// A store with 16 KiB chunks (so channel state spans many), its job owned by [`OWNER`].
fn open_small() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap().with_max_chunk_bytes(16 << 10);
    store.set_owners(&[(format!("job/{JOB}"), OWNER.to_owned())]).unwrap();
    (dir, store)
}

/// In-flight message `seq` of `channel` as the runtime stores it: a big-endian key, so that
/// sorted order is replay order. The value names its message.
fn message(channel: u32, seq: u64, size: usize) -> StateEntry {
    let mut key = channel.to_be_bytes().to_vec();
    key.extend_from_slice(&seq.to_be_bytes());
    let mut value = key.clone();
    value.resize(size.max(key.len()), (seq as u8) ^ (channel as u8).rotate_left(4));
    StateEntry { state: CHANNEL.to_owned(), key, value: Some(value) }
}

/// `per_channel` messages of `size` bytes on each of 3 channels, in replay order.
fn messages(per_channel: u64, size: usize) -> Vec<StateEntry> {
    (0..3).flat_map(|channel| (0..per_channel).map(move |seq| message(channel, seq, size))).collect()
}

fn write_with_channel(
    checkpoint: u64,
    full: bool,
    previous: &BTreeMap<u32, Vec<u64>>,
    channel_state: Vec<StateEntry>,
) -> SubtaskWrite {
    let entries = vec![put("s", &checkpoint.to_be_bytes(), b"v")];
    SubtaskWrite { channel_state, ..subtask_write(checkpoint, full, vec![scope(0, entries)], previous, 100) }
}

/// begin + write (with channel state) + complete; returns the subtask state.
fn checkpoint_with_channel(
    store: &Store,
    id: u64,
    previous: &BTreeMap<u32, Vec<u64>>,
    channel_state: Vec<StateEntry>,
    retain: usize,
) -> SubtaskState {
    begin(store, id);
    let state =
        store.write_subtask(write_with_channel(id, previous.is_empty(), previous, channel_state)).unwrap();
    complete(store, id, &state, retain);
    state
}

fn ledger(store: &Store) -> u64 {
    let ledger = store.usage_ledger().unwrap();
    assert_eq!(ledger, store.scan_usage().unwrap(), "the ledger matches a recount");
    ledger.get(OWNER).copied().unwrap_or(0)
}

/// Every chunk the kept manifests of the job reference (chains and channel state).
fn referenced(store: &Store) -> BTreeSet<u64> {
    let mut chunks = BTreeSet::new();
    for meta in store.history(JOB).unwrap() {
        if let Some((_, Some(manifest))) = store.checkpoint(JOB, meta.id).unwrap() {
            for state in manifest.values().flat_map(|subtasks| subtasks.values()) {
                chunks.extend(state.chains.values().flatten().chain(&state.channel).copied());
            }
        }
    }
    chunks
}

fn is_missing(store: &Store, chunks: &[u64]) -> bool {
    chunks
        .iter()
        .all(|chunk| matches!(store.read_chain(JOB, &[*chunk]), Err(StoreError::MissingChunk { .. })))
}

#[test]
fn channel_state_is_written_as_chunks_of_its_checkpoint_and_read_back_in_order() {
    let (_dir, store) = open_small();
    let before = ledger(&store);
    let mut channel_state = messages(100, 1000);
    let expected = channel_state.clone();
    // A tombstone is not in-flight data: it is skipped.
    channel_state.insert(50, StateEntry { value: None, ..message(7, 0, 0) });

    begin(&store, 1);
    let s1 = store.write_subtask(write_with_channel(1, true, &BTreeMap::new(), channel_state)).unwrap();
    assert!(s1.channel.len() > 10, "300 KB in 16 KiB chunks: {} chunks", s1.channel.len());
    assert!(s1.channel.windows(2).all(|w| w[0] < w[1]), "ids in write order: {:?}", s1.channel);
    let chained: BTreeSet<u64> = s1.chains.values().flatten().copied().collect();
    assert!(s1.channel.iter().all(|chunk| !chained.contains(chunk)), "channel chunks are in no chain");

    // Written, counted and charged.
    let (bytes, count) = store.chunk_usage(JOB).unwrap();
    assert_eq!(count, (chained.len() + s1.channel.len()) as u64);
    assert_eq!(bytes, s1.bytes_written);
    assert!(s1.bytes_written > 300 * 1000, "{}", s1.bytes_written);
    assert!(ledger(&store) >= before + 300 * 1000, "channel chunks are charged to the job's owner");

    // Read back whole, and chunk by chunk in the order of `channel`: the given order.
    assert_eq!(store.read_chain(JOB, &s1.channel).unwrap(), expected);
    let chunked: Vec<_> =
        s1.channel.iter().flat_map(|chunk| store.read_chain(JOB, &[*chunk]).unwrap()).collect();
    assert_eq!(chunked, expected);

    // Completion stores the channel chunks in the manifest and counts them in the sizes.
    complete(&store, 1, &s1, 2);
    let (meta, manifest) = store.latest_completed(JOB).unwrap().unwrap();
    assert_eq!(manifest[OP][&0], s1);
    assert_eq!(meta.full_size, bytes);
    assert_eq!(meta.subtasks[0].full_state_bytes, meta.full_size);
    assert_eq!(store.read_chain(JOB, &manifest[OP][&0].channel).unwrap(), expected);

    // The next write builds on the chains only; channel state is not carried.
    begin(&store, 2);
    let s2 = store.write_subtask(write_with_channel(2, false, &s1.chains, Vec::new())).unwrap();
    assert!(s2.channel.is_empty());
    assert!(s2.chains.values().flatten().all(|chunk| !s1.channel.contains(chunk)));
    complete(&store, 2, &s2, 2);
    let (meta2, _) = store.checkpoint(JOB, 2).unwrap().unwrap();
    assert!(meta2.full_size < meta.full_size, "checkpoint 2 has no channel state");
    assert_eq!(store.read_chain(JOB, &s1.channel).unwrap(), expected, "checkpoint 1 is retained");
}

#[test]
fn megabytes_of_channel_state_round_trip_at_the_default_chunk_size() {
    let (_dir, store) = open();
    // 3 × 400 messages of 5000 bytes: about 6 MB, more than one 4 MiB chunk.
    let expected = messages(400, 5000);
    let state = checkpoint_with_channel(&store, 1, &BTreeMap::new(), expected.clone(), 1);
    assert_eq!(state.channel.len(), 2);
    assert_eq!(store.read_chain(JOB, &state.channel).unwrap(), expected);
}

#[test]
fn retention_keeps_channel_chunks_with_their_checkpoint_and_collects_them_with_it() {
    let (_dir, store) = open_small();
    let none = BTreeMap::new();
    let s1 = checkpoint_with_channel(&store, 1, &none, messages(20, 1000), 2);
    let s2 = checkpoint_with_channel(&store, 2, &s1.chains, messages(30, 1000), 2);
    let peak = ledger(&store);
    let peak_chunks = store.chunk_usage(JOB).unwrap();
    assert_eq!(peak_chunks.1, referenced(&store).len() as u64);

    // Checkpoint 3 (aligned) pushes checkpoint 1 out: its channel chunks go, 2's stay.
    begin(&store, 3);
    let s3 = store.write_subtask(write_with_channel(3, false, &s2.chains, Vec::new())).unwrap();
    let report = complete(&store, 3, &s3, 2);
    assert_eq!(report.removed_checkpoints, vec![1]);
    assert!(report.removed_chunks >= s1.channel.len() as u64);
    assert!(report.removed_bytes >= 60 * 1000);
    assert!(is_missing(&store, &s1.channel));
    assert_eq!(store.read_chain(JOB, &s2.channel).unwrap(), messages(30, 1000));
    assert_eq!(store.chunk_usage(JOB).unwrap().1, referenced(&store).len() as u64);

    // Checkpoint 4 pushes checkpoint 2 out: no channel chunk is left.
    let s4 = checkpoint(&store, 4, false, vec![scope(0, vec![put("s", b"x", b"y")])], &s3.chains, 100, 2);
    assert!(is_missing(&store, &s2.channel));
    let kept = referenced(&store);
    assert!(kept.iter().all(|chunk| !s1.channel.contains(chunk) && !s2.channel.contains(chunk)));
    let (bytes, count) = store.chunk_usage(JOB).unwrap();
    assert_eq!(count, kept.len() as u64);
    assert!(peak_chunks.0 - bytes >= 150 * 1000, "{peak_chunks:?} → {bytes}");
    assert!(ledger(&store) + 120 * 1000 <= peak, "the ledger gives the channel state back");
    // The keyed state of the newest checkpoint is untouched.
    let restored = restore(&store, &s4.chains);
    assert_eq!(restored.len(), 4, "{restored:?}");
}

#[test]
fn abort_and_recover_delete_channel_chunks() {
    let (_dir, store) = open_small();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
    let after_first = store.chunk_usage(JOB).unwrap();
    let ledger_first = ledger(&store);

    begin(&store, 2);
    let s2 = store.write_subtask(write_with_channel(2, false, &s1.chains, messages(50, 1000))).unwrap();
    assert!(ledger(&store) >= ledger_first + 150 * 1000);
    let mut failed = CheckpointMeta::new(JOB, 2, 1_002);
    failed.failure = Some("timed out".to_owned());
    store.abort(&failed).unwrap();
    assert_eq!(store.chunk_usage(JOB).unwrap(), after_first);
    assert!(is_missing(&store, &s2.channel));
    // Only the failed history row is left of it.
    assert!(ledger(&store) < ledger_first + 4096, "{} vs {ledger_first}", ledger(&store));

    begin(&store, 3);
    let s3 = store.write_subtask(write_with_channel(3, false, &s1.chains, messages(50, 1000))).unwrap();
    store.recover(JOB).unwrap();
    assert_eq!(store.chunk_usage(JOB).unwrap(), after_first);
    assert!(is_missing(&store, &s3.channel));
    assert_eq!(store.checkpoint(JOB, 3).unwrap().unwrap().0.status, CheckpointStatus::Failed);
    assert_eq!(restore(&store, &s1.chains), model(&[("s", b"a", b"1")]));
}

#[test]
fn channel_state_counts_against_the_quota() {
    let (_dir, store) = open_small();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
    let used = ledger(&store);
    let chunks = store.chunk_usage(JOB).unwrap();
    store.set_limit(OWNER, Some(used + 100_000)).unwrap();

    begin(&store, 2);
    let used = ledger(&store);
    let err = store.write_subtask(write_with_channel(2, false, &s1.chains, messages(50, 1000))).unwrap_err();
    assert!(matches!(err, StoreError::QuotaExceeded { .. }), "{err}");
    assert_eq!(store.chunk_usage(JOB).unwrap(), chunks, "nothing of the refused write is stored");
    assert_eq!(ledger(&store), used);

    // The same write without channel state fits.
    store.write_subtask(write_with_channel(2, false, &s1.chains, Vec::new())).unwrap();
}

#[test]
fn missing_and_damaged_channel_chunks_are_errors() {
    let (_dir, store) = open_small();
    let s1 = checkpoint_with_channel(&store, 1, &BTreeMap::new(), messages(20, 1000), 1);
    assert!(s1.channel.len() >= 3);
    let (damaged, gone) = (s1.channel[1], s1.channel[2]);
    let db = store.database().unwrap();
    let original = {
        let txn = db.begin_read().unwrap();
        txn.open_table(CHUNK_PIECES).unwrap().get((JOB, damaged, 0)).unwrap().unwrap().value().to_vec()
    };

    let mut bytes = original.clone();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    let txn = db.begin_write().unwrap();
    txn.open_table(CHUNK_PIECES).unwrap().insert((JOB, damaged, 0), bytes.as_slice()).unwrap();
    txn.commit().unwrap();
    let err = store.read_chain(JOB, &s1.channel).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains(&format!("chunk {damaged} of job `job`")), "{err}");

    let txn = db.begin_write().unwrap();
    {
        let mut pieces = txn.open_table(CHUNK_PIECES).unwrap();
        pieces.insert((JOB, damaged, 0), original.as_slice()).unwrap();
        pieces.retain_in((JOB, gone, 0)..=(JOB, gone, u32::MAX), |_, _| false).unwrap();
    }
    txn.commit().unwrap();
    let err = store.read_chain(JOB, &s1.channel).unwrap_err();
    assert!(matches!(err, StoreError::MissingChunk { chunk, .. } if chunk == gone), "{err}");
    assert!(store.read_chain(JOB, &[s1.channel[0], damaged]).is_ok(), "the repaired chunk reads again");
}

fn savepoint_info(id: &str, checkpoint: u64) -> SavepointInfo {
    SavepointInfo {
        id: id.to_owned(),
        owner: OWNER.to_owned(),
        job: JOB.to_owned(),
        checkpoint,
        created_ms: 1,
        bytes: 0,
        entries: 0,
        origin: None,
        description: serde_json::Value::Null,
    }
}

#[test]
fn a_savepoint_is_not_taken_from_an_unaligned_checkpoint() {
    let (_dir, store) = open_small();
    let s1 = checkpoint_with_channel(&store, 1, &BTreeMap::new(), messages(5, 100), 2);
    let (_, manifest1) = store.checkpoint(JOB, 1).unwrap().unwrap();
    let used = ledger(&store);
    let err = store.create_savepoint(savepoint_info("sp1", 1), &manifest1.unwrap()).unwrap_err();
    assert!(matches!(err, StoreError::UnalignedCheckpoint { id: 1, ref job } if job == JOB), "{err}");
    let message = err.to_string();
    assert!(message.contains("checkpoint 1 of job `job` is unaligned"), "{message}");
    assert!(message.contains("trigger a savepoint (it is always aligned)"), "{message}");
    assert!(store.savepoint("sp1").unwrap().is_none());
    assert_eq!(ledger(&store), used, "nothing was stored");

    // One subtask with channel state among aligned ones is enough to refuse.
    let mut mixed: Manifest = store.checkpoint(JOB, 1).unwrap().unwrap().1.unwrap();
    mixed.get_mut(OP).unwrap().insert(1, SubtaskState::default());
    mixed.get_mut(OP).unwrap().get_mut(&0).unwrap().chains.clear();
    assert!(matches!(
        store.create_savepoint(savepoint_info("sp1", 1), &mixed),
        Err(StoreError::UnalignedCheckpoint { .. })
    ));

    // An aligned checkpoint of the same job is copied, keyed state only.
    let s2 = checkpoint(&store, 2, false, vec![scope(0, vec![put("s", b"b", b"2")])], &s1.chains, 100, 2);
    let (_, manifest2) = store.checkpoint(JOB, 2).unwrap().unwrap();
    let info = store.create_savepoint(savepoint_info("sp2", 2), &manifest2.unwrap()).unwrap();
    assert_eq!(info.entries, restore(&store, &s2.chains).len() as u64);
    let copied = store.read_savepoint_scope("sp2", OP, 0).unwrap();
    assert!(copied.iter().all(|entry| entry.state == "s"), "{copied:?}");
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[test]
fn manifests_stored_before_channel_state_still_read_and_retain_their_chunks() {
    let (_dir, store) = open_small();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
    // Checkpoint 1's manifest as version 1 wrote it (no channel chunks after `compactions`).
    let mut v1 = vec![1, 1, OP.len() as u8];
    v1.extend_from_slice(OP.as_bytes());
    v1.extend_from_slice(&[1, 0, s1.chains.len() as u8]);
    for (scope, chain) in &s1.chains {
        varint(&mut v1, u64::from(*scope));
        varint(&mut v1, chain.len() as u64);
        for chunk in chain {
            varint(&mut v1, *chunk);
        }
    }
    varint(&mut v1, s1.blob.len() as u64);
    v1.extend_from_slice(&s1.blob);
    varint(&mut v1, s1.bytes_written);
    varint(&mut v1, u64::from(s1.compactions));
    let sum = xxhash_rust::xxh3::xxh3_64(&v1);
    v1.extend_from_slice(&sum.to_le_bytes());
    let db = store.database().unwrap();
    let txn = db.begin_write().unwrap();
    txn.open_table(MANIFESTS).unwrap().insert((JOB, 1), v1.as_slice()).unwrap();
    txn.commit().unwrap();

    let (_, manifest) = store.latest_completed(JOB).unwrap().unwrap();
    assert_eq!(manifest[OP][&0], s1, "decodes with no channel state");
    // Retention reads it too: checkpoint 2 keeps checkpoint 1 and its chunks.
    let s2 = checkpoint_with_channel(&store, 2, &s1.chains, messages(5, 100), 2);
    assert_eq!(restore(&store, &s1.chains), model(&[("s", b"a", b"1")]));
    assert_eq!(store.chunk_usage(JOB).unwrap().1, referenced(&store).len() as u64);
    assert_eq!(store.read_chain(JOB, &s2.channel).unwrap(), messages(5, 100));
}

#[test]
fn duplicate_channel_keys_are_refused() {
    let (_dir, store) = open_small();
    begin(&store, 1);
    let mut channel_state = messages(3, 10);
    channel_state.push(message(1, 2, 20));
    let err = store.write_subtask(write_with_channel(1, true, &BTreeMap::new(), channel_state)).unwrap_err();
    assert!(matches!(err, StoreError::InvalidMeta { id: 1, .. }), "{err}");
    assert!(err.to_string().contains("twice"), "{err}");
    assert_eq!(store.chunk_usage(JOB).unwrap(), (0, 0));
}

#[test]
fn faulty_storage_passes_channel_state_through_and_fails_it_like_any_write() {
    let seed = 11;
    let (_dir, store) = open_small();
    let faulty = FaultyStorage::new(store, seed, 0.5);
    let (mut ok, mut failed) = (0, 0);
    for id in 1..=20u64 {
        let before = faulty.chunk_usage(JOB).unwrap();
        begin(&faulty, id);
        let expected = messages(id, 500);
        match faulty.write_subtask(write_with_channel(id, true, &BTreeMap::new(), expected.clone())) {
            Ok(state) => {
                ok += 1;
                assert_eq!(faulty.read_chain(JOB, &state.channel).unwrap(), expected, "seed {seed}");
            }
            Err(StoreError::Injected(_)) => {
                failed += 1;
                assert_eq!(faulty.chunk_usage(JOB).unwrap(), before, "seed {seed}: inner store untouched");
            }
            Err(other) => panic!("seed {seed}: {other}"),
        }
        faulty.abort(&CheckpointMeta::new(JOB, id, 0)).unwrap();
    }
    assert!(ok > 0 && failed > 0, "seed {seed}: {ok} written, {failed} failed");
    assert_eq!(faulty.chunk_usage(JOB).unwrap(), (0, 0), "aborts removed every write");
}
