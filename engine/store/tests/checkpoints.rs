//! Checkpoint storage against a real redb file: chains, compaction, retention (and pins),
//! abort, recovery, durability, corruption and fault injection.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use redb::{ReadableDatabase, TableDefinition};
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, FaultyStorage, OPERATOR_SCOPE_BASE, SavepointInfo,
    Store, StoreError,
};

#[test]
fn increments_restore_exactly() {
    let (_dir, store) = open();
    let op_scope = OPERATOR_SCOPE_BASE;
    let none = BTreeMap::new();

    let s1 = checkpoint(
        &store,
        1,
        true,
        vec![
            scope(0, vec![put("v", b"a", b"1"), put("v", b"b", b"2"), put("w", b"a", b"x")]),
            scope(5, vec![put("v", b"c", b"3")]),
            scope(op_scope, vec![put("offsets", b"", b"10")]),
        ],
        &none,
        10,
        3,
    );
    assert_eq!(s1.chains.len(), 3);
    assert_eq!(
        restore(&store, &s1.chains),
        model(&[
            ("offsets", b"", b"10"),
            ("v", b"a", b"1"),
            ("v", b"b", b"2"),
            ("v", b"c", b"3"),
            ("w", b"a", b"x"),
        ])
    );

    // n = 2: delete b, overwrite a, delete c; scope 5 and the operator scope untouched.
    let s2 = checkpoint(
        &store,
        2,
        false,
        vec![scope(0, vec![del("v", b"b"), put("v", b"a", b"10")]), scope(5, vec![del("v", b"c")])],
        &s1.chains,
        10,
        3,
    );
    assert_eq!(s2.chains[&0].len(), 2);
    assert_eq!(s2.chains[&op_scope], s1.chains[&op_scope]);
    let m2 = model(&[("offsets", b"", b"10"), ("v", b"a", b"10"), ("w", b"a", b"x")]);
    assert_eq!(restore(&store, &s2.chains), m2);

    // n = 3: b is absent from this increment and stays deleted.
    let s3 = checkpoint(&store, 3, false, vec![scope(0, vec![put("v", b"d", b"4")])], &s2.chains, 10, 3);
    let m3 = model(&[("offsets", b"", b"10"), ("v", b"a", b"10"), ("v", b"d", b"4"), ("w", b"a", b"x")]);
    assert_eq!(restore(&store, &s3.chains), m3);

    // n = 4: b re-put after its delete lives again; a deleted then re-put in one delta lives.
    let s4 = checkpoint(
        &store,
        4,
        false,
        vec![scope(0, vec![put("v", b"b", b"22"), del("v", b"a"), put("v", b"a", b"11"), del("w", b"a")])],
        &s3.chains,
        10,
        3,
    );
    assert_eq!(s4.chains[&0].len(), 4);
    let m4 = model(&[("offsets", b"", b"10"), ("v", b"a", b"11"), ("v", b"b", b"22"), ("v", b"d", b"4")]);
    assert_eq!(restore(&store, &s4.chains), m4);
    // Older retained checkpoints still restore to their own contents.
    let (_, manifest2) = store.checkpoint(JOB, 2).unwrap().unwrap();
    assert_eq!(restore(&store, &manifest2.unwrap()[OP][&0].chains), m2);
    let latest = store.latest_completed(JOB).unwrap().unwrap();
    assert_eq!(latest.0.id, 4);
    assert_eq!(latest.1[OP][&0].blob, b"blob 4");

    // A full write: a fresh base per listed scope; scopes not listed disappear.
    let s5 = checkpoint(
        &store,
        5,
        true,
        vec![scope(0, vec![put("v", b"z", b"26"), del("v", b"ignored")])],
        &s4.chains,
        10,
        3,
    );
    assert_eq!(s5.chains.keys().copied().collect::<Vec<_>>(), vec![0]);
    assert_eq!(s5.chains[&0].len(), 1);
    assert_eq!(restore(&store, &s5.chains), model(&[("v", b"z", b"26")]));
}

