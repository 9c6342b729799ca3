//! `KeyedState`: a map from record keys to values, with change tracking.

use std::borrow::Borrow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::tracking::Tracked;
use super::{DeltaWriter, StateStore};
use crate::codec::write_msgpack;
use crate::{Error, Result};

/// The key type of a [`KeyedState`] used only through its `*_raw` methods, with keys taken
/// as bytes straight from records (for example `record.key_bytes()`). It has no value, so
/// the typed methods, which would encode a key, are not available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawKey {}

/// State keyed by record key: a map from keys of type `K` to values of type `V`.
///
/// Entries are stored under the MessagePack encoding of their key (named fields), which is
/// how the SDK encodes record keys, so an entry's key equals the key bytes of the records it
/// belongs to and the host can assign it to their key group. The typed methods (`get`,
/// `insert`, ...) encode `K`; the `*_raw` methods take encoded keys such as
/// [`Record::key_bytes`](crate::Record::key_bytes) and skip the encoding. Values are kept
/// decoded and encoded (MessagePack, named fields) only when a snapshot needs them.
///
/// Lookups use a deterministic hasher and never call the host. Every method that may change
/// a value (`get_mut`, `insert`, `remove`, ...) marks its key as changed for the next
/// snapshot.
///
/// # Panics
///
/// The typed methods panic if `K`'s `Serialize` implementation fails, which the usual key
/// types (strings, integers, tuples and structs of them) never do.
pub struct KeyedState<K: ?Sized, V> {
    entries: Entries<V>,
    scratch: Cell<Vec<u8>>,
    tracked: Tracked,
    /// Where a snapshot in parts stopped, until it is done or given up.
    walk: Option<Walk>,
    key: PhantomData<fn(&K)>,
}

/// A snapshot of one [`KeyedState`] under way, resumable between the parts of a snapshot.
///
/// Invariant: what the entries already written hold is forgotten (slots clean and persisted,
/// deletes out of `deleted`); what is not yet written is tracked exactly as before the
/// snapshot began. So giving a walk up, at any point, loses no change the host has not got.
struct Walk {
    /// The [`DeltaWriter::snapshot`] it belongs to.
    snapshot: u64,
    order: Order,
}

enum Order {
    /// An incremental snapshot: the deletes, in key order (each still in `deleted` until
    /// written), then the dirty keys of `Entries::dirty` from `next_dirty` on.
    Changes { deletes: Vec<Rc<[u8]>>, next_delete: usize, next_dirty: usize },
    /// A full snapshot: every key live when it began, from `next` on.
    Full { keys: Vec<Rc<[u8]>>, next: usize },
}

struct Entries<V> {
    map: FxHashMap<Rc<[u8]>, Slot<V>>,
    /// Keys whose slot turned dirty since the last snapshot, in that order; a key may
    /// appear twice if it was removed and inserted again.
    dirty: Vec<Rc<[u8]>>,
    /// Keys the host holds (seen by a snapshot or restored) that were removed since.
    deleted: FxHashSet<Rc<[u8]>>,
}

struct Slot<V> {
    key: Rc<[u8]>,
    value: V,
    /// Changed since the last snapshot.
    dirty: bool,
    /// The host holds a value for this key (from a snapshot or a restore).
    persisted: bool,
}

impl<K: ?Sized, V> Default for KeyedState<K, V> {
    #[track_caller]
    fn default() -> Self {
        Self {
            entries: Entries { map: FxHashMap::default(), dirty: Vec::new(), deleted: FxHashSet::default() },
            scratch: Cell::new(Vec::new()),
            tracked: Tracked::new::<Self>(),
            walk: None,
            key: PhantomData,
        }
    }
}

impl<K: ?Sized, V: fmt::Debug> fmt::Debug for KeyedState<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.entries.map.iter().map(|(k, slot)| (k, &slot.value))).finish()
    }
}

