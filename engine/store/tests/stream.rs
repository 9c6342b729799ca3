//! The stream log against a real redb file.

mod common;
mod stream_support;

use stream_support::made;
use weir_store::{LogRecord, Store, StoreError};

fn record(i: u64) -> LogRecord {
    LogRecord {
        key: format!("k{i}").into_bytes(),
        value: format!("value {i}").into_bytes(),
        timestamp: i as i64 * 1000 - 5000,
    }
}

#[test]
fn append_read_and_end_offsets() {
    let (_dir, store) = common::open();
    store.create_stream("clicks", 3).unwrap();
    store.create_stream("clicks", 3).unwrap();
    assert_eq!(store.stream_partitions("clicks").unwrap(), 3);
    assert_eq!(store.end_offset("clicks", 1).unwrap(), 0);

    let first: Vec<_> = (0..5).map(record).collect();
    assert_eq!(store.append("clicks", 1, &first).unwrap(), 0);
    let second: Vec<_> = (5..8).map(record).collect();
    assert_eq!(store.append("clicks", 1, &second).unwrap(), 5);
    assert_eq!(store.append("clicks", 1, &[]).unwrap(), 8);
    assert_eq!(store.append("clicks", 2, &[record(100)]).unwrap(), 0);
    assert_eq!(store.end_offset("clicks", 1).unwrap(), 8);
    assert_eq!(store.end_offset("clicks", 0).unwrap(), 0);

    let all = store.read("clicks", 1, 0, 100).unwrap();
    assert_eq!(all.iter().map(|(o, _)| *o).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    assert_eq!(all.into_iter().map(|(_, r)| r).collect::<Vec<_>>(), (0..8).map(record).collect::<Vec<_>>());
    let page = store.read("clicks", 1, 3, 2).unwrap();
    assert_eq!(page, vec![(3, record(3)), (4, record(4))]);
    assert!(store.read("clicks", 1, 8, 10).unwrap().is_empty());
    assert!(store.read("clicks", 1, 0, 0).unwrap().is_empty());
    assert_eq!(store.read("clicks", 2, 0, 10).unwrap(), vec![(0, record(100))]);
    assert_eq!(store.streams().unwrap(), vec![("clicks".to_owned(), 3)]);
}

#[test]
fn unknown_streams_partitions_and_bad_names_are_errors() {
    let (_dir, store) = common::open();
    let err = store.stream_partitions("nope").unwrap_err();
    assert!(matches!(err, StoreError::UnknownStream { ref name } if name == "nope"), "{err}");
    assert!(err.to_string().contains("`nope`"));
    assert!(matches!(store.append("nope", 0, &[record(0)]), Err(StoreError::UnknownStream { .. })));
    assert!(matches!(store.read("nope", 0, 0, 1), Err(StoreError::UnknownStream { .. })));
    assert!(matches!(store.end_offset("nope", 0), Err(StoreError::UnknownStream { .. })));
    assert!(matches!(store.stage("nope", "w", 1, &[]), Err(StoreError::UnknownStream { .. })));

    store.create_stream("s", 2).unwrap();
    let err = store.append("s", 2, &[record(0)]).unwrap_err();
    assert!(matches!(err, StoreError::UnknownPartition { partition: 2, partitions: 2, .. }), "{err}");
    assert!(matches!(store.read("s", 5, 0, 1), Err(StoreError::UnknownPartition { .. })));
    assert!(matches!(store.stage("s", "w", 1, &[(2, record(0))]), Err(StoreError::UnknownPartition { .. })));
    assert!(matches!(
        store.create_stream("s", 3),
        Err(StoreError::StreamExists { existing: 2, requested: 3, .. })
    ));

    let long = "x".repeat(129);
    for bad in ["", ".hidden", "with space", "slash/name", "ümlaut", long.as_str()] {
        let err = store.create_stream(bad, 1).unwrap_err();
        assert!(matches!(err, StoreError::InvalidStreamName { .. }), "{bad:?}: {err}");
    }
    for good in ["a", "A.b_c-9", "x".repeat(128).as_str(), "_x", "-"] {
        store.create_stream(good, 1).unwrap();
    }
    assert!(matches!(store.create_stream("zero", 0), Err(StoreError::InvalidPartitionCount { .. })));
    assert!(matches!(store.create_stream("many", 1025), Err(StoreError::InvalidPartitionCount { .. })));
    store.create_stream("max", 1024).unwrap();
}

#[test]
fn staged_records_become_visible_only_when_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.redb");
    {
        let store = Store::open(&path).unwrap();
        store.create_stream("out", 2).unwrap();
        store.append("out", 0, &[record(0)]).unwrap();
        let writer = "job/sink/0";
        store.stage("out", writer, 1, &[(0, record(1)), (1, record(2))]).unwrap();
        store.stage("out", writer, 2, &[(0, record(3))]).unwrap();
        store.stage("out", writer, 1, &[(0, record(4))]).unwrap();
        store.stage("out", "job/sink/1", 1, &[(1, record(50))]).unwrap();
        assert_eq!(store.staged_count("out", writer).unwrap(), 4);
        assert_eq!(store.end_offset("out", 0).unwrap(), 1, "staged records are invisible");
        assert_eq!(store.read("out", 0, 0, 10).unwrap(), vec![(0, record(0))]);

        // Epoch 1 only, in staging order.
        assert_eq!(store.commit_staged("out", writer, 1).unwrap(), 3);
        assert_eq!(
            store.read("out", 0, 0, 10).unwrap(),
            vec![(0, record(0)), (1, record(1)), (2, record(4))]
        );
        assert_eq!(store.read("out", 1, 0, 10).unwrap(), vec![(0, record(2))]);
        assert_eq!(store.commit_staged("out", writer, 1).unwrap(), 0, "idempotent");
        assert_eq!(store.staged_count("out", writer).unwrap(), 1);
        assert_eq!(store.staged_count("out", "job/sink/1").unwrap(), 1, "other writers untouched");

        // Recovery to epoch 1 drops epoch 2; epoch 3 staged afterwards commits normally.
        assert_eq!(store.discard_staged("out", writer, 1).unwrap(), 1);
        assert_eq!(store.staged_count("out", writer).unwrap(), 0);
        store.stage("out", writer, 3, &[(0, record(5))]).unwrap();
        assert_eq!(store.commit_staged("out", writer, 3).unwrap(), 1);
        assert_eq!(store.end_offset("out", 0).unwrap(), 4);
        store.stage("out", writer, 4, &[(1, record(6))]).unwrap();
        assert_eq!(store.discard_staged("out", writer, u64::MAX).unwrap(), 0);
        // A durable commit makes the earlier non-durable stage durable too.
        store.append("out", 1, &[record(7)]).unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.stream_partitions("out").unwrap(), 2);
    let partition0: Vec<_> = store.read("out", 0, 0, 10).unwrap().into_iter().map(|(_, r)| r).collect();
    assert_eq!(partition0, vec![record(0), record(1), record(4), record(5)]);
    assert_eq!(store.read("out", 1, 0, 10).unwrap(), vec![(0, record(2)), (1, record(7))]);
    assert_eq!(store.staged_count("out", "job/sink/0").unwrap(), 1);
    assert_eq!(store.commit_staged("out", "job/sink/0", 10).unwrap(), 1);
    assert_eq!(store.read("out", 1, 2, 10).unwrap(), vec![(2, record(6))]);
}

