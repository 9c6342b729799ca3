//! The `transactional` Kafka sink's protocol, against a fake transaction-capable broker
//! (`common::fake_kafka`; Tansu cannot end a transaction).
//!
//! Each test drives `TransactionalSink` through the `Sink` trait as the runtime does (recover
//! at start, write, precommit at the barrier, commit when the checkpoint completes) with a
//! real store in a temporary directory. "A crash" is dropping the sink and the store and
//! opening both again. What becomes visible is checked twice: in the fake's own log, and
//! through our client's read_committed fetch.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use weir::connectors::Sink;
use weir::connectors::kafka::client::{Client, ClientConfig, OffsetSpec};
use weir::connectors::kafka::format::Format;
use weir::connectors::kafka::sink::{Delivery, Partitioner, SinkSettings};
use weir::connectors::kafka::transactional::{PreCommitted, TransactionalSink};
use weir::record::Batch;
use weir_store::Store;

use crate::common::fake_kafka::{EndTxnMode, FakeKafka, INVALID_TXN_STATE, PRODUCER_FENCED};

const TOPIC: &str = "out";
const PARTITIONS: i32 = 3;
const WRITER: &str = "job-1/sink/0";

fn settings(fake: &FakeKafka) -> SinkSettings {
    SinkSettings {
        client: ClientConfig::new(vec![fake.bootstrap()]),
        topic: TOPIC.into(),
        delivery: Delivery::Transactional,
        key_format: Format::Raw,
        value_format: Format::Raw,
        partitioner: Partitioner::Key,
        transactional_id_prefix: "weir-test".into(),
        transaction_timeout: Duration::from_secs(60),
        max_request_bytes: 1 << 20,
        linger: Duration::from_millis(5),
    }
}

/// A store file in a temporary directory, reopened after each "crash".
struct Disk {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Disk {
    fn new() -> Disk {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        Disk { _dir: dir, path }
    }

