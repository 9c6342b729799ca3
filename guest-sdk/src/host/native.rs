//! The native stand-in of the host (unit tests and [`crate::testing::Harness`]): what an
//! operator asked of the host, per thread, and the host's keyed state as an in-memory map.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use super::logging::Level;

/// What the operator asked of the host, and the watermarks the harness set.
#[derive(Debug)]
pub(crate) struct NativeHost {
    /// Registered timers, ordered by time then key.
    pub(crate) timers: BTreeSet<(i64, Vec<u8>)>,
    pub(crate) watermark: i64,
    pub(crate) input_watermarks: Vec<i64>,
    /// Side-output records as (output name, key, value, timestamp).
    pub(crate) side_outputs: Vec<(String, Vec<u8>, Vec<u8>, i64)>,
    pub(crate) logs: Vec<(Level, String)>,
    pub(crate) counters: BTreeMap<String, u64>,
    /// Host keyed state.
    pub(crate) keyed: NativeKeyedState,
}

impl Default for NativeHost {
    fn default() -> Self {
        NativeHost {
            timers: BTreeSet::new(),
            watermark: i64::MIN,
            input_watermarks: Vec::new(),
            side_outputs: Vec::new(),
            logs: Vec::new(),
            counters: BTreeMap::new(),
            keyed: Default::default(),
        }
    }
}

thread_local! {
    static HOST: RefCell<NativeHost> = RefCell::new(NativeHost::default());
}

pub(crate) fn with<R>(f: impl FnOnce(&mut NativeHost) -> R) -> R {
    HOST.with_borrow_mut(f)
}

/// One change of `apply`: (key, field, value or delete).
type Change = (Vec<u8>, Vec<u8>, Option<Vec<u8>>);

/// The native stand-in of the host's keyed state (unit tests and the testing harness).
#[derive(Debug, Default)]
pub(crate) struct NativeKeyedState {
    names: Vec<String>,
    /// (state, key, field) → value
    pub(crate) entries: BTreeMap<(u32, Vec<u8>, Vec<u8>), Vec<u8>>,
    /// Boundary crossings, as the host would count them.
    pub(crate) calls: u64,
}

impl NativeKeyedState {
    pub(crate) fn open(&mut self, name: &str) -> u32 {
        self.calls += 1;
        match self.names.iter().position(|n| n == name) {
            Some(i) => i as u32,
            None => {
                self.names.push(name.to_owned());
                (self.names.len() - 1) as u32
            }
        }
    }

    pub(crate) fn get(&mut self, state: u32, key: &[u8], field: &[u8]) -> Option<Vec<u8>> {
        self.calls += 1;
        self.entries.get(&(state, key.to_vec(), field.to_vec())).cloned()
    }

    pub(crate) fn multi_get(&mut self, state: u32, keys: &[(&[u8], &[u8])]) -> Vec<Option<Vec<u8>>> {
        self.calls += 1;
        keys.iter().map(|(k, f)| self.entries.get(&(state, k.to_vec(), f.to_vec())).cloned()).collect()
    }

    pub(crate) fn apply(&mut self, state: u32, changes: Vec<Change>) {
        self.calls += 1;
        for (key, field, value) in changes {
            match value {
                Some(v) => self.entries.insert((state, key, field), v),
                None => self.entries.remove(&(state, key, field)),
            };
        }
    }

    pub(crate) fn scan(
        &mut self,
        state: u32,
        key: &[u8],
        start: Option<&[u8]>,
        limit: u32,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.calls += 1;
        let from = (state, key.to_vec(), start.unwrap_or_default().to_vec());
        self.entries
            .range(from..)
            .take_while(|((s, k, _), _)| *s == state && k == key)
            .take(limit as usize)
            .map(|((_, _, f), v)| (f.clone(), v.clone()))
            .collect()
    }

    pub(crate) fn clear(&mut self, state: u32, key: &[u8]) {
        self.calls += 1;
        self.entries.retain(|(s, k, _), _| !(*s == state && k == key));
    }

    /// The entries of state `name` as (key, field, value).
    #[cfg(test)]
    pub(crate) fn of(&self, name: &str) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
        let Some(state) = self.names.iter().position(|n| n == name) else { return Vec::new() };
        self.entries
            .iter()
            .filter(|((s, _, _), _)| *s as usize == state)
            .map(|((_, k, f), v)| (k.clone(), f.clone(), v.clone()))
            .collect()
    }
}
