//! A savepoint as one portable file (`docs/savepoint-format.md`): exported in chunks
//! written on the blocking pool, imported from an upload spooled to a temporary file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::{Stream, StreamExt as _};

use super::Savepoints;
use super::record::{SavepointRecord, SavepointStatus};
use crate::clock::unix_ms;
use crate::savepoint::Description;
use crate::server::error::{ServerError, ServerResult};
use crate::server::ids::new_id;
use crate::server::tenants::Tenant;

impl Savepoints {
    /// Stores an exported savepoint file, arriving as `chunks`, as a new savepoint of
    /// `tenant`. The upload is spooled to a temporary file first (the import then writes the
    /// store in one short transaction from the local file, so the store's writer never waits
    /// on a slow client); the whole file is checked (format, version, every frame, checksum)
    /// before anything is stored, and a bad file stores nothing.
    ///
    /// Bounds, checked as the bytes arrive: more than `max_bytes` answers 413; the spooled
    /// bytes hold a reservation of the tenant's storage (taken in steps of
    /// `RESERVE_STEP`, so concurrent uploads cannot each count on the same free room),
    /// and an upload that would pass the quota is cut off with the quota error (429). The
    /// reservation is given back in the transaction that stores the savepoint, or when the
    /// import fails; the temporary file is always removed.
    pub async fn import<E: std::fmt::Display>(
        &self,
        tenant: &Tenant,
        max_bytes: u64,
        mut chunks: impl Stream<Item = Result<Bytes, E>> + Unpin,
    ) -> ServerResult<SavepointRecord> {
        use tokio::io::AsyncWriteExt as _;
        let upload = TempFile::new(&self.tmp)?;
        let reservation = Reservation::new(self.store.clone(), &tenant.id);
        let mut file = tokio::fs::File::create(&upload.path).await.map_err(ServerError::internal)?;
        let mut size = 0u64;
        while let Some(chunk) = chunks.next().await {
            let chunk =
                chunk.map_err(|e| ServerError::BadRequest(format!("reading the upload failed: {e}")))?;
            size += chunk.len() as u64;
            if size > max_bytes {
                return Err(ServerError::TooLarge(format!(
                    "the savepoint file is larger than the server's limit of {max_bytes} bytes per request"
                )));
            }
            reservation.cover(size).await?;
            file.write_all(&chunk).await.map_err(ServerError::internal)?;
        }
        file.flush().await.map_err(ServerError::internal)?;
        drop(file);
        let (this, tenant_id, held) = (self.clone(), tenant.id.clone(), reservation.held.clone());
        let record = tokio::task::spawn_blocking(move || {
            let file = std::fs::File::open(&upload.path).map_err(ServerError::internal)?;
            this.import_file(&tenant_id, &mut std::io::BufReader::with_capacity(1 << 20, file), &held)
        })
        .await??;
        Ok(record)
    }

    /// Stores the savepoint file read from `input` as a new savepoint of `tenant`, giving back
    /// the reservation `held` in the store's transaction. Blocking.
    fn import_file(
        &self,
        tenant: &str,
        input: &mut dyn std::io::Read,
        held: &AtomicU64,
    ) -> ServerResult<SavepointRecord> {
        let id = new_id(16);
        let reserved = held.swap(0, Ordering::SeqCst);
        let started = std::time::Instant::now();
        let info = match self.store.import_savepoint_reserved(input, &id, tenant, reserved) {
            Ok(info) => info,
            Err(e) => {
                // Not given back: the reservation's owner releases it.
                held.fetch_add(reserved, Ordering::SeqCst);
                return Err(e.into());
            }
        };
        tracing::debug!(savepoint = %id, ms = started.elapsed().as_millis() as u64, "import transaction");
        let description = match Description::read(&info) {
            Ok(d) => d,
            Err(e) => {
                self.store.delete_savepoint(&id)?;
                return Err(ServerError::BadRequest(format!("not a usable savepoint file: {e}")));
            }
        };
        let record = SavepointRecord {
            id: info.id.clone(),
            tenant: tenant.to_string(),
            job: info.job.clone(),
            job_name: description.job_name.clone(),
            mode: None,
            status: SavepointStatus::Completed,
            checkpoint: Some(info.checkpoint),
            error: None,
            created_ms: unix_ms(),
            completed_ms: Some(unix_ms()),
            bytes: info.bytes,
            entries: info.entries,
            origin: info.origin.clone(),
            description: Some(description),
        };
        if let Err(e) = self.put(&record) {
            let _ = self.store.delete_savepoint(&id);
            return Err(e);
        }
        tracing::info!(tenant = %tenant, savepoint = %id, origin = ?info.origin, "savepoint imported");
        Ok(record)
    }

