//! Chunk bytes in an external store (object storage in a cluster; here a map in memory):
//! writes put whole chunks there and no pieces in the file, every reader (restore, visit,
//! compaction, savepoints) reads them back, retention and aborts delete them once their
//! transaction committed, `recover` deletes orphans, and the storage ledger counts their
//! bytes exactly (and a recount agrees). Chunks a worker put itself under leased ids and the
//! store only records read, compact and collect as the store's own.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use common::*;
use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};
use weir_store::{
    CheckpointMeta, CheckpointStorage, ExternalChunks, PutChunk, PutSubtaskWrite, SavepointInfo, StateEntry,
    Store, StoreError, SubtaskState, SubtaskWrite, SweepPolicy,
};

/// Chunks in memory, create-only like an object store.
#[derive(Debug, Default)]
struct Memory {
    chunks: Mutex<BTreeMap<(String, u64), Vec<u8>>>,
    savepoints: Mutex<BTreeMap<(String, u64), Vec<u8>>>,
    /// When each savepoint's newest object was put.
    modified: Mutex<BTreeMap<String, SystemTime>>,
    policy: Mutex<SweepPolicy>,
}

fn put_once(
    map: &Mutex<BTreeMap<(String, u64), Vec<u8>>>,
    key: (&str, u64),
    bytes: &[u8],
) -> Result<(), StoreError> {
    let mut map = map.lock().unwrap();
    match map.get(&(key.0.to_string(), key.1)) {
        Some(existing) if existing != bytes => Err(StoreError::External(format!("object {key:?} exists"))),
        _ => {
            map.insert((key.0.to_string(), key.1), bytes.to_vec());
            Ok(())
        }
    }
}

fn get(map: &Mutex<BTreeMap<(String, u64), Vec<u8>>>, key: (&str, u64), out: &mut Vec<u8>) -> bool {
    match map.lock().unwrap().get(&(key.0.to_string(), key.1)) {
        Some(bytes) => {
            out.extend_from_slice(bytes);
            true
        }
        None => false,
    }
}

impl Memory {
    fn ids(&self) -> BTreeSet<u64> {
        self.chunks.lock().unwrap().keys().map(|(_, id)| *id).collect()
    }
}

impl ExternalChunks for Memory {
    fn put(&self, job: &str, id: u64, bytes: &[u8]) -> Result<(), StoreError> {
        put_once(&self.chunks, (job, id), bytes)
    }

    fn get(&self, job: &str, id: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        Ok(get(&self.chunks, (job, id), out))
    }

    fn delete(&self, job: &str, ids: &[u64]) -> Result<(), StoreError> {
        let mut chunks = self.chunks.lock().unwrap();
        for id in ids {
            chunks.remove(&(job.to_string(), *id));
        }
        Ok(())
    }

    fn list(&self, job: &str) -> Result<Vec<u64>, StoreError> {
        Ok(self.chunks.lock().unwrap().keys().filter(|(j, _)| j == job).map(|(_, id)| *id).collect())
    }

    fn put_savepoint(&self, savepoint: &str, n: u64, bytes: &[u8]) -> Result<(), StoreError> {
        put_once(&self.savepoints, (savepoint, n), bytes)?;
        self.modified.lock().unwrap().insert(savepoint.to_string(), SystemTime::now());
        Ok(())
    }

    fn get_savepoint(&self, savepoint: &str, n: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        Ok(get(&self.savepoints, (savepoint, n), out))
    }

    fn delete_savepoint(&self, savepoint: &str) -> Result<(), StoreError> {
        self.savepoints.lock().unwrap().retain(|(id, _), _| id != savepoint);
        Ok(())
    }

    fn list_savepoints(&self) -> Result<Vec<(String, SystemTime)>, StoreError> {
        let ids: BTreeSet<String> =
            self.savepoints.lock().unwrap().keys().map(|(id, _)| id.clone()).collect();
        let modified = self.modified.lock().unwrap();
        Ok(ids.into_iter().map(|id| (id.clone(), modified[&id])).collect())
    }

    fn sweep_policy(&self) -> SweepPolicy {
        *self.policy.lock().unwrap()
    }
}

impl Memory {
    /// The savepoints that have objects.
    fn savepoint_ids(&self) -> Vec<String> {
        self.list_savepoints().unwrap().into_iter().map(|(id, _)| id).collect()
    }