#[test]
fn compaction_bounds_chains_and_keeps_content() {
    let (_dir, store) = open();
    let mut expected = Model::new();
    let mut chains = BTreeMap::new();
    let mut compactions = 0;
    for id in 1..=12u64 {
        let mut entries = Vec::new();
        for k in 0..4u64 {
            let key = (id * 7 + k).to_be_bytes()[7..].to_vec();
            if (id + k) % 3 == 0 {
                entries.push(del("s", &key));
                expected.remove(&("s".to_owned(), key));
            } else {
                let value = format!("{id}-{k}").into_bytes();
                entries.push(put("s", &key, &value));
                expected.insert(("s".to_owned(), key), value);
            }
        }
        let state = checkpoint(&store, id, id == 1, vec![scope(3, entries)], &chains, 3, 1);
        assert!(state.chains[&3].len() <= 3, "chain of {id}: {:?}", state.chains);
        compactions += state.compactions;
        if state.compactions > 0 {
            // The base holds live entries only and replaces the whole chain.
            assert_eq!(state.chains[&3].len(), 1);
            assert!(!chains[&3].contains(&state.chains[&3][0]));
        }
        assert_eq!(restore(&store, &state.chains), expected, "after checkpoint {id}");
        chains = state.chains;
    }
    assert!(compactions >= 3, "{compactions} compactions");

    // With retain = 1, only the chunks of the last chain are left.
    let (_, count) = store.chunk_usage(JOB).unwrap();
    assert_eq!(count, chains[&3].len() as u64);

    // Compacting away every entry leaves no chain for the scope.
    let dels: Vec<_> = expected.keys().map(|(s, k)| del(s, k)).collect();
    let state = checkpoint(&store, 13, false, vec![scope(3, dels)], &chains, 1, 1);
    assert_eq!(state.compactions, 1);
    assert!(state.chains.is_empty(), "{:?}", state.chains);
    assert_eq!(store.chunk_usage(JOB).unwrap(), (0, 0));
}

/// Key groups that all change at every checkpoint do not all compact at the same one: each
/// base draws its own threshold in the upper half of `max_chain_length`, so checkpoints
/// rewrite a part of the state each, every chain stays within the limit and every scope is
/// compacted in turn.
#[test]
fn compactions_of_busy_key_groups_are_spread_over_checkpoints() {
    let (_dir, store) = open();
    let (scopes, max_chain) = (16u32, 8usize);
    let mut chains = BTreeMap::new();
    let mut expected = Model::new();
    let mut compacted_at: BTreeMap<u64, u32> = BTreeMap::new();
    let mut per_scope = vec![0u32; scopes as usize];
    for id in 1..=30u64 {
        let deltas = (0..scopes)
            .map(|g| {
                let key = [g as u8, (id % 4) as u8];
                let value = format!("{id}").into_bytes();
                expected.insert(("s".to_owned(), key.to_vec()), value.clone());
                scope(g, vec![put("s", &key, &value)])
            })
            .collect();
        let state = checkpoint(&store, id, id == 1, deltas, &chains, max_chain, 1);
        for g in 0..scopes {
            let chain = &state.chains[&g];
            // One chunk per increment here: the chain's length is its increments.
            assert!(chain.len() <= max_chain, "checkpoint {id}, scope {g}: {chain:?}");
            if id > 1 && chain.len() == 1 {
                per_scope[g as usize] += 1;
            }
        }
        *compacted_at.entry(id).or_default() += state.compactions;
        chains = state.chains;
    }
    assert_eq!(restore(&store, &chains), expected);
    let most = compacted_at.values().max().copied().unwrap_or(0);
    assert!(
        most <= scopes / 2,
        "{most} of {scopes} key groups compacted at one checkpoint: {compacted_at:?}"
    );
    assert!(per_scope.iter().all(|&n| n >= 2), "every scope compacts in turn: {per_scope:?}");
    let checkpoints_with = compacted_at.values().filter(|&&n| n > 0).count();
    assert!(
        checkpoints_with >= 20,
        "compactions fell on {checkpoints_with} checkpoints only: {compacted_at:?}"
    );
}

#[test]
fn large_deltas_are_split_into_several_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap().with_max_chunk_bytes(1_000);
    let entries: Vec<_> = (0..50u32).map(|i| put("s", &i.to_be_bytes(), &[i as u8; 100])).collect();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, entries.clone())], &BTreeMap::new(), 100, 1);
    let chain = &s1.chains[&0];
    assert!(chain.len() >= 5, "{chain:?}");
    assert!(chain.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(store.read_chain(JOB, chain).unwrap(), entries);
    let (bytes, count) = store.chunk_usage(JOB).unwrap();
    assert_eq!(count, chain.len() as u64);
    assert_eq!(bytes, s1.bytes_written);
    assert!(bytes / count <= 1_000, "{bytes} bytes in {count} chunks");
}