    /// Completed savepoint `id` of `tenant` as one portable file (`docs/savepoint-format.md`),
    /// in chunks written on the blocking pool. Errors that can be told before the first
    /// byte are returned; a later one ends the chunks with an error (the file is cut short,
    /// and an import would refuse it).
    pub async fn export(
        &self,
        tenant: &str,
        id: &str,
    ) -> ServerResult<tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>> {
        self.completed(tenant, id)?;
        let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(8);
        let (store, id) = (self.store.clone(), id.to_string());
        tokio::task::spawn_blocking(move || {
            let mut out = ChannelWriter { tx: tx.clone(), buffer: Vec::with_capacity(CHUNK) };
            let result = store.export_savepoint(&id, &mut out).map_err(ServerError::from).and_then(|_| {
                use std::io::Write as _;
                out.flush().map_err(ServerError::internal)
            });
            if let Err(e) = result {
                tracing::warn!(savepoint = %id, "export failed: {e}");
                let _ = tx.blocking_send(Err(std::io::Error::other(e.to_string())));
            }
        });
        Ok(rx)
    }
}

/// Bytes sent to an export's reader at a time.
const CHUNK: usize = 256 << 10;

/// A `Write` that sends what is written, in chunks, to an async reader.
struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<std::io::Result<Bytes>>,
    buffer: Vec<u8>,
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(data);
        if self.buffer.len() >= CHUNK {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

/// Bytes an upload reserves at a time (one small store transaction per step).
pub const RESERVE_STEP: u64 = 1 << 20;

/// Room of a tenant's storage quota held for an upload in flight; what is still held is given
/// back when dropped (also when the request is abandoned mid-upload).
struct Reservation {
    store: weir_store::Store,
    tenant: String,
    /// Bytes held; whoever takes them (the import's transaction, or the drop) swaps in 0.
    held: Arc<AtomicU64>,
}

impl Reservation {
    fn new(store: weir_store::Store, tenant: &str) -> Self {
        Reservation { store, tenant: tenant.to_string(), held: Arc::default() }
    }

    /// Holds at least `bytes` (in steps of [`RESERVE_STEP`] when the room allows); fails with
    /// the quota error when the tenant's storage plus reservations would pass its limit.
    async fn cover(&self, bytes: u64) -> ServerResult<()> {
        let held = self.held.load(Ordering::SeqCst);
        if bytes <= held {
            return Ok(());
        }
        let need = bytes - held;
        let (store, tenant) = (self.store.clone(), self.tenant.clone());
        let step = need.max(RESERVE_STEP);
        let taken = tokio::task::spawn_blocking(move || match store.reserve(&tenant, step) {
            Ok(()) => Ok(step),
            Err(_) => store.reserve(&tenant, need).map(|()| need),
        })
        .await??;
        self.held.fetch_add(taken, Ordering::SeqCst);
        Ok(())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let bytes = self.held.swap(0, Ordering::SeqCst);
        if bytes == 0 {
            return;
        }
        let (store, tenant) = (self.store.clone(), std::mem::take(&mut self.tenant));
        let release = move || {
            if let Err(e) = store.release(&tenant, bytes) {
                tracing::warn!(tenant = %tenant, "giving back an upload's reservation failed: {e}");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(release)),
            Err(_) => release(),
        }
    }
}

/// A file under the data directory's `tmp/`, removed when dropped.
struct TempFile {
    path: PathBuf,
}

impl TempFile {
    fn new(dir: &Path) -> ServerResult<TempFile> {
        std::fs::create_dir_all(dir).map_err(ServerError::internal)?;
        Ok(TempFile { path: dir.join(format!("upload-{}", new_id(16))) })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
