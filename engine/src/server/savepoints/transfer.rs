//! A savepoint as one portable file (`docs/savepoint-format.md`): exported through a
//! spooled temporary file, imported from an upload spooled to one.

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
        let upload = TempFile::new(&self.tmp, "upload")?;
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
    /// spooled to a temporary file first: the store's read transaction and the blocking
    /// thread are held only while the file is written to local disk, never while a client
    /// reads (an unread export would otherwise pin the store's pages and a thread). The
    /// spool is charged to the tenant's storage quota as it grows (a reservation in steps of
    /// [`RESERVE_STEP`], 429 when there is no room), and held until the returned
    /// [`Export`] is dropped: when its body has been read or the client has gone.
    pub async fn export(&self, tenant: &str, id: &str) -> ServerResult<Export> {
        self.completed(tenant, id)?;
        let spool = TempFile::new(&self.tmp, "export")?;
        let reservation = Reservation::new(self.store.clone(), tenant);
        let (store, id, path) = (self.store.clone(), id.to_string(), spool.path.clone());
        let (held, owner) = (reservation.held.clone(), tenant.to_string());
        let started = std::time::Instant::now();
        let bytes = tokio::task::spawn_blocking(move || -> ServerResult<u64> {
            let file = std::fs::File::create(&path).map_err(ServerError::internal)?;
            let mut out = SpoolWriter {
                file: std::io::BufWriter::with_capacity(1 << 20, file),
                store: store.clone(),
                tenant: owner,
                held,
                written: 0,
                refused: None,
            };
            let exported = store.export_savepoint(&id, &mut out);
            if let (Err(_), Some(quota)) = (&exported, out.refused.take()) {
                return Err(quota.into());
            }
            exported?;
            use std::io::Write as _;
            out.flush().map_err(ServerError::internal)?;
            Ok(out.written)
        })
        .await??;
        let file = tokio::fs::File::open(&spool.path).await.map_err(ServerError::internal)?;
        tracing::debug!(tenant = %tenant, bytes, ms = started.elapsed().as_millis() as u64, "export spooled");
        // The open file keeps its bytes; the name goes now.
        drop(spool);
        Ok(Export { file, bytes, reservation })
    }
}

/// A spooled savepoint file ([`Savepoints::export`]), open and already unlinked: reading it
/// streams the file; dropping it (once read, or when the client goes) gives back the
/// storage reservation its bytes hold.
pub struct Export {
    /// The spool, read from its start.
    pub file: tokio::fs::File,
    /// Its length.
    pub bytes: u64,
    reservation: Reservation,
}

impl Export {
    /// The file as a stream of chunks that holds the reservation until it is dropped.
    pub fn into_stream(self) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static {
        let Export { file, reservation, .. } = self;
        tokio_util::io::ReaderStream::with_capacity(file, CHUNK).map(move |chunk| {
            let _held = &reservation;
            chunk
        })
    }
}

/// Bytes sent to an export's reader at a time.
const CHUNK: usize = 256 << 10;

/// The spool of an export: writes to the file, reserving the tenant's storage ahead of it.
struct SpoolWriter {
    file: std::io::BufWriter<std::fs::File>,
    store: weir_store::Store,
    tenant: String,
    /// What the export's [`Reservation`] holds.
    held: Arc<AtomicU64>,
    written: u64,
    /// The quota error that stopped the spool, if one did.
    refused: Option<weir_store::StoreError>,
}

impl std::io::Write for SpoolWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let need = self.written + data.len() as u64;
        let held = self.held.load(Ordering::SeqCst);
        if need > held {
            let step = (need - held).max(RESERVE_STEP);
            if let Err(e) = self.store.reserve(&self.tenant, step) {
                let message = e.to_string();
                self.refused = Some(e);
                return Err(std::io::Error::other(message));
            }
            self.held.fetch_add(step, Ordering::SeqCst);
        }
        self.file.write_all(data)?;
        self.written = need;
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
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
    fn new(dir: &Path, what: &str) -> ServerResult<TempFile> {
        std::fs::create_dir_all(dir).map_err(ServerError::internal)?;
        Ok(TempFile { path: dir.join(format!("{what}-{}", new_id(16))) })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