#[test]
fn compaction_happens_only_when_it_shortens_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap().with_max_chunk_bytes(1_000);
    // 900-byte values: one entry per chunk, so the base of 10 entries is 10 chunks.
    let entries: Vec<_> = (0..10u32).map(|i| put("s", &i.to_be_bytes(), &[i as u8; 900])).collect();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, entries.clone())], &BTreeMap::new(), 2, 1);
    assert_eq!(s1.chains[&0].len(), 10);
    // A new key: a base of 11 chunks would not be shorter than the chain, so it is appended.
    let extra = put("s", &10u32.to_be_bytes(), &[10; 900]);
    let s2 = checkpoint(&store, 2, false, vec![scope(0, vec![extra.clone()])], &s1.chains, 2, 1);
    assert_eq!((s2.compactions, s2.chains[&0].len()), (0, 11));
    assert!(s2.bytes_written < 1_000);
    // Two deletes: a base of 9 chunks is shorter than 12, so the chain is compacted.
    let dels = vec![del("s", &0u32.to_be_bytes()), del("s", &1u32.to_be_bytes())];
    let s3 = checkpoint(&store, 3, false, vec![scope(0, dels)], &s2.chains, 2, 1);
    assert_eq!((s3.compactions, s3.chains[&0].len()), (1, 9));
    let mut expected = entries[2..].to_vec();
    expected.push(extra);
    assert_eq!(store.read_chain(JOB, &s3.chains[&0]).unwrap(), expected);
    assert_eq!(store.chunk_usage(JOB).unwrap().1, 9);
}

#[test]
fn retention_keeps_the_newest_manifests_and_collects_chunks() {
    let (_dir, store) = open();
    let mut chains = BTreeMap::new();
    let mut models = BTreeMap::new();
    let mut current = Model::new();
    let mut usage = Vec::new();
    for id in 1..=5u64 {
        let mut entries = vec![put("s", &[id as u8], &[id as u8; 50])];
        current.insert(("s".to_owned(), vec![id as u8]), vec![id as u8; 50]);
        if id >= 3 {
            entries.push(del("s", &[id as u8 - 2]));
            current.remove(&("s".to_owned(), vec![id as u8 - 2]));
        }
        let state = checkpoint(&store, id, id == 1, vec![scope(0, entries)], &chains, 2, 2);
        models.insert(id, current.clone());
        chains = state.chains;
        usage.push(store.chunk_usage(JOB).unwrap());
    }

    let history = store.history(JOB).unwrap();
    assert_eq!(history.iter().map(|m| m.id).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    assert!(history.iter().all(|m| m.status == CheckpointStatus::Completed));
    assert_eq!(history.iter().map(|m| m.retained).collect::<Vec<_>>(), vec![false, false, false, true, true]);
    for id in 1..=3 {
        let (meta, manifest) = store.checkpoint(JOB, id).unwrap().unwrap();
        assert!(manifest.is_none() && !meta.retained, "checkpoint {id}");
    }
    // The oldest retained checkpoint still restores exactly.
    let (meta4, manifest4) = store.checkpoint(JOB, 4).unwrap().unwrap();
    let manifest4 = manifest4.unwrap();
    assert_eq!(restore(&store, &manifest4[OP][&0].chains), models[&4]);
    let (meta5, manifest5) = store.latest_completed(JOB).unwrap().unwrap();
    assert_eq!(meta5.id, 5);
    assert_eq!(restore(&store, &manifest5[OP][&0].chains), models[&5]);

    // Exactly the chunks the two kept manifests reference are stored, and full sizes add up.
    let referenced: BTreeSet<u64> = manifest4[OP][&0]
        .chains
        .values()
        .chain(manifest5[OP][&0].chains.values())
        .flatten()
        .copied()
        .collect();
    let (bytes, count) = store.chunk_usage(JOB).unwrap();
    assert_eq!(count, referenced.len() as u64);
    assert!(meta4.full_size > 0 && meta5.full_size > 0);
    assert!(bytes >= meta5.full_size && bytes <= meta4.full_size + meta5.full_size);
    assert_eq!(meta5.subtasks[0].full_state_bytes, meta5.full_size);
    // Chains are compacted every other checkpoint, so usage shrinks at some point.
    assert!(usage.windows(2).any(|w| w[1].1 < w[0].1), "{usage:?}");
}

#[test]
fn gc_report_names_removed_checkpoints_and_bytes() {
    let (_dir, store) = open();
    let none = BTreeMap::new();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"k", b"1")])], &none, 5, 1);
    begin(&store, 2);
    let s2 = store
        .write_subtask(subtask_write(2, true, vec![scope(0, vec![put("s", b"k", b"2")])], &s1.chains, 5))
        .unwrap();
    let report = complete(&store, 2, &s2, 1);
    assert_eq!(report.removed_checkpoints, vec![1]);
    assert_eq!(report.removed_chunks, 1);
    assert_eq!(report.removed_bytes, s1.bytes_written);
    assert_eq!(store.chunk_usage(JOB).unwrap(), (s2.bytes_written, 1));
}

