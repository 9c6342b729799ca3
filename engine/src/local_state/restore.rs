//! Restoring a local store from checkpoint entries by bulk ingestion.

use fjall::Keyspace;

use super::error::{LocalStateError, store_error};
use super::keys::{HOST_STATE_PREFIX, split_chain_key, write_local_key};
use super::limits::{check_field, check_value};
use super::store::LocalStore;

/// Fills a fresh store from the live entries of a checkpoint (before `open`), by bulk
/// ingestion: entries are buffered until their key group changes (a checkpoint's chain holds
/// one key group) or `RESTORE_RUN_BYTES` are buffered, sorted by local key and handed to a
/// thread that writes them straight into tables ([`Keyspace::start_ingestion`]: no journal,
/// no memtable, no compaction of what it wrote). Sorted runs that follow each other in key
/// order go into one ingestion; a run that does not (a key group larger than a run, or
/// chains not in key-group order) starts the next one. The thread builds tables while the
/// restore decodes the next chain.
pub struct LocalRestorer {
    store: LocalStore,
    /// The entries of the current key group, unsorted.
    pending: SortedRun,
    /// The key group of the entries in `pending`.
    group: Option<u32>,
    /// The largest key handed to the ingesting thread so far.
    last_sent: Option<Vec<u8>>,
    /// Sorted runs to the ingesting thread; `None` until the first run.
    runs: Option<std::sync::mpsc::SyncSender<SortedRun>>,
    /// Runs the thread has written, to be filled again.
    spare: Option<std::sync::mpsc::Receiver<SortedRun>>,
    ingester: Option<std::thread::JoinHandle<Result<(), LocalStateError>>>,
    /// [`RESTORE_RUN_BYTES`] (smaller in tests).
    run_bytes: usize,
}

/// Entries in one buffer (no allocation per entry): `bytes` holds each local key followed
/// by its value; `items` are (start, key length, value length).
#[derive(Default)]
struct SortedRun {
    /// Start a new ingestion for this run (its keys do not all follow the last run's).
    new_ingestion: bool,
    /// Some item's key is not above the one before it: the run needs its sort.
    unsorted: bool,
    bytes: Vec<u8>,
    items: Vec<(u32, u32, u32)>,
}

impl SortedRun {
    fn key(&self, item: &(u32, u32, u32)) -> &[u8] {
        &self.bytes[item.0 as usize..(item.0 + item.1) as usize]
    }

    fn value(&self, item: &(u32, u32, u32)) -> &[u8] {
        let start = (item.0 + item.1) as usize;
        &self.bytes[start..start + item.2 as usize]
    }

    fn clear(&mut self) {
        self.new_ingestion = false;
        self.unsorted = false;
        self.bytes.clear();
        self.items.clear();
    }

    /// Sorts the items by key; of equal keys the last added stays. Nothing to do when they
    /// arrived in ascending order (a chain of sorted chunks is visited so).
    fn sort(&mut self) {
        if !self.unsorted {
            return;
        }
        let mut items = std::mem::take(&mut self.items);
        items.sort_unstable_by(|a, b| self.key(a).cmp(self.key(b)).then(a.0.cmp(&b.0)));
        // A checkpoint holds each key once; should a damaged one not, the last entry wins
        // rather than the ingestion's order check failing.
        let mut kept: Vec<(u32, u32, u32)> = Vec::with_capacity(items.len());
        for item in items {
            match kept.last_mut() {
                Some(last) if self.key(last) == self.key(&item) => *last = item,
                _ => kept.push(item),
            }
        }
        self.items = kept;
    }
}

/// A sorted run is handed over once this many bytes of one key group are buffered.
const RESTORE_RUN_BYTES: usize = 64 << 20;

impl std::fmt::Debug for LocalRestorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalRestorer").field("store", &self.store).finish_non_exhaustive()
    }
}

impl LocalStore {
    /// A restorer that fills this store from checkpoint entries.
    pub fn restorer(self) -> LocalRestorer {
        LocalRestorer::new(self)
    }
}

impl LocalRestorer {
    fn new(store: LocalStore) -> Self {
        LocalRestorer {
            store,
            pending: SortedRun::default(),
            group: None,
            last_sent: None,
            runs: None,
            spare: None,
            ingester: None,
            run_bytes: RESTORE_RUN_BYTES,
        }
    }

    /// Hands runs over every `bytes` bytes (tests: many runs from little state).
    #[cfg(test)]
    pub(super) fn with_run_bytes(mut self, bytes: usize) -> Self {
        self.run_bytes = bytes;
        self
    }

