use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::key_groups::key_group;

fn config(dir: &Path) -> LocalStateConfig {
    LocalStateConfig { base: dir.to_path_buf(), job: "job".into(), quota: None }
}

fn open(dir: &Path) -> LocalStore {
    LocalStore::open(&config(dir), "op", 0, 8, 0..8).unwrap()
}

/// Every live entry of a store, as (state, chain key) → value.
fn live(store: &LocalStore) -> BTreeMap<(String, Vec<u8>), Vec<u8>> {
    store
        .all_entries()
        .unwrap()
        .into_values()
        .flatten()
        .map(|e| ((e.state, e.key), e.value.unwrap()))
        .collect()
}

/// The live entries of a checkpoint's changes applied to `model` (state, chain key → value).
fn apply_changes(model: &mut BTreeMap<(String, Vec<u8>), Vec<u8>>, changes: Option<LocalChanges>) {
    let Some(changes) = changes else { return };
    for scope in changes.into_scopes().unwrap() {
        for e in scope.entries {
            assert_eq!(key_group(record_key(&e.state, &e.key), 8), scope.scope);
            match e.value {
                Some(v) => model.insert((e.state, e.key), v),
                None => model.remove(&(e.state, e.key)),
            };
        }
    }
}

#[test]
fn get_put_delete_scan_and_clear() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let a = u32::from(s.state_id("a").unwrap());
    assert_eq!(s.state_id("a").unwrap(), 0);
    s.put(a, b"k", b"", b"1").unwrap();
    s.apply(
        a,
        [(&b"k"[..], &b"f2"[..], Some(&b"x"[..])), (b"k", b"f1", Some(b"y")), (b"j", b"", Some(b"2"))],
    )
    .unwrap();
    assert_eq!(s.get(a, b"k", b"").unwrap(), Some(b"1".to_vec()));
    assert_eq!(
        s.multi_get(a, [(&b"j"[..], &b""[..]), (b"q", b"")]).unwrap(),
        vec![Some(b"2".to_vec()), None]
    );
    let fields: Vec<Vec<u8>> = s.scan(a, b"k", None, 10).unwrap().into_iter().map(|(f, _)| f).collect();
    assert_eq!(fields, vec![b"".to_vec(), b"f1".to_vec(), b"f2".to_vec()]);
    let page: Vec<Vec<u8>> = s.scan(a, b"k", Some(b"f1\0"), 1).unwrap().into_iter().map(|(f, _)| f).collect();
    assert_eq!(page, vec![b"f2".to_vec()]);
    s.delete(a, b"k", b"").unwrap();
    assert_eq!(s.get(a, b"k", b"").unwrap(), None);
    s.clear(a, b"k").unwrap();
    assert!(s.scan(a, b"k", None, 10).unwrap().is_empty());
    assert_eq!(s.get(a, b"j", b"").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn limits_and_foreign_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = LocalStore::open(&config(dir.path()), "op", 0, 8, 0..4).unwrap();
    let a = u32::from(s.state_id("a").unwrap());
    let foreign = (0u32..).map(|i| i.to_be_bytes()).find(|k| key_group(k, 8) >= 4).unwrap();
    assert!(matches!(s.put(a, &foreign, b"", b"v"), Err(LocalStateError::ForeignKey { .. })));
    assert!(matches!(s.put(a, b"", b"", b"v"), Err(LocalStateError::Limit(_))));
    assert!(matches!(s.get(7, b"k", b""), Err(LocalStateError::Limit(_))));
    assert!(matches!(s.state_id(&"n".repeat(65)), Err(LocalStateError::Limit(_))));
    for i in 1..MAX_STATES {
        s.state_id(&format!("s{i}")).unwrap();
    }
    let e = s.state_id("one-more").unwrap_err().to_string();
    assert!(e.contains("at most 16 host states"), "{e}");
}