#[test]
fn abort_deletes_the_attempt_and_it_never_becomes_recoverable() {
    let (_dir, store) = open();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
    let after_first = store.chunk_usage(JOB).unwrap();

    begin(&store, 2);
    let s2 = store
        .write_subtask(subtask_write(2, false, vec![scope(0, vec![put("s", b"b", b"2")])], &s1.chains, 5))
        .unwrap();
    assert_eq!(store.chunk_usage(JOB).unwrap().1, after_first.1 + 1);
    assert_eq!(store.latest_completed(JOB).unwrap().unwrap().0.id, 1, "in progress is not recoverable");
    let mut failed = CheckpointMeta::new(JOB, 2, 1_002);
    failed.failure = Some("subtask op/0 timed out".to_owned());
    store.abort(&failed).unwrap();

    assert_eq!(store.chunk_usage(JOB).unwrap(), after_first);
    assert_eq!(store.latest_completed(JOB).unwrap().unwrap().0.id, 1);
    let (meta, manifest) = store.checkpoint(JOB, 2).unwrap().unwrap();
    assert_eq!(meta.status, CheckpointStatus::Failed);
    assert_eq!(meta.failure.as_deref(), Some("subtask op/0 timed out"));
    assert!(manifest.is_none() && !meta.retained && meta.end_time_ms.is_some());
    // The aborted checkpoint can neither be written to nor completed afterwards.
    let late = store.write_subtask(subtask_write(2, true, vec![], &BTreeMap::new(), 5));
    assert!(matches!(late, Err(StoreError::InvalidTransition { id: 2, .. })), "{late:?}");
    let err = store.complete(&completed_meta(2, &s2), &manifest_of(&s2), 2).unwrap_err();
    assert!(matches!(err, StoreError::InvalidTransition { status: CheckpointStatus::Failed, .. }), "{err}");
    assert!(err.to_string().contains("checkpoint 2 of job `job` is failed"), "{err}");
    // A completed checkpoint cannot be aborted.
    assert!(matches!(
        store.abort(&CheckpointMeta::new(JOB, 1, 0)),
        Err(StoreError::InvalidTransition { status: CheckpointStatus::Completed, .. })
    ));
    assert_eq!(store.last_checkpoint_id(JOB).unwrap(), 2);
    assert!(matches!(
        store.begin(&CheckpointMeta::new(JOB, 1, 0)),
        Err(StoreError::StaleCheckpoint { latest: 2, .. })
    ));
    // The chain of checkpoint 1 is intact.
    assert_eq!(restore(&store, &s1.chains), model(&[("s", b"a", b"1")]));
}

#[test]
fn recover_fails_in_progress_checkpoints_and_drops_their_chunks() {
    let (_dir, store) = open();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
    let after_first = store.chunk_usage(JOB).unwrap();
    for id in [2, 3] {
        begin(&store, id);
        store
            .write_subtask(subtask_write(
                id,
                false,
                vec![scope(0, vec![put("s", b"b", b"2")])],
                &s1.chains,
                5,
            ))
            .unwrap();
    }
    // A write without a begin (e.g. the crash hit in between) is collected too.
    store
        .write_subtask(subtask_write(
            4,
            true,
            vec![scope(1, vec![put("s", b"c", b"3")])],
            &BTreeMap::new(),
            5,
        ))
        .unwrap();
    assert_eq!(store.chunk_usage(JOB).unwrap().1, after_first.1 + 3);

    store.recover(JOB).unwrap();
    assert_eq!(store.chunk_usage(JOB).unwrap(), after_first);
    let history = store.history(JOB).unwrap();
    assert_eq!(history.len(), 3);
    for meta in &history[1..] {
        assert_eq!(meta.status, CheckpointStatus::Failed);
        assert_eq!(meta.failure.as_deref(), Some("interrupted: the job restarted"));
    }
    assert_eq!(store.latest_completed(JOB).unwrap().unwrap().0.id, 1);
    assert_eq!(store.last_checkpoint_id(JOB).unwrap(), 4);
    assert_eq!(store.last_checkpoint_id("other").unwrap(), 0);
}

