//! `HostKeyedState` and `HostMapState`: keyed state kept by the host on local disk (the WIT
//! import `keyed-state`), for state larger than the instance's memory.
//!
//! The host checkpoints and restores it itself; the guest holds only the entries of the
//! current call. Before each batch the SDK fetches the values of the batch's record keys in
//! one `multi-get`; reads and writes during the call hit that cache (a key outside the batch
//! costs one `get`), and after the call the changes go to the host in one `apply`. So a
//! batch costs two boundary crossings per state, not two per record.

use std::borrow::Borrow;
use std::fmt;
use std::marker::PhantomData;

use rustc_hash::FxHashMap;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::tracking::Tracked;
use super::{DeltaWriter, StateStore};
use crate::codec::write_msgpack;
use crate::{Error, Result, from_msgpack};

/// The host calls, or their native stand-in (an in-memory map per thread) for unit tests.
pub(crate) mod calls {
    #[cfg(target_arch = "wasm32")]
    use crate::__bindings::weir::operator::keyed_state as wit;

    pub(crate) fn open_state(name: &str) -> u32 {
        #[cfg(target_arch = "wasm32")]
        return wit::open_state(name);
        #[cfg(not(target_arch = "wasm32"))]
        crate::host::native::with(|h| h.keyed.open(name))
    }

    pub(crate) fn multi_get(state: u32, keys: &[(&[u8], &[u8])]) -> Vec<Option<Vec<u8>>> {
        #[cfg(target_arch = "wasm32")]
        {
            let lookups: Vec<wit::Lookup> =
                keys.iter().map(|(k, f)| wit::Lookup { key: k.to_vec(), field: f.to_vec() }).collect();
            wit::multi_get(state, &lookups)
        }
        #[cfg(not(target_arch = "wasm32"))]
        crate::host::native::with(|h| h.keyed.multi_get(state, keys))
    }

    pub(crate) fn get(state: u32, key: &[u8], field: &[u8]) -> Option<Vec<u8>> {
        #[cfg(target_arch = "wasm32")]
        return wit::get(state, key, field);
        #[cfg(not(target_arch = "wasm32"))]
        crate::host::native::with(|h| h.keyed.get(state, key, field))
    }

    /// (key, field, value or delete)
    pub(crate) type Change = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

    pub(crate) fn apply(state: u32, changes: Vec<Change>) {
        #[cfg(target_arch = "wasm32")]
        {
            let changes: Vec<wit::Change> =
                changes.into_iter().map(|(key, field, value)| wit::Change { key, field, value }).collect();
            wit::apply(state, &changes);
        }
        #[cfg(not(target_arch = "wasm32"))]
        crate::host::native::with(|h| h.keyed.apply(state, changes))
    }

    pub(crate) fn scan(state: u32, key: &[u8], start: Option<&[u8]>, limit: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
        #[cfg(target_arch = "wasm32")]
        return wit::scan(state, key, start, limit).into_iter().map(|f| (f.field, f.value)).collect();
        #[cfg(not(target_arch = "wasm32"))]
        crate::host::native::with(|h| h.keyed.scan(state, key, start, limit))
    }

    pub(crate) fn clear(state: u32, key: &[u8]) {
        #[cfg(target_arch = "wasm32")]
        wit::clear(state, key);
        #[cfg(not(target_arch = "wasm32"))]
        crate::host::native::with(|h| h.keyed.clear(state, key))
    }
}