impl<V> Entries<V> {
    #[inline]
    fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let slot = self.map.get_mut(key)?;
        if !slot.dirty {
            slot.dirty = true;
            self.dirty.push(Rc::clone(&slot.key));
        }
        Some(&mut slot.value)
    }

    fn insert_new(&mut self, key: &[u8], value: V) -> &mut V {
        let key: Rc<[u8]> = Rc::from(key);
        let persisted = !self.deleted.is_empty() && self.deleted.remove(&key);
        self.dirty.push(Rc::clone(&key));
        let slot = Slot { key: Rc::clone(&key), value, dirty: true, persisted };
        &mut self.map.entry(key).insert_entry(slot).into_mut().value
    }

    fn insert(&mut self, key: &[u8], value: V) -> Option<V> {
        match self.get_mut(key) {
            Some(old) => Some(std::mem::replace(old, value)),
            None => {
                self.insert_new(key, value);
                None
            }
        }
    }

    #[inline]
    fn get_or_insert_with(&mut self, key: &[u8], default: impl FnOnce() -> V) -> &mut V {
        // Two lookups only when the key is new; `entry` would allocate the key every time.
        if self.map.contains_key(key) {
            self.get_mut(key).expect("the key is present")
        } else {
            self.insert_new(key, default())
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<V> {
        let slot = self.map.remove(key)?;
        if slot.persisted {
            self.deleted.insert(slot.key);
        }
        Some(slot.value)
    }
}

impl<K: ?Sized, V> KeyedState<K, V> {
    /// Number of live entries.
    pub fn len(&self) -> usize {
        self.entries.map.len()
    }

    /// True when the state holds no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.map.is_empty()
    }

    /// The value of the encoded key `key`.
    #[inline]
    pub fn get_raw(&self, key: &[u8]) -> Option<&V> {
        self.entries.map.get(key).map(|slot| &slot.value)
    }

    /// The value of the encoded key `key`, to change in place (marks the key as changed).
    #[inline]
    pub fn get_mut_raw(&mut self, key: &[u8]) -> Option<&mut V> {
        self.entries.get_mut(key)
    }

    /// True when the encoded key `key` has a value.
    pub fn contains_key_raw(&self, key: &[u8]) -> bool {
        self.entries.map.contains_key(key)
    }

    /// Sets the value of the encoded key `key`, returning the previous one.
    pub fn insert_raw(&mut self, key: &[u8], value: V) -> Option<V> {
        self.entries.insert(key, value)
    }

    /// The value of the encoded key `key`, inserting `default()` first if it has none
    /// (marks the key as changed).
    #[inline]
    pub fn get_or_insert_with_raw(&mut self, key: &[u8], default: impl FnOnce() -> V) -> &mut V {
        self.entries.get_or_insert_with(key, default)
    }

    /// Removes the encoded key `key`, returning its value.
    pub fn remove_raw(&mut self, key: &[u8]) -> Option<V> {
        self.entries.remove(key)
    }

    /// Iterates over the live entries with their encoded keys, in no particular order.
    pub fn iter_raw(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.entries.map.iter().map(|(key, slot)| (&**key, &slot.value))
    }

    /// Encodes `key` into the scratch buffer, runs `f` on the encoding, and keeps the buffer.
    #[inline]
    fn with_encoded<'s, Q: Serialize + ?Sized, R>(
        &'s mut self,
        key: &Q,
        f: impl FnOnce(&'s mut Entries<V>, &[u8]) -> R,
    ) -> R {
        let mut buf = self.scratch.take();
        encode_key(&mut buf, key);
        let result = f(&mut self.entries, &buf);
        self.scratch.set(buf);
        result
    }
}

impl<K: Serialize + ?Sized, V> KeyedState<K, V> {
    /// The value of `key`.
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        let mut buf = self.scratch.take();
        encode_key(&mut buf, key);
        let value = self.entries.map.get(&buf[..]).map(|slot| &slot.value);
        self.scratch.set(buf);
        value
    }

    /// True when `key` has a value.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        self.get(key).is_some()
    }

    /// The value of `key`, to change in place (marks the key as changed).
    #[inline]
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        self.with_encoded(key, |entries, key| entries.get_mut(key))
    }

    /// Sets the value of `key`, returning the previous one.
    pub fn insert<Q>(&mut self, key: &Q, value: V) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        self.with_encoded(key, |entries, key| entries.insert(key, value))
    }

    /// The value of `key`, inserting `default()` first if it has none (marks the key as
    /// changed).
    #[inline]
    pub fn get_or_insert_with<Q>(&mut self, key: &Q, default: impl FnOnce() -> V) -> &mut V
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        self.with_encoded(key, |entries, key| entries.get_or_insert_with(key, default))
    }

    /// Removes `key`, returning its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        self.with_encoded(key, |entries, key| entries.remove(key))
    }
}