mod model {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use weir_store::{ChunkBuffer, LogRecord, Store};

    use super::made;
    use crate::stream_support::stage_inline;

    const PARTITIONS: u32 = 3;
    const WRITERS: [&str; 2] = ["job/a/0", "job/a/1"];

    /// How many records an operation makes: usually a few, sometimes more than a chunk holds.
    fn count() -> impl Strategy<Value = usize> {
        prop_oneof![6 => 0usize..40, 2 => 40usize..400, 1 => 1000usize..2200]
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// Records to a partition, through `append` or (`buffer`) `append_buffer`.
        Append {
            partition: u32,
            n: usize,
            seed: u64,
            huge: bool,
            buffer: bool,
        },
        /// Records to two partitions in one transaction.
        AppendBoth {
            n: usize,
            m: usize,
            seed: u64,
        },
        /// Records spread over the partitions by `seed`, through `stage` or `stage_buffer`.
        Stage {
            writer: usize,
            epoch: u64,
            n: usize,
            seed: u64,
            buffer: bool,
        },
        /// Records staged inline, as the version before chunk bodies did (a store upgraded
        /// with an open transaction).
        StageInline {
            writer: usize,
            epoch: u64,
            n: usize,
            seed: u64,
        },
        Commit {
            writer: usize,
            up_to: u64,
        },
        Discard {
            writer: usize,
            after: u64,
        },
        /// `from` is taken modulo the partition's length + 3.
        Read {
            partition: u32,
            from: u64,
            max: usize,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..PARTITIONS, count(), any::<u64>(), prop::bool::weighted(0.1), any::<bool>())
                .prop_map(|(partition, n, seed, huge, buffer)| Op::Append { partition, n, seed, huge, buffer }),
            1 => (0usize..50, 0usize..50, any::<u64>()).prop_map(|(n, m, seed)| Op::AppendBoth { n, m, seed }),
            3 => (0..2usize, 1..6u64, count(), any::<u64>(), any::<bool>())
                .prop_map(|(writer, epoch, n, seed, buffer)| Op::Stage { writer, epoch, n, seed, buffer }),
            1 => (0..2usize, 1..6u64, 0usize..12, any::<u64>())
                .prop_map(|(writer, epoch, n, seed)| Op::StageInline { writer, epoch, n, seed }),
            2 => (0..2usize, 0..7u64).prop_map(|(writer, up_to)| Op::Commit { writer, up_to }),
            1 => (0..2usize, 0..6u64).prop_map(|(writer, after)| Op::Discard { writer, after }),
            4 => (0..PARTITIONS, any::<u64>(), prop_oneof![1usize..5, 1usize..3000])
                .prop_map(|(partition, from, max)| Op::Read { partition, from, max }),
        ]
    }

    fn spread(records: Vec<LogRecord>, seed: u64) -> Vec<(u32, LogRecord)> {
        records.into_iter().enumerate().map(|(i, r)| (((seed >> (i % 32)) % 3) as u32, r)).collect()
    }

    /// The log as a model: per partition its records; per (writer, epoch) what is staged.
    #[derive(Default)]
    struct Model {
        log: Vec<Vec<LogRecord>>,
        staged: BTreeMap<(usize, u64), Vec<(u32, LogRecord)>>,
    }

    fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        store.create_stream("s", PARTITIONS).unwrap();
        store.set_owners(&[("stream/s".into(), "t".into())]).unwrap();
        store.rebuild_usage(&BTreeMap::new()).unwrap();
        let mut model = Model { log: vec![Vec::new(); PARTITIONS as usize], ..Model::default() };
        for op in ops {
            match op {
                Op::Append { partition, n, seed, huge, buffer } => {
                    let records = made(n, seed, huge);
                    let first = if buffer {
                        let mut b = ChunkBuffer::new();
                        records.iter().for_each(|r| b.push(partition, &r.key, &r.value, r.timestamp));
                        let firsts = store.append_buffer("s", &b).unwrap();
                        prop_assert_eq!(firsts.len(), usize::from(n > 0));
                        firsts.first().map_or(model.log[partition as usize].len() as u64, |(p, f)| {
                            assert_eq!(*p, partition);
                            *f
                        })
                    } else {
                        store.append("s", partition, &records).unwrap()
                    };
                    prop_assert_eq!(first, model.log[partition as usize].len() as u64);
                    model.log[partition as usize].extend(records);
                }
                Op::AppendBoth { n, m, seed } => {
                    let (a, b) = (made(n, seed, false), made(m, seed ^ 1, false));
                    let firsts = store.append_partitions("s", &[(2, &a), (0, &b)]).unwrap();
                    prop_assert_eq!(firsts, vec![model.log[2].len() as u64, model.log[0].len() as u64]);
                    model.log[2].extend(a);
                    model.log[0].extend(b);
                }
                Op::Stage { writer, epoch, n, seed, buffer } => {
                    let records = spread(made(n, seed, false), seed);
                    if buffer {
                        let mut b = ChunkBuffer::new();
                        records.iter().for_each(|(p, r)| b.push(*p, &r.key, &r.value, r.timestamp));
                        store.stage_buffer("s", WRITERS[writer], epoch, &b).unwrap();
                    } else {
                        store.stage("s", WRITERS[writer], epoch, &records).unwrap();
                    }
                    model.staged.entry((writer, epoch)).or_default().extend(records);
                }
                Op::StageInline { writer, epoch, n, seed } => {
                    let records = spread(made(n, seed, false), seed);
                    stage_inline(&store, "s", WRITERS[writer], epoch, &records, "t");
                    // One chunk per partition: within an epoch, records of one partition stay
                    // in order, which is all the log keeps.
                    model.staged.entry((writer, epoch)).or_default().extend(records);
                }
                Op::Commit { writer, up_to } => {
                    let mut expected = 0;
                    let keys: Vec<_> =
                        model.staged.range((writer, 0)..=(writer, up_to)).map(|(k, _)| *k).collect();
                    for key in keys {
                        for (p, r) in model.staged.remove(&key).unwrap() {
                            model.log[p as usize].push(r);
                            expected += 1;
                        }
                    }
                    prop_assert_eq!(store.commit_staged("s", WRITERS[writer], up_to).unwrap(), expected);
                }
                Op::Discard { writer, after } => {
                    let keys: Vec<_> = model
                        .staged
                        .range((writer, after + 1)..=(writer, u64::MAX))
                        .map(|(k, _)| *k)
                        .collect();
                    let expected: usize = keys.iter().map(|k| model.staged.remove(k).unwrap().len()).sum();
                    prop_assert_eq!(
                        store.discard_staged("s", WRITERS[writer], after).unwrap(),
                        expected as u64
                    );
                }
                Op::Read { partition, from, max } => {
                    let log = &model.log[partition as usize];
                    let from = from % (log.len() as u64 + 3);
                    let expected: Vec<(u64, LogRecord)> =
                        (from..).zip(log.iter().skip(from as usize).take(max).cloned()).collect();
                    let got = store.read("s", partition, from, max).unwrap();
                    prop_assert_eq!(got.len(), expected.len());
                    prop_assert!(got == expected, "read {} from {} of partition {}", max, from, partition);
                }
            }
            for p in 0..PARTITIONS {
                prop_assert_eq!(store.end_offset("s", p).unwrap(), model.log[p as usize].len() as u64);
            }
            for (w, writer) in WRITERS.iter().enumerate() {
                let staged: usize = model.staged.range((w, 0)..=(w, u64::MAX)).map(|(_, r)| r.len()).sum();
                prop_assert_eq!(store.staged_count("s", writer).unwrap(), staged as u64);
            }
            let ledger = store.usage_ledger().unwrap().get("t").copied().unwrap_or(0);
            prop_assert_eq!(ledger, store.scan_usage().unwrap().get("t").copied().unwrap_or(0));
        }
        for p in 0..PARTITIONS {
            let all: Vec<LogRecord> =
                store.read("s", p, 0, usize::MAX).unwrap().into_iter().map(|(_, r)| r).collect();
            prop_assert!(all == model.log[p as usize], "partition {} differs", p);
        }
        let ledger = store.usage_ledger().unwrap().get("t").copied().unwrap_or(0);
        prop_assert_eq!(ledger, store.scan_usage().unwrap().get("t").copied().unwrap_or(0));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        /// Random appends (inline chunks), stages (referenced bodies, or inline as before
        /// bodies), commits, discards and reads at random offsets across both kinds agree with
        /// a plain `Vec` per partition, and the usage ledger with a recount after every step.
        #[test]
        fn the_chunked_log_behaves_like_a_vec_per_partition(ops in prop::collection::vec(op(), 1..24)) {
            run(ops)?;
        }
    }
}