    fn store(&self) -> Store {
        Store::open(&self.path).unwrap()
    }
}

/// Opens subtask 0 and recovers it from `checkpoint` with `transactions`, as a (re)start does.
fn start(
    fake: &FakeKafka,
    disk: &Disk,
    checkpoint: u64,
    transactions: &[serde_json::Value],
) -> TransactionalSink {
    let mut sink =
        TransactionalSink::open(settings(fake), Some(std::sync::Arc::new(disk.store())), WRITER.into(), 0)
            .unwrap();
    sink.recover(checkpoint, transactions).unwrap();
    sink
}

/// `n` records `<tag>-<i>` (the key spreads them over the partitions).
fn records(tag: &str, n: usize) -> (Batch, Vec<Vec<u8>>) {
    let mut batch = Batch::empty();
    let mut values = Vec::new();
    for i in 0..n {
        let value = format!("{tag}-{i}").into_bytes();
        batch.push(format!("key-{i}").as_bytes(), &value, 1_000 + i as i64);
        values.push(value);
    }
    (batch, values)
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

/// What the fake's log holds as committed, over every partition.
fn committed(fake: &FakeKafka) -> Vec<Vec<u8>> {
    sorted((0..PARTITIONS).flat_map(|p| fake.committed_values(p)).collect())
}

fn pending(fake: &FakeKafka) -> Vec<Vec<u8>> {
    sorted((0..PARTITIONS).flat_map(|p| fake.pending_values(p)).collect())
}

fn aborted(fake: &FakeKafka) -> Vec<Vec<u8>> {
    sorted((0..PARTITIONS).flat_map(|p| fake.aborted_values(p)).collect())
}

/// Every value a read_committed consumer (our client) reads from the start of each partition.
fn read_committed(fake: &FakeKafka) -> Vec<Vec<u8>> {
    let mut client = Client::connect(ClientConfig::new(vec![fake.bootstrap()])).unwrap();
    let partitions: Vec<i32> = (0..PARTITIONS).collect();
    let ends = client.list_offsets(TOPIC, &partitions, OffsetSpec::Latest).unwrap();
    let mut at: std::collections::BTreeMap<(String, i32), i64> =
        partitions.iter().map(|p| ((TOPIC.to_string(), *p), 0)).collect();
    let mut out = Vec::new();
    // Each fetch returns everything up to the last stable offset; stop when nothing moves.
    for _ in 0..100 {
        let fetched = client.fetch(&at, Duration::from_millis(10), 64 << 20, 64 << 20, true).unwrap();
        let mut moved = false;
        for p in fetched {
            assert!(p.error.is_none(), "fetch of partition {}: {:?}", p.partition, p.error);
            assert!(p.next_offset <= ends[&p.partition], "read past the log end");
            out.extend(p.records.into_iter().map(|r| r.value.unwrap_or_default().to_vec()));
            let slot = at.get_mut(&(TOPIC.to_string(), p.partition)).unwrap();
            moved |= p.next_offset > *slot;
            *slot = p.next_offset;
        }
        if !moved {
            return sorted(out);
        }
    }
    panic!("the read_committed read never settled");
}

/// Five records of 1 MiB each: more than a sink buffers before it produces.
fn over_the_spill_threshold(tag: &[u8; 5]) -> (Batch, Vec<Vec<u8>>) {
    let mut batch = Batch::empty();
    let mut values = Vec::new();
    for i in 0..5u8 {
        let mut value = vec![i; 1 << 20];
        value[..5].copy_from_slice(tag);
        batch.push(&[b'k', i], &value, 5_000);
        values.push(value);
    }
    (batch, values)
}

fn pre_committed(json: &serde_json::Value) -> PreCommitted {
    serde_json::from_value(json.clone()).unwrap()
}

/// The transactional ids the sink produced to (in order of first use) after request `from`.
fn produced_ids(fake: &FakeKafka, from: usize) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for s in fake.requests().into_iter().skip(from).filter(|s| s.api_key == ApiKey::Produce) {
        let id = s.transactional_id.expect("a transactional produce names its id");
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

#[test]
fn a_completed_checkpoint_becomes_visible_exactly() {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, EndTxnMode::Serve);
    let disk = Disk::new();
    let mut sink = start(&fake, &disk, 0, &[]);
    assert_eq!(sink.precommit(1).unwrap(), None, "nothing written: no transaction");

    let (batch, values) = records("a", 50);
    sink.write(&batch).unwrap();
    let json = sink.precommit(2).unwrap().expect("a transaction");
    let t = pre_committed(&json);
    // Pre-committed: in the log, not visible.
    assert_eq!(pending(&fake), sorted(values.clone()));
    assert!(committed(&fake).is_empty());
    assert!(read_committed(&fake).is_empty());
    assert!(fake.is_ongoing(&t.transactional_id));
    assert_eq!(fake.producer_of(&t.transactional_id), Some((t.producer.id, t.producer.epoch)));
    for s in fake.requests_of(ApiKey::Produce) {
        assert_eq!(s.transactional_id.as_deref(), Some(t.transactional_id.as_str()));
        assert_eq!(s.producer, Some((t.producer.id, t.producer.epoch)));
        assert!(s.batch.expect("a batch").0, "the batch is marked transactional");
    }

    sink.commit(std::slice::from_ref(&json)).unwrap();
    assert_eq!(committed(&fake), sorted(values.clone()));
    assert_eq!(read_committed(&fake), sorted(values.clone()));
    assert!(pending(&fake).is_empty() && aborted(&fake).is_empty());

    // The next checkpoint: a new transactional id, and only its records added.
    let (batch, more) = records("b", 20);
    sink.write(&batch).unwrap();
    let json2 = sink.precommit(3).unwrap().expect("a transaction");
    let t2 = pre_committed(&json2);
    assert_ne!(t2.transactional_id, t.transactional_id);
    assert!(t2.k > t.k);
    sink.commit(&[json2]).unwrap();
    let all = sorted(values.into_iter().chain(more).collect());
    assert_eq!(committed(&fake), all);
    assert_eq!(read_committed(&fake), all);
    sink.close().unwrap();
}

#[test]
fn a_crash_between_completion_and_commit_is_committed_by_recovery() {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, EndTxnMode::Serve);
    let disk = Disk::new();
    let mut sink = start(&fake, &disk, 0, &[]);
    let (batch, first) = records("first", 30);
    sink.write(&batch).unwrap();
    let json1 = sink.precommit(1).unwrap().unwrap();
    sink.commit(&[json1]).unwrap();

    let (batch, second) = records("second", 40);
    sink.write(&batch).unwrap();
    let json2 = sink.precommit(2).unwrap().unwrap();
    let t2 = pre_committed(&json2);
    // Checkpoint 2 completes (its transaction is in it) and the process dies before the commit.
    drop(sink);
    assert_eq!(pending(&fake), sorted(second.clone()));
    let before = fake.requests().len();

    let sink = start(&fake, &disk, 2, std::slice::from_ref(&json2));
    let ends: Vec<_> = fake
        .requests()
        .into_iter()
        .skip(before)
        .filter(|s| {
            s.api_key == ApiKey::EndTxn && s.transactional_id.as_deref() == Some(&t2.transactional_id)
        })
        .collect();
    assert_eq!(ends.len(), 1, "one EndTxn for the stored transaction: {ends:?}");
    assert_eq!(ends[0].commit, Some(true));
    assert_eq!(
        ends[0].producer,
        Some((t2.producer.id, t2.producer.epoch)),
        "the stored producer id and epoch"
    );
    // Nothing of it was fenced before the commit.
    let inits_before_commit = fake
        .requests()
        .into_iter()
        .skip(before)
        .take_while(|s| !(s.api_key == ApiKey::EndTxn && s.commit == Some(true)))
        .filter(|s| s.api_key == ApiKey::InitProducerId && s.transactional_id == ends[0].transactional_id)
        .count();
    assert_eq!(inits_before_commit, 0, "the stored transaction was fenced before its commit");

    let all = sorted(first.into_iter().chain(second).collect());
    assert_eq!(committed(&fake), all);
    assert_eq!(read_committed(&fake), all);
    assert!(pending(&fake).is_empty() && aborted(&fake).is_empty());
    drop(sink);
}

#[test]
fn recovery_from_an_earlier_checkpoint_fences_open_transactions() {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, EndTxnMode::Serve);
    let disk = Disk::new();
    let mut sink = start(&fake, &disk, 0, &[]);
    let (batch, first) = records("first", 25);
    sink.write(&batch).unwrap();
    let json1 = sink.precommit(1).unwrap().unwrap();
    sink.commit(std::slice::from_ref(&json1)).unwrap();