impl<K: DeserializeOwned, V> KeyedState<K, V> {
    /// Iterates over the live entries with their decoded keys, in no particular order. A key
    /// that does not decode as `K` (inserted with a `*_raw` method) yields an error.
    pub fn iter(&self) -> impl Iterator<Item = Result<(K, &V)>> {
        self.iter_raw().map(|(key, value)| {
            rmp_serde::from_slice(key).map(|key| (key, value)).map_err(|e| {
                Error::other(format!("a state key does not decode as {}: {e}", std::any::type_name::<K>()))
            })
        })
    }
}

fn encode_key<Q: Serialize + ?Sized>(buf: &mut Vec<u8>, key: &Q) {
    buf.clear();
    if let Err(e) = write_msgpack(buf, key) {
        panic!("a KeyedState key cannot be encoded: {e}");
    }
}

impl<K: ?Sized, V: Serialize + DeserializeOwned> KeyedState<K, V> {
    /// Gives up a walk: the dirty keys it went past are written (their slots are clean, or
    /// dirty again and listed again), so they leave the list; the rest stays tracked.
    fn settle(&mut self) {
        if let Some(Walk { order: Order::Changes { next_dirty, .. }, .. }) = self.walk.take() {
            self.entries.dirty.drain(..next_dirty);
        }
    }

    /// Writes entries of the walk of snapshot `delta.snapshot()` (begun now if it is not
    /// the current one) while `delta` has room, or all of them when not `bounded`; `true`
    /// once it is done.
    fn walk(&mut self, full: bool, delta: &mut DeltaWriter<'_>, bounded: bool) -> Result<bool> {
        self.tracked.reach();
        if self.walk.as_ref().is_some_and(|w| w.snapshot != delta.snapshot()) {
            self.settle();
        }
        let entries = &mut self.entries;
        let walk = self.walk.get_or_insert_with(|| {
            let order = if full {
                Order::Full { keys: entries.map.keys().cloned().collect(), next: 0 }
            } else {
                let mut deletes: Vec<Rc<[u8]>> = entries.deleted.iter().cloned().collect();
                deletes.sort_unstable();
                Order::Changes { deletes, next_delete: 0, next_dirty: 0 }
            };
            Walk { snapshot: delta.snapshot(), order }
        });
        match &mut walk.order {
            Order::Full { keys, next } => {
                while let Some(key) = keys.get(*next) {
                    if bounded && !delta.has_room() {
                        return Ok(false);
                    }
                    if let Some(slot) = entries.map.get_mut(key) {
                        delta.put(&slot.key, &slot.value)?;
                        slot.dirty = false;
                        slot.persisted = true;
                    }
                    *next += 1;
                }
                // Every live entry is written: the host's copy is now exactly the state.
                entries.dirty.clear();
                entries.deleted.clear();
            }
            Order::Changes { deletes, next_delete, next_dirty } => {
                while let Some(key) = deletes.get(*next_delete) {
                    if bounded && !delta.has_room() {
                        return Ok(false);
                    }
                    if entries.deleted.remove(key) {
                        delta.delete(key);
                    }
                    *next_delete += 1;
                }
                while let Some(key) = entries.dirty.get(*next_dirty) {
                    if bounded && !delta.has_room() {
                        return Ok(false);
                    }
                    // A key removed since it turned dirty is absent (and in `deleted` if the
                    // host holds it); a key listed twice is written once.
                    if let Some(slot) = entries.map.get_mut(key)
                        && slot.dirty
                    {
                        delta.put(&slot.key, &slot.value)?;
                        slot.dirty = false;
                        slot.persisted = true;
                    }
                    *next_dirty += 1;
                }
                entries.dirty.clear();
            }
        }
        self.walk = None;
        Ok(true)
    }
}

