//! Keyed state by scope: a guest's state delta split into key-group scopes (and the
//! subtask's operator scope) for the store, and live entries cut back into restore chunks
//! for a guest.

use weir_store::{OPERATOR_SCOPE_BASE, ScopeDelta, StateEntry};

use crate::guest::bindings::{self, ChangeKind, StateDelta};
use crate::key_groups::key_group;

/// A state delta whose entries do not describe its data (a broken guest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeltaError {
    /// An entry names a state index past the delta's name table.
    #[error("state index out of range")]
    StateIndex,
    /// The entries describe more bytes than the delta's data holds.
    #[error("delta data too short")]
    DataTooShort,
    /// A guest state is named like host keyed state (`@host/...`), which only the host
    /// writes.
    #[error("state names starting with `@host/` are reserved for host keyed state")]
    ReservedName,
}

/// Splits a guest's delta by key group (keyed entries) and into the subtask's operator
/// scope (entries with an empty key), keeping the order of entries within each scope.
pub fn split_into_scopes(
    delta: &StateDelta,
    max_parallelism: u32,
    subtask: u32,
) -> Result<Vec<ScopeDelta>, DeltaError> {
    let mut groups: Vec<Vec<StateEntry>> = (0..max_parallelism).map(|_| Vec::new()).collect();
    let mut operator: Vec<StateEntry> = Vec::new();
    for entry in weir_flat::Reader::new(&delta.data, &delta.entries) {
        let (key, value, e) = entry.map_err(|_| DeltaError::DataTooShort)?;
        let name = delta.names.get(e.state as usize).ok_or(DeltaError::StateIndex)?;
        if crate::local_state::is_host_state(name) {
            return Err(DeltaError::ReservedName);
        }
        let value = match e.kind {
            ChangeKind::Put => Some(value.to_vec()),
            ChangeKind::Delete => None,
        };
        let entry = StateEntry { state: name.clone(), key: key.to_vec(), value };
        if key.is_empty() {
            operator.push(entry);
        } else {
            groups[key_group(key, max_parallelism) as usize].push(entry);
        }
    }
    let mut scopes: Vec<ScopeDelta> = groups
        .into_iter()
        .enumerate()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(g, entries)| ScopeDelta { scope: g as u32, entries })
        .collect();
    if !operator.is_empty() {
        scopes.push(ScopeDelta { scope: OPERATOR_SCOPE_BASE + subtask, entries: operator });
    }
    Ok(scopes)
}

/// Key and value bytes of one restore chunk (one `restore` call).
pub const RESTORE_CHUNK_BYTES: usize = 4 << 20;

/// Builds restore chunks from live entries: each chunk holds at most `max_bytes` of keys
/// and values (at least one entry), in buffers recycled from chunks the guest is done with.
#[derive(Debug)]
pub struct RestoreChunker {
    max_bytes: usize,
    cur: StateDelta,
    /// Chunks handed back, to fill again.
    spare: Vec<StateDelta>,
}

fn empty_delta() -> StateDelta {
    StateDelta { names: Vec::new(), data: Vec::new(), entries: Vec::new() }
}

impl RestoreChunker {
    /// A chunker of chunks of at most `max_bytes` of key and value data.
    pub fn new(max_bytes: usize) -> Self {
        RestoreChunker { max_bytes, cur: empty_delta(), spare: Vec::new() }
    }

    /// Gives back a chunk the guest restored: its buffers hold a later chunk.
    pub fn recycle(&mut self, mut chunk: StateDelta) {
        chunk.names.clear();
        chunk.data.clear();
        chunk.entries.clear();
        self.spare.push(chunk);
    }

    /// Adds a live entry; returns the chunk it completed (the entry starts the next one).
    #[inline]
    pub fn push(&mut self, state: &str, key: &[u8], value: &[u8]) -> Option<StateDelta> {
        let len = key.len() + value.len();
        let mut done = None;
        if !self.cur.entries.is_empty() && self.cur.data.len() + len > self.max_bytes {
            let next = self.spare.pop().unwrap_or_else(empty_delta);
            done = Some(std::mem::replace(&mut self.cur, next));
        }
        if self.cur.entries.is_empty() {
            // A fresh chunk starts small (a scope may hold a few bytes); recycled ones keep
            // the capacity they grew to.
            self.cur.data.reserve(len.max(self.max_bytes.min(64 << 10)));
        }
        let index = match self.cur.names.iter().position(|name| name == state) {
            Some(index) => index,
            None => {
                self.cur.names.push(state.to_owned());
                self.cur.names.len() - 1
            }
        };
        self.cur.data.extend_from_slice(key);
        self.cur.data.extend_from_slice(value);
        self.cur.entries.push(bindings::StateEntry {
            state: index as u32,
            kind: ChangeKind::Put,
            key_len: key.len() as u32,
            value_len: value.len() as u32,
        });
        done
    }

