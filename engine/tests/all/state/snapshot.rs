//! The snapshot contract through the real wasmtime host: `snapshot` returns the changes
//! since the last one (or everything when full) and `restore` rebuilds the state.

use crate::common;

use std::collections::BTreeMap;

use weir::guest::bindings::{ChangeKind, StateDelta};
use weir::guest::{InstanceLimits, OperatorInstance};
use weir::record::{Batch, to_msgpack};

fn entries(delta: &StateDelta) -> BTreeMap<String, Option<u64>> {
    let mut out = BTreeMap::new();
    let mut offset = 0;
    for e in &delta.entries {
        let key = &delta.data[offset..offset + e.key_len as usize];
        let value = &delta.data[offset + e.key_len as usize..offset + (e.key_len + e.value_len) as usize];
        offset += (e.key_len + e.value_len) as usize;
        assert_eq!(delta.names[e.state as usize], "counts");
        let word: String = rmp_serde::from_slice(key).unwrap();
        let v = match e.kind {
            ChangeKind::Put => Some(rmp_serde::from_slice(value).unwrap()),
            ChangeKind::Delete => None,
        };
        out.insert(word, v);
    }
    out
}

fn totals(out: &Batch) -> BTreeMap<String, u64> {
    out.iter()
        .map(|r| (rmp_serde::from_slice(r.key).unwrap(), rmp_serde::from_slice(r.value).unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_snapshot_and_restore_round_trip() {
    let module =
        common::host().load("wordcount", &std::fs::read(common::guest_path("wordcount")).unwrap()).unwrap();
    let limits = InstanceLimits::default();
    let mut a = OperatorInstance::new(&module, "count", 0, limits).await.unwrap();
    let info = a.describe().await.unwrap();
    assert!(!info.name.is_empty());
    a.open(&common::count_context(false)).await.unwrap();
    a.process(0, &common::word_batch(&["a", "b", "a"])).await.unwrap();

    let first = entries(&a.snapshot(1, false).await.unwrap());
    assert_eq!(first, BTreeMap::from([("a".into(), Some(2)), ("b".into(), Some(1))]));
    // Nothing changed since: the next incremental snapshot is empty.
    assert!(a.snapshot(2, false).await.unwrap().entries.is_empty());

    a.process(0, &common::word_batch(&["c", "a"])).await.unwrap();
    let third = entries(&a.snapshot(3, false).await.unwrap());
    assert_eq!(third, BTreeMap::from([("a".into(), Some(3)), ("c".into(), Some(1))]), "only changed keys");

    let full = a.snapshot(4, true).await.unwrap();
    assert_eq!(
        entries(&full),
        BTreeMap::from([("a".into(), Some(3)), ("b".into(), Some(1)), ("c".into(), Some(1))])
    );

    // A fresh instance restored from the full snapshot continues where `a` stands.
    let mut b = OperatorInstance::new(&module, "count", 0, limits).await.unwrap();
    b.restore(info.state_version, &full).await.unwrap();
    b.open(&common::count_context(true)).await.unwrap();
    let next = common::word_batch(&["a", "b", "d"]);
    let from_a = totals(&a.process(0, &next).await.unwrap());
    let from_b = totals(&b.process(0, &next).await.unwrap());
    assert_eq!(from_a, from_b);
    assert_eq!(from_b["a"], 4);
    assert_eq!(from_b["d"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trapped_instance_is_never_entered_again() {
    let module =
        common::host().load("faulty", &std::fs::read(common::guest_path("faulty")).unwrap()).unwrap();
    let mut inst = OperatorInstance::new(&module, "op", 0, InstanceLimits::default()).await.unwrap();
    let mut ctx = common::count_context(false);
    ctx.config = r#"{"panic_at": 1}"#.into();
    inst.open(&ctx).await.unwrap();
    let mut b = Batch::empty();
    b.push(&[], &to_msgpack(&1u64), 0);
    let e = inst.process(0, &b).await.unwrap_err().to_string();
    assert!(e.contains("poison record 1"), "{e}");
    let e = inst.process(0, &b).await.unwrap_err().to_string();
    assert!(e.contains("trapped earlier and cannot be entered again"), "{e}");
}
