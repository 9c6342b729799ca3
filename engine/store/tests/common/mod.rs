//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use tempfile::TempDir;
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, GcReport, Manifest, ScopeDelta, StateEntry, Store,
    SubtaskState, SubtaskWrite,
};

pub const JOB: &str = "job";
pub const OP: &str = "op";

/// A store in a fresh temporary directory (keep the directory alive).
pub fn open() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    (dir, store)
}

pub fn put(state: &str, key: &[u8], value: &[u8]) -> StateEntry {
    StateEntry { state: state.to_owned(), key: key.to_vec(), value: Some(value.to_vec()) }
}

pub fn del(state: &str, key: &[u8]) -> StateEntry {
    StateEntry { state: state.to_owned(), key: key.to_vec(), value: None }
}

pub fn scope(scope: u32, entries: Vec<StateEntry>) -> ScopeDelta {
    ScopeDelta { scope, entries }
}

pub fn subtask_write(
    checkpoint: u64,
    full: bool,
    scopes: Vec<ScopeDelta>,
    previous: &BTreeMap<u32, Vec<u64>>,
    max_chain_length: usize,
) -> SubtaskWrite {
    SubtaskWrite {
        job: JOB.to_owned(),
        checkpoint,
        operator: OP.to_owned(),
        subtask: 0,
        full,
        scopes: scopes.into(),
        previous: previous.clone(),
        blob: format!("blob {checkpoint}").into_bytes(),
        max_chain_length,
        channel_state: Vec::new(),
    }
}

pub fn begin(store: &impl CheckpointStorage, id: u64) {
    store.begin(&CheckpointMeta::new(JOB, id, 1_000 + id)).unwrap();
}

pub fn manifest_of(state: &SubtaskState) -> Manifest {
    BTreeMap::from([(OP.to_owned(), BTreeMap::from([(0, state.clone())]))])
}

pub fn completed_meta(id: u64, state: &SubtaskState) -> CheckpointMeta {
    CheckpointMeta {
        status: CheckpointStatus::Completed,
        end_time_ms: Some(2_000 + id),
        state_size: state.bytes_written,
        subtasks: vec![weir_store::SubtaskStats {
            operator: OP.to_owned(),
            subtask: 0,
            state_bytes: state.bytes_written,
            ..Default::default()
        }],
        ..CheckpointMeta::new(JOB, id, 1_000 + id)
    }
}

pub fn complete(store: &impl CheckpointStorage, id: u64, state: &SubtaskState, retain: usize) -> GcReport {
    store.complete(&completed_meta(id, state), &manifest_of(state), retain).unwrap()
}

/// begin + write + complete in one go; returns the subtask state.
pub fn checkpoint(
    store: &impl CheckpointStorage,
    id: u64,
    full: bool,
    scopes: Vec<ScopeDelta>,
    previous: &BTreeMap<u32, Vec<u64>>,
    max_chain_length: usize,
    retain: usize,
) -> SubtaskState {
    begin(store, id);
    let state = store.write_subtask(subtask_write(id, full, scopes, previous, max_chain_length)).unwrap();
    complete(store, id, &state, retain);
    state
}

/// Live state per scope as (state, key) → value.
pub type Model = BTreeMap<(String, Vec<u8>), Vec<u8>>;

/// Restores every chain of `chains` and merges them into one map (scopes hold disjoint keys in
/// these tests).
pub fn restore(store: &impl CheckpointStorage, chains: &BTreeMap<u32, Vec<u64>>) -> Model {
    let mut model = Model::new();
    for chain in chains.values() {
        let entries = store.read_chain(JOB, chain).unwrap();
        let mut sorted = entries.clone();
        sorted.sort_by(|a, b| (&a.state, &a.key).cmp(&(&b.state, &b.key)));
        assert_eq!(entries, sorted, "read_chain must return entries sorted by (state, key)");
        for entry in entries {
            let value = entry.value.expect("read_chain returns live entries only");
            assert!(model.insert((entry.state, entry.key), value).is_none());
        }
    }
    model
}

pub fn model(entries: &[(&str, &[u8], &[u8])]) -> Model {
    entries.iter().map(|(state, key, value)| (((*state).to_owned(), key.to_vec()), value.to_vec())).collect()
}
