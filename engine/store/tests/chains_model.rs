//! Model-based property test: random puts and deletes over a few keys, snapshotted in random
//! increments (full or incremental, random aborts, a small max_chain_length, tiny chunks),
//! must restore exactly to a `BTreeMap` model after every checkpoint — also for the older
//! checkpoints retention still keeps — through `read_chain` and through the restore path
//! `visit_chains`.

mod common;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use common::*;
use proptest::prelude::*;
use weir_store::{CheckpointMeta, CheckpointStorage, OPERATOR_SCOPE_BASE, StateEntry, Store};

#[derive(Debug, Clone)]
enum Op {
    Put { state: u8, key: u8, value: Vec<u8> },
    Delete { state: u8, key: u8 },
}

#[derive(Debug, Clone)]
struct Step {
    ops: Vec<Op>,
    full: bool,
    abort: bool,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..2u8, 0..6u8, prop::collection::vec(any::<u8>(), 0..40))
            .prop_map(|(state, key, value)| Op::Put { state, key, value }),
        2 => (0..2u8, 0..6u8).prop_map(|(state, key)| Op::Delete { state, key }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    (prop::collection::vec(op(), 0..12), prop::bool::weighted(0.2), prop::bool::weighted(0.15))
        .prop_map(|(ops, full, abort)| Step { ops, full, abort })
}

/// Keys 0..4 are keyed state spread over key groups 0..2; keys 4 and 5 are operator state.
fn scope_of(key: u8) -> u32 {
    if key >= 4 { OPERATOR_SCOPE_BASE } else { u32::from(key % 3) }
}

fn entry(op: &Op) -> (u32, StateEntry) {
    match op {
        Op::Put { state, key, value } => (scope_of(*key), put(&format!("s{state}"), &[*key], value)),
        Op::Delete { state, key } => (scope_of(*key), del(&format!("s{state}"), &[*key])),
    }
}

fn apply(model: &mut Model, op: &Op) {
    match op {
        Op::Put { state, key, value } => {
            model.insert((format!("s{state}"), vec![*key]), value.clone());
        }
        Op::Delete { state, key } => {
            model.remove(&(format!("s{state}"), vec![*key]));
        }
    }
}

/// The live entries of `chains` as `visit_chains` hands them over (each once, in no
/// particular order), sorted into a model.
fn visited(store: &Store, chains: &BTreeMap<u32, Vec<u64>>) -> Model {
    let chains: Vec<Vec<u64>> = chains.values().cloned().collect();
    let mut model = Model::new();
    let flow = store
        .visit_chains(JOB, &chains, &mut |state, key, value| {
            let fresh = model.insert((state.to_owned(), key.to_vec()), value.to_vec()).is_none();
            assert!(fresh, "state {state} key {key:?} visited twice");
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(flow, ControlFlow::Continue(()));
    model
}

fn group(entries: impl IntoIterator<Item = (u32, StateEntry)>) -> Vec<weir_store::ScopeDelta> {
    let mut scopes: BTreeMap<u32, Vec<StateEntry>> = BTreeMap::new();
    for (scope_id, entry) in entries {
        scopes.entry(scope_id).or_default().push(entry);
    }
    scopes.into_iter().map(|(s, e)| scope(s, e)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn chains_restore_to_the_model(
        steps in prop::collection::vec(step(), 1..12),
        max_chain_length in 1..4usize,
        chunk_bytes in prop::sample::select(vec![40usize, 120, 1 << 20]),
        retain in 1..3usize,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap().with_max_chunk_bytes(chunk_bytes);
        let mut model = Model::new();
        // Ops since the last completed checkpoint: an aborted attempt's changes are written
        // again by the next one, on top of the last completed chains.
        let mut pending: Vec<Op> = Vec::new();
        let mut chains = BTreeMap::new();
        let mut completed: Vec<(u64, Model)> = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            let id = i as u64 + 1;
            for op in &step.ops {
                apply(&mut model, op);
            }
            pending.extend(step.ops.iter().cloned());
            let scopes = if step.full {
                group(model.iter().map(|((state, key), value)| {
                    (scope_of(key[0]), put(state, key, value))
                }))
            } else {
                group(pending.iter().map(entry))
            };
            begin(&store, id);
            let state = store
                .write_subtask(subtask_write(id, step.full, scopes, &chains, max_chain_length))
                .unwrap();
            if chunk_bytes > 1000 {
                for chain in state.chains.values() {
                    prop_assert!(chain.len() <= max_chain_length, "{:?}", state.chains);
                }
            }
            if step.abort {
                store.abort(&CheckpointMeta::new(JOB, id, 0)).unwrap();
            } else {
                complete(&store, id, &state, retain);
                chains = state.chains;
                pending.clear();
                completed.push((id, model.clone()));
            }
            if let Some((meta, manifest)) = store.latest_completed(JOB).unwrap() {
                prop_assert_eq!(meta.id, completed.last().unwrap().0);
                prop_assert_eq!(&restore(&store, &manifest[OP][&0].chains), &completed.last().unwrap().1);
                // The restore path (no map, no sort) yields the same live entries.
                prop_assert_eq!(&visited(&store, &manifest[OP][&0].chains), &completed.last().unwrap().1);
            }
            // Every checkpoint retention keeps still restores to its own contents.
            for (old, old_model) in completed.iter().rev().take(retain) {
                let (_, manifest) = store.checkpoint(JOB, *old).unwrap().unwrap();
                let manifest = manifest.unwrap();
                prop_assert_eq!(&restore(&store, &manifest[OP][&0].chains), old_model, "checkpoint {}", old);
            }
            for (old, _) in completed.iter().rev().skip(retain) {
                prop_assert!(store.checkpoint(JOB, *old).unwrap().unwrap().1.is_none());
            }
        }
        // Nothing beyond what the kept manifests reference stays stored after a restart.
        store.recover(JOB).unwrap();
        let mut referenced = std::collections::BTreeSet::new();
        for (old, _) in completed.iter().rev().take(retain) {
            let manifest = store.checkpoint(JOB, *old).unwrap().unwrap().1.unwrap();
            referenced.extend(manifest[OP][&0].chains.values().flatten().copied());
        }
        prop_assert_eq!(store.chunk_usage(JOB).unwrap().1, referenced.len() as u64);
    }
}
