//! The stream log against a real redb file.

mod common;

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
