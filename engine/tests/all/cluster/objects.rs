//! Checkpoint chunks in a real S3-protocol server (moto, issue 22): create-only puts (a
//! retry of the same bytes passes, other bytes under a written id are refused), reads,
//! listing by job, deletes, prefixes. With a real `weir.redb` (issue 40): a savepoint's
//! uploads hold no writer of the store, and sweeps keep what is younger than their grace
//! period and only log in a dry run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use weir::cluster::objects::{BlockingChunks, ChunkObjects, ObjectError};
use weir_store::{
    CheckpointMeta, CheckpointStorage, ExternalChunks, LogRecord, Manifest, SavepointInfo, ScopeDelta,
    StateEntry, Store, StoreError, SubtaskWrite, SweepPolicy,
};

use crate::common::s3::S3Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_in_s3_are_written_once_listed_and_deleted() {
    let server = S3Server::start();
    server.create_bucket("weir").await;
    let objects = ChunkObjects::open(&server.config("weir"), "cluster-1").unwrap();
    let job = "0123456789abcdef";
    assert_eq!(objects.get(job, 7).await.unwrap(), None);
    let chunk = Bytes::from(vec![7u8; 300_000]);
    objects.put(job, 7, chunk.clone()).await.unwrap();
    objects.put(job, 7, chunk.clone()).await.expect("a retry of the same bytes");
    match objects.put(job, 7, Bytes::from_static(b"a zombie's other bytes")).await {
        Err(ObjectError::Conflict { id: 7, .. }) => {}
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(objects.get(job, 7).await.unwrap(), Some(chunk), "the first write stays");
    objects.put(job, 9, Bytes::from_static(b"nine")).await.unwrap();
    objects.put("other-job", 8, Bytes::from_static(b"eight")).await.unwrap();
    assert_eq!(objects.list(job).await.unwrap(), vec![(7, 300_000), (9, 4)]);
    objects.delete(job, 7).await.unwrap();
    objects.delete(job, 7).await.expect("deleting a deleted chunk");
    assert_eq!(objects.list(job).await.unwrap(), vec![(9, 4)]);
    assert_eq!(objects.list("other-job").await.unwrap(), vec![(8, 5)]);
    // Another prefix in the same bucket is another store.
    let other = ChunkObjects::open(&server.config("weir"), "cluster-2").unwrap();
    assert_eq!(other.list(job).await.unwrap(), vec![]);
}

/// Object storage whose savepoint uploads wait at a gate the test opens: an upload that
/// takes as long as the test wants.
#[derive(Debug)]
struct Gated {
    inner: Arc<BlockingChunks>,
    /// (uploads waiting at the gate, the gate is open).
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Gated {
    fn new(inner: Arc<BlockingChunks>) -> Arc<Self> {
        Arc::new(Gated { inner, state: Mutex::new((0, false)), changed: Condvar::new() })
    }

    /// Waits until an upload is held at the gate.
    fn wait_for_upload(&self) {
        let state = self.state.lock().unwrap();
        let (state, timeout) = self
            .changed
            .wait_timeout_while(state, Duration::from_secs(120), |(waiting, _)| *waiting == 0)
            .unwrap();
        assert!(!timeout.timed_out() || state.0 > 0, "no upload reached the gate");
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

impl ExternalChunks for Gated {
    fn put(&self, job: &str, id: u64, bytes: &[u8]) -> Result<(), StoreError> {
        self.inner.put(job, id, bytes)
    }
    fn get(&self, job: &str, id: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        self.inner.get(job, id, out)
    }
    fn delete(&self, job: &str, ids: &[u64]) -> Result<(), StoreError> {
        self.inner.delete(job, ids)
    }
    fn list(&self, job: &str) -> Result<Vec<u64>, StoreError> {
        self.inner.list(job)
    }
    fn put_savepoint(&self, savepoint: &str, n: u64, bytes: &[u8]) -> Result<(), StoreError> {
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        self.changed.notify_all();
        let (mut state, _) =
            self.changed.wait_timeout_while(state, Duration::from_secs(120), |(_, open)| !*open).unwrap();
        state.0 -= 1;
        drop(state);
        self.inner.put_savepoint(savepoint, n, bytes)
    }
    fn get_savepoint(&self, savepoint: &str, n: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        self.inner.get_savepoint(savepoint, n, out)
    }
    fn delete_savepoint(&self, savepoint: &str) -> Result<(), StoreError> {
        self.inner.delete_savepoint(savepoint)
    }
    fn list_savepoints(&self) -> Result<Vec<(String, SystemTime)>, StoreError> {
        self.inner.list_savepoints()
    }
    fn sweep_policy(&self) -> SweepPolicy {
        self.inner.sweep_policy()
    }
}

/// A checkpoint of job `job` in `store` (its chunks in the object store): 300 entries in
/// two key groups, as a manifest a savepoint copies.
fn checkpoint(store: &Store, job: &str) -> Manifest {
    store.begin(&CheckpointMeta::new(job, 1, 1_000)).unwrap();
    let entries = |group: u32| -> Vec<StateEntry> {
        (0..150u32)
            .map(|i| StateEntry {
                state: "counts".into(),
                key: format!("{group}-{i:04}").into_bytes(),
                value: Some(vec![i as u8; 100]),
            })
            .collect()
    };
    let state = store
        .write_subtask(SubtaskWrite {
            job: job.into(),
            checkpoint: 1,
            operator: "op".into(),
            subtask: 0,
            full: true,
            scopes: Arc::new(vec![
                ScopeDelta { scope: 0, entries: entries(0) },
                ScopeDelta { scope: 1, entries: entries(1) },
            ]),
            previous: BTreeMap::new(),
            blob: b"the subtask's blob".to_vec(),
            max_chain_length: 8,
            channel_state: Vec::new(),
        })
        .unwrap();
    BTreeMap::from([("op".to_string(), BTreeMap::from([(0, state)]))])
}

fn info(id: &str, job: &str) -> SavepointInfo {
    SavepointInfo {
        id: id.into(),
        owner: "tenant".into(),
        job: job.into(),
        checkpoint: 1,
        created_ms: 1,
        bytes: 0,
        entries: 0,
        origin: None,
        description: serde_json::Value::Null,
    }
}

/// Runs `write` on another thread and waits for it at most 60 s: `Some` if it finished.
fn finishes<T: Send + 'static>(write: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(write());
    });
    rx.recv_timeout(Duration::from_secs(60)).ok()
}

/// Other tenants' writes of the store while a savepoint's upload is held: a checkpoint
/// begun, a stream created and appended to.
fn other_writes(store: &Store, round: u32) -> Result<u64, StoreError> {
    store.begin(&CheckpointMeta::new("other-job", u64::from(round), 2_000))?;
    let stream = format!("events-{round}");
    store.create_stream(&stream, 1)?;
    let record = LogRecord { key: b"k".to_vec(), value: b"v".to_vec(), timestamp: 1 };
    store.append(&stream, 0, &[record])
}

/// Issue 40: with savepoints in object storage, creating or importing one puts its objects
/// with no write transaction open, so a slow upload does not hold every other writer of the
/// store; a short transaction records them afterwards.
#[test]
fn a_savepoint_upload_holds_no_writer_of_the_store() {
    let server = S3Server::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(server.create_bucket("weir"));
    let objects = ChunkObjects::open(&server.config("weir"), "prod").unwrap();
    let gated = Gated::new(Arc::new(BlockingChunks::new(objects.clone()).unwrap()));
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap().with_max_chunk_bytes(4096);
    store.set_external_chunks(gated.clone());
    let manifest = checkpoint(&store, "job");

    // Creating: held at its first upload, while the other writes go through.
    let creating = {
        let store = store.clone();
        std::thread::spawn(move || store.create_savepoint(info("sp1", "job"), &manifest))
    };
    gated.wait_for_upload();
    let other = store.clone();
    let done = finishes(move || other_writes(&other, 1));
    assert!(matches!(done, Some(Ok(0))), "a write waited for the upload: {done:?}");
    assert!(store.savepoint("sp1").unwrap().is_none(), "not recorded before its objects are up");
    gated.open();
    let created = creating.join().unwrap().unwrap();
    assert_eq!(created.entries, 300);
    let stored = runtime.block_on(objects.savepoint_ages()).unwrap();
    assert_eq!(stored.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["sp1"]);
    let scope = store.read_savepoint_scope("sp1", "op", 1).unwrap();
    assert_eq!(scope.len(), 150);
    assert!(
        runtime.block_on(objects.get_savepoint("sp1", 3)).unwrap().is_some(),
        "several chunks, each an object"
    );

    // Importing its file: the same.
    let mut file = Vec::new();
    store.export_savepoint("sp1", &mut file).unwrap();
    *gated.state.lock().unwrap() = (0, false);
    let importing = {
        let (store, file) = (store.clone(), file.clone());
        std::thread::spawn(move || store.import_savepoint(&mut file.as_slice(), "copy", "tenant"))
    };
    gated.wait_for_upload();
    let other = store.clone();
    let done = finishes(move || other_writes(&other, 2));
    assert!(matches!(done, Some(Ok(0))), "a write waited for the import's upload: {done:?}");
    gated.open();
    importing.join().unwrap().unwrap();
    assert_eq!(store.savepoint("copy").unwrap().unwrap().origin.as_deref(), Some("sp1"));
    assert_eq!(store.read_savepoint_scope("copy", "op", 1).unwrap(), scope);
    assert_eq!(store.savepoint_blobs("copy", "op").unwrap(), store.savepoint_blobs("sp1", "op").unwrap());

    // A failed import (a truncated file, found after its objects went up) records nothing
    // and deletes them.
    let truncated = &file[..file.len() - 40];
    store.import_savepoint(&mut &truncated[..], "broken", "tenant").unwrap_err();
    assert!(store.savepoint("broken").unwrap().is_none());
    assert!(
        runtime.block_on(objects.get_savepoint("broken", 0)).unwrap().is_none(),
        "its objects are deleted"
    );
    assert_eq!(store.usage_ledger().unwrap(), store.scan_usage().unwrap(), "the ledger matches a recount");
}

/// Issue 40: the sweeps at start delete an object no record names only past the grace
/// period (`weir.redb` may be an older backup that never knew of newer objects), and a dry
/// run deletes nothing and logs what it would delete.
#[test]
fn sweeps_keep_young_objects_and_a_dry_run_only_logs() {
    let server = S3Server::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(server.create_bucket("weir"));
    let objects = ChunkObjects::open(&server.config("weir"), "prod").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let with = |policy: SweepPolicy| {
        store.set_external_chunks(Arc::new(BlockingChunks::new(objects.clone().with_sweep(policy)).unwrap()));
        objects.clone().with_sweep(policy)
    };
    let logs = crate::common::Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    // A savepoint this store records; one it does not (written for a newer weir.redb, or
    // left by a failed write); a module nobody records.
    with(SweepPolicy::default());
    let manifest = checkpoint(&store, "job");
    store.create_savepoint(info("kept", "job"), &manifest).unwrap();
    let put =
        |id: &str| runtime.block_on(objects.put_savepoint(id, 0, Bytes::from_static(b"unnamed"))).unwrap();
    put("unnamed");
    let module = "ab".repeat(32);
    runtime.block_on(objects.put_module(&module, Bytes::from_static(b"\0asm"))).unwrap();
    let savepoints = || -> Vec<String> { runtime.block_on(objects.list_savepoints()).unwrap() };
    let modules = || runtime.block_on(objects.list_modules()).unwrap();
    let known = BTreeSet::new();

    // The default grace period (an hour): both are young, both stay.
    assert_eq!(store.sweep_savepoint_objects().unwrap(), 0);
    let swept = runtime.block_on(with(SweepPolicy::default()).sweep_modules(&known)).unwrap();
    assert_eq!(swept, 0);
    assert_eq!(savepoints(), ["kept", "unnamed"]);
    assert_eq!(modules(), std::slice::from_ref(&module));
    assert!(logs.text().contains("kept the objects of a savepoint no record names"), "{}", logs.text());

    // Past the grace period, but a dry run: nothing is deleted, and it says what would be.
    let grace_ms = 1_000;
    let dry = with(SweepPolicy { grace_ms, dry_run: true });
    let deadline = Instant::now() + Duration::from_secs(60);
    let old_enough =
        |at: SystemTime| SystemTime::now().duration_since(at).is_ok_and(|age| age.as_millis() > 1_000);
    while !runtime.block_on(objects.savepoint_ages()).unwrap().iter().all(|(_, at)| old_enough(*at)) {
        assert!(Instant::now() < deadline, "the objects never aged past a second");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A savepoint object put now is younger than the grace period.
    put("newer");
    assert_eq!(store.sweep_savepoint_objects().unwrap(), 0);
    assert_eq!(runtime.block_on(dry.sweep_modules(&known)).unwrap(), 0);
    assert_eq!(savepoints(), ["kept", "newer", "unnamed"]);
    assert_eq!(modules(), std::slice::from_ref(&module));
    let text = logs.text();
    let logged = |what: &str, name: &str| text.lines().any(|line| line.contains(what) && line.contains(name));
    assert!(logged("(dry run): would delete the objects of a savepoint", "savepoint=unnamed"), "{text}");
    assert!(logged("(dry run): would delete a module", &format!("module={module}")), "{text}");
    assert!(!logged("would delete", "savepoint=newer"), "the young one is not due: {text}");
    assert!(!logged("would delete", "savepoint=kept"), "a recorded one is never due: {text}");

    // For real: the old unnamed objects go, the young one and the recorded savepoint stay.
    let sweeping = with(SweepPolicy { grace_ms, dry_run: false });
    assert_eq!(store.sweep_savepoint_objects().unwrap(), 1);
    assert_eq!(runtime.block_on(sweeping.sweep_modules(&known)).unwrap(), 1);
    assert_eq!(savepoints(), ["kept", "newer"], "the young one survives, the old one is deleted");
    assert!(modules().is_empty());
    assert!(logs.text().contains("deleted the objects of a savepoint no record names"));
    assert_eq!(store.read_savepoint_scope("kept", "op", 0).unwrap().len(), 150);
}