#[test]
fn a_restored_store_holds_what_the_checkpoints_held() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open(dir.path());
    let a = u32::from(s.state_id("a").unwrap());
    let b = u32::from(s.state_id("b").unwrap());
    let mut model = BTreeMap::new();
    for i in 0..100u32 {
        s.put(if i % 3 == 0 { b } else { a }, &i.to_be_bytes(), &[i as u8], &i.to_le_bytes()).unwrap();
    }
    apply_changes(&mut model, s.checkpoint());
    assert!(s.checkpoint().is_none(), "nothing changed since");
    let mut r = open(dir.path()).restorer();
    for ((state, key), value) in &model {
        r.put(state, key, value).unwrap();
    }
    let restored = r.finish().unwrap();
    let all = live(&restored);
    assert_eq!(all, model);
    assert_eq!(model.len(), 100);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Entries of two states in any order (key groups interleaved, runs of a few hundred
    /// bytes, so a key group spans runs and runs do not follow each other in key order),
    /// some given twice: the restored store holds the last value of each, reads and
    /// scans like a written one and takes writes after.
    #[test]
    fn a_restore_in_any_order_holds_every_last_value(
        entries in prop::collection::vec((0u8..2, 0u16..300, 0u8..3, any::<u8>()), 1..400),
        run_bytes in 64usize..2048,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut model = BTreeMap::new();
        let mut r = open(dir.path()).restorer().with_run_bytes(run_bytes);
        for (state, key, field, value) in &entries {
            let state = format!("{HOST_STATE_PREFIX}{}", ["a", "b"][*state as usize]);
            let k = chain_key(&key.to_be_bytes(), &vec![b'f'; *field as usize]);
            let v = vec![*value; 1 + *value as usize % 40];
            if value % 3 == 0 {
                // Given twice in a row: the second wins.
                r.put(&state, &k, b"stale").unwrap();
            }
            r.put(&state, &k, &v).unwrap();
            model.insert((state, k), v);
        }
        let mut restored = r.finish().unwrap();
        let all = live(&restored);
        prop_assert_eq!(&all, &model);
        // Point reads, scans and writes work on what was ingested.
        let ((state, k), v) = model.iter().next().unwrap();
        let name = state.strip_prefix(HOST_STATE_PREFIX).unwrap();
        let id = u32::from(restored.state_id(name).unwrap());
        let (key, field) = split_chain_key(k).unwrap();
        prop_assert_eq!(restored.get(id, key, field).unwrap(), Some(v.clone()));
        let fields = model.keys().filter(|(s, c)| s == state && split_chain_key(c).unwrap().0 == key).count();
        prop_assert_eq!(restored.scan(id, key, None, 100).unwrap().len(), fields);
        restored.put(id, key, field, b"new").unwrap();
        prop_assert_eq!(restored.get(id, key, field).unwrap(), Some(b"new".to_vec()));
    }

    /// Entries in the order a chain of sorted chunks is visited (by key group, then key),
    /// so no run needs its sort: the restored store holds every value.
    #[test]
    fn a_restore_in_key_order_holds_every_value(
        keys in prop::collection::btree_set(0u16..3000, 1..400),
        run_bytes in 64usize..4096,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let state = format!("{HOST_STATE_PREFIX}a");
        let mut entries: Vec<(u32, Vec<u8>, Vec<u8>)> = keys
            .iter()
            .map(|k| {
                let group = store.owned_group(&k.to_be_bytes()).unwrap();
                (group, chain_key(&k.to_be_bytes(), b"f"), k.to_le_bytes().to_vec())
            })
            .collect();
        entries.sort();
        let mut r = store.restorer().with_run_bytes(run_bytes);
        let mut model = BTreeMap::new();
        for (_, k, v) in entries {
            r.put(&state, &k, &v).unwrap();
            model.insert((state.clone(), k), v);
        }
        let restored = r.finish().unwrap();
        prop_assert_eq!(live(&restored), model);
    }

    /// Random changes with checkpoints and spills of the changed keys in between: applying
    /// every checkpoint's changes in order gives the store's content, and a checkpoint's
    /// snapshot is not disturbed by writes made after it.
    #[test]
    fn checkpoints_carry_exactly_the_changes(ops in prop::collection::vec((0u8..4, 0u8..24, 0u8..3, any::<u8>()), 1..200)) {
        let dir = tempfile::tempdir().unwrap();
        let mut s = open(dir.path());
        let a = u32::from(s.state_id("a").unwrap());
        let mut model = BTreeMap::new();
        let mut pending = Vec::new();
        for (op, key, field, value) in ops {
            let key = [key];
            let field = vec![b'f'; field as usize];
            match op {
                0 => s.put(a, &key, &field, &[value]).unwrap(),
                1 => s.delete(a, &key, &field).unwrap(),
                // The changed keys so far go to the change marks on disk.
                3 => s.spill().unwrap(),
                _ if value % 4 == 0 => s.clear(a, &key).unwrap(),
                _ => {
                    // A checkpoint whose values are read later, after more writes.
                    pending.extend(s.checkpoint());
                    if value % 2 == 0 {
                        for c in pending.drain(..) {
                            apply_changes(&mut model, Some(c));
                        }
                    }
                }
            }
        }
        for c in pending.drain(..) {
            apply_changes(&mut model, Some(c));
        }
        apply_changes(&mut model, s.checkpoint());
        let all = live(&s);
        prop_assert_eq!(all, model);
        // Every spilled mark was read by its checkpoint and deleted.
        prop_assert_eq!(s.marks.iter().count(), 0);
    }
}