mod migration {
    use std::collections::BTreeMap;

    use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableHandle};
    use weir_store::{LogRecord, Store, StoreError, entry_bytes};

    use super::made;
    use crate::stream_support::{old_record, varint};

    const OLD_LOG: TableDefinition<'_, (&str, u32, u64), &[u8]> = TableDefinition::new("weir.log");
    const OLD_STAGED: TableDefinition<'_, (&str, &str, u64, u64), &[u8]> =
        TableDefinition::new("weir.log_staged");
    const ENDS: TableDefinition<'_, (&str, u32), u64> = TableDefinition::new("weir.log_ends");
    const USAGE: TableDefinition<'_, &str, u64> = TableDefinition::new("weir.usage");

    fn staged_value(partition: u32, r: &LogRecord) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, u64::from(partition));
        out.extend(old_record(r));
        out
    }

    /// A store written in the one-record-per-value format (with a damaged record and a damaged
    /// staged entry, and its ledger as that version kept it) opens: its records are where they
    /// were, staged records commit, damaged ones report `Corrupt` while their neighbours stay
    /// readable, the old tables are gone and the ledger equals a recount.
    #[test]
    fn a_store_of_the_old_format_is_migrated_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weir.redb");
        {
            let store = Store::open(&path).unwrap();
            store.create_stream("old", 2).unwrap();
            store.set_owners(&[("stream/old".into(), "t".into())]).unwrap();
            store.rebuild_usage(&BTreeMap::new()).unwrap();
        }
        let p0 = made(2500, 7, true);
        let p1 = made(3, 8, false);
        let staged: Vec<(u32, LogRecord)> =
            made(6, 9, false).into_iter().enumerate().map(|(i, r)| ((i % 2) as u32, r)).collect();
        {
            let db = Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            let mut charged = 0i64;
            {
                let mut log = txn.open_table(OLD_LOG).unwrap();
                let mut put = |p: u32, o: u64, bytes: &[u8]| {
                    log.insert(("old", p, o), bytes).unwrap();
                    charged += entry_bytes("old".len() + 12, bytes.len());
                };
                for (o, r) in p0.iter().enumerate() {
                    put(0, o as u64, &old_record(r));
                }
                put(1, 0, &old_record(&p1[0]));
                put(1, 1, &[0xff]);
                put(1, 2, &old_record(&p1[2]));
                let mut ends = txn.open_table(ENDS).unwrap();
                ends.insert(("old", 0), 2500).unwrap();
                ends.insert(("old", 1), 3).unwrap();
                charged += 2 * entry_bytes("old".len() + 4, 8);
                let mut old_staged = txn.open_table(OLD_STAGED).unwrap();
                let mut stage = |w: &str, e: u64, s: u64, bytes: &[u8]| {
                    old_staged.insert(("old", w, e, s), bytes).unwrap();
                    charged += entry_bytes("old".len() + w.len() + 16, bytes.len());
                };
                for (s, (p, r)) in staged.iter().enumerate() {
                    stage("w", 1 + s as u64 / 4, s as u64 % 4, &staged_value(*p, r));
                }
                stage("w2", 1, 0, &[0x80]);
                let mut usage = txn.open_table(USAGE).unwrap();
                let before = usage.get("t").unwrap().map_or(0, |v| v.value());
                usage.insert("t", before + charged as u64).unwrap();
            }
            txn.commit().unwrap();
        }

        let store = Store::open(&path).unwrap();
        let read: Vec<LogRecord> =
            store.read("old", 0, 0, 5000).unwrap().into_iter().map(|(_, r)| r).collect();
        assert!(read == p0, "partition 0 as it was");
        for from in [0u64, 1, 1023, 1024, 1025, 2047, 2048, 2499] {
            let got = store.read("old", 0, from, 2).unwrap();
            let want: Vec<_> = (from..).zip(p0.iter().skip(from as usize).take(2).cloned()).collect();
            assert!(got == want, "from {from}");
        }
        assert_eq!(store.end_offset("old", 0).unwrap(), 2500);
        assert_eq!(store.read("old", 1, 0, 1).unwrap(), vec![(0, p1[0].clone())]);
        let err = store.read("old", 1, 0, 10).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert!(matches!(store.read("old", 1, 1, 1), Err(StoreError::Corrupt { .. })));
        assert_eq!(store.read("old", 1, 2, 10).unwrap(), vec![(2, p1[2].clone())]);
        assert_eq!(
            store.usage_ledger().unwrap().get("t").copied(),
            store.scan_usage().unwrap().get("t").copied(),
            "ledger = recount"
        );

        assert_eq!(store.staged_count("old", "w").unwrap(), 6);
        assert_eq!(store.staged_count("old", "w2").unwrap(), 1);
        assert!(matches!(store.commit_staged("old", "w2", 5), Err(StoreError::Corrupt { .. })));
        assert_eq!(store.commit_staged("old", "w", 1).unwrap(), 4);
        assert_eq!(store.commit_staged("old", "w", 2).unwrap(), 2);
        let tail: Vec<LogRecord> =
            store.read("old", 0, 2500, 10).unwrap().into_iter().map(|(_, r)| r).collect();
        let want: Vec<LogRecord> = staged.iter().filter(|(p, _)| *p == 0).map(|(_, r)| r.clone()).collect();
        assert_eq!(tail, want, "staged records commit in staging order");
        assert_eq!(store.end_offset("old", 1).unwrap(), 6);
        assert_eq!(store.discard_staged("old", "w2", 0).unwrap(), 1);
        assert_eq!(
            store.usage_ledger().unwrap().get("t").copied(),
            store.scan_usage().unwrap().get("t").copied()
        );

        let tables: Vec<String> = store
            .database()
            .unwrap()
            .begin_read()
            .unwrap()
            .list_tables()
            .unwrap()
            .map(|t| t.name().to_owned())
            .collect();
        assert!(!tables.iter().any(|t| t == "weir.log" || t == "weir.log_staged"), "{tables:?}");
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.read("old", 0, 0, 5000).unwrap().len(), 2503, "a second open changes nothing");
    }
}