thread_local! {
    /// A host state of this instance was opened (used): from then on the SDK fetches and
    /// hands over around every call.
    static USED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a host state of this instance was ever used. Until one is, the SDK does not
/// walk the operator's states around calls (an operator that registers a host state but
/// never touches it, like the counter test guest on its guest backend, costs nothing).
pub(crate) fn used() -> bool {
    USED.get()
}

/// One cached entry of the current call.
struct Slot<V> {
    value: Option<V>,
    dirty: bool,
}

/// The name, handle and per-call cache shared by both host states.
struct Core<V> {
    name: Option<String>,
    handle: Option<u32>,
    /// (key, field) → the value in the host (or as changed in this call).
    cache: FxHashMap<(Vec<u8>, Vec<u8>), Slot<V>>,
    tracked: Tracked,
}

impl<V: Serialize + DeserializeOwned> Core<V> {
    #[track_caller]
    fn new<S: ?Sized>() -> Self {
        Core { name: None, handle: None, cache: FxHashMap::default(), tracked: Tracked::new::<S>() }
    }

    fn handle(&mut self) -> u32 {
        if let Some(h) = self.handle {
            return h;
        }
        let name = self.name.as_deref().expect(
            "host state used before `open`: the SDK names it when it registers the operator's states",
        );
        let h = calls::open_state(name);
        self.handle = Some(h);
        USED.set(true);
        h
    }

    fn decode(&self, bytes: Option<Vec<u8>>) -> Result<Option<V>> {
        bytes
            .map(|b| {
                from_msgpack::<V>(&b).map_err(|e| {
                    Error::invalid_state(format!(
                        "host state \"{}\": a value does not decode: {}",
                        self.name.as_deref().unwrap_or("?"),
                        e.message()
                    ))
                })
            })
            .transpose()
    }

    /// The slot of (key, field), fetched from the host on a miss.
    fn slot(&mut self, key: &[u8], field: &[u8]) -> &mut Slot<V> {
        let id = (key.to_vec(), field.to_vec());
        if !self.cache.contains_key(&id) {
            let h = self.handle();
            let value = self.decode(calls::get(h, key, field)).unwrap_or_else(|e| panic!("{e}"));
            self.cache.insert(id.clone(), Slot { value, dirty: false });
        }
        self.cache.get_mut(&id).expect("just cached")
    }

    fn prefetch(&mut self, keys: &[&[u8]], field: &[u8]) -> Result<()> {
        let missing: Vec<(&[u8], &[u8])> = {
            let mut seen = rustc_hash::FxHashSet::default();
            keys.iter()
                .filter(|k| !k.is_empty() && seen.insert(**k))
                .filter(|k| !self.cache.contains_key(&(k.to_vec(), field.to_vec())))
                .map(|k| (*k, field))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let h = self.handle();
        let values = calls::multi_get(h, &missing);
        for ((key, field), bytes) in missing.into_iter().zip(values) {
            let value = self.decode(bytes)?;
            self.cache.insert((key.to_vec(), field.to_vec()), Slot { value, dirty: false });
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.cache.is_empty() {
            return Ok(());
        }
        let mut changes = Vec::new();
        for ((key, field), slot) in self.cache.drain() {
            if !slot.dirty {
                continue;
            }
            let value = match &slot.value {
                Some(v) => {
                    let mut bytes = Vec::new();
                    write_msgpack(&mut bytes, v)?;
                    Some(bytes)
                }
                None => None,
            };
            changes.push((key, field, value));
        }
        if !changes.is_empty() {
            let h = self.handle();
            calls::apply(h, changes);
        }
        Ok(())
    }
}

/// Keyed state kept by the host on local disk: like [`KeyedState`](super::KeyedState), a map
/// from record keys to values, but bounded by the disk and the tenant's storage quota rather
/// than by the instance's memory. Switching a state between the two is one line:
///
/// ```ignore
/// counts: KeyedState<String, u64>,      // in guest memory
/// counts: HostKeyedState<String, u64>,  // on the host's disk
/// ```
///
/// Register it like the others (`#[derive(States)]` does). Keys must be record keys of the
/// instance's key groups (a record's own key, as with `KeyedState`; another subtask's key
/// fails the call). Methods that read take `&mut self`: a key the current batch did not
/// bring is fetched from the host.
pub struct HostKeyedState<K: ?Sized, V> {
    core: Core<V>,
    scratch: Vec<u8>,
    key: PhantomData<fn(&K)>,
}

impl<K: ?Sized, V: Serialize + DeserializeOwned> Default for HostKeyedState<K, V> {
    #[track_caller]
    fn default() -> Self {
        HostKeyedState { core: Core::new::<Self>(), scratch: Vec::new(), key: PhantomData }
    }
}

impl<K: ?Sized, V> fmt::Debug for HostKeyedState<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostKeyedState").field("name", &self.core.name).finish_non_exhaustive()
    }
}

impl<K: ?Sized, V: Serialize + DeserializeOwned> HostKeyedState<K, V> {
    /// The value of the encoded key `key`.
    pub fn get_raw(&mut self, key: &[u8]) -> Option<&V> {
        self.core.slot(key, b"").value.as_ref()
    }

    /// The value of `key`, to change in place (marks it changed).
    pub fn get_mut_raw(&mut self, key: &[u8]) -> Option<&mut V> {
        let slot = self.core.slot(key, b"");
        slot.dirty |= slot.value.is_some();
        slot.value.as_mut()
    }

    /// Whether `key` has a value.
    pub fn contains_key_raw(&mut self, key: &[u8]) -> bool {
        self.get_raw(key).is_some()
    }

    /// Sets the value of `key`; returns the old one.
    pub fn insert_raw(&mut self, key: &[u8], value: V) -> Option<V> {
        let slot = self.core.slot(key, b"");
        slot.dirty = true;
        slot.value.replace(value)
    }

    /// The value of `key`, inserting `default()` first if it has none.
    pub fn get_or_insert_with_raw(&mut self, key: &[u8], default: impl FnOnce() -> V) -> &mut V {
        let slot = self.core.slot(key, b"");
        slot.dirty = true;
        slot.value.get_or_insert_with(default)
    }

    /// Removes `key`; returns its value.
    pub fn remove_raw(&mut self, key: &[u8]) -> Option<V> {
        let slot = self.core.slot(key, b"");
        let old = slot.value.take();
        slot.dirty |= old.is_some();
        old
    }
}

impl<K: Serialize + ?Sized, V: Serialize + DeserializeOwned> HostKeyedState<K, V> {
    fn encode<Q: Serialize + ?Sized>(&mut self, key: &Q) -> Vec<u8> {
        self.scratch.clear();
        write_msgpack(&mut self.scratch, key).expect("a state key that cannot be encoded");
        self.scratch.clone()
    }

    /// The value of `key`.
    pub fn get<Q>(&mut self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        let k = self.encode(key);
        self.get_raw(&k)
    }

    /// The value of `key`, to change in place.
    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        let k = self.encode(key);
        self.get_mut_raw(&k)
    }

    /// Whether `key` has a value.
    pub fn contains_key<Q>(&mut self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        let k = self.encode(key);
        self.contains_key_raw(&k)
    }

    /// Sets the value of `key`; returns the old one.
    pub fn insert<Q>(&mut self, key: &Q, value: V) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        let k = self.encode(key);
        self.insert_raw(&k, value)
    }

    /// The value of `key`, inserting `default()` first if it has none.
    pub fn get_or_insert_with<Q>(&mut self, key: &Q, default: impl FnOnce() -> V) -> &mut V
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        let k = self.encode(key);
        self.get_or_insert_with_raw(&k, default)
    }

    /// Removes `key`; returns its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Serialize + ?Sized,
    {
        let k = self.encode(key);
        self.remove_raw(&k)
    }
}