/// A store whose job belongs to `tenant`, and local stores beside it that reserve from the
/// tenant's quota.
fn owned_store(dir: &Path) -> (weir_store::Store, LocalStateConfig) {
    let store = weir_store::Store::open(&dir.join("weir.redb")).unwrap();
    store.set_owners(&[("job/job".to_string(), "tenant".to_string())]).unwrap();
    let config = LocalStateConfig::beside(&store, "job");
    assert!(config.quota.is_some());
    (store, config)
}

#[test]
fn the_reservation_is_held_until_the_files_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let (store, config) = owned_store(dir.path());
    let mut s = LocalStore::open(&config, "op", 0, 8, 0..8).unwrap();
    let a = u32::from(s.state_id("a").unwrap());
    s.put(a, b"k", b"", &[7; 4096]).unwrap();
    let reserved = store.usage("tenant").unwrap();
    assert!(reserved >= quota::QUOTA_STEP, "{reserved}");
    let folder = s.dir().to_path_buf();
    assert!(folder.is_dir());

    // The task goes (stop, cancel, a restart) while its writer still holds the changes of
    // the last barrier, whose snapshot keeps the files open.
    let changes = s.checkpoint().expect("a change");
    drop(s);
    assert!(folder.is_dir(), "the files stay while the changes are unread");
    assert_eq!(store.usage("tenant").unwrap(), reserved, "and so does their reservation");
    let scopes = changes.into_scopes().unwrap();
    assert_eq!(scopes.iter().map(|s| s.entries.len()).sum::<usize>(), 1);
    assert!(!folder.exists(), "the last handle removed the folder");
    assert_eq!(store.usage("tenant").unwrap(), 0, "then the reservation was given back");

    // A store dropped with nothing outstanding: gone and given back at once.
    let mut s = LocalStore::open(&config, "op", 1, 8, 0..8).unwrap();
    let a = u32::from(s.state_id("a").unwrap());
    s.put(a, b"k", b"", b"v").unwrap();
    let folder = s.dir().to_path_buf();
    assert!(store.usage("tenant").unwrap() > 0);
    drop(s);
    assert!(!folder.exists());
    assert_eq!(store.usage("tenant").unwrap(), 0);
}

#[test]
fn a_restore_dropped_midway_keeps_the_reservation_until_its_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let (store, config) = owned_store(dir.path());
    let mut restorer = LocalStore::open(&config, "op", 0, 8, 0..8).unwrap().restorer().with_run_bytes(64);
    for i in 0u32..200 {
        restorer.put("@host/a", &chain_key(&i.to_be_bytes(), b""), &[1; 100]).unwrap();
    }
    assert!(store.usage("tenant").unwrap() > 0);
    let job = dir.path().join("local-state/job");
    // The ingesting thread lets the files go when it has seen the restore end; never is
    // the reservation given back while they are there.
    drop(restorer);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.usage("tenant").unwrap() > 0 {
        assert!(std::time::Instant::now() < deadline, "the reservation is never given back");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let left: Vec<_> = std::fs::read_dir(&job).unwrap().collect();
    assert!(left.is_empty(), "given back while files remain: {left:?}");
}

#[test]
fn a_folder_that_cannot_be_removed_keeps_its_reservation() {
    let dir = tempfile::tempdir().unwrap();
    let (store, config) = owned_store(dir.path());
    store.reserve("tenant", 5 << 20).unwrap();
    // Not a folder: removing it as one fails (as a busy or read-only file system would).
    let stuck = dir.path().join("stuck");
    std::fs::write(&stuck, b"x").unwrap();
    quota::remove_then_release(stuck.clone(), config.quota.clone(), 5 << 20);
    assert_eq!(store.usage("tenant").unwrap(), 5 << 20, "held while it is there");
    assert!(quota::retry_parked() >= 1);
    assert_eq!(store.usage("tenant").unwrap(), 5 << 20);
    std::fs::remove_file(&stuck).unwrap();
    // The next store to open (or the next run's clean-up) tries again.
    drop(LocalStore::open(&config, "op", 0, 8, 0..8).unwrap());
    assert_eq!(store.usage("tenant").unwrap(), 0, "given back once it is gone");
}