#[test]
fn completing_a_newer_checkpoint_subsumes_older_in_progress_ones() {
    let (_dir, store) = open();
    let none = BTreeMap::new();
    begin(&store, 1);
    store
        .write_subtask(subtask_write(1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &none, 5))
        .unwrap();
    let s2 = checkpoint(&store, 2, true, vec![scope(0, vec![put("s", b"a", b"2")])], &none, 5, 3);
    let (meta1, _) = store.checkpoint(JOB, 1).unwrap().unwrap();
    assert_eq!(meta1.status, CheckpointStatus::Failed);
    assert_eq!(meta1.failure.as_deref(), Some("subsumed by completed checkpoint 2"));
    assert_eq!(store.chunk_usage(JOB).unwrap(), (s2.bytes_written, 1));

    // Checkpoints 3 and 4 overlap; completing 3 leaves the chunks of 4 alone.
    begin(&store, 3);
    begin(&store, 4);
    let s3 = store
        .write_subtask(subtask_write(3, false, vec![scope(0, vec![put("s", b"c", b"3")])], &s2.chains, 5))
        .unwrap();
    let s4 = store
        .write_subtask(subtask_write(4, false, vec![scope(0, vec![put("s", b"b", b"4")])], &s3.chains, 5))
        .unwrap();
    complete(&store, 3, &s3, 1);
    assert_eq!(
        restore(&store, &s4.chains),
        model(&[("s", b"a", b"2"), ("s", b"b", b"4"), ("s", b"c", b"3")])
    );
    complete(&store, 4, &s4, 1);
    assert_eq!(store.latest_completed(JOB).unwrap().unwrap().0.id, 4);
    assert_eq!(store.chunk_usage(JOB).unwrap().1, 3);
    // A checkpoint older than the latest completed one cannot complete.
    let err = store.complete(&completed_meta(3, &s3), &manifest_of(&s3), 1).unwrap_err();
    assert!(matches!(err, StoreError::InvalidTransition { .. }), "{err}");
}

#[test]
fn completion_checks_its_inputs() {
    let (_dir, store) = open();
    let none = BTreeMap::new();
    begin(&store, 1);
    let s1 = store
        .write_subtask(subtask_write(1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &none, 5))
        .unwrap();
    let in_progress = CheckpointMeta::new(JOB, 1, 0);
    assert!(matches!(
        store.complete(&in_progress, &manifest_of(&s1), 1),
        Err(StoreError::InvalidMeta { .. })
    ));
    let mut bogus = s1.clone();
    bogus.chains.insert(9, vec![999]);
    let err = store.complete(&completed_meta(1, &bogus), &manifest_of(&bogus), 1).unwrap_err();
    assert!(matches!(err, StoreError::MissingChunk { chunk: 999, .. }), "{err}");
    assert!(store.latest_completed(JOB).unwrap().is_none());
    complete(&store, 1, &s1, 1);
    let err = store.begin(&CheckpointMeta::new(JOB, 1, 0)).unwrap_err();
    assert!(matches!(err, StoreError::InvalidTransition { .. }), "{err}");
    // An increment on top of a chunk that is gone is refused.
    let err = store
        .write_subtask(subtask_write(2, false, vec![], &BTreeMap::from([(0, vec![999])]), 5))
        .unwrap_err();
    assert!(matches!(err, StoreError::MissingChunk { chunk: 999, .. }), "{err}");
}

#[test]
fn completed_checkpoints_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.redb");
    let expected = model(&[("s", b"a", b"1"), ("s", b"b", b"2")]);
    let chains = {
        let store = Store::open(&path).unwrap();
        let s1 =
            checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
        let s2 = checkpoint(&store, 2, false, vec![scope(0, vec![put("s", b"b", b"2")])], &s1.chains, 5, 2);
        s2.chains
    };
    let store = Store::open(&path).unwrap();
    let (meta, manifest) = store.latest_completed(JOB).unwrap().unwrap();
    assert_eq!(meta.id, 2);
    assert_eq!(meta.status, CheckpointStatus::Completed);
    assert_eq!(manifest[OP][&0].chains, chains);
    assert_eq!(manifest[OP][&0].blob, b"blob 2");
    assert_eq!(restore(&store, &chains), expected);
    assert_eq!(store.last_checkpoint_id(JOB).unwrap(), 2);
    assert_eq!(store.history(JOB).unwrap().len(), 2);
}