impl<K: ?Sized, V: Serialize + DeserializeOwned> StateStore for HostKeyedState<K, V> {
    fn snapshot(&mut self, _full: bool, _delta: &mut DeltaWriter<'_>) -> Result<()> {
        // The host checkpoints it itself.
        self.core.tracked.reach();
        Ok(())
    }

    fn restore(&mut self, _key: &[u8], _value: Option<&[u8]>) -> Result<()> {
        Err(Error::invalid_state("host state is restored by the host, never through `restore`"))
    }

    fn bind(&mut self, name: &str) {
        self.core.name = Some(name.to_owned());
    }

    fn is_host_state(&self) -> bool {
        true
    }

    fn before_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        self.core.prefetch(keys, b"")
    }

    fn after_call(&mut self) -> Result<()> {
        self.core.flush()
    }
}

/// Host state with many fields per record key, kept in field order: a map per key (a join's
/// buffer, a user's events by time). Fields are MessagePack-encoded `F`; their order is the
/// byte order of the encoding (for unsigned integers, big-endian bytes via
/// [`HostMapState::scan_raw`] keep numeric order).
pub struct HostMapState<K: ?Sized, F, V> {
    core: Core<V>,
    key: PhantomData<fn(&K, &F)>,
}

impl<K: ?Sized, F, V: Serialize + DeserializeOwned> Default for HostMapState<K, F, V> {
    #[track_caller]
    fn default() -> Self {
        HostMapState { core: Core::new::<Self>(), key: PhantomData }
    }
}