    // Checkpoint 2 is pre-committed but never completes.
    let from = fake.requests().len();
    let (batch, second) = records("second", 25);
    sink.write(&batch).unwrap();
    let t2 = pre_committed(&sink.precommit(2).unwrap().unwrap());
    // And past it, more than the spill threshold is written: produced into a third,
    // not-yet-pre-committed transaction.
    let (big, third) = over_the_spill_threshold(b"third");
    sink.write(&big).unwrap();
    let open_ids = produced_ids(&fake, from);
    assert_eq!(open_ids.len(), 2, "checkpoint 2's transaction and the open one: {open_ids:?}");
    assert_eq!(open_ids[0], t2.transactional_id);
    assert!(open_ids.iter().all(|id| fake.is_ongoing(id)));
    assert_eq!(pending(&fake).len(), 30);
    drop(sink);

    // Restart from checkpoint 1.
    let before = fake.requests().len();
    let mut sink = start(&fake, &disk, 1, std::slice::from_ref(&json1));
    for id in &open_ids {
        assert!(
            fake.requests()
                .into_iter()
                .skip(before)
                .any(|s| s.api_key == ApiKey::InitProducerId && s.transactional_id.as_ref() == Some(id)),
            "recovery did not fence `{id}`"
        );
        assert!(!fake.is_ongoing(id), "`{id}` is still open");
    }
    assert!(
        !fake.requests().into_iter().skip(before).any(|s| s.api_key == ApiKey::EndTxn
            && s.commit == Some(true)
            && s.transactional_id.as_ref().is_some_and(|id| open_ids.contains(id))),
        "recovery committed a transaction its checkpoint does not own"
    );
    assert_eq!(committed(&fake), sorted(first.clone()));
    assert_eq!(read_committed(&fake), sorted(first.clone()));
    assert_eq!(aborted(&fake), sorted(second.into_iter().chain(third).collect()));

