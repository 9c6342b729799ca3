//! The live entries of a chain, read straight from its chunks' bytes.
//!
//! Applying a chain into a map ([`apply_chain`](apply_chain)) allocates every
//! key and value of every chunk and keeps them in a B-tree. A restore needs neither the copies
//! nor the order: [`ChainReader`] holds the chain's encoded chunks, walks them newest entry
//! first and hands each key's newest put to the caller, borrowed from the chunk bytes. A set
//! of the keys already seen (one slot per entry, no allocation per entry) drops the older
//! versions of a key and the keys a tombstone deleted.
//!
//! Memory: the chain's encoded chunks (the live state of the scope plus what later chunks
//! superseded; compaction bounds the chain) plus about 80 bytes per entry of index.

use std::collections::{BTreeMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::ControlFlow;

use redb::ReadableTable;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::checkpoint::EntryVisitor;
use crate::codec::{EntryRef, decode_chunk, decode_chunk_refs};
use crate::error::StoreError;
use crate::external::ExternalChunks;
use crate::manifest::StateEntry;

/// A (state, key) of the chain: `state` indexes the chain's state names, `hash` covers both.
#[derive(Clone, Copy)]
struct Seen<'a> {
    hash: u64,
    state: u32,
    key: &'a [u8],
}

impl PartialEq for Seen<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.state == other.state && self.key == other.key
    }
}

impl Eq for Seen<'_> {}

impl Hash for Seen<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// Passes on the hash [`Seen`] computed (XXH3 of the key, seeded with the state).
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `Seen`; fold anything else in all the same.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// Live state while a chain is applied: state name → key → value.
pub(crate) type LiveState = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

pub(crate) fn apply_entry(live: &mut LiveState, state: &str, key: &[u8], value: Option<&[u8]>) {
    match value {
        Some(value) => match live.get_mut(state) {
            Some(keys) => {
                keys.insert(key.to_vec(), value.to_vec());
            }
            None => {
                live.insert(state.to_owned(), BTreeMap::from([(key.to_vec(), value.to_vec())]));
            }
        },
        None => {
            if let Some(keys) = live.get_mut(state) {
                keys.remove(key);
            }
        }
    }
}