    /// The last chunk, unless it is empty.
    pub fn finish(self) -> Option<StateDelta> {
        (!self.cur.entries.is_empty()).then_some(self.cur)
    }
}

/// Live entries as restore chunks of at most `max_bytes` each (at least one entry each);
/// tombstones are skipped.
pub fn restore_chunks(entries: Vec<StateEntry>, max_bytes: usize) -> Vec<StateDelta> {
    let mut chunker = RestoreChunker::new(max_bytes);
    let mut out = Vec::new();
    for e in entries {
        let Some(value) = e.value else { continue };
        out.extend(chunker.push(&e.state, &e.key, &value));
    }
    out.extend(chunker.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(entries: &[(u32, ChangeKind, &[u8], &[u8])]) -> StateDelta {
        let mut d = StateDelta { names: vec!["a".into(), "b".into()], data: Vec::new(), entries: Vec::new() };
        for (state, kind, key, value) in entries {
            d.data.extend_from_slice(key);
            d.data.extend_from_slice(value);
            d.entries.push(bindings::StateEntry {
                state: *state,
                kind: *kind,
                key_len: key.len() as u32,
                value_len: value.len() as u32,
            });
        }
        d
    }

    #[test]
    fn keyed_entries_go_to_their_key_group_and_unkeyed_to_the_operator_scope() {
        let d = delta(&[
            (0, ChangeKind::Put, b"k1", b"v1"),
            (1, ChangeKind::Put, b"", b"op"),
            (0, ChangeKind::Delete, b"k2", b""),
        ]);
        let scopes = split_into_scopes(&d, 16, 3).unwrap();
        let find = |key: &[u8]| {
            scopes.iter().find(|s| s.entries.iter().any(|e| e.key == key)).map(|s| s.scope).unwrap()
        };
        assert_eq!(find(b"k1"), key_group(b"k1", 16));
        assert_eq!(find(b"k2"), key_group(b"k2", 16));
        assert_eq!(find(b""), OPERATOR_SCOPE_BASE + 3);
        let deleted = scopes.iter().flat_map(|s| &s.entries).find(|e| e.key == b"k2").unwrap();
        assert_eq!(deleted.value, None);
    }

    #[test]
    fn a_delta_that_lies_about_its_data_is_refused() {
        let mut d = delta(&[(0, ChangeKind::Put, b"k", b"v")]);
        d.entries[0].value_len = 9;
        assert_eq!(split_into_scopes(&d, 4, 0).unwrap_err(), DeltaError::DataTooShort);
        let mut d = delta(&[(0, ChangeKind::Put, b"k", b"v")]);
        d.entries[0].state = 7;
        assert_eq!(split_into_scopes(&d, 4, 0).unwrap_err(), DeltaError::StateIndex);
    }

    /// Every entry of `chunks` as (state, key, value).
    fn entries_of(chunks: &[StateDelta]) -> Vec<(String, Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        for c in chunks {
            for entry in weir_flat::Reader::new(&c.data, &c.entries) {
                let (key, value, e) = entry.unwrap();
                assert_eq!(e.kind, ChangeKind::Put);
                out.push((c.names[e.state as usize].clone(), key.to_vec(), value.to_vec()));
            }
        }
        out
    }

    #[test]
    fn recycled_chunks_hold_only_their_new_entries() {
        let input: Vec<(String, Vec<u8>, Vec<u8>)> = (0..200u32)
            .map(|i| (format!("s{}", i % 3), i.to_be_bytes().to_vec(), vec![i as u8; (i % 7) as usize]))
            .collect();
        let mut chunker = RestoreChunker::new(64);
        let mut restored = Vec::new();
        for (state, key, value) in &input {
            if let Some(chunk) = chunker.push(state, key, value) {
                assert!(chunk.data.len() <= 64 && !chunk.entries.is_empty());
                assert!(chunk.names.len() <= 3);
                restored.extend(entries_of(std::slice::from_ref(&chunk)));
                // As the guest hands chunks back: the next ones reuse their buffers.
                chunker.recycle(chunk);
            }
        }
        restored.extend(entries_of(&chunker.finish().into_iter().collect::<Vec<_>>()));
        assert_eq!(restored, input);
    }

    #[test]
    fn restore_chunks_respect_the_bound_and_skip_tombstones() {
        let entries = (0..10u8)
            .map(|i| StateEntry {
                state: if i % 2 == 0 { "a".into() } else { "b".into() },
                key: vec![i; 4],
                value: (i != 5).then(|| vec![i; 6]),
            })
            .collect();
        let chunks = restore_chunks(entries, 25);
        assert!(chunks.iter().all(|c| c.data.len() <= 25 && !c.entries.is_empty()));
        assert_eq!(chunks.iter().map(|c| c.entries.len()).sum::<usize>(), 9);
        for c in &chunks {
            assert!(c.entries.iter().all(|e| (e.state as usize) < c.names.len()));
        }
    }
}