    /// Adds the checkpoint entry (`state`, `key`) = `value` of host state (`@host/<name>`).
    /// The entry is not marked changed: the checkpoint already holds it.
    pub fn put(&mut self, state: &str, key: &[u8], value: &[u8]) -> Result<(), LocalStateError> {
        let name = state.strip_prefix(HOST_STATE_PREFIX).unwrap_or(state);
        let sid = self.store.state_id(name)?;
        let (record, field) = split_chain_key(key).ok_or_else(|| {
            LocalStateError::Store(format!("a malformed host state key in state `{state}`"))
        })?;
        check_value(value)?;
        check_field(field)?;
        let group = self.store.owned_group(record)?;
        if self.group != Some(group) || self.pending.bytes.len() >= self.run_bytes {
            self.send_run()?;
            self.group = Some(group);
        }
        let run = &mut self.pending;
        let start = run.bytes.len();
        write_local_key(&mut run.bytes, group, sid, record, field);
        let key_len = run.bytes.len() - start;
        run.bytes.extend_from_slice(value);
        let item = (start as u32, key_len as u32, value.len() as u32);
        if let Some(last) = run.items.last()
            && run.key(last) >= run.key(&item)
        {
            run.unsorted = true;
        }
        run.items.push(item);
        Ok(())
    }

    /// Sorts what is pending and hands it to the ingesting thread (started at the first run).
    fn send_run(&mut self) -> Result<(), LocalStateError> {
        if self.pending.items.is_empty() {
            return Ok(());
        }
        let next = self.spare.as_ref().and_then(|r| r.try_recv().ok()).unwrap_or_default();
        let mut run = std::mem::replace(&mut self.pending, next);
        self.pending.clear();
        self.store.before_write(run.bytes.len() as u64)?;
        run.sort();
        let (first, last) = (run.items[0], run.items[run.items.len() - 1]);
        run.new_ingestion = self.last_sent.as_deref().is_some_and(|l| run.key(&first) <= l);
        self.last_sent = Some(run.key(&last).to_vec());
        if self.runs.is_none() {
            let (tx, rx) = std::sync::mpsc::sync_channel::<SortedRun>(1);
            let (back, spare) = std::sync::mpsc::channel::<SortedRun>();
            let keyspace = self.store.data.clone();
            // The folder outlives the thread's handle on the database: a restore dropped
            // midway keeps the files' reservation until the thread let them go.
            let folder = self.store.folder.clone();
            let thread = std::thread::Builder::new()
                .name("weir-restore-ingest".into())
                .spawn(move || {
                    let result = ingest(&keyspace, &rx, &back);
                    drop(keyspace);
                    drop(folder);
                    result
                })
                .map_err(store_error)?;
            self.runs = Some(tx);
            self.spare = Some(spare);
            self.ingester = Some(thread);
        }
        if let Some(Err(_)) = self.runs.as_ref().map(|tx| tx.send(run)) {
            // The thread stopped: its error says why.
            return self.join().and(Err(LocalStateError::Store("the restore's ingestion stopped".into())));
        }
        Ok(())
    }

    fn join(&mut self) -> Result<(), LocalStateError> {
        self.runs = None;
        match self.ingester.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| LocalStateError::Store("the restore's ingestion panicked".into()))?,
            None => Ok(()),
        }
    }

    /// Writes what is buffered and returns the store.
    pub fn finish(mut self) -> Result<LocalStore, LocalStateError> {
        self.send_run()?;
        self.join()?;
        Ok(self.store)
    }
}

/// The ingesting thread: writes each sorted run, in one ingestion while the runs follow
/// each other in key order, and hands the emptied runs back.
fn ingest(
    keyspace: &Keyspace,
    runs: &std::sync::mpsc::Receiver<SortedRun>,
    back: &std::sync::mpsc::Sender<SortedRun>,
) -> Result<(), LocalStateError> {
    let mut next = runs.recv().ok();
    while let Some(first) = next.take() {
        let mut ingestion = keyspace.start_ingestion().map_err(store_error)?;
        let mut run = first;
        loop {
            for item in &run.items {
                ingestion.write(run.key(item), run.value(item)).map_err(store_error)?;
            }
            run.clear();
            let _ = back.send(run);
            match runs.recv() {
                Ok(r) if r.new_ingestion => {
                    next = Some(r);
                    break;
                }
                Ok(r) => run = r,
                Err(_) => break,
            }
        }
        ingestion.finish().map_err(store_error)?;
    }
    Ok(())
}