mod corrupt {
    use redb::{ReadableDatabase, ReadableTable, TableDefinition};
    use weir_store::{LogRecord, Store, StoreError};

    use super::{made, record};

    const LOG: TableDefinition<'_, (&str, u32, u64), &[u8]> = TableDefinition::new("weir.log_chunks");
    const STAGED: TableDefinition<'_, (&str, &str, u64, u64, u32), &[u8]> =
        TableDefinition::new("weir.log_staged_chunks");

    /// Rewrites the log chunk at `first` of partition 0 with `damage` (`None`: removes it).
    fn damage(store: &Store, first: u64, damage: impl FnOnce(&mut Vec<u8>) -> bool) {
        let db = store.database().unwrap();
        let mut txn = db.begin_write().unwrap();
        // Not durable: quick, and every later read sees it.
        txn.set_durability(redb::Durability::None).unwrap();
        {
            let mut log = txn.open_table(LOG).unwrap();
            let mut bytes = log.get(("s", 0, first)).unwrap().expect("a chunk there").value().to_vec();
            if damage(&mut bytes) {
                log.insert(("s", 0, first), bytes.as_slice()).unwrap();
            } else {
                log.remove(("s", 0, first)).unwrap();
            }
        }
        txn.commit().unwrap();
    }

    fn fresh(records: &[LogRecord]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        store.create_stream("s", 1).unwrap();
        store.append("s", 0, records).unwrap();
        (dir, store)
    }

