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
    key: PhantomData<fn(&K)>,
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

impl<K: ?Sized, V: Serialize + DeserializeOwned> StateStore for KeyedState<K, V> {
    fn snapshot(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<()> {
        self.tracked.reach();
        let entries = &mut self.entries;
        if full {
            for slot in entries.map.values_mut() {
                delta.put(&slot.key, &slot.value)?;
                slot.dirty = false;
                slot.persisted = true;
            }
            entries.dirty.clear();
            entries.deleted.clear();
            return Ok(());
        }
        let mut deleted: Vec<Rc<[u8]>> = entries.deleted.drain().collect();
        deleted.sort_unstable();
        for key in &deleted {
            delta.delete(key);
        }
        for key in entries.dirty.drain(..) {
            // A key removed since it turned dirty is absent (and in `deleted` if the host
            // holds it); a key listed twice is written once.
            if let Some(slot) = entries.map.get_mut(&key)
                && slot.dirty
            {
                delta.put(&slot.key, &slot.value)?;
                slot.dirty = false;
                slot.persisted = true;
            }
        }
        Ok(())
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
    use crate::state::tests::snapshot_of;
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
}
