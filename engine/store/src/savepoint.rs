//! Savepoints: user-owned, immutable, self-contained copies of a completed checkpoint's state.
//!
//! A savepoint holds, per operator and scope (a key group, or a subtask's operator state at
//! [`OPERATOR_SCOPE_BASE`](crate::OPERATOR_SCOPE_BASE)` + subtask`), the *live* entries of the
//! checkpoint (its chain applied), plus each subtask's opaque blob. It never references
//! checkpoint chunks, so checkpoint retention and GC need not know about savepoints, and it is
//! keyed by scope, so key groups can later be given to a different parallelism.
//!
//! The entries of a scope are stored as chunks of the state chunk format (puts only, sorted
//! by state and key), each split into pieces that fit a B-tree page like checkpoint chunks,
//! or, when the store keeps chunks externally ([`Store::set_external_chunks`]), each one
//! object (`SAVEPOINT_OBJECTS` sizes them; see [`crate::external`]). Blobs stay in redb.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use redb::{Durability, ReadOnlyTable, ReadTransaction, ReadableTable, Table, WriteTransaction};
use serde::{Deserialize, Serialize};

use crate::checkpoint::live::{LiveState, apply_chain};
use crate::codec::{ChunkEncoder, decode_chunk};
use crate::error::StoreError;
use crate::external::ExternalChunks;
use crate::manifest::{Manifest, StateEntry};
use crate::store::Store;
use crate::tables::{
    CHUNK_PIECE_BYTES, CHUNKS, SAVEPOINT_BLOBS, SAVEPOINT_OBJECTS, SAVEPOINT_OWNERS, SAVEPOINT_PIECES,
    SAVEPOINT_SCOPES, SAVEPOINTS,
};
use crate::usage::{Meter, Subject, charge, external_savepoint_bytes};

/// A savepoint as stored (MessagePack with field names in the `weir.savepoints` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavepointInfo {
    /// Chosen by the caller (the server uses random hex); unique in the store.
    pub id: String,
    /// The tenant that owns it.
    pub owner: String,
    /// The job it was taken from.
    pub job: String,
    /// The checkpoint it copies.
    pub checkpoint: u64,
    /// When it was taken (unix ms).
    pub created_ms: u64,
    /// Key and value bytes of every live entry plus the bytes of every blob (computed by the
    /// store).
    pub bytes: u64,
    /// Live entries (computed by the store).
    pub entries: u64,
    /// The id it had in the store it was exported from (set by
    /// [`Store::import_savepoint`]).
    pub origin: Option<String>,
    /// Engine-defined (operators, parallelism, state versions): opaque to the store, carried
    /// in export files.
    pub description: serde_json::Value,
}

/// Key of [`SAVEPOINT_PIECES`]: (savepoint id, operator, scope, chunk, piece).
pub(crate) type PieceKey = (&'static str, &'static str, u32, u32, u32);

/// Value of [`SAVEPOINT_SCOPES`]: (chunks, live entries) of a scope.
pub(crate) type ScopeIndex = (u32, u64);

/// Key of [`SAVEPOINT_OBJECTS`]: (savepoint id, operator, scope, chunk).
pub(crate) type ObjectKey = (&'static str, &'static str, u32, u32);

/// The smallest string that sorts after every tuple key whose first field is `field`: keys
/// `(field, ..)` are exactly those below `(after(field), "", 0, ..)`.
pub(crate) fn after(field: &str) -> String {
    format!("{field}\0")
}

fn encode_info(info: &SavepointInfo) -> Result<Vec<u8>, StoreError> {
    rmp_serde::to_vec_named(info).map_err(|error| StoreError::Encode {
        what: format!("savepoint `{}`", info.id),
        detail: error.to_string(),
    })
}

fn decode_info(id: &str, bytes: &[u8]) -> Result<SavepointInfo, StoreError> {
    rmp_serde::from_slice(bytes)
        .map_err(|error| StoreError::corrupt(format!("savepoint `{id}`"), error.to_string()))
}

fn read_info(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    id: &str,
) -> Result<Option<SavepointInfo>, StoreError> {
    match table.get(id)? {
        Some(bytes) => decode_info(id, bytes.value()).map(Some),
        None => Ok(None),
    }
}