impl<K: ?Sized, F, V> fmt::Debug for HostMapState<K, F, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostMapState").field("name", &self.core.name).finish_non_exhaustive()
    }
}

impl<K: ?Sized, F, V: Serialize + DeserializeOwned> HostMapState<K, F, V> {
    /// The value of field `field` (raw bytes) of the encoded key `key`.
    pub fn get_raw(&mut self, key: &[u8], field: &[u8]) -> Option<&V> {
        self.core.slot(key, field).value.as_ref()
    }

    /// Sets field `field` of `key`.
    pub fn insert_raw(&mut self, key: &[u8], field: &[u8], value: V) -> Option<V> {
        let slot = self.core.slot(key, field);
        slot.dirty = true;
        slot.value.replace(value)
    }

    /// Removes field `field` of `key`.
    pub fn remove_raw(&mut self, key: &[u8], field: &[u8]) -> Option<V> {
        let slot = self.core.slot(key, field);
        let old = slot.value.take();
        slot.dirty |= old.is_some();
        old
    }

    /// Removes every field of `key`.
    pub fn clear_raw(&mut self, key: &[u8]) -> Result<()> {
        // Changes of this call go first, so the clear wins over them.
        self.core.flush()?;
        let h = self.core.handle();
        calls::clear(h, key);
        Ok(())
    }

    /// The fields of `key` from `start` on (raw bytes, inclusive), in byte order, read from
    /// the host in pages of `page` fields: an iterator of (field, value).
    pub fn scan_raw(&mut self, key: &[u8], start: Option<&[u8]>, page: u32) -> Result<Vec<(Vec<u8>, V)>> {
        // Changes of this call go first, so the scan sees them.
        self.core.flush()?;
        let h = self.core.handle();
        let mut out = Vec::new();
        let mut from: Option<Vec<u8>> = start.map(<[u8]>::to_vec);
        loop {
            let got = calls::scan(h, key, from.as_deref(), page.max(1));
            let n = got.len();
            for (field, bytes) in got {
                let value = self.core.decode(Some(bytes))?.expect("a value");
                let mut next = field.clone();
                next.push(0);
                from = Some(next);
                out.push((field, value));
            }
            // An empty page is the end (a page may be cut short by the host's byte cap).
            if n == 0 {
                return Ok(out);
            }
        }
    }
}

impl<K: Serialize + ?Sized, F: Serialize + DeserializeOwned, V: Serialize + DeserializeOwned>
    HostMapState<K, F, V>
{
    /// The value of `field` of `key`.
    pub fn get<Q: Serialize + ?Sized>(&mut self, key: &Q, field: &F) -> Result<Option<&V>>
    where
        K: Borrow<Q>,
    {
        let (k, f) = (crate::to_msgpack(key)?, crate::to_msgpack(field)?);
        Ok(self.get_raw(&k, &f))
    }

    /// Sets `field` of `key`.
    pub fn insert<Q: Serialize + ?Sized>(&mut self, key: &Q, field: &F, value: V) -> Result<Option<V>>
    where
        K: Borrow<Q>,
    {
        let (k, f) = (crate::to_msgpack(key)?, crate::to_msgpack(field)?);
        Ok(self.insert_raw(&k, &f, value))
    }

    /// Removes `field` of `key`.
    pub fn remove<Q: Serialize + ?Sized>(&mut self, key: &Q, field: &F) -> Result<Option<V>>
    where
        K: Borrow<Q>,
    {
        let (k, f) = (crate::to_msgpack(key)?, crate::to_msgpack(field)?);
        Ok(self.remove_raw(&k, &f))
    }

    /// Every field of `key` in byte order of the fields' encodings.
    pub fn scan<Q: Serialize + ?Sized>(&mut self, key: &Q) -> Result<Vec<(F, V)>>
    where
        K: Borrow<Q>,
    {
        let k = crate::to_msgpack(key)?;
        self.scan_raw(&k, None, 256)?.into_iter().map(|(f, v)| Ok((from_msgpack::<F>(&f)?, v))).collect()
    }
}