    // The sink goes on with new ids; the fenced records stay invisible.
    let (batch, again) = records("again", 10);
    sink.write(&batch).unwrap();
    let json = sink.precommit(2).unwrap().unwrap();
    assert!(!open_ids.contains(&pre_committed(&json).transactional_id), "an id was reused after fencing");
    sink.commit(&[json]).unwrap();
    let all = sorted(first.into_iter().chain(again).collect());
    assert_eq!(committed(&fake), all);
    assert_eq!(read_committed(&fake), all);
}

#[test]
fn committing_a_committed_transaction_again_is_not_an_error() {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, EndTxnMode::Serve);
    let disk = Disk::new();
    let mut sink = start(&fake, &disk, 0, &[]);
    let (batch, values) = records("once", 30);
    sink.write(&batch).unwrap();
    let json = sink.precommit(1).unwrap().unwrap();
    let t = pre_committed(&json);
    sink.commit(std::slice::from_ref(&json)).unwrap();
    // The commit is retried on the live sink, then by two recoveries from the same checkpoint.
    sink.commit(std::slice::from_ref(&json)).unwrap();
    drop(sink);
    drop(start(&fake, &disk, 1, std::slice::from_ref(&json)));
    drop(start(&fake, &disk, 1, std::slice::from_ref(&json)));

    let commits: Vec<_> = fake
        .requests_of(ApiKey::EndTxn)
        .into_iter()
        .filter(|s| s.transactional_id.as_deref() == Some(&t.transactional_id))
        .collect();
    assert_eq!(commits.len(), 4, "{commits:?}");
    assert!(commits.iter().all(|s| s.commit == Some(true)));
    assert_eq!(committed(&fake), sorted(values.clone()), "committed once, not duplicated");
    assert_eq!(read_committed(&fake), sorted(values));
    // The first ended the transaction; the fake answered the repeats with INVALID_TXN_STATE.
    assert_eq!(commits[0].code, Some(0));
    assert!(commits[1..].iter().all(|s| s.code == Some(INVALID_TXN_STATE)), "{commits:?}");
}

/// A broker that cannot end transactions is refused at recovery, fast, with a sentence that
/// names the cause.
fn refused(mode: EndTxnMode) {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, mode);
    let disk = Disk::new();
    let mut sink =
        TransactionalSink::open(settings(&fake), Some(std::sync::Arc::new(disk.store())), WRITER.into(), 0)
            .unwrap();
    let started = Instant::now();
    let error = sink.recover(0, &[]).expect_err("a broker without EndTxn was accepted").to_string();
    let elapsed = started.elapsed();
    assert!(error.contains("does not support transactions"), "{error}");
    assert!(elapsed < Duration::from_secs(30), "refusing took {elapsed:?}");
    let end_txns = fake.requests_of(ApiKey::EndTxn).len();
    match mode {
        EndTxnMode::NotAdvertised => {
            assert_eq!(end_txns, 0, "EndTxn sent to a broker that does not offer it")
        }
        _ => assert!(end_txns >= 1),
    }
}

#[test]
fn a_broker_that_drops_end_txn_is_refused() {
    refused(EndTxnMode::DropConnection);
}

#[test]
fn a_broker_without_end_txn_is_refused() {
    refused(EndTxnMode::NotAdvertised);
}

