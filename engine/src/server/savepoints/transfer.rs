//! A savepoint as one portable file (`docs/savepoint-format.md`): exported in chunks
//! written on the blocking pool, imported from an upload spooled to a temporary file.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures::{Stream, StreamExt as _};

use super::{SavepointRecord, SavepointStatus, Savepoints};
use crate::clock::unix_ms;
use crate::savepoint::Description;
use crate::server::error::{ServerError, ServerResult};
use crate::server::ids::new_id;
use crate::server::tenants::Tenant;

impl Savepoints {
    /// Stores an exported savepoint file, arriving as `chunks`, as a new savepoint of
    /// `tenant`. The upload is spooled to a temporary file first (the import itself holds
    /// the store's writer, which must not wait on a slow client) and cut off once it passes
    /// `room` bytes (what is left of the storage quota); the whole file is then checked
    /// (format, version, every frame, checksum) before anything is stored, and a bad file
    /// stores nothing.
    pub async fn import<E: std::fmt::Display>(
        &self,
        tenant: &Tenant,
        room: u64,
        mut chunks: impl Stream<Item = Result<Bytes, E>> + Unpin,
    ) -> ServerResult<SavepointRecord> {
        use tokio::io::AsyncWriteExt as _;
        let upload = TempFile::new(&self.tmp)?;
        let mut file = tokio::fs::File::create(&upload.path).await.map_err(ServerError::internal)?;
        let mut size = 0u64;
        while let Some(chunk) = chunks.next().await {
            let chunk =
                chunk.map_err(|e| ServerError::BadRequest(format!("reading the upload failed: {e}")))?;
            size += chunk.len() as u64;
            if size > room {
                return Err(ServerError::Quota {
                    limit: "max_storage_bytes",
                    message: format!(
                        "the savepoint file is larger than the {room} bytes left of the tenant's {} byte storage quota",
                        tenant.quotas.max_storage_bytes
                    ),
                });
            }
            file.write_all(&chunk).await.map_err(ServerError::internal)?;
        }
        file.flush().await.map_err(ServerError::internal)?;
        drop(file);
        let (this, tenant_id) = (self.clone(), tenant.id.clone());
        let record = tokio::task::spawn_blocking(move || {
            let file = std::fs::File::open(&upload.path).map_err(ServerError::internal)?;
            this.import_file(&tenant_id, &mut std::io::BufReader::with_capacity(1 << 20, file))
        })
        .await??;
        Ok(record)
    }

    /// Stores the savepoint file read from `input` as a new savepoint of `tenant`. Blocking.
    fn import_file(&self, tenant: &str, input: &mut dyn std::io::Read) -> ServerResult<SavepointRecord> {
        let id = new_id(16);
        let info = self.store.import_savepoint(input, &id, tenant)?;
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