impl<K: ?Sized, F, V: Serialize + DeserializeOwned> StateStore for HostMapState<K, F, V> {
    fn snapshot(&mut self, _full: bool, _delta: &mut DeltaWriter<'_>) -> Result<()> {
        self.core.tracked.reach();
        Ok(())
    }

    fn restore(&mut self, _key: &[u8], _value: Option<&[u8]>) -> Result<()> {
        Err(Error::invalid_state("host state is restored by the host, never through `restore`"))
    }

    fn bind(&mut self, name: &str) {
        self.core.name = Some(name.to_owned());
    }

    fn is_host_state(&self) -> bool {
        true
    }

    fn after_call(&mut self) -> Result<()> {
        self.core.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::native;
    use crate::to_msgpack;

    fn calls() -> u64 {
        native::with(|h| h.keyed.calls)
    }

    #[test]
    fn a_batch_costs_one_fetch_and_one_hand_over() {
        let mut s = HostKeyedState::<String, u64>::default();
        s.bind("counts");
        let (a, b) = (to_msgpack("a").unwrap(), to_msgpack("b").unwrap());
        let start = calls();
        s.before_batch(&[&a, &b, &a]).unwrap();
        *s.get_or_insert_with("a", || 0) += 1;
        *s.get_or_insert_with("a", || 0) += 1;
        s.insert("b", 5);
        assert_eq!(s.get("b"), Some(&5));
        s.after_call().unwrap();
        // open-state, one multi-get, one apply.
        assert_eq!(calls() - start, 3);
        let stored = native::with(|h| h.keyed.of("counts"));
        assert_eq!(
            stored,
            vec![(a.clone(), vec![], to_msgpack(&2u64).unwrap()), (b, vec![], to_msgpack(&5u64).unwrap())]
        );

        // A key outside the batch costs one get; a removal is handed over as a delete; an
        // untouched read changes nothing.
        let start = calls();
        assert_eq!(s.remove("a"), Some(2));
        assert_eq!(s.get("zz"), None);
        s.after_call().unwrap();
        assert_eq!(calls() - start, 3);
        let stored = native::with(|h| h.keyed.of("counts"));
        assert_eq!(stored.len(), 1);
    }

    #[test]
    fn a_map_state_scans_its_fields_in_order_across_pages() {
        let mut m = HostMapState::<String, u32, String>::default();
        m.bind("events");
        for f in [3u32, 1, 2, 200] {
            m.insert("k", &f, format!("v{f}")).unwrap();
        }
        m.insert("other", &1, "x".into()).unwrap();
        let fields: Vec<u32> = m.scan("k").unwrap().into_iter().map(|(f, _)| f).collect();
        // MessagePack order: positive fixints 1, 2, 3 before the u8 200.
        assert_eq!(fields, vec![1, 2, 3, 200]);
        let k = to_msgpack("k").unwrap();
        let paged = m.scan_raw(&k, None, 1).unwrap();
        assert_eq!(paged.len(), 4);
        m.clear_raw(&k).unwrap();
        assert!(m.scan("k").unwrap().is_empty());
        assert_eq!(m.scan("other").unwrap().len(), 1);
    }
}