/// The info of savepoint `id`, or [`StoreError::UnknownSavepoint`].
pub(crate) fn require_info(txn: &ReadTransaction, id: &str) -> Result<SavepointInfo, StoreError> {
    read_info(&txn.open_table(SAVEPOINTS)?, id)?
        .ok_or_else(|| StoreError::UnknownSavepoint { id: id.to_owned() })
}

/// Fails if a scope of an operator is in the chains of two subtasks: a savepoint keeps one
/// set of entries per (operator, scope).
fn check_scopes_unique(info: &SavepointInfo, manifest: &Manifest) -> Result<(), StoreError> {
    for (operator, subtasks) in manifest {
        let mut owners = HashMap::new();
        for (subtask, state) in subtasks {
            for scope in state.chains.keys() {
                if let Some(first) = owners.insert(*scope, *subtask) {
                    return Err(StoreError::InvalidMeta {
                        job: info.job.clone(),
                        id: info.checkpoint,
                        reason: format!(
                            "scope {scope} of operator `{operator}` is in the chains of subtasks \
                             {first} and {subtask}; a savepoint keeps one set of entries per scope"
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Fails if a subtask of `manifest` holds channel state: only an aligned checkpoint can be
/// copied into a savepoint, which keeps no in-flight data.
fn check_aligned(info: &SavepointInfo, manifest: &Manifest) -> Result<(), StoreError> {
    let unaligned = manifest.values().flat_map(|subtasks| subtasks.values()).any(|s| !s.channel.is_empty());
    if unaligned {
        return Err(StoreError::UnalignedCheckpoint { job: info.job.clone(), id: info.checkpoint });
    }
    Ok(())
}

/// The scope a [`SavepointWriter`] is filling.
struct OpenScope {
    operator: String,
    scope: u32,
    encoder: ChunkEncoder,
    chunks: u32,
    entries: u64,
}

/// Writes one savepoint: entries scope by scope, blobs, and finally the info (with the
/// counted bytes and entries) and the owner index. Where to depends on the store: see
/// [`Target`].
pub(crate) struct SavepointWriter<'txn> {
    id: String,
    max_chunk_bytes: usize,
    target: Target<'txn>,
    /// Bytes stored so far (keys, values and per-entry overhead), charged to the owner.
    meter: Meter,
    open: Option<OpenScope>,
    entries: u64,
    bytes: u64,
}

/// Where a [`SavepointWriter`] puts what it writes.
enum Target<'txn> {
    /// Chunks kept in the file: pieces and rows go straight into the one write transaction.
    Pieces(Box<PieceTables<'txn>>),
    /// Chunks kept in object storage: each is put as it fills, with no transaction open
    /// (a slow upload holds no writer of the store), and the rows wait in memory for the
    /// short transaction that records them ([`SavepointWriter::finish`]).
    Objects {
        external: Arc<dyn ExternalChunks>,
        /// The number of the savepoint's next object.
        next_object: u64,
        rows: Staged,
    },
}

/// The savepoint tables of a write transaction.
struct PieceTables<'txn> {
    pieces: Table<'txn, PieceKey, &'static [u8]>,
    scopes: Table<'txn, (&'static str, &'static str, u32), ScopeIndex>,
    blobs: Table<'txn, (&'static str, &'static str, u32), &'static [u8]>,
}

/// The rows of a savepoint whose chunks were put as objects, to be recorded.
#[derive(Default)]
struct Staged {
    /// (operator, scope, chunk) → (object number, size).
    objects: Vec<(String, u32, u32, (u64, u64))>,
    /// (operator, scope) → index.
    scopes: Vec<(String, u32, ScopeIndex)>,
    /// (operator, subtask) → blob.
    blobs: Vec<(String, u32, Vec<u8>)>,
}

impl<'txn> SavepointWriter<'txn> {
    fn new(id: &str, max_chunk_bytes: usize, target: Target<'txn>) -> Self {
        SavepointWriter {
            id: id.to_owned(),
            max_chunk_bytes,
            target,
            meter: Meter::default(),
            open: None,
            entries: 0,
            bytes: 0,
        }
    }

    /// A writer of new savepoint `id` into the tables of `txn` (chunks as pieces); fails
    /// with [`StoreError::SavepointExists`] if the id is taken.
    fn in_file(txn: &'txn WriteTransaction, id: &str, max_chunk_bytes: usize) -> Result<Self, StoreError> {
        if txn.open_table(SAVEPOINTS)?.get(id)?.is_some() {
            return Err(StoreError::SavepointExists { id: id.to_owned() });
        }
        let tables = PieceTables {
            pieces: txn.open_table(SAVEPOINT_PIECES)?,
            scopes: txn.open_table(SAVEPOINT_SCOPES)?,
            blobs: txn.open_table(SAVEPOINT_BLOBS)?,
        };
        Ok(Self::new(id, max_chunk_bytes, Target::Pieces(Box::new(tables))))
    }

    /// Stores `chunks` of a scope, numbered from `first`; returns the next chunk number.
    fn write_chunks(
        &mut self,
        operator: &str,
        scope: u32,
        first: u32,
        chunks: Vec<Vec<u8>>,
    ) -> Result<u32, StoreError> {
        let id = self.id.as_str();
        let mut number = first;
        for bytes in chunks {
            match &mut self.target {
                Target::Objects { external, next_object, rows } => {
                    let n = *next_object;
                    *next_object += 1;
                    // W6: put before the transaction that records it; should that never
                    // commit, the object is deleted or left to the sweep.
                    external.put_savepoint(id, n, &bytes)?;
                    rows.objects.push((operator.to_owned(), scope, number, (n, bytes.len() as u64)));
                    self.meter.0 += external_savepoint_bytes(id.len() + operator.len(), bytes.len() as u64);
                }
                Target::Pieces(tables) => {
                    for (piece, part) in bytes.chunks(CHUNK_PIECE_BYTES).enumerate() {
                        tables.pieces.insert((id, operator, scope, number, piece as u32), part)?;
                        self.meter.put(id.len() + operator.len() + 12, part.len(), None);
                    }
                }
            }
            number += 1;
        }
        Ok(number)
    }

    /// Adds a live entry to `scope` of `operator`. The entries of a scope must be pushed
    /// together (no other scope in between), sorted by (state, key) without duplicates.
    pub(crate) fn push(
        &mut self,
        operator: &str,
        scope: u32,
        state: &str,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), StoreError> {
        if !matches!(&self.open, Some(open) if open.operator == operator && open.scope == scope) {
            self.close_scope()?;
        }
        let max_chunk_bytes = self.max_chunk_bytes;
        let open = self.open.get_or_insert_with(|| OpenScope {
            operator: operator.to_owned(),
            scope,
            encoder: ChunkEncoder::new(max_chunk_bytes),
            chunks: 0,
            entries: 0,
        });
        open.encoder.push(state, key, Some(value));
        open.entries += 1;
        self.entries += 1;
        self.bytes += (key.len() + value.len()) as u64;
        let done = open.encoder.take_done();
        if !done.is_empty() {
            let mut open = self.open.take().expect("the scope is open");
            open.chunks = self.write_chunks(&open.operator, scope, open.chunks, done)?;
            self.open = Some(open);
        }
        Ok(())
    }

    /// Writes the rest of the open scope and its index row.
    fn close_scope(&mut self) -> Result<(), StoreError> {
        if let Some(open) = self.open.take() {
            let chunks = self.write_chunks(&open.operator, open.scope, open.chunks, open.encoder.finish())?;
            let key = (self.id.as_str(), open.operator.as_str(), open.scope);
            match &mut self.target {
                Target::Pieces(tables) => {
                    tables.scopes.insert(key, (chunks, open.entries))?;
                }
                Target::Objects { rows, .. } => {
                    rows.scopes.push((open.operator.clone(), open.scope, (chunks, open.entries)))
                }
            }
            self.meter.put(key.0.len() + key.1.len() + 4, 12, None);
        }
        Ok(())
    }

    /// Stores the blob of `subtask` of `operator`.
    pub(crate) fn blob(&mut self, operator: &str, subtask: u32, blob: &[u8]) -> Result<(), StoreError> {
        match &mut self.target {
            Target::Pieces(tables) => {
                tables.blobs.insert((self.id.as_str(), operator, subtask), blob)?;
            }
            Target::Objects { rows, .. } => rows.blobs.push((operator.to_owned(), subtask, blob.to_vec())),
        }
        self.meter.put(self.id.len() + operator.len() + 4, blob.len(), None);
        self.bytes += blob.len() as u64;
        Ok(())
    }

    /// Live entries pushed so far.
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    /// Key, value and blob bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Completes the savepoint in `txn` (the writer's own when it writes pieces): stores
    /// `info` under the writer's id with the counted bytes and entries (overriding `id`,
    /// `bytes` and `entries`) and every row still in memory, indexes it by owner, and charges
    /// everything written to the owner (failing with [`StoreError::QuotaExceeded`] if that
    /// passes its limit, or [`StoreError::SavepointExists`] if the id was taken meanwhile).
    fn finish(
        mut self,
        txn: &WriteTransaction,
        mut info: SavepointInfo,
    ) -> Result<SavepointInfo, StoreError> {
        self.close_scope()?;
        let id = self.id.as_str();
        let mut infos = txn.open_table(SAVEPOINTS)?;
        if let Target::Objects { rows, .. } = &self.target {
            if infos.get(id)?.is_some() {
                return Err(StoreError::SavepointExists { id: id.to_owned() });
            }
            let mut objects = txn.open_table(SAVEPOINT_OBJECTS)?;
            for (operator, scope, chunk, object) in &rows.objects {
                objects.insert((id, operator.as_str(), *scope, *chunk), object)?;
            }
            let mut scopes = txn.open_table(SAVEPOINT_SCOPES)?;
            for (operator, scope, index) in &rows.scopes {
                scopes.insert((id, operator.as_str(), *scope), index)?;
            }
            let mut blobs = txn.open_table(SAVEPOINT_BLOBS)?;
            for (operator, subtask, blob) in &rows.blobs {
                blobs.insert((id, operator.as_str(), *subtask), blob.as_slice())?;
            }
        }
        info.id = self.id.clone();
        info.bytes = self.bytes;
        info.entries = self.entries;
        let encoded = encode_info(&info)?;
        infos.insert(info.id.as_str(), encoded.as_slice())?;
        self.meter.put(info.id.len(), encoded.len(), None);
        txn.open_table(SAVEPOINT_OWNERS)?.insert((info.owner.as_str(), info.id.as_str()), ())?;
        self.meter.put(info.owner.len() + info.id.len(), 0, None);
        drop(infos);
        charge(txn, Subject::Owner(&info.owner), self.meter.0, true)?;
        Ok(info)
    }
}

/// Decodes one stored chunk of a savepoint scope (puts only).
fn decode_savepoint_chunk(what: &str, chunk: u32, bytes: &[u8]) -> Result<Vec<StateEntry>, StoreError> {
    let mut entries = Vec::new();
    let mut tombstone = false;
    decode_chunk(bytes, |state, key, value| match value {
        Some(value) => entries.push(StateEntry {
            state: state.to_owned(),
            key: key.to_vec(),
            value: Some(value.to_vec()),
        }),
        None => tombstone = true,
    })
    .map_err(|detail| StoreError::corrupt(what, format!("chunk {chunk}: {detail}")))?;
    if tombstone {
        return Err(StoreError::corrupt(what, format!("chunk {chunk} holds a tombstone")));
    }
    Ok(entries)
}

/// Where the chunks of a savepoint's scopes are read from, in one read transaction: the
/// piece table, or objects in the store's external chunk store.
pub(crate) struct ScopeChunks {
    pieces: ReadOnlyTable<PieceKey, &'static [u8]>,
    objects: ReadOnlyTable<ObjectKey, (u64, u64)>,
    external: Option<Arc<dyn ExternalChunks>>,
}

impl ScopeChunks {
    pub(crate) fn open(txn: &ReadTransaction, store: &Store) -> Result<Self, StoreError> {
        Ok(ScopeChunks {
            pieces: txn.open_table(SAVEPOINT_PIECES)?,
            objects: txn.open_table(SAVEPOINT_OBJECTS)?,
            external: store.external(),
        })
    }

    /// Reads the chunks of `scope` of `operator` in savepoint `id` in order and hands each
    /// one's entries to `on_chunk`; checks the chunk and entry counts of the scope's `index`
    /// row.
    pub(crate) fn read(
        &self,
        (id, operator, scope): (&str, &str, u32),
        (chunks, entries): ScopeIndex,
        mut on_chunk: impl FnMut(Vec<StateEntry>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let what = format!("scope {scope} of operator `{operator}` in savepoint `{id}`");
        let mut done_chunks = 0u32;
        let mut done_entries = 0u64;
        let mut finish = |number: u32, bytes: &[u8]| -> Result<(), StoreError> {
            if number != done_chunks {
                return Err(StoreError::corrupt(&what, format!("chunk {done_chunks} is missing")));
            }
            let decoded = decode_savepoint_chunk(&what, number, bytes)?;
            done_chunks += 1;
            done_entries += decoded.len() as u64;
            on_chunk(decoded)
        };
        let mut bytes = Vec::new();
        for item in self.objects.range((id, operator, scope, 0)..=(id, operator, scope, u32::MAX))? {
            let (key, value) = item?;
            let (number, (n, size)) = (key.value().3, value.value());
            let external = self.external.as_deref().ok_or_else(|| {
                StoreError::External(format!(
                    "{what}: its chunks are in object storage, and this store has no object store set"
                ))
            })?;
            bytes.clear();
            if !external.get_savepoint(id, n, &mut bytes)? {
                return Err(StoreError::corrupt(&what, format!("chunk {number} (object {n}) is gone")));
            }
            if bytes.len() as u64 != size {
                return Err(StoreError::corrupt(
                    &what,
                    format!("chunk {number} (object {n}) has {} bytes, {size} were stored", bytes.len()),
                ));
            }
            finish(number, &bytes)?;
        }
        // The chunk being joined: (number, next piece, bytes).
        let mut current: Option<(u32, u32, Vec<u8>)> = None;
        for item in
            self.pieces.range((id, operator, scope, 0, 0)..=(id, operator, scope, u32::MAX, u32::MAX))?
        {
            let (key, value) = item?;
            let (_, _, _, number, piece) = key.value();
            if let Some((open, next, bytes)) = &mut current
                && *open == number
            {
                if piece != *next {
                    return Err(StoreError::corrupt(
                        &what,
                        format!("chunk {number}: piece {piece} where piece {next} was expected"),
                    ));
                }
                *next += 1;
                bytes.extend_from_slice(value.value());
                continue;
            }
            if let Some((open, _, bytes)) = current.take() {
                finish(open, &bytes)?;
            }
            if piece != 0 {
                return Err(StoreError::corrupt(
                    &what,
                    format!("chunk {number}: piece {piece} where piece 0 was expected"),
                ));
            }
            current = Some((number, 1, value.value().to_vec()));
        }
        if let Some((open, _, bytes)) = current.take() {
            finish(open, &bytes)?;
        }
        if (done_chunks, done_entries) != (chunks, entries) {
            return Err(StoreError::corrupt(
                &what,
                format!(
                    "{done_chunks} chunks with {done_entries} entries are stored, the index says \
                     {chunks} chunks with {entries} entries"
                ),
            ));
        }
        Ok(())
    }
}

impl Store {
    /// Copies the live state of `manifest` (a completed checkpoint of `info.job`, number
    /// `info.checkpoint`) into a new savepoint `info.id`: per operator and scope the chain
    /// applied, and every subtask's blob. Returns the stored info, with `bytes` and
    /// `entries` computed. Written as [`Store::write_savepoint`] says: with chunks in object
    /// storage, no write transaction is open while they are put.
    ///
    /// Fails with [`StoreError::SavepointExists`] if the id is taken,
    /// [`StoreError::MissingChunk`] if a chunk of the manifest is gone (nothing is stored
    /// then), [`StoreError::InvalidMeta`] if two subtasks of an operator hold the same
    /// scope, and [`StoreError::UnalignedCheckpoint`] if a subtask holds channel state (a
    /// savepoint is aligned: it has no in-flight data to replay).
    pub fn create_savepoint(
        &self,
        info: SavepointInfo,
        manifest: &Manifest,
    ) -> Result<SavepointInfo, StoreError> {
        check_aligned(&info, manifest)?;
        check_scopes_unique(&info, manifest)?;
        let id = info.id.clone();
        let external = self.external();
        let fill = |writer: &mut SavepointWriter<'_>| {
            for (operator, subtasks) in manifest {
                for (subtask, state) in subtasks {
                    writer.blob(operator, *subtask, &state.blob)?;
                    for (scope, chain) in &state.chains {
                        // One short read transaction per chain (the chunks of a pinned or
                        // latest checkpoint stay; one collected meanwhile is MissingChunk).
                        let mut live = LiveState::new();
                        let txn = self.read_txn()?;
                        apply_chain(
                            &txn.open_table(CHUNKS)?,
                            external.as_deref(),
                            &info.job,
                            chain,
                            &mut live,
                        )?;
                        drop(txn);
                        for (name, keys) in &live {
                            for (key, value) in keys {
                                writer.push(operator, *scope, name, key, value)?;
                            }
                        }
                    }
                }
            }
            Ok(info)
        };
        self.write_savepoint(&id, fill, |_| Ok(()))
    }

    /// Writes new savepoint `id`: `fill` pushes its entries and blobs into a
    /// [`SavepointWriter`] and returns its info, `before_commit` runs in the transaction that
    /// records it. The savepoint exists once that durable transaction commits.
    ///
    /// With chunks in the file, `fill` runs inside that one write transaction. With chunks
    /// in object storage (`Store::set_external_chunks`), every chunk is put as `fill` makes
    /// it, with no transaction open — an upload never holds the store's single writer, which
    /// every other tenant's checkpoints, appends and imports need — under the savepoint's
    /// own names, which nothing references yet; then one short write transaction records the
    /// rows. When anything fails the objects are deleted (what that misses is an orphan
    /// [`Store::sweep_savepoint_objects`] collects once past its grace period).
    pub(crate) fn write_savepoint(
        &self,
        id: &str,
        fill: impl FnOnce(&mut SavepointWriter<'_>) -> Result<SavepointInfo, StoreError>,
        before_commit: impl FnOnce(&WriteTransaction) -> Result<(), StoreError>,
    ) -> Result<SavepointInfo, StoreError> {
        self.check_disk(0)?;
        let Some(external) = self.external() else {
            let txn = self.write_txn(Durability::Immediate)?;
            let mut writer = SavepointWriter::in_file(&txn, id, self.max_chunk_bytes)?;
            let info = fill(&mut writer)?;
            before_commit(&txn)?;
            let info = writer.finish(&txn, info)?;
            txn.commit()?;
            return Ok(info);
        };
        if self.savepoint(id)?.is_some() {
            return Err(StoreError::SavepointExists { id: id.to_owned() });
        }
        let target = Target::Objects { external: external.clone(), next_object: 0, rows: Staged::default() };
        let mut writer = SavepointWriter::new(id, self.max_chunk_bytes, target);
        let written = fill(&mut writer).and_then(|info| {
            let txn = self.write_txn(Durability::Immediate)?;
            before_commit(&txn)?;
            let info = writer.finish(&txn, info)?;
            txn.commit()?;
            Ok(info)
        });
        match written {
            // Another writer took the id meanwhile: the objects under it are its own.
            Err(error @ StoreError::SavepointExists { .. }) => Err(error),
            Err(error) => {
                let _ = external.delete_savepoint(id);
                Err(error)
            }
            ok => ok,
        }
    }

    /// Deletes the objects of savepoints that are not stored (a creation or import that
    /// failed, or a deletion whose objects were not all deleted); returns how many
    /// savepoints' objects were deleted. Lists the objects before it reads which
    /// savepoints are stored, so a savepoint recorded meanwhile is seen; one whose objects
    /// are still being put (no record yet) is younger than the [`SweepPolicy`](crate::SweepPolicy)'s grace
    /// period, and so is one a newer `weir.redb` than this one recorded. A dry run only
    /// logs. Nothing without an external chunk store.
    pub fn sweep_savepoint_objects(&self) -> Result<usize, StoreError> {
        let Some(external) = self.external() else {
            return Ok(0);
        };
        let policy = external.sweep_policy();
        let listed = external.list_savepoints()?;
        let mut unnamed = Vec::new();
        {
            let txn = self.read_txn()?;
            let infos = txn.open_table(SAVEPOINTS)?;
            for (id, modified) in listed {
                if infos.get(id.as_str())?.is_none() {
                    unnamed.push((id, modified));
                }
            }
        }
        let mut swept = 0;
        for (id, modified) in unnamed {
            let age_ms =
                std::time::SystemTime::now().duration_since(modified).map_or(0, |age| age.as_millis());
            if !policy.past_grace(modified) {
                tracing::info!(
                    savepoint = %id, age_ms, grace_ms = policy.grace_ms,
                    "object sweep: kept the objects of a savepoint no record names (within the grace period)"
                );
            } else if policy.dry_run {
                tracing::warn!(
                    savepoint = %id, age_ms,
                    "object sweep (dry run): would delete the objects of a savepoint no record names"
                );
            } else {
                external.delete_savepoint(&id)?;
                tracing::info!(
                    savepoint = %id, age_ms,
                    "object sweep: deleted the objects of a savepoint no record names"
                );
                swept += 1;
            }
        }
        Ok(swept)
    }

    /// Savepoint `id`, if it exists.
    pub fn savepoint(&self, id: &str) -> Result<Option<SavepointInfo>, StoreError> {
        let txn = self.read_txn()?;
        read_info(&txn.open_table(SAVEPOINTS)?, id)
    }

    /// The savepoints of `owner`, oldest first (by `created_ms`, then id).
    pub fn savepoints(&self, owner: &str) -> Result<Vec<SavepointInfo>, StoreError> {
        let txn = self.read_txn()?;
        let owners = txn.open_table(SAVEPOINT_OWNERS)?;
        let infos = txn.open_table(SAVEPOINTS)?;
        let end = after(owner);
        let mut list = Vec::new();
        for item in owners.range((owner, "")..(end.as_str(), ""))? {
            let (key, _) = item?;
            let id = key.value().1;
            let info = read_info(&infos, id)?.ok_or_else(|| {
                StoreError::corrupt(
                    format!("savepoint `{id}` of owner `{owner}`"),
                    "it is listed for its owner but not stored",
                )
            })?;
            list.push(info);
        }
        list.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        Ok(list)
    }

    /// Sum of `bytes` of the savepoints of `owner` (for storage quotas).
    pub fn savepoint_usage(&self, owner: &str) -> Result<u64, StoreError> {
        Ok(self.savepoints(owner)?.iter().map(|info| info.bytes).sum())
    }

    /// Deletes savepoint `id` and all its data, durably; `false` if it did not exist. Its
    /// objects, if it has any, are deleted once that committed (a failure there leaves them to
    /// [`Store::sweep_savepoint_objects`]).
    pub fn delete_savepoint(&self, id: &str) -> Result<bool, StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut objects = false;
        {
            let mut infos = txn.open_table(SAVEPOINTS)?;
            let Some(bytes) = infos.remove(id)? else {
                return Ok(false);
            };
            let mut meter = Meter::default();
            meter.remove(id.len(), bytes.value().len());
            let mut owners = txn.open_table(SAVEPOINT_OWNERS)?;
            let owner = match decode_info(id, bytes.value()) {
                Ok(info) => {
                    owners.remove((info.owner.as_str(), id))?;
                    meter.remove(info.owner.len() + id.len(), 0);
                    Some(info.owner)
                }
                // A damaged info row must not make the savepoint undeletable.
                Err(_) => {
                    owners.retain(|(_, listed), ()| listed != id)?;
                    None
                }
            };
            drop(bytes);
            let end = after(id);
            let end = end.as_str();
            txn.open_table(SAVEPOINT_SCOPES)?.retain_in((id, "", 0)..(end, "", 0), |(_, op, _), _| {
                meter.remove(id.len() + op.len() + 4, 12);
                false
            })?;
            txn.open_table(SAVEPOINT_PIECES)?.retain_in(
                (id, "", 0, 0, 0)..(end, "", 0, 0, 0),
                |(_, op, _, _, _), piece| {
                    meter.remove(id.len() + op.len() + 12, piece.len());
                    false
                },
            )?;
            txn.open_table(SAVEPOINT_BLOBS)?.retain_in((id, "", 0)..(end, "", 0), |(_, op, _), blob| {
                meter.remove(id.len() + op.len() + 4, blob.len());
                false
            })?;
            txn.open_table(SAVEPOINT_OBJECTS)?.retain_in(
                (id, "", 0, 0)..(end, "", 0, 0),
                |(_, op, _, _), (_, size)| {
                    meter.0 -= external_savepoint_bytes(id.len() + op.len(), size);
                    objects = true;
                    false
                },
            )?;
            if let Some(owner) = owner {
                drop((infos, owners));
                charge(&txn, Subject::Owner(&owner), meter.0, false)?;
            }
        }
        txn.commit()?;
        if let (true, Some(external)) = (objects, self.external()) {
            let _ = external.delete_savepoint(id);
        }
        Ok(true)
    }

    /// The operators that have entries or blobs in savepoint `id`, sorted.
    pub fn savepoint_operators(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let txn = self.read_txn()?;
        require_info(&txn, id)?;
        let end = after(id);
        let mut operators = BTreeSet::new();
        for item in txn.open_table(SAVEPOINT_SCOPES)?.range((id, "", 0)..(end.as_str(), "", 0))? {
            operators.insert(item?.0.value().1.to_owned());
        }
        for item in txn.open_table(SAVEPOINT_BLOBS)?.range((id, "", 0)..(end.as_str(), "", 0))? {
            operators.insert(item?.0.value().1.to_owned());
        }
        Ok(operators.into_iter().collect())
    }

    /// The scopes of `operator` that hold entries in savepoint `id`, ascending.
    pub fn savepoint_scopes(&self, id: &str, operator: &str) -> Result<Vec<u32>, StoreError> {
        let txn = self.read_txn()?;
        require_info(&txn, id)?;
        let mut scopes = Vec::new();
        for item in txn.open_table(SAVEPOINT_SCOPES)?.range((id, operator, 0)..=(id, operator, u32::MAX))? {
            scopes.push(item?.0.value().2);
        }
        Ok(scopes)
    }

    /// The live entries of `scope` of `operator` in savepoint `id`, sorted by (state, key);
    /// `value` is always `Some`. Empty for a scope without entries.
    pub fn read_savepoint_scope(
        &self,
        id: &str,
        operator: &str,
        scope: u32,
    ) -> Result<Vec<StateEntry>, StoreError> {
        let txn = self.read_txn()?;
        require_info(&txn, id)?;
        let Some(index) = txn.open_table(SAVEPOINT_SCOPES)?.get((id, operator, scope))?.map(|v| v.value())
        else {
            return Ok(Vec::new());
        };
        let mut entries = Vec::new();
        ScopeChunks::open(&txn, self)?.read((id, operator, scope), index, |chunk| {
            entries.extend(chunk);
            Ok(())
        })?;
        Ok(entries)
    }

    /// Every subtask blob of `operator` in savepoint `id`, by subtask.
    pub fn savepoint_blobs(&self, id: &str, operator: &str) -> Result<BTreeMap<u32, Vec<u8>>, StoreError> {
        let txn = self.read_txn()?;
        require_info(&txn, id)?;
        let mut blobs = BTreeMap::new();
        for item in txn.open_table(SAVEPOINT_BLOBS)?.range((id, operator, 0)..=(id, operator, u32::MAX))? {
            let (key, blob) = item?;
            blobs.insert(key.value().2, blob.value().to_vec());
        }
        Ok(blobs)
    }
}