    fn is_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>) -> bool {
        matches!(result, Err(StoreError::Corrupt { .. }))
    }

    /// A damaged chunk (truncated, unknown version, a count too high or 0, a missing chunk,
    /// any flipped byte) reads as `StoreError::Corrupt` or as records, never a panic; a damaged
    /// staged chunk fails its commit and leaves the log as it was.
    #[test]
    fn damaged_chunks_are_corrupt_not_panics() {
        let records = made(2000, 3, false);
        let (_dir, store) = fresh(&records);
        damage(&store, 0, |b| {
            b.truncate(b.len() - 1);
            true
        });
        // A read stops at what it needs: the damage shows to the read that walks into it.
        assert!(is_corrupt(store.read("s", 0, 0, 3000)));
        assert!(is_corrupt(store.read("s", 0, 5, 3000)));
        let (_dir, store) = fresh(&records);
        damage(&store, 0, |b| {
            b[0] = 9;
            true
        });
        let err = store.read("s", 0, 0, 1).unwrap_err();
        assert!(err.to_string().contains("version"), "{err}");
        for count in [0u32, u32::MAX] {
            let (_dir, store) = fresh(&records);
            damage(&store, 0, |b| {
                b[1..5].copy_from_slice(&count.to_le_bytes());
                true
            });
            assert!(is_corrupt(store.read("s", 0, 0, 3000)), "count {count}");
        }
        // A missing chunk in the middle: the next one does not start where the last ended.
        let (_dir, store) = fresh(&records);
        let second = store.read("s", 0, 0, 3000).unwrap().len();
        assert_eq!(second, 2000);
        let firsts: Vec<u64> = {
            let db = store.database().unwrap();
            let txn = db.begin_read().unwrap();
            let log = txn.open_table(LOG).unwrap();
            log.iter().unwrap().map(|i| i.unwrap().0.value().2).collect()
        };
        assert!(firsts.len() >= 3, "{firsts:?}");
        damage(&store, firsts[1], |_| false);
        let err = store.read("s", 0, 0, 3000).unwrap_err();
        assert!(err.to_string().contains("previous chunk ends"), "{err}");
        assert_eq!(store.read("s", 0, 0, firsts[1] as usize).unwrap().len(), firsts[1] as usize);

        // Every single flipped byte of a small chunk: records or Corrupt.
        let small: Vec<LogRecord> = (0..5).map(record).collect();
        let (_dir, store) = fresh(&small);
        let len = store
            .database()
            .unwrap()
            .begin_read()
            .unwrap()
            .open_table(LOG)
            .unwrap()
            .get(("s", 0, 0))
            .unwrap()
            .unwrap()
            .value()
            .len();
        for at in 0..len {
            for flip in [0x01u8, 0x80, 0xff] {
                damage(&store, 0, |b| {
                    b[at] ^= flip;
                    true
                });
                match store.read("s", 0, 0, 10) {
                    Ok(read) => assert!(read.len() <= 5),
                    Err(StoreError::Corrupt { .. }) => {}
                    Err(e) => panic!("byte {at}: {e}"),
                }
                damage(&store, 0, |b| {
                    b[at] ^= flip;
                    true
                });
            }
        }
        assert_eq!(store.read("s", 0, 0, 10).unwrap().into_iter().map(|(_, r)| r).collect::<Vec<_>>(), small);

        // A damaged staged chunk: its commit fails and commits nothing.
        store.stage("s", "w", 1, &[(0, small[0].clone()), (0, small[1].clone())]).unwrap();
        let db = store.database().unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut staged = txn.open_table(STAGED).unwrap();
            let mut bytes = staged.get(("s", "w", 1, 0, 0)).unwrap().expect("staged").value().to_vec();
            bytes[1..5].copy_from_slice(&3u32.to_le_bytes());
            staged.insert(("s", "w", 1, 0, 0), bytes.as_slice()).unwrap();
        }
        txn.commit().unwrap();
        drop(db);
        assert!(is_corrupt(store.commit_staged("s", "w", 1)));
        assert_eq!(store.end_offset("s", 0).unwrap(), 5, "nothing committed");
    }
}