#[test]
fn corrupt_and_missing_chunks_are_errors() {
    const CHUNKS: TableDefinition<'_, (&str, u64, u32), &[u8]> = TableDefinition::new("weir.chunk_pieces");
    let (_dir, store) = open();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 1);
    let id = s1.chains[&0][0];
    let original = {
        let txn = store.database().unwrap().begin_read().unwrap();
        let table = txn.open_table(CHUNKS).unwrap();
        table.get((JOB, id, 0)).unwrap().unwrap().value().to_vec()
    };
    let mut damaged = original.clone();
    damaged[2] ^= 0xff;
    let txn = store.database().unwrap().begin_write().unwrap();
    txn.open_table(CHUNKS).unwrap().insert((JOB, id, 0), damaged.as_slice()).unwrap();
    txn.commit().unwrap();
    let err = store.read_chain(JOB, &s1.chains[&0]).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains(&format!("chunk {id} of job `job`")), "{err}");
    // The restore path too, and it hands over nothing of a damaged chain.
    let mut visited = 0;
    let mut count = |_: &str, _: &[u8], _: &[u8]| {
        visited += 1;
        std::ops::ControlFlow::Continue(())
    };
    let err = store.visit_chains(JOB, std::slice::from_ref(&s1.chains[&0]), &mut count).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains(&format!("chunk {id} of job `job`")), "{err}");

    let err = store.read_chain(JOB, &[id + 100]).unwrap_err();
    assert!(matches!(err, StoreError::MissingChunk { .. }), "{err}");
    assert!(err.to_string().contains(&format!("chunk {} of job `job` is missing", id + 100)));
    assert!(store.read_chain("other", &[id]).is_err(), "chunks belong to their job");
    let err = store.visit_chains(JOB, &[vec![id + 100]], &mut count).unwrap_err();
    assert!(matches!(err, StoreError::MissingChunk { .. }), "{err}");
    assert_eq!(visited, 0);

    // A chunk whose middle piece is gone is corrupt, not silently shorter.
    let big: Vec<_> = (0..2000u32).map(|i| put("s", &i.to_be_bytes(), &[7u8; 20])).collect();
    let s2 = checkpoint(&store, 2, true, vec![scope(1, big)], &BTreeMap::new(), 5, 1);
    let id2 = s2.chains[&1][0];
    let txn = store.database().unwrap().begin_write().unwrap();
    txn.open_table(CHUNKS).unwrap().remove((JOB, id2, 1)).unwrap();
    txn.commit().unwrap();
    let err = store.read_chain(JOB, &s2.chains[&1]).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let err = store.visit_chains(JOB, std::slice::from_ref(&s2.chains[&1]), &mut |_, _, _| {
        std::ops::ControlFlow::Continue(())
    });
    assert!(matches!(err, Err(StoreError::Corrupt { .. })), "{err:?}");
}

#[test]
fn incremental_writes_only_the_delta() {
    let (_dir, store) = open();
    let key = |i: u32| {
        let mut key = [0u8; 16];
        key[..4].copy_from_slice(&i.to_be_bytes());
        key[4..8].copy_from_slice(&(i * 31).to_le_bytes());
        key
    };
    let value = |i: u32, round: u8| vec![round.wrapping_add(i as u8); 1000];
    let mut scopes: BTreeMap<u32, Vec<_>> = BTreeMap::new();
    for i in 0..10_000u32 {
        scopes.entry(i % 128).or_default().push(put("counts", &key(i), &value(i, 0)));
    }
    let deltas = scopes.into_iter().map(|(s, e)| scope(s, e)).collect();
    let raw = 10_000 * (16 + 1000) as u64;
    let base = checkpoint(&store, 1, true, deltas, &BTreeMap::new(), 5, 1);
    assert!(base.bytes_written as f64 <= 1.1 * raw as f64, "{} for {raw}", base.bytes_written);

    // Change 1 % of the entries.
    let mut scopes: BTreeMap<u32, Vec<_>> = BTreeMap::new();
    for i in (0..10_000u32).step_by(100) {
        scopes.entry(i % 128).or_default().push(put("counts", &key(i), &value(i, 1)));
    }
    let deltas = scopes.into_iter().map(|(s, e)| scope(s, e)).collect();
    let changed = 100 * (16 + 1000) as u64;
    let incr = checkpoint(&store, 2, false, deltas, &base.chains, 5, 1);
    assert_eq!(incr.compactions, 0);
    assert!(incr.bytes_written as f64 <= 1.1 * changed as f64, "{} for {changed}", incr.bytes_written);
    let restored = restore(&store, &incr.chains);
    assert_eq!(restored.len(), 10_000);
    assert_eq!(restored[&("counts".to_owned(), key(100).to_vec())], value(100, 1));
    assert_eq!(restored[&("counts".to_owned(), key(101).to_vec())], value(101, 0));
}