#[test]
fn a_declined_checkpoints_transaction_is_committed_with_the_next() {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, EndTxnMode::Serve);
    let disk = Disk::new();
    let mut sink = start(&fake, &disk, 0, &[]);
    // Checkpoint 1 is declined: its transaction stays pending in the task and goes into
    // checkpoint 2's state with checkpoint 2's own (as the sink task keeps them).
    let (batch, first) = records("declined", 15);
    sink.write(&batch).unwrap();
    let json1 = sink.precommit(1).unwrap().unwrap();
    let (batch, second) = records("next", 15);
    sink.write(&batch).unwrap();
    let json2 = sink.precommit(2).unwrap().unwrap();
    assert_ne!(pre_committed(&json1).transactional_id, pre_committed(&json2).transactional_id);
    // Checkpoint 2 completes; the process dies before committing either.
    drop(sink);
    assert!(committed(&fake).is_empty());

    let owned = [json1.clone(), json2.clone()];
    drop(start(&fake, &disk, 2, &owned));
    for json in &owned {
        let t = pre_committed(json);
        let ends: Vec<_> = fake
            .requests_of(ApiKey::EndTxn)
            .into_iter()
            .filter(|s| s.transactional_id.as_deref() == Some(&t.transactional_id))
            .collect();
        assert_eq!(ends.len(), 1, "{ends:?}");
        assert_eq!((ends[0].commit, ends[0].code), (Some(true), Some(0)));
        assert_eq!(ends[0].producer, Some((t.producer.id, t.producer.epoch)));
    }
    let all = sorted(first.into_iter().chain(second).collect());
    assert_eq!(committed(&fake), all);
    assert_eq!(read_committed(&fake), all);
}

#[test]
fn a_crash_before_any_checkpoint_completes_leaves_nothing_visible() {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, EndTxnMode::Serve);
    let disk = Disk::new();
    let mut sink = start(&fake, &disk, 0, &[]);
    let (batch, values) = records("lost", 20);
    sink.write(&batch).unwrap();
    let t = pre_committed(&sink.precommit(1).unwrap().unwrap());
    drop(sink);

    // No checkpoint completed: the restart recovers from none.
    let mut sink = start(&fake, &disk, 0, &[]);
    assert!(!fake.is_ongoing(&t.transactional_id));
    let fenced_epoch = fake.producer_of(&t.transactional_id).unwrap().1;
    assert!(fenced_epoch > t.producer.epoch, "the id's epoch was not bumped");
    assert!(committed(&fake).is_empty());
    assert!(read_committed(&fake).is_empty());
    assert_eq!(aborted(&fake), sorted(values));

    // A late commit of the fenced transaction (the old process's) is refused by the broker
    // (PRODUCER_FENCED, which the sink takes as "decided before") and changes nothing.
    sink.commit(&[serde_json::to_value(&t).unwrap()]).unwrap();
    let last = fake.requests_of(ApiKey::EndTxn).pop().unwrap();
    assert_eq!(last.transactional_id.as_deref(), Some(t.transactional_id.as_str()));
    assert_eq!(last.code, Some(PRODUCER_FENCED));
    assert!(committed(&fake).is_empty());
}

#[test]
fn a_zombie_producer_is_fenced_by_the_recovery() {
    let fake = FakeKafka::start(TOPIC, PARTITIONS, EndTxnMode::Serve);
    let disk = Disk::new();
    // Both sinks in one process: they share the store file through clones.
    let store = disk.store();
    let open = || {
        TransactionalSink::open(settings(&fake), Some(std::sync::Arc::new(store.clone())), WRITER.into(), 0)
            .unwrap()
    };
    let mut zombie = open();
    zombie.recover(0, &[]).unwrap();
    let (big, values) = over_the_spill_threshold(b"zomb1");
    zombie.write(&big).unwrap();
    let ids = produced_ids(&fake, 0);
    assert_eq!(ids.len(), 1);
    assert!(fake.is_ongoing(&ids[0]));

    // A new attempt recovers while the old one still runs.
    let mut sink = open();
    sink.recover(0, &[]).unwrap();
    assert!(!fake.is_ongoing(&ids[0]), "the zombie's transaction was not fenced");

    // The zombie's next produce into its transaction is refused: an error, not silence.
    let (big, _) = over_the_spill_threshold(b"zomb2");
    let error = zombie.write(&big).expect_err("a fenced producer wrote").to_string();
    assert!(error.contains("code 90"), "{error}");
    assert!(committed(&fake).is_empty());
    assert_eq!(aborted(&fake), sorted(values));

    // The new attempt is unaffected.
    let (batch, fresh) = records("fresh", 10);
    sink.write(&batch).unwrap();
    let json = sink.precommit(1).unwrap().unwrap();
    assert!(!ids.contains(&pre_committed(&json).transactional_id));
    sink.commit(&[json]).unwrap();
    assert_eq!(read_committed(&fake), sorted(fresh));
}