/// Reads chunk `chunk` of `job`, joining its pieces; `None` when it does not exist.
fn read_chunk(
    chunks: &impl ReadableTable<(&'static str, u64, u32), &'static [u8]>,
    external: Option<&dyn ExternalChunks>,
    job: &str,
    chunk: u64,
) -> Result<Option<Vec<u8>>, StoreError> {
    let mut bytes = Vec::new();
    Ok(append_chunk(chunks, external, job, chunk, &mut bytes)?.then_some(bytes))
}

/// Appends chunk `chunk` of `job` to `out` — its pieces, or, when it has none, its bytes
/// in the external store (if any); `false` when it exists in neither.
pub(crate) fn append_chunk(
    chunks: &impl ReadableTable<(&'static str, u64, u32), &'static [u8]>,
    external: Option<&dyn ExternalChunks>,
    job: &str,
    chunk: u64,
    out: &mut Vec<u8>,
) -> Result<bool, StoreError> {
    if !append_pieces(chunks, job, chunk, out)? {
        return match external {
            Some(external) => external.get(job, chunk, out),
            None => Ok(false),
        };
    }
    Ok(true)
}

/// Appends the pieces of chunk `chunk` of `job` to `out`; `false` when it has none.
fn append_pieces(
    chunks: &impl ReadableTable<(&'static str, u64, u32), &'static [u8]>,
    job: &str,
    chunk: u64,
    out: &mut Vec<u8>,
) -> Result<bool, StoreError> {
    let mut found = false;
    for (expected, piece) in chunks.range((job, chunk, 0)..=(job, chunk, u32::MAX))?.enumerate() {
        let (key, value) = piece?;
        if key.value().2 as usize != expected {
            return Err(StoreError::corrupt(
                format!("chunk {chunk} of job `{job}`"),
                format!("piece {} where piece {expected} was expected", key.value().2),
            ));
        }
        out.extend_from_slice(value.value());
        found = true;
    }
    Ok(found)
}

/// Applies the chunks of `chain` in order onto `live`.
pub(crate) fn apply_chain(
    chunks: &impl ReadableTable<(&'static str, u64, u32), &'static [u8]>,
    external: Option<&dyn ExternalChunks>,
    job: &str,
    chain: &[u64],
    live: &mut LiveState,
) -> Result<(), StoreError> {
    for &chunk in chain {
        let bytes = read_chunk(chunks, external, job, chunk)?
            .ok_or_else(|| StoreError::MissingChunk { job: job.to_owned(), chunk })?;
        decode_chunk(&bytes, |state, key, value| {
            apply_entry(live, state, key, value);
        })
        .map_err(|detail| StoreError::corrupt(format!("chunk {chunk} of job `{job}`"), detail))?;
    }
    Ok(())
}

/// Reads chains straight from an [`ExternalChunks`], without a store: a cluster worker
/// restoring from the object storage its controller shares. A chain one of whose chunks has no
/// object (the controller keeps it in its file, or it is gone) reads as `None`: read that one
/// through the store. One chain's chunks are held at a time.
#[derive(Debug, Default)]
pub struct ExternalChains {
    reader: ChainReader,
    /// Bytes of chunks read so far.
    pub bytes: u64,
}

impl ExternalChains {
    /// The live entries of `chain` of `job`, sorted by (state, key), as
    /// [`CheckpointStorage::read_chain`](crate::CheckpointStorage::read_chain) gives them.
    pub fn read_chain(
        &mut self,
        external: &dyn ExternalChunks,
        job: &str,
        chain: &[u64],
    ) -> Result<Option<Vec<StateEntry>>, StoreError> {
        if self.reader.read_with(chain, |chunk, out| external.get(job, chunk, out))?.is_some() {
            return Ok(None);
        }
        self.bytes += self.reader.len() as u64;
        self.reader.entries(job, chain).map(Some)
    }

    /// Visits the live entries of `chain` of `job`, as
    /// [`CheckpointStorage::visit_chains`](crate::CheckpointStorage::visit_chains) does one
    /// chain; nothing is visited when it is `None`.
    pub fn visit_chain(
        &mut self,
        external: &dyn ExternalChunks,
        job: &str,
        chain: &[u64],
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<ControlFlow<()>>, StoreError> {
        if self.reader.read_with(chain, |chunk, out| external.get(job, chunk, out))?.is_some() {
            return Ok(None);
        }
        self.bytes += self.reader.len() as u64;
        self.reader.visit(job, chain, visit).map(Some)
    }
}

/// Reads a chain's encoded chunks into one buffer (kept from chain to chain, so that a
/// restore of many chains touches no fresh memory after the largest one) and visits its live
/// entries.
#[derive(Debug, Default)]
pub(crate) struct ChainReader {
    bytes: Vec<u8>,
    /// Where each chunk of the chain ends in `bytes`.
    ends: Vec<usize>,
}

impl ChainReader {
    /// Reads the chunks of `chain` (oldest first) of `job`. Fails with
    /// [`StoreError::MissingChunk`] when one is gone.
    pub(crate) fn read(
        &mut self,
        chunks: &impl ReadableTable<(&'static str, u64, u32), &'static [u8]>,
        external: Option<&dyn ExternalChunks>,
        job: &str,
        chain: &[u64],
    ) -> Result<(), StoreError> {
        match self.read_with(chain, |chunk, out| append_chunk(chunks, external, job, chunk, out))? {
            Some(chunk) => Err(StoreError::MissingChunk { job: job.to_owned(), chunk }),
            None => Ok(()),
        }
    }

    /// Reads the chunks of `chain` (oldest first) with `fetch(chunk, out)`, which appends a
    /// chunk's bytes to `out` or says it has none; returns the first chunk it has none of.
    pub(crate) fn read_with(
        &mut self,
        chain: &[u64],
        mut fetch: impl FnMut(u64, &mut Vec<u8>) -> Result<bool, StoreError>,
    ) -> Result<Option<u64>, StoreError> {
        self.bytes.clear();
        self.ends.clear();
        for &chunk in chain {
            if !fetch(chunk, &mut self.bytes)? {
                return Ok(Some(chunk));
            }
            self.ends.push(self.bytes.len());
        }
        Ok(None)
    }

    /// The bytes of the chain last read.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Every live entry of the chain last read (chunk ids `chain`), sorted by (state, key).
    pub(crate) fn entries(&self, job: &str, chain: &[u64]) -> Result<Vec<StateEntry>, StoreError> {
        let mut entries = Vec::new();
        let _ = self.visit(job, chain, &mut |state, key, value| {
            entries.push(StateEntry {
                state: state.to_owned(),
                key: key.to_vec(),
                value: Some(value.to_vec()),
            });
            ControlFlow::Continue(())
        })?;
        // Each (state, key) is visited once: the order is total.
        entries.sort_unstable_by(|a, b| (&a.state, &a.key).cmp(&(&b.state, &b.key)));
        Ok(entries)
    }

    /// Sets the chunks as they are (tests).
    #[cfg(test)]
    fn set(&mut self, chunks: &[Vec<u8>]) {
        self.bytes = chunks.concat();
        self.ends =
            chunks.iter().scan(0, |end, c| Some(std::mem::replace(end, *end + c.len()) + c.len())).collect();
    }

    /// Hands every live entry of the chain last read (chunk ids `chain`) to
    /// `visit(state, key, value)` exactly once: the newest put of each (state, key) wins, a
    /// tombstone deletes what came before it. When every chunk holds its entries in
    /// ascending (state, key) order they are visited in that order (a merge); otherwise newest
    /// chunk first and in no particular order. Stops when `visit` breaks and returns its
    /// `Break`.
    ///
    /// Every chunk is decoded and checked before the first entry is visited, so a damaged
    /// chain fails with [`StoreError::Corrupt`] without visiting anything.
    pub(crate) fn visit(
        &self,
        job: &str,
        chain: &[u64],
        visit: &mut EntryVisitor<'_>,
    ) -> Result<ControlFlow<()>, StoreError> {
        let mut names: Vec<&str> = Vec::new();
        // Per chunk its entries, with state indexes of the chain's name table.
        let mut decoded: Vec<Vec<EntryRef<'_>>> = Vec::with_capacity(self.ends.len());
        let mut total = 0;
        let mut start = 0;
        for (chunk, &end) in chain.iter().zip(&self.ends) {
            let bytes = &self.bytes[start..end];
            start = end;
            let corrupt = |detail| StoreError::corrupt(format!("chunk {chunk} of job `{job}`"), detail);
            let mut entries = Vec::new();
            let states = decode_chunk_refs(bytes, &mut entries).map_err(corrupt)?;
            // The chunk's state indexes become indexes of the chain's name table.
            let global: Vec<u32> = states
                .iter()
                .map(|state| match names.iter().position(|name| name == state) {
                    Some(index) => index as u32,
                    None => {
                        names.push(state);
                        (names.len() - 1) as u32
                    }
                })
                .collect();
            for entry in &mut entries {
                entry.state = global[entry.state as usize];
            }
            total += entries.len();
            decoded.push(entries);
        }
        // Chunks written from sorted entries (host state, compacted bases: most chains) are
        // merged in order, newest first on ties, without a hash set: the chain's entries come
        // out sorted by (state, key), which the host-state restore needs anyway.
        let ascending = |entries: &[EntryRef<'_>]| {
            entries
                .windows(2)
                .all(|w| (names[w[0].state as usize], w[0].key) < (names[w[1].state as usize], w[1].key))
        };
        if decoded.iter().all(|entries| ascending(entries)) {
            return Ok(merge(&names, &decoded, visit));
        }
        let mut seen: HashSet<Seen<'_>, BuildHasherDefault<PassThrough>> =
            HashSet::with_capacity_and_hasher(total, BuildHasherDefault::default());
        for chunk in decoded.iter().rev() {
            for entry in chunk.iter().rev() {
                let hash = xxh3_64_with_seed(entry.key, u64::from(entry.state));
                if !seen.insert(Seen { hash, state: entry.state, key: entry.key }) {
                    continue;
                }
                if let Some(value) = entry.value
                    && visit(names[entry.state as usize], entry.key, value).is_break()
                {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// Visits the live entries of chunks each sorted by (state, key), in that order: a k-way
/// merge where, of equal (state, key), the newest chunk's entry wins (a tombstone: none).
fn merge(names: &[&str], chunks: &[Vec<EntryRef<'_>>], visit: &mut EntryVisitor<'_>) -> ControlFlow<()> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    // (state name, key, newest chunk first on ties, position): the smallest comes out first.
    type Head<'a> = Reverse<(&'a str, &'a [u8], Reverse<usize>, usize)>;
    let head = |c: usize, at: usize| -> Option<Head<'_>> {
        chunks[c].get(at).map(|e| Reverse((names[e.state as usize], e.key, Reverse(c), at)))
    };
    let mut heap: BinaryHeap<Head<'_>> = (0..chunks.len()).filter_map(|c| head(c, 0)).collect();
    while let Some(Reverse((state, key, Reverse(c), at))) = heap.pop() {
        // The same (state, key) in older chunks: superseded.
        while let Some(Reverse((s, k, Reverse(older), older_at))) = heap.peek().copied() {
            if (s, k) != (state, key) {
                break;
            }
            heap.pop();
            if let Some(next) = head(older, older_at + 1) {
                heap.push(next);
            }
        }
        if let Some(next) = head(c, at + 1) {
            heap.push(next);
        }
        if let Some(value) = chunks[c][at].value
            && visit(state, key, value).is_break()
        {
            return ControlFlow::Break(());
        }
    }
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {

    use proptest::prelude::*;

    use super::*;
    use crate::checkpoint::live::{LiveState, apply_entry};
    use crate::codec::{ChunkEncoder, decode_chunk};

    /// (state, key, value or tombstone)
    type Change = (u8, u8, Option<Vec<u8>>);

    fn encode(changes: &[Change], max_bytes: usize) -> Vec<Vec<u8>> {
        let mut encoder = ChunkEncoder::new(max_bytes);
        for (state, key, value) in changes {
            encoder.push(&format!("s{state}"), &[*key], value.as_deref());
        }
        encoder.finish()
    }

    /// The old way: every chunk applied into a map, in order.
    fn applied(chunks: &[Vec<u8>]) -> LiveState {
        let mut live = LiveState::new();
        for chunk in chunks {
            decode_chunk(chunk, |state, key, value| apply_entry(&mut live, state, key, value)).unwrap();
        }
        live.retain(|_, keys| !keys.is_empty());
        live
    }

    fn reader(chunks: &[Vec<u8>]) -> ChainReader {
        let mut reader = ChainReader::default();
        reader.set(chunks);
        reader
    }

    fn visited(chunks: &[Vec<u8>]) -> Result<LiveState, StoreError> {
        let ids: Vec<u64> = (1..=chunks.len() as u64).collect();
        let mut live = LiveState::new();
        let mut twice = None;
        let _ = reader(chunks).visit("job", &ids, &mut |state, key, value| {
            let keys = live.entry(state.to_owned()).or_default();
            if keys.insert(key.to_vec(), value.to_vec()).is_some() {
                twice = Some((state.to_owned(), key.to_vec()));
            }
            ControlFlow::Continue(())
        })?;
        assert_eq!(twice, None, "an entry was visited twice");
        Ok(live)
    }

    fn change() -> impl Strategy<Value = Change> {
        (0..3u8, 0..8u8, prop::option::weighted(0.7, prop::collection::vec(any::<u8>(), 0..20)))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Random chains (repeated keys within and across chunks, tombstones, several states,
        /// tiny chunks): the live entries visited are exactly those of the chain applied into
        /// a map.
        #[test]
        fn visiting_a_chain_equals_applying_it(
            deltas in prop::collection::vec(prop::collection::vec(change(), 0..16), 1..6),
            max_bytes in prop::sample::select(vec![20usize, 60, 1 << 20]),
        ) {
            let chunks: Vec<Vec<u8>> = deltas.iter().flat_map(|d| encode(d, max_bytes)).collect();
            prop_assert_eq!(visited(&chunks).unwrap(), applied(&chunks));
        }

        /// Chains of sorted chunks (as host state and compaction write them: one entry per
        /// key, ascending) take the merge: the same live entries, visited in (state, key)
        /// order.
        #[test]
        fn sorted_chains_are_merged_in_order(
            deltas in prop::collection::vec(prop::collection::vec(change(), 0..16), 1..6),
            max_bytes in prop::sample::select(vec![20usize, 60, 1 << 20]),
        ) {
            let sorted: Vec<Vec<Change>> = deltas
                .iter()
                .map(|d| {
                    let last: BTreeMap<(u8, u8), Option<Vec<u8>>> = d.iter().map(|(s, k, v)| ((*s, *k), v.clone())).collect();
                    last.into_iter().map(|((s, k), v)| (s, k, v)).collect()
                })
                .collect();
            let chunks: Vec<Vec<u8>> = sorted.iter().flat_map(|d| encode(d, max_bytes)).collect();
            prop_assert_eq!(visited(&chunks).unwrap(), applied(&chunks));
            let ids: Vec<u64> = (1..=chunks.len() as u64).collect();
            let mut order = Vec::new();
            let _ = reader(&chunks).visit("job", &ids, &mut |state, key, _| {
                order.push((state.to_owned(), key.to_vec()));
                ControlFlow::Continue(())
            });
            prop_assert!(order.windows(2).all(|w| w[0] < w[1]), "{:?}", order);
        }
    }

    #[test]
    fn a_break_stops_the_visit() {
        let chunks = encode(&[(0, 1, Some(vec![1])), (0, 2, Some(vec![2])), (0, 3, Some(vec![3]))], 1 << 20);
        let mut calls = 0;
        let flow = reader(&chunks)
            .visit("job", &[1], &mut |_, _, _| {
                calls += 1;
                ControlFlow::Break(())
            })
            .unwrap();
        assert_eq!((flow, calls), (ControlFlow::Break(()), 1));
    }

    #[test]
    fn a_damaged_chunk_fails_before_anything_is_visited() {
        let mut chunks = encode(&[(0, 1, Some(vec![1]))], 1 << 20);
        chunks.extend(encode(&[(0, 2, Some(vec![2]))], 1 << 20));
        for at in 0..chunks[0].len() {
            let mut damaged = chunks.clone();
            damaged[0][at] ^= 0x40;
            let mut calls = 0;
            let err = reader(&damaged)
                .visit("job", &[7, 8], &mut |_, _, _| {
                    calls += 1;
                    ControlFlow::Continue(())
                })
                .unwrap_err();
            assert!(matches!(&err, StoreError::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains("chunk 7 of job `job`"), "{err}");
            assert_eq!(calls, 0, "flip at {at}");
        }
    }
}