#[test]
fn faulty_storage_fails_deterministically_without_touching_the_inner_store() {
    let (_dir, store) = open();
    let run = |seed| {
        let dir = tempfile::tempdir().unwrap();
        let faulty = FaultyStorage::new(Store::open(&dir.path().join("f.redb")).unwrap(), seed, 0.5);
        (0..30)
            .map(|id| {
                faulty
                    .write_subtask(subtask_write(
                        id,
                        true,
                        vec![scope(0, vec![put("s", b"k", b"v")])],
                        &BTreeMap::new(),
                        5,
                    ))
                    .is_ok()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7), "same seed, same failures");
    assert_ne!(run(7), run(8));

    let faulty = FaultyStorage::new(store, 42, 0.5);
    let mut failed = 0;
    let mut previous = BTreeMap::new();
    for id in 1..=40u64 {
        let before = faulty.chunk_usage(JOB).unwrap();
        let last_before = faulty.last_checkpoint_id(JOB).unwrap();
        begin(&faulty, id);
        let write =
            subtask_write(id, false, vec![scope(0, vec![put("s", &[id as u8], b"v")])], &previous, 100);
        match faulty.write_subtask(write) {
            Ok(state) => {
                assert_eq!(faulty.chunk_usage(JOB).unwrap().1, before.1 + 1);
                match faulty.complete(&completed_meta(id, &state), &manifest_of(&state), 100) {
                    Ok(_) => previous = state.chains,
                    Err(StoreError::Injected(message)) => {
                        failed += 1;
                        assert!(message.contains(&format!("checkpoint {id}")), "{message}");
                        assert_eq!(
                            faulty.checkpoint(JOB, id).unwrap().unwrap().0.status,
                            CheckpointStatus::InProgress
                        );
                        faulty.abort(&CheckpointMeta::new(JOB, id, 0)).unwrap();
                    }
                    Err(other) => panic!("{other}"),
                }
            }
            Err(StoreError::Injected(message)) => {
                failed += 1;
                assert!(message.contains(&format!("checkpoint {id} of job `job`")), "{message}");
                assert_eq!(faulty.chunk_usage(JOB).unwrap(), before, "inner store untouched");
                assert_eq!(faulty.last_checkpoint_id(JOB).unwrap(), last_before.max(id));
                faulty.abort(&CheckpointMeta::new(JOB, id, 0)).unwrap();
            }
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(faulty.failures(), failed);
    assert!((5..=35).contains(&failed), "{failed} of 40");
    let latest = faulty.latest_completed(JOB).unwrap().unwrap();
    assert_eq!(latest.1[OP][&0].chains, previous);

    faulty.set_enabled(false);
    for id in 41..=60 {
        faulty.write_subtask(subtask_write(id, true, vec![], &BTreeMap::new(), 5)).unwrap();
    }
    assert_eq!(faulty.failures(), failed);
}

#[test]
fn a_pinned_checkpoint_survives_retention_until_unpinned() {
    let (_dir, store) = open();
    let none = BTreeMap::new();
    let s1 = checkpoint(
        &store,
        1,
        true,
        vec![
            scope(0, vec![put("s", b"a", b"1"), put("s", b"b", b"2")]),
            scope(1, vec![put("s", b"c", b"3")]),
        ],
        &none,
        5,
        1,
    );
    // Checkpoint 2 is an increment on checkpoint 1's chunks, taken for a savepoint.
    store.begin(&CheckpointMeta { pinned: true, ..CheckpointMeta::new(JOB, 2, 1_002) }).unwrap();
    let s2 = store
        .write_subtask(subtask_write(
            2,
            false,
            vec![scope(0, vec![put("s", b"d", b"4"), del("s", b"b")])],
            &s1.chains,
            5,
        ))
        .unwrap();
    store.complete(&CheckpointMeta { pinned: true, ..completed_meta(2, &s2) }, &manifest_of(&s2), 1).unwrap();
    let expected2 = model(&[("s", b"a", b"1"), ("s", b"c", b"3"), ("s", b"d", b"4")]);
    assert!(s2.chains[&0].contains(&s1.chains[&0][0]), "checkpoint 2 builds on checkpoint 1");

    // Full writes of other content: nothing after 2 references its chunks.
    let mut last = s2.clone();
    for id in 3..=5u64 {
        let report_before = store.chunk_usage(JOB).unwrap();
        last = checkpoint(&store, id, true, vec![scope(5, vec![put("t", &[id as u8], b"x")])], &none, 5, 1);
        assert!(store.chunk_usage(JOB).unwrap().1 <= report_before.1 + 1);
    }
    let (meta2, manifest2) = store.checkpoint(JOB, 2).unwrap().unwrap();
    let manifest2 = manifest2.expect("a pinned checkpoint keeps its manifest");
    assert!(meta2.pinned && meta2.retained);
    assert_eq!(restore(&store, &manifest2[OP][&0].chains), expected2);
    let retained: Vec<_> = store.history(JOB).unwrap().iter().map(|m| (m.id, m.retained)).collect();
    assert_eq!(retained, vec![(1, false), (2, true), (3, false), (4, false), (5, true)]);
    assert_eq!(store.latest_completed(JOB).unwrap().unwrap().0.id, 5);
    let kept: BTreeSet<u64> = s2.chains.values().chain(last.chains.values()).flatten().copied().collect();
    assert_eq!(store.chunk_usage(JOB).unwrap().1, kept.len() as u64);

    let info = SavepointInfo {
        id: "sp".to_owned(),
        owner: "alice".to_owned(),
        job: JOB.to_owned(),
        checkpoint: 2,
        created_ms: 1,
        bytes: 0,
        entries: 0,
        origin: None,
        description: serde_json::Value::Null,
    };
    assert_eq!(store.create_savepoint(info, &manifest2).unwrap().entries, 3);
    let copied = || {
        let mut copied = Model::new();
        for scope in store.savepoint_scopes("sp", OP).unwrap() {
            for e in store.read_savepoint_scope("sp", OP, scope).unwrap() {
                copied.insert((e.state, e.key), e.value.unwrap());
            }
        }
        copied
    };
    assert_eq!(copied(), expected2);

    // The pins still standing are listed (a server clears them at start).
    assert_eq!(store.pinned().unwrap(), vec![(JOB.to_owned(), 2)]);

    // Unpinning alone removes nothing; the next completion's retention does.
    store.unpin(JOB, 2).unwrap();
    assert_eq!(store.pinned().unwrap(), vec![]);
    store.unpin(JOB, 2).unwrap();
    store.unpin(JOB, 99).unwrap();
    store.unpin("other", 1).unwrap();
    let (meta2, manifest2) = store.checkpoint(JOB, 2).unwrap().unwrap();
    assert!(!meta2.pinned && meta2.retained && manifest2.is_some());
    let s6 = checkpoint(&store, 6, true, vec![scope(5, vec![put("t", b"z", b"y")])], &none, 5, 1);
    let (meta2, manifest2) = store.checkpoint(JOB, 2).unwrap().unwrap();
    assert!(manifest2.is_none() && !meta2.retained && !meta2.pinned);
    assert_eq!(store.chunk_usage(JOB).unwrap(), (s6.bytes_written, 1));
    for chunk in s2.chains.values().flatten() {
        assert!(matches!(store.read_chain(JOB, &[*chunk]), Err(StoreError::MissingChunk { .. })));
    }
    // The savepoint does not need the chunks just collected.
    assert_eq!(copied(), expected2);
}

#[test]
fn checkpoint_rows_written_before_pins_existed_still_decode() {
    const CHECKPOINTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("weir.checkpoints");
    let (_dir, store) = open();
    checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 1);
    let mut old = serde_json::to_value(&store.history(JOB).unwrap()[0]).unwrap();
    assert!(old.as_object_mut().unwrap().remove("pinned").is_some());
    let txn = store.database().unwrap().begin_write().unwrap();
    let bytes = rmp_serde::to_vec_named(&old).unwrap();
    txn.open_table(CHECKPOINTS).unwrap().insert((JOB, 1), bytes.as_slice()).unwrap();
    txn.commit().unwrap();
    let meta = &store.history(JOB).unwrap()[0];
    assert!(!meta.pinned && meta.retained && meta.status == CheckpointStatus::Completed);
}

#[test]
fn leased_chunk_ids_are_never_handed_out_twice() {
    let (dir, store) = open();
    let lease = store.lease_chunk_ids(10).unwrap();
    assert_eq!(lease.end - lease.start, 10);
    // The store's own chunks come after the lease.
    begin(&store, 1);
    let written = store
        .write_subtask(subtask_write(
            1,
            true,
            vec![scope(0, vec![put("s", b"k", b"1")])],
            &BTreeMap::new(),
            5,
        ))
        .unwrap();
    let own = written.chains[&0][0];
    assert!(own >= lease.end, "chunk {own} inside the lease {lease:?}");
    let path = store.path().to_path_buf();
    drop(store);
    let store = Store::open(&path).unwrap();
    let next = store.lease_chunk_ids(0).unwrap();
    assert_eq!(next.end - next.start, 1, "at least one id");
    assert!(next.start > own, "{next:?} after a reopen, the store's last chunk {own}");
    drop(dir);
}