impl<K: ?Sized, V: Serialize + DeserializeOwned> StateStore for KeyedState<K, V> {
    fn snapshot(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<()> {
        // One walk to the end, whatever the writer's room (a state of another kind may call
        // this inside a part).
        self.settle();
        self.walk(full, delta, false).map(drop)
    }

    fn snapshot_part(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<bool> {
        self.walk(full, delta, true)
    }

    fn restore(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let entries = &mut self.entries;
        let Some(value) = value else {
            entries.map.remove(key);
            return Ok(());
        };
        let value: V = rmp_serde::from_slice(value).map_err(|e| {
            Error::invalid_state(format!(
                "the value of a key does not decode as {}: {e}",
                std::any::type_name::<V>()
            ))
        })?;
        let key: Rc<[u8]> = Rc::from(key);
        entries.map.insert(Rc::clone(&key), Slot { key, value, dirty: false, persisted: true });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator_state::tests::snapshot_of;
    use crate::testing::StateChange;
    use crate::to_msgpack;

    fn put(key: &str, value: u64) -> StateChange {
        StateChange {
            state: "s".into(),
            key: to_msgpack(key).unwrap(),
            value: Some(to_msgpack(&value).unwrap()),
        }
    }

    fn delete(key: &str) -> StateChange {
        StateChange { state: "s".into(), key: to_msgpack(key).unwrap(), value: None }
    }

    #[test]
    fn incremental_snapshot_holds_only_changed_keys() {
        let mut state = KeyedState::<String, u64>::default();
        state.insert("a", 1);
        state.insert("b", 2);
        assert_eq!(snapshot_of(&mut state, false), vec![put("a", 1), put("b", 2)]);
        assert_eq!(snapshot_of(&mut state, false), vec![]);

        *state.get_mut("a").unwrap() += 10;
        assert_eq!(state.get("b"), Some(&2)); // a read changes nothing
        *state.get_or_insert_with("c", || 0) += 3;
        *state.get_or_insert_with("c", || 0) += 3; // changed twice, written once
        assert_eq!(snapshot_of(&mut state, false), vec![put("a", 11), put("c", 6)]);
    }

    #[test]
    fn removal_writes_a_delete_only_for_keys_a_snapshot_saw() {
        let mut state = KeyedState::<String, u64>::default();
        state.insert("seen", 1);
        assert_eq!(snapshot_of(&mut state, false), vec![put("seen", 1)]);

        state.insert("fleeting", 2);
        assert_eq!(state.remove("fleeting"), Some(2));
        assert_eq!(state.remove("seen"), Some(1));
        assert_eq!(state.remove("never"), None);
        assert_eq!(snapshot_of(&mut state, false), vec![delete("seen")]);
        assert_eq!(snapshot_of(&mut state, false), vec![]);

        // Removed and inserted again before the snapshot: the put replaces the value.
        state.insert("back", 1);
        snapshot_of(&mut state, false);
        state.remove("back");
        state.insert("back", 5);
        assert_eq!(snapshot_of(&mut state, false), vec![put("back", 5)]);
        // ...and the host still holds it, so removing it again writes a delete.
        state.remove("back");
        assert_eq!(snapshot_of(&mut state, false), vec![delete("back")]);
    }

    #[test]
    fn full_snapshot_holds_every_live_entry_and_resets_changes() {
        let mut state = KeyedState::<String, u64>::default();
        state.insert("a", 1);
        state.insert("b", 2);
        snapshot_of(&mut state, false);
        state.insert("c", 3);
        state.remove("a");
        let mut full = snapshot_of(&mut state, true);
        full.sort_by(|x, y| x.key.cmp(&y.key));
        assert_eq!(full, vec![put("b", 2), put("c", 3)]);
        assert_eq!(snapshot_of(&mut state, false), vec![]);
    }

    #[test]
    fn restore_round_trips_and_restored_keys_count_as_saved() {
        let mut state = KeyedState::<String, u64>::default();
        for (i, word) in ["x", "y", "z"].into_iter().enumerate() {
            state.insert(word, i as u64);
        }
        let saved = snapshot_of(&mut state, true);

        let mut restored = KeyedState::<String, u64>::default();
        for change in &saved {
            restored.restore(&change.key, change.value.as_deref()).unwrap();
        }
        let mut entries: Vec<(String, u64)> =
            restored.iter().map(|e| e.map(|(k, v)| (k, *v)).unwrap()).collect();
        entries.sort();
        assert_eq!(entries, vec![("x".into(), 0), ("y".into(), 1), ("z".into(), 2)]);
        assert_eq!(snapshot_of(&mut restored, false), vec![]);
        restored.remove("y");
        assert_eq!(snapshot_of(&mut restored, false), vec![delete("y")]);
    }

    #[test]
    fn restore_rejects_a_value_of_the_wrong_type() {
        let mut state = KeyedState::<String, u64>::default();
        let err = state.restore(&to_msgpack("k").unwrap(), Some(&to_msgpack("text").unwrap())).unwrap_err();
        assert!(matches!(err, Error::InvalidState(_)), "{err}");
    }

    #[test]
    fn typed_keys_are_stored_as_record_key_bytes() {
        let mut state = KeyedState::<String, u64>::default();
        state.insert(&"word".to_owned(), 7);
        let record_key = to_msgpack("word").unwrap();
        assert_eq!(state.get_raw(&record_key), Some(&7));
        *state.get_or_insert_with_raw(&record_key, || 0) += 1;
        assert_eq!(state.get("word"), Some(&8));
        assert_eq!(state.len(), 1);

        #[derive(serde::Serialize)]
        struct Composite<'a> {
            user: &'a str,
            id: u64,
        }
        let mut by_struct = KeyedState::<RawKey, u64>::default();
        let key = to_msgpack(&Composite { user: "u", id: 1 }).unwrap();
        by_struct.insert_raw(&key, 1);
        assert!(by_struct.contains_key_raw(&key));
        assert_eq!(snapshot_of(&mut by_struct, false)[0].key, key);
    }

    /// A xorshift generator: the model test's random operations, reproducible by seed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    type Host = std::collections::BTreeMap<(String, Vec<u8>), Vec<u8>>;

    /// Takes a snapshot in parts of `budget` bytes, applying each part to `host` as it is
    /// handed over, and gives it up after `give_up` parts (if it has that many). A full
    /// snapshot that ends replaces what the host held.
    fn parts_into(
        host: &mut Host,
        states: &mut crate::StateRegistry<'_>,
        full: bool,
        budget: usize,
        give_up: usize,
    ) {
        let mut progress = crate::operator_state::Parts::default();
        let mut whole = Host::new();
        for _ in 0..give_up {
            let (delta, last) = states.snapshot_part(full, &mut progress, budget).unwrap();
            let changes = crate::testing::changes_of(&delta);
            // Every part but the last holds an entry and ends at the first that reaches
            // the budget.
            if !last {
                let before_last: usize = changes[..changes.len() - 1]
                    .iter()
                    .map(|c| c.key.len() + c.value.as_ref().map_or(0, Vec::len) + 16)
                    .sum();
                assert!(
                    !changes.is_empty() && before_last < budget,
                    "{before_last} bytes before the last entry"
                );
            }
            for c in changes {
                let at = (c.state, c.key);
                match c.value {
                    Some(value) => {
                        whole.insert(at.clone(), value.clone());
                        host.insert(at, value);
                    }
                    None => {
                        host.remove(&at);
                    }
                }
            }
            if last {
                if full {
                    *host = whole;
                }
                return;
            }
        }
    }

    /// The model test of snapshots in parts: random changes, whole snapshots, snapshots in
    /// parts of random budgets, some given up halfway (then more changes). Whatever happened,
    /// one more complete incremental snapshot brings the host — every part applied as it was
    /// handed over — to exactly the live state: a part forgets only what it hands over, and
    /// a key the host saw gets its delete.
    #[test]
    fn snapshots_in_parts_given_up_anywhere_lose_no_change() {
        for seed in 1..300u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut counts = KeyedState::<u32, u64>::default();
            let mut total = crate::ValueState::<u64>::default();
            let mut host = Host::new();
            for _ in 0..200 {
                let key = rng.below(24) as u32;
                match rng.below(12) {
                    0..=3 => {
                        counts.insert(&key, rng.below(1 << 20));
                    }
                    4 => {
                        if let Some(v) = counts.get_mut(&key) {
                            *v += 1;
                        }
                    }
                    5 | 6 => {
                        counts.remove(&key);
                    }
                    7 => {
                        if rng.below(3) == 0 {
                            total.take();
                        } else {
                            total.set(rng.below(100));
                        }
                    }
                    op => {
                        let full = rng.below(5) == 0;
                        let mut states = crate::StateRegistry::new();
                        states.register("counts", &mut counts).register("total", &mut total);
                        match op {
                            8 | 9 => parts_into(
                                &mut host,
                                &mut states,
                                full,
                                1 + rng.below(80) as usize,
                                usize::MAX,
                            ),
                            10 => parts_into(
                                &mut host,
                                &mut states,
                                full,
                                1 + rng.below(80) as usize,
                                1 + rng.below(3) as usize,
                            ),
                            _ => {
                                let delta = states.snapshot(full).unwrap();
                                parts_into_whole(&mut host, &delta, full);
                            }
                        }
                    }
                }
            }
            let mut states = crate::StateRegistry::new();
            states.register("counts", &mut counts).register("total", &mut total);
            parts_into(&mut host, &mut states, false, 50, usize::MAX);
            drop(states);
            let mut live = Host::new();
            for (key, value) in counts.iter_raw() {
                live.insert(("counts".into(), key.to_vec()), to_msgpack(value).unwrap());
            }
            if let Some(value) = total.get() {
                live.insert(("total".into(), Vec::new()), to_msgpack(value).unwrap());
            }
            assert_eq!(host, live, "seed {seed}");
        }
    }

    /// Applies a whole snapshot to `host`.
    fn parts_into_whole(
        host: &mut Host,
        delta: &crate::__bindings::weir::operator::types::StateDelta,
        full: bool,
    ) {
        if full {
            host.clear();
        }
        for c in crate::testing::changes_of(delta) {
            match c.value {
                Some(value) => host.insert((c.state, c.key), value),
                None => host.remove(&(c.state, c.key)),
            };
        }
    }

    #[test]
    fn parts_hold_the_whole_snapshot_in_order() {
        let build = || {
            let mut a = KeyedState::<u32, String>::default();
            let mut b = KeyedState::<u32, String>::default();
            for i in 0..100u32 {
                a.insert(&i, "x".repeat(i as usize));
                b.insert(&i, "y".repeat(i as usize));
            }
            snapshot_of(&mut a, false);
            for i in (0..100u32).step_by(3) {
                a.remove(&i);
                if let Some(v) = a.get_mut(&(i + 1)) {
                    *v += "!";
                }
                b.insert(&(i + 200), "z".into());
            }
            (a, b)
        };
        let ((mut a, mut b), (mut a2, mut b2)) = (build(), build());
        let whole = {
            let mut states = crate::StateRegistry::new();
            states.register("a", &mut a2).register("b", &mut b2);
            crate::testing::changes_of(&states.snapshot(false).unwrap())
        };
        let mut states = crate::StateRegistry::new();
        states.register("a", &mut a).register("b", &mut b);
        let mut progress = crate::operator_state::Parts::default();
        let mut joined = Vec::new();
        let mut parts = 0;
        loop {
            let (delta, last) = states.snapshot_part(false, &mut progress, 300).unwrap();
            parts += 1;
            joined.extend(crate::testing::changes_of(&delta));
            if last {
                break;
            }
        }
        assert!(parts > 10, "{parts} parts");
        assert_eq!(joined, whole);
    }
}