    /// Makes savepoint `id`'s objects look `age` old.
    fn backdate(&self, id: &str, age: Duration) {
        self.modified.lock().unwrap().insert(id.to_string(), SystemTime::now() - age);
    }

    /// The objects of savepoint `id`: number → bytes.
    fn savepoint(&self, id: &str) -> BTreeMap<u64, Vec<u8>> {
        let objects = self.savepoints.lock().unwrap();
        objects.iter().filter(|((sp, _), _)| sp == id).map(|((_, n), bytes)| (*n, bytes.clone())).collect()
    }
}

const PIECES: TableDefinition<'_, (&str, u64, u32), &[u8]> = TableDefinition::new("weir.chunk_pieces");

fn pieces(store: &Store) -> u64 {
    let db = store.database().unwrap();
    let txn = db.begin_read().unwrap();
    txn.open_table(PIECES).unwrap().len().unwrap()
}

/// The same history of checkpoints on `store`: returns the last state and the model.
fn history(store: &Store) -> (SubtaskState, Model) {
    store.set_owners(&[(format!("job/{JOB}"), "tenant".to_owned())]).unwrap();
    let big = vec![7u8; 10_000];
    let s1 = checkpoint(
        store,
        1,
        true,
        vec![
            scope(0, vec![put("s", b"a", &big), put("s", b"b", b"1")]),
            scope(1, vec![put("s", b"c", b"1")]),
        ],
        &BTreeMap::new(),
        3,
        2,
    );
    let s2 = checkpoint(
        store,
        2,
        false,
        vec![scope(0, vec![del("s", b"b"), put("s", b"d", b"2")])],
        &s1.chains,
        3,
        2,
    );
    // Checkpoint 3 is aborted: its chunks go.
    begin(store, 3);
    store
        .write_subtask(subtask_write(3, false, vec![scope(1, vec![put("s", b"x", b"3")])], &s2.chains, 3))
        .unwrap();
    store.abort(&CheckpointMeta::new(JOB, 3, 1_003)).unwrap();
    // Checkpoints 4 and 5 compact scope 0 (max chain 3) and retention (2) drops 1 and 2.
    let s4 = checkpoint(store, 4, false, vec![scope(0, vec![put("s", b"e", b"4")])], &s2.chains, 3, 2);
    let s5 = checkpoint(store, 5, false, vec![scope(0, vec![put("s", b"a", b"5")])], &s4.chains, 3, 2);
    let model = model(&[("s", b"a", b"5"), ("s", b"c", b"1"), ("s", b"d", b"2"), ("s", b"e", b"4")]);
    (s5, model)
}

#[test]
fn external_chunks_hold_the_bytes_and_everything_reads_and_collects_them() {
    let (_dir, store) = open();
    let memory = Arc::new(Memory::default());
    store.set_external_chunks(memory.clone());
    let (last, want) = history(&store);
    assert_eq!(pieces(&store), 0, "no chunk piece in the file");
    assert_eq!(restore(&store, &last.chains), want);
    // The external store holds exactly the chunks the retained checkpoints reference.
    let (_, manifest) = store.latest_completed(JOB).unwrap().unwrap();
    let mut referenced: BTreeSet<u64> = manifest[OP][&0].chains.values().flatten().copied().collect();
    let (_, previous) = store.checkpoint(JOB, 4).unwrap().unwrap();
    referenced.extend(previous.unwrap()[OP][&0].chains.values().flatten());
    assert_eq!(memory.ids(), referenced, "retention, compaction and the abort deleted the rest");
    // visit_chains reads them too.
    let chains: Vec<Vec<u64>> = last.chains.values().cloned().collect();
    let mut seen = 0;
    let _ = store
        .visit_chains(JOB, &chains, &mut |_, _, _| {
            seen += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(seen, want.len());
    // A worker reads the chains from the objects alone, to the same entries.
    let mut direct = weir_store::ExternalChains::default();
    for chain in last.chains.values() {
        let mut visited = Vec::new();
        let flow = direct
            .visit_chain(memory.as_ref(), JOB, chain, &mut |state, key, value| {
                visited.push((state.to_owned(), key.to_vec(), value.to_vec()));
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(flow, Some(ControlFlow::Continue(())));
        visited.sort();
        let read = direct.read_chain(memory.as_ref(), JOB, chain).unwrap().unwrap();
        assert_eq!(read, store.read_chain(JOB, chain).unwrap());
        let read: Vec<_> = read.into_iter().map(|e| (e.state, e.key, e.value.unwrap())).collect();
        assert_eq!(visited, read);
    }
    assert!(direct.bytes > 10_000, "{} bytes read", direct.bytes);
    // A savepoint copies the state out of the external chunks.
    let created = store.create_savepoint(savepoint_info("sp1"), &manifest).unwrap();
    assert_eq!(created.entries, want.len() as u64, "the savepoint copied every live entry");
    // A missing external chunk is a missing chunk, not an empty state.
    memory.delete(JOB, &[last.chains[&1][0]]).unwrap();
    let err = store.read_chain(JOB, &last.chains[&1]).unwrap_err();
    assert!(matches!(err, StoreError::MissingChunk { .. }), "{err}");
}

#[test]
fn the_ledger_counts_external_chunks_byte_for_byte() {
    let (_a, plain) = open();
    history(&plain);
    let (_b, external) = open();
    let memory = Arc::new(Memory::default());
    external.set_external_chunks(memory.clone());
    history(&external);
    let held: u64 = memory.chunks.lock().unwrap().values().map(|b| b.len() as u64).sum();
    let (plain_usage, external_usage) = (plain.usage("tenant").unwrap(), external.usage("tenant").unwrap());
    // Every external byte counts, plus the rows in the file (history, manifests, index).
    assert!(held > 10_000 && external_usage > held, "held {held}, counted {external_usage}");
    // Pieces in the file count the pages they take, external chunks their exact bytes: the
    // same order of magnitude, the file a little more.
    assert!(
        external_usage <= plain_usage && plain_usage < external_usage * 2,
        "{plain_usage} vs {external_usage}"
    );
    assert_eq!(
        external.usage_ledger().unwrap(),
        external.scan_usage().unwrap(),
        "the ledger matches a recount"
    );
}

#[test]
fn recover_deletes_external_chunks_no_index_names() {
    let (_dir, store) = open();
    let memory = Arc::new(Memory::default());
    store.set_external_chunks(memory.clone());
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
    // A worker's put whose checkpoint never recorded it, and one left by a crash.
    let lease = store.lease_chunk_ids(2).unwrap();
    memory.put(JOB, lease.start, b"orphan").unwrap();
    memory.put(JOB, lease.start + 1, b"orphan too").unwrap();
    memory.put("other-job", lease.start, b"not this job's").unwrap();
    store.recover(JOB).unwrap();
    let kept: BTreeSet<u64> = s1.chains.values().flatten().copied().collect();
    assert_eq!(memory.list(JOB).unwrap().into_iter().collect::<BTreeSet<_>>(), kept);
    assert_eq!(memory.list("other-job").unwrap(), vec![lease.start]);
    assert_eq!(restore(&store, &s1.chains), model(&[("s", b"a", b"1")]));
}

#[test]
fn a_sweep_spares_live_leases_and_ids_not_handed_out_yet() {
    let (_dir, store) = open();
    let memory = Arc::new(Memory::default());
    store.set_external_chunks(memory.clone());
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 2);
    // A dead attempt's lease and a live one's, each with a put nobody recorded.
    let dead = store.lease_chunk_ids(1).unwrap();
    let live = store.lease_chunk_ids(1).unwrap();
    memory.put(JOB, dead.start, b"a fenced worker's").unwrap();
    memory.put(JOB, live.start, b"a running worker's, not recorded yet").unwrap();
    // An id the counter has not reached: a write of the store's own that has not committed.
    memory.put(JOB, live.end + 10, b"being written").unwrap();
    let deleted = store.sweep_orphans(JOB, &|id| live.contains(&id)).unwrap();
    assert_eq!(deleted, 1);
    let mut want: BTreeSet<u64> = s1.chains.values().flatten().copied().collect();
    want.extend([live.start, live.end + 10]);
    assert_eq!(memory.ids(), want);
    assert_eq!(restore(&store, &s1.chains), model(&[("s", b"a", b"1")]));
}

#[test]
fn a_store_that_switches_keeps_reading_its_older_chunks() {
    let (_dir, store) = open();
    let s1 = checkpoint(&store, 1, true, vec![scope(0, vec![put("s", b"a", b"1")])], &BTreeMap::new(), 5, 3);
    let memory = Arc::new(Memory::default());
    store.set_external_chunks(memory.clone());
    let s2 = checkpoint(&store, 2, false, vec![scope(0, vec![put("s", b"b", b"2")])], &s1.chains, 5, 3);
    assert_eq!(memory.ids().len(), 1, "only the new chunk is external");
    assert_eq!(restore(&store, &s2.chains), model(&[("s", b"a", b"1"), ("s", b"b", b"2")]));
    // Read from the objects alone, a chain with a chunk in the file is not there: a worker
    // asks the store for it instead.
    let mut direct = weir_store::ExternalChains::default();
    assert_eq!(direct.read_chain(memory.as_ref(), JOB, &s2.chains[&0]).unwrap(), None);
    let newest = [*s2.chains[&0].last().unwrap()];
    let read = direct.read_chain(memory.as_ref(), JOB, &newest).unwrap();
    assert_eq!(read, Some(vec![put("s", b"b", b"2")]));
}

/// What a worker does with a snapshot: encodes it as the store would, puts the chunks under
/// ids the store leased, and has the store record them.
fn put_by_worker(store: &Store, memory: &Memory, write: SubtaskWrite) -> Result<SubtaskState, StoreError> {
    let encoded = weir_store::encode_subtask(&write, store.max_chunk_bytes())?;
    let ids = CheckpointStorage::lease_chunk_ids(store, encoded.count() as u64)?;
    let (record, puts) = encoded.assign(write, ids);
    for (id, bytes) in puts {
        memory.put(JOB, id, &bytes)?;
    }
    store.record_subtask(record)
}

/// What [`Gated`] tells the test: an object request waits for its release; the write ended.
enum Seen {
    Request(String),
    Done(Result<SubtaskState, StoreError>),
}

/// A [`Memory`] whose every chunk put and get waits for the test's release while armed.
struct Gated {
    memory: Arc<Memory>,
    armed: std::sync::atomic::AtomicBool,
    seen: Mutex<std::sync::mpsc::Sender<Seen>>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl std::fmt::Debug for Gated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gated")
    }
}

impl Gated {
    fn wait(&self, what: String) {
        if !self.armed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        self.seen.lock().unwrap().send(Seen::Request(what)).unwrap();
        self.release.lock().unwrap().recv().unwrap();
    }
}

impl ExternalChunks for Gated {
    fn put(&self, job: &str, id: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.wait(format!("the put of chunk {id}"));
        self.memory.put(job, id, bytes)
    }

    fn get(&self, job: &str, id: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        self.wait(format!("the get of chunk {id}"));
        self.memory.get(job, id, out)
    }

    fn delete(&self, job: &str, ids: &[u64]) -> Result<(), StoreError> {
        self.memory.delete(job, ids)
    }

    fn list(&self, job: &str) -> Result<Vec<u64>, StoreError> {
        self.memory.list(job)
    }

    fn put_savepoint(&self, savepoint: &str, n: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.memory.put_savepoint(savepoint, n, bytes)
    }

    fn get_savepoint(&self, savepoint: &str, n: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        self.memory.get_savepoint(savepoint, n, out)
    }

    fn delete_savepoint(&self, savepoint: &str) -> Result<(), StoreError> {
        self.memory.delete_savepoint(savepoint)
    }

    fn list_savepoints(&self) -> Result<Vec<(String, SystemTime)>, StoreError> {
        self.memory.list_savepoints()
    }
}

#[test]
fn no_object_request_of_a_write_runs_inside_the_write_transaction() {
    // The same history in a store with chunks in its file (the model) and in one whose every
    // object request waits: while one waits, another job's checkpoint must begin — a write
    // transaction, which could not start were the request made inside the writer's own.
    let (_a, plain) = open();
    let (_b, store) = open();
    let (seen, events) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel();
    let memory = Arc::new(Memory::default());
    let gated = Arc::new(Gated {
        memory: memory.clone(),
        armed: Default::default(),
        seen: Mutex::new(seen.clone()),
        release: Mutex::new(released),
    });
    store.set_external_chunks(gated.clone());
    let arm = |on: bool| gated.armed.store(on, std::sync::atomic::Ordering::SeqCst);
    let store = Arc::new(store);
    let (mut previous_plain, mut previous) = (BTreeMap::new(), BTreeMap::new());
    let (mut puts, mut gets, mut compactions, mut other) = (0, 0, 0, 0u64);
    for id in 1..=10u64 {
        let scopes = vec![
            scope(0, vec![put("s", format!("k{}", id % 4).as_bytes(), &vec![id as u8; 3_000])]),
            scope(
                1,
                vec![put("t", b"t", format!("v{id}").as_bytes()), del("t", format!("d{id}").as_bytes())],
            ),
        ];
        let full = id == 1;
        begin(&plain, id);
        let a = plain.write_subtask(subtask_write(id, full, scopes.clone(), &previous_plain, 2)).unwrap();
        complete(&plain, id, &a, 2);
        begin(&*store, id);
        let write = subtask_write(id, full, scopes, &previous, 2);
        arm(true);
        let writer = {
            let (store, seen) = (store.clone(), seen.clone());
            std::thread::spawn(move || seen.send(Seen::Done(store.write_subtask(write))).unwrap())
        };
        let b = loop {
            match events.recv_timeout(Duration::from_secs(60)).expect("the write makes progress") {
                Seen::Request(what) => {
                    if what.starts_with("the put") {
                        puts += 1;
                    } else {
                        gets += 1;
                    }
                    other += 1;
                    let (done, began) = std::sync::mpsc::channel();
                    let store2 = store.clone();
                    std::thread::spawn(move || {
                        let _ = done.send(store2.begin(&CheckpointMeta::new("other", other, 1_000 + other)));
                    });
                    let result = began.recv_timeout(Duration::from_secs(30));
                    assert!(
                        matches!(result, Ok(Ok(()))),
                        "checkpoint {id}: no write transaction could commit while {what} was in flight: {result:?}"
                    );
                    release.send(()).unwrap();
                }
                Seen::Done(result) => break result.unwrap(),
            }
        };
        writer.join().unwrap();
        arm(false);
        complete(&*store, id, &b, 2);
        assert_eq!(restore(&*store, &b.chains), restore(&plain, &a.chains), "checkpoint {id}");
        compactions += b.compactions;
        (previous_plain, previous) = (a.chains, b.chains);
    }
    assert!(compactions > 0 && puts > 0 && gets > 0, "compactions {compactions}, puts {puts}, gets {gets}");
    assert_eq!(store.usage_ledger().unwrap(), store.scan_usage().unwrap(), "the ledger matches a recount");
    assert_eq!(pieces(&store), 0);
}

#[test]
fn chunks_a_worker_put_are_recorded_compacted_and_collected_as_the_stores_own() {
    let (_a, own) = open();
    own.set_external_chunks(Arc::new(Memory::default()));
    let (_b, store) = open();
    let memory = Arc::new(Memory::default());
    store.set_external_chunks(memory.clone());
    store.set_owners(&[(format!("job/{JOB}"), "tenant".to_owned())]).unwrap();
    let (mut previous_own, mut previous) = (BTreeMap::new(), BTreeMap::new());
    let mut compactions = 0;
    for id in 1..=16u64 {
        // Puts and deletes over a few keys in two scopes, a chain of at most 3 increments.
        let key = format!("k{}", id % 5).into_bytes();
        let scopes = vec![
            scope(
                0,
                vec![
                    put("s", &key, format!("v{id}").as_bytes()),
                    del("s", format!("k{}", id % 3).as_bytes()),
                ],
            ),
            scope(1, vec![put("t", format!("t{id}").as_bytes(), &vec![id as u8; 3_000])]),
        ];
        let full = id == 1 || id == 9;
        begin(&own, id);
        let a = own.write_subtask(subtask_write(id, full, scopes.clone(), &previous_own, 3)).unwrap();
        complete(&own, id, &a, 2);
        begin(&store, id);
        let b = put_by_worker(&store, &memory, subtask_write(id, full, scopes, &previous, 3)).unwrap();
        assert_eq!(b.blob, format!("blob {id}").into_bytes());
        complete(&store, id, &b, 2);
        assert_eq!(restore(&store, &b.chains), restore(&own, &a.chains), "checkpoint {id}");
        compactions += b.compactions;
        (previous_own, previous) = (a.chains, b.chains);
    }
    assert!(compactions > 0, "the chains were compacted");
    // The put deltas a compaction replaced, and the chunks of dropped checkpoints, are gone:
    // the objects are exactly what the two retained checkpoints reference.
    let mut referenced = BTreeSet::new();
    for id in [15, 16] {
        let (_, manifest) = store.checkpoint(JOB, id).unwrap().unwrap();
        referenced.extend(manifest.unwrap()[OP][&0].chains.values().flatten().copied());
    }
    assert_eq!(memory.ids(), referenced);
    assert_eq!(store.usage_ledger().unwrap(), store.scan_usage().unwrap(), "the ledger matches a recount");
    assert_eq!(pieces(&store), 0);

    // An id recorded before cannot be recorded again (it would take over that chunk's row).
    begin(&store, 17);
    let taken = *previous[&0].first().unwrap();
    let write = PutSubtaskWrite {
        job: JOB.into(),
        checkpoint: 17,
        operator: OP.into(),
        subtask: 0,
        full: false,
        scopes: BTreeMap::from([(0, vec![PutChunk { id: taken, size: 1 }])]),
        previous: previous.clone(),
        blob: Vec::new(),
        channel: Vec::new(),
        max_chain_length: 3,
    };
    let err = store.record_subtask(write.clone()).unwrap_err();
    assert!(
        matches!(err, StoreError::InvalidMeta { .. }) && err.to_string().contains("recorded already"),
        "{err}"
    );
    assert_eq!(restore(&store, &previous), restore(&own, &previous_own), "nothing changed");
    // A store whose chunks are in its file cannot record chunks put elsewhere.
    let (_c, plain) = open();
    begin(&plain, 17);
    let err = plain.record_subtask(write).unwrap_err();
    assert!(err.to_string().contains("external chunk store"), "{err}");
}

const SAVEPOINT_PIECES: TableDefinition<'_, (&str, &str, u32, u32, u32), &[u8]> =
    TableDefinition::new("weir.savepoint_pieces");

fn savepoint_info(id: &str) -> SavepointInfo {
    SavepointInfo {
        id: id.into(),
        owner: "tenant".into(),
        job: JOB.into(),
        checkpoint: 5,
        created_ms: 1,
        bytes: 0,
        entries: 0,
        origin: None,
        description: serde_json::Value::Null,
    }
}

/// (operator, scope, entries, the operator's blobs by subtask).
type ScopeContents = (String, u32, Vec<StateEntry>, BTreeMap<u32, Vec<u8>>);

/// Every scope's entries and every blob of savepoint `id`, through the public API.
fn savepoint_contents(store: &Store, id: &str) -> Vec<ScopeContents> {
    let mut out = Vec::new();
    for operator in store.savepoint_operators(id).unwrap() {
        let blobs = store.savepoint_blobs(id, &operator).unwrap();
        for scope in store.savepoint_scopes(id, &operator).unwrap() {
            let entries = store.read_savepoint_scope(id, &operator, scope).unwrap();
            out.push((operator.clone(), scope, entries, blobs.clone()));
        }
    }
    out
}

fn export(store: &Store, id: &str) -> Vec<u8> {
    let mut file = Vec::new();
    store.export_savepoint(id, &mut file).unwrap();
    file
}

#[test]
fn savepoint_chunks_are_objects_read_exported_deleted_and_swept() {
    // The same history and savepoint in a store that keeps chunks in its file and in one
    // that keeps them outside.
    let (_a, plain) = open();
    let (_b, store) = open();
    let memory = Arc::new(Memory::default());
    store.set_external_chunks(memory.clone());
    for store in [&plain, &store] {
        history(store);
        let (_, manifest) = store.latest_completed(JOB).unwrap().unwrap();
        store.create_savepoint(savepoint_info("sp1"), &manifest).unwrap();
    }
    let db = store.database().unwrap();
    assert_eq!(db.begin_read().unwrap().open_table(SAVEPOINT_PIECES).unwrap().len().unwrap(), 0);
    let objects = memory.savepoint("sp1");
    assert!(objects.len() >= 2, "each chunk is an object: {}", objects.len());
    assert_eq!(objects.keys().copied().collect::<Vec<_>>(), (0..objects.len() as u64).collect::<Vec<_>>());
    // Read and exported, it is the same savepoint: the export files are equal byte for byte.
    let contents = savepoint_contents(&plain, "sp1");
    assert!(contents.iter().map(|(_, _, entries, _)| entries.len()).sum::<usize>() >= 4);
    assert_eq!(savepoint_contents(&store, "sp1"), contents);
    let file = export(&plain, "sp1");
    assert_eq!(export(&store, "sp1"), file);
    assert_eq!(store.savepoint("sp1").unwrap(), plain.savepoint("sp1").unwrap());
    // The owner is charged the objects' bytes exactly, and a recount agrees.
    let held: u64 = objects.values().map(|bytes| bytes.len() as u64).sum();
    assert!(store.usage("tenant").unwrap() > held);
    assert_eq!(store.usage_ledger().unwrap(), store.scan_usage().unwrap(), "the ledger matches a recount");

    // An import writes objects too; a failed one leaves none behind.
    store.import_savepoint(&mut file.as_slice(), "copy", "tenant").unwrap();
    assert_eq!(memory.savepoint("copy").len(), objects.len());
    assert_eq!(savepoint_contents(&store, "copy"), contents);
    let truncated = &file[..file.len() - 40];
    store.import_savepoint(&mut &truncated[..], "broken", "tenant").unwrap_err();
    assert!(memory.savepoint("broken").is_empty(), "a failed import's objects are deleted");
    assert!(store.savepoint("broken").unwrap().is_none());

    // A lost object is reported, not read as an empty scope.
    memory.savepoints.lock().unwrap().remove(&("copy".to_string(), 1));
    let (operator, scope) = {
        let mut found = None;
        for (operator, scope, _, _) in &contents {
            if store.read_savepoint_scope("copy", operator, *scope).is_err() {
                found = Some((operator.clone(), *scope));
            }
        }
        found.expect("a scope reads the lost object")
    };
    let err = store.read_savepoint_scope("copy", &operator, scope).unwrap_err();
    assert!(err.to_string().contains("(object 1) is gone"), "{err}");

    // Deleting a savepoint deletes its objects and gives its bytes back.
    let before = store.usage("tenant").unwrap();
    assert!(store.delete_savepoint("copy").unwrap());
    assert!(memory.savepoint("copy").is_empty());
    assert!(store.usage("tenant").unwrap() < before);
    assert_eq!(store.usage_ledger().unwrap(), store.scan_usage().unwrap(), "the ledger matches a recount");

    // Objects of a savepoint that is not stored are swept once past the grace period; a
    // stored one's are kept, and so are young ones (a newer weir.redb than this one — the
    // file restored from a backup — may name them); a dry run deletes nothing.
    memory.put_savepoint("ghost", 0, b"left by a crash").unwrap();
    memory.backdate("ghost", Duration::from_secs(2 * 60 * 60));
    memory.put_savepoint("newer", 0, b"written for a newer weir.redb").unwrap();
    memory.backdate("sp1", Duration::from_secs(2 * 60 * 60));
    let all = vec!["ghost".to_string(), "newer".to_string(), "sp1".to_string()];
    *memory.policy.lock().unwrap() = SweepPolicy { dry_run: true, ..SweepPolicy::default() };
    assert_eq!(store.sweep_savepoint_objects().unwrap(), 0, "a dry run deletes nothing");
    assert_eq!(memory.savepoint_ids(), all);
    *memory.policy.lock().unwrap() = SweepPolicy::default();
    assert_eq!(store.sweep_savepoint_objects().unwrap(), 1);
    assert_eq!(memory.savepoint_ids(), vec!["newer".to_string(), "sp1".to_string()], "the young one stays");
    *memory.policy.lock().unwrap() = SweepPolicy { grace_ms: 0, dry_run: false };
    assert_eq!(store.sweep_savepoint_objects().unwrap(), 1);
    assert_eq!(memory.savepoint_ids(), vec!["sp1".to_string()]);
    assert_eq!(memory.savepoint("sp1"), objects);
    assert_eq!(savepoint_contents(&store, "sp1"), contents);
}
