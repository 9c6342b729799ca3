//! Checkpoint chunks in object storage (S3 or anything that speaks its protocol, a local
//! directory, memory): what workers write and the controller collects (docs/design.md §13).
//!
//! A chunk is one immutable object, `<prefix>/chunks/<job as hex>/<chunk id as 16 hex
//! digits>`, written create-only: a chunk id is written once, by the one worker the
//! controller leased it to ([`weir_store::Store::lease_chunk_ids`]), so a second put under
//! the same key is a retry of the same bytes (accepted) or a bug or a zombie (refused).
//! Objects are never updated; the controller deletes those no retained checkpoint references
//! ([`ChunkObjects::list`] + [`ChunkObjects::delete`]).
//!
//! The same store holds the controller's savepoints and uploaded modules, when it is set:
//! a savepoint's chunks are `<prefix>/savepoints/<savepoint id as hex>/<number as 16 hex
//! digits>` (written once, deleted together), a module is `<prefix>/modules/<SHA-256>.wasm`
//! (its name is its content).
//!
//! Sweeps (the store's of chunks and savepoints, [`ChunkObjects::sweep_modules`]) delete an
//! object that no record names only once it is older than the [`SweepPolicy`]'s grace
//! period, and only log in a dry run: `weir.redb` may be an older backup that never knew of
//! newer objects.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use futures::TryStreamExt as _;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use weir_store::SweepPolicy;

/// Where chunk objects go.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ObjectStoreConfig {
    /// In this process's memory (tests).
    Memory,
    /// Files under a directory (one machine, or a shared file system).
    Local {
        /// The directory (created).
        dir: PathBuf,
    },
    /// An S3 bucket, or any server of its protocol (MinIO, Ceph, moto).
    S3 {
        /// The bucket (it must exist).
        bucket: String,
        /// The region.
        #[serde(default = "default_region")]
        region: String,
        /// The endpoint of a server other than AWS (`http://127.0.0.1:9000`).
        #[serde(default)]
        endpoint: Option<String>,
        /// The access key id.
        access_key_id: String,
        /// The secret access key (never printed).
        secret_access_key: String,
        /// Allow an `http://` endpoint.
        #[serde(default)]
        allow_http: bool,
    },
}

impl ObjectStoreConfig {
    /// Where chunks under `prefix` live, as a name two processes compare to know whether
    /// they share the store (`None` for memory, which no other process sees). The secret is
    /// not part of it.
    pub fn location(&self, prefix: &str) -> Option<String> {
        let prefix = prefix.trim_matches('/');
        match self {
            ObjectStoreConfig::Memory => None,
            ObjectStoreConfig::Local { dir } => {
                let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
                Some(format!("file://{}/{prefix}", dir.display()))
            }
            ObjectStoreConfig::S3 { bucket, region, endpoint, .. } => {
                let at = endpoint.clone().unwrap_or_else(|| format!("aws:{region}"));
                Some(format!("s3://{bucket}/{prefix} at {at}"))
            }
        }
    }
}

fn default_region() -> String {
    "us-east-1".into()
}

/// Without the secret.
impl std::fmt::Debug for ObjectStoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObjectStoreConfig::Memory => f.write_str("Memory"),
            ObjectStoreConfig::Local { dir } => f.debug_struct("Local").field("dir", dir).finish(),
            ObjectStoreConfig::S3 { bucket, region, endpoint, access_key_id, allow_http, .. } => f
                .debug_struct("S3")
                .field("bucket", bucket)
                .field("region", region)
                .field("endpoint", endpoint)
                .field("access_key_id", access_key_id)
                .field("secret_access_key", &"<secret>")
                .field("allow_http", allow_http)
                .finish(),
        }
    }
}

/// Why an object operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectError {
    /// The store could not be set up.
    #[error("the object store cannot be opened: {0}")]
    Config(String),
    /// A put found other bytes under the chunk's key.
    #[error("chunk {id} of job `{job}` exists with other bytes: chunk ids are written once")]
    Conflict {
        /// The job.
        job: String,
        /// The chunk id.
        id: u64,
    },
    /// A put found other bytes under an object's name (a savepoint chunk or a module).
    #[error("object `{0}` exists with other bytes: it is written once")]
    Exists(String),
    /// The store failed.
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
}

/// Chunks in an object store (cheap to clone).
#[derive(Clone, Debug)]
pub struct ChunkObjects {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    sweep: SweepPolicy,
}

impl ChunkObjects {
    /// The chunks under `prefix` (a path inside the bucket or directory; may be empty) of the
    /// store `config` describes.
    pub fn open(config: &ObjectStoreConfig, prefix: &str) -> Result<Self, ObjectError> {
        let store: Arc<dyn ObjectStore> = match config {
            ObjectStoreConfig::Memory => Arc::new(object_store::memory::InMemory::new()),
            ObjectStoreConfig::Local { dir } => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| ObjectError::Config(format!("{}: {e}", dir.display())))?;
                let local = object_store::local::LocalFileSystem::new_with_prefix(dir)
                    .map_err(|e| ObjectError::Config(e.to_string()))?;
                Arc::new(local.with_automatic_cleanup(true))
            }
            ObjectStoreConfig::S3 {
                bucket,
                region,
                endpoint,
                access_key_id,
                secret_access_key,
                allow_http,
            } => {
                let mut builder = object_store::aws::AmazonS3Builder::new()
                    .with_bucket_name(bucket)
                    .with_region(region)
                    .with_access_key_id(access_key_id)
                    .with_secret_access_key(secret_access_key)
                    .with_allow_http(*allow_http);
                if let Some(endpoint) = endpoint {
                    builder = builder.with_endpoint(endpoint).with_virtual_hosted_style_request(false);
                }
                Arc::new(builder.build().map_err(|e| ObjectError::Config(e.to_string()))?)
            }
        };
        Ok(ChunkObjects {
            store,
            prefix: prefix.trim_matches('/').to_string(),
            sweep: SweepPolicy::default(),
        })
    }

    /// The same objects, swept as `policy` says (default [`SweepPolicy::default`]).
    pub fn with_sweep(self, policy: SweepPolicy) -> Self {
        ChunkObjects { sweep: policy, ..self }
    }

    /// How sweeps treat objects no record names.
    pub fn sweep_policy(&self) -> SweepPolicy {
        self.sweep
    }

    /// `<prefix>/<rest>`.
    fn under_prefix(&self, rest: &str) -> Path {
        match self.prefix.as_str() {
            "" => Path::from(rest),
            prefix => Path::from(format!("{prefix}/{rest}")),
        }
    }

    fn job_dir(&self, job: &str) -> Path {
        self.under_prefix(&format!("chunks/{}", hex::encode(job.as_bytes())))
    }

    fn path(&self, job: &str, id: u64) -> Path {
        self.job_dir(job).join(format!("{id:016x}"))
    }

    fn savepoint_dir(&self, savepoint: &str) -> Path {
        self.under_prefix(&format!("savepoints/{}", hex::encode(savepoint.as_bytes())))
    }

    fn module_path(&self, id: &str) -> Path {
        self.under_prefix(&format!("modules/{id}.wasm"))
    }

    /// Writes `bytes` at `path`, create-only: `false` when other bytes are there (the same
    /// bytes again, a retry, is accepted).
    async fn put_once(&self, path: &Path, bytes: Bytes) -> Result<bool, ObjectError> {
        // W6: create-only, so a zombie cannot replace a chunk someone recorded.
        let options = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
        match self.store.put_opts(path, PutPayload::from_bytes(bytes.clone()), options).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => {
                Ok(self.read(path).await?.as_ref() == Some(&bytes))
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn read(&self, path: &Path) -> Result<Option<Bytes>, ObjectError> {
        match self.store.get(path).await {
            Ok(object) => Ok(Some(object.bytes().await?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn remove(&self, path: &Path) -> Result<(), ObjectError> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The names of the objects and directories right under `dir`.
    async fn names_under(&self, dir: &Path) -> Result<(Vec<String>, Vec<String>), ObjectError> {
        let listed = self.store.list_with_delimiter(Some(dir)).await?;
        let name = |path: &Path| path.filename().unwrap_or_default().to_string();
        Ok((
            listed.objects.iter().map(|meta| name(&meta.location)).collect(),
            listed.common_prefixes.iter().map(name).collect(),
        ))
    }

    /// Writes chunk `id` of `job`, create-only. Writing the same bytes again (a retry) is
    /// accepted; other bytes are a [`ObjectError::Conflict`].
    pub async fn put(&self, job: &str, id: u64, bytes: Bytes) -> Result<(), ObjectError> {
        match self.put_once(&self.path(job, id), bytes).await? {
            true => Ok(()),
            false => Err(ObjectError::Conflict { job: job.to_string(), id }),
        }
    }

    /// Chunk `id` of `job`, or `None` if there is none.
    pub async fn get(&self, job: &str, id: u64) -> Result<Option<Bytes>, ObjectError> {
        self.read(&self.path(job, id)).await
    }

    /// Deletes chunk `id` of `job` (nothing if it is gone already).
    pub async fn delete(&self, job: &str, id: u64) -> Result<(), ObjectError> {
        self.remove(&self.path(job, id)).await
    }

    /// Writes chunk `n` of savepoint `savepoint`, create-only (as [`ChunkObjects::put`]).
    pub async fn put_savepoint(&self, savepoint: &str, n: u64, bytes: Bytes) -> Result<(), ObjectError> {
        let path = self.savepoint_dir(savepoint).join(format!("{n:016x}"));
        match self.put_once(&path, bytes).await? {
            true => Ok(()),
            false => Err(ObjectError::Exists(path.to_string())),
        }
    }

    /// Chunk `n` of savepoint `savepoint`, or `None`.
    pub async fn get_savepoint(&self, savepoint: &str, n: u64) -> Result<Option<Bytes>, ObjectError> {
        self.read(&self.savepoint_dir(savepoint).join(format!("{n:016x}"))).await
    }

    /// Deletes every object of savepoint `savepoint`.
    pub async fn delete_savepoint(&self, savepoint: &str) -> Result<(), ObjectError> {
        let dir = self.savepoint_dir(savepoint);
        let objects: Vec<Path> =
            self.store.list(Some(&dir)).map_ok(|meta| meta.location).try_collect().await?;
        for path in objects {
            self.remove(&path).await?;
        }
        Ok(())
    }

    /// The savepoints that have objects (names that are not hex are skipped).
    pub async fn list_savepoints(&self) -> Result<Vec<String>, ObjectError> {
        let (_, dirs) = self.names_under(&self.under_prefix("savepoints")).await?;
        let mut ids: Vec<String> =
            dirs.iter().filter_map(|dir| String::from_utf8(hex::decode(dir).ok()?).ok()).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// The savepoints that have objects, each with the last modification of its newest
    /// object (what a sweep's grace period is measured from), by id.
    pub async fn savepoint_ages(&self) -> Result<Vec<(String, SystemTime)>, ObjectError> {
        let dir = self.under_prefix("savepoints");
        let mut newest: BTreeMap<String, SystemTime> = BTreeMap::new();
        let mut listed = self.store.list(Some(&dir));
        while let Some(meta) = listed.try_next().await? {
            let Some(rest) = meta.location.prefix_match(&dir) else { continue };
            let Some(folder) = rest.into_iter().next() else { continue };
            let Some(id) = hex::decode(folder.as_ref()).ok().and_then(|id| String::from_utf8(id).ok()) else {
                continue;
            };
            let modified = SystemTime::from(meta.last_modified);
            let at = newest.entry(id).or_insert(modified);
            *at = (*at).max(modified);
        }
        Ok(newest.into_iter().collect())
    }

    /// Deletes the modules `known` does not name that are past the grace period of the
    /// [`SweepPolicy`] (a dry run only logs them); returns how many it deleted.
    pub async fn sweep_modules(&self, known: &BTreeSet<String>) -> Result<usize, ObjectError> {
        let listed = self.store.list_with_delimiter(Some(&self.under_prefix("modules"))).await?;
        let mut deleted = 0;
        for meta in listed.objects {
            let name = meta.location.filename().unwrap_or_default();
            let Some(id) = name.strip_suffix(".wasm") else { continue };
            if known.contains(id) {
                continue;
            }
            let modified = SystemTime::from(meta.last_modified);
            let age_ms = SystemTime::now().duration_since(modified).map_or(0, |age| age.as_millis());
            if !self.sweep.past_grace(modified) {
                tracing::info!(
                    module = %id,
                    age_ms,
                    grace_ms = self.sweep.grace_ms,
                    "object sweep: kept a module no record names (within the grace period)"
                );
            } else if self.sweep.dry_run {
                tracing::warn!(
                    module = %id,
                    age_ms,
                    "object sweep (dry run): would delete a module no record names"
                );
            } else {
                self.remove(&meta.location).await?;
                tracing::info!(module = %id, age_ms, "object sweep: deleted a module no record names");
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    /// Writes module `id` (its SHA-256 in hex), create-only.
    pub async fn put_module(&self, id: &str, bytes: Bytes) -> Result<(), ObjectError> {
        let path = self.module_path(id);
        match self.put_once(&path, bytes).await? {
            true => Ok(()),
            false => Err(ObjectError::Exists(path.to_string())),
        }
    }

    /// Module `id`, or `None`.
    pub async fn get_module(&self, id: &str) -> Result<Option<Bytes>, ObjectError> {
        self.read(&self.module_path(id)).await
    }

    /// Deletes module `id` (nothing if it is gone).
    pub async fn delete_module(&self, id: &str) -> Result<(), ObjectError> {
        self.remove(&self.module_path(id)).await
    }

    /// The ids of the modules stored, sorted.
    pub async fn list_modules(&self) -> Result<Vec<String>, ObjectError> {
        let (objects, _) = self.names_under(&self.under_prefix("modules")).await?;
        let mut ids: Vec<String> =
            objects.iter().filter_map(|name| name.strip_suffix(".wasm").map(str::to_string)).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Every chunk of `job` stored: (id, bytes), by id. Objects that are not chunks (other
    /// names) are skipped.
    pub async fn list(&self, job: &str) -> Result<Vec<(u64, u64)>, ObjectError> {
        let dir = self.job_dir(job);
        let mut out: Vec<(u64, u64)> = self
            .store
            .list(Some(&dir))
            .try_filter_map(|meta| async move {
                let name = meta.location.filename().unwrap_or_default();
                let id = (name.len() == 16).then(|| u64::from_str_radix(name, 16).ok()).flatten();
                Ok(id.map(|id| (id, meta.size)))
            })
            .try_collect()
            .await?;
        out.sort_unstable();
        Ok(out)
    }
}

/// [`ChunkObjects`] for the store, whose calls block: each call runs on a small runtime of
/// its own and the caller waits for it, so it works from any thread (the store's callers
/// are blocking threads, and a few async tasks that call it briefly).
pub struct BlockingChunks {
    objects: ChunkObjects,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for BlockingChunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingChunks").field("objects", &self.objects).finish_non_exhaustive()
    }
}

impl BlockingChunks {
    /// Chunks kept in `objects`.
    pub fn new(objects: ChunkObjects) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("weir-objects")
            .enable_all()
            .build()?;
        Ok(BlockingChunks { objects, runtime: Some(runtime) })
    }

    fn run<T: Send + 'static>(
        &self,
        call: impl Future<Output = Result<T, ObjectError>> + Send + 'static,
    ) -> Result<T, weir_store::StoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.as_ref().expect("the runtime lives until drop").spawn(async move {
            let _ = tx.send(call.await);
        });
        let result = rx
            .recv()
            .map_err(|_| weir_store::StoreError::External("the object store's runtime stopped".into()))?;
        result.map_err(|e| weir_store::StoreError::External(e.to_string()))
    }
}

impl BlockingChunks {
    /// The objects these calls go to.
    pub fn objects(&self) -> &ChunkObjects {
        &self.objects
    }

    /// Waits for `call` on the objects, from any thread.
    pub fn block_on<T: Send + 'static, F>(
        &self,
        call: impl FnOnce(ChunkObjects) -> F,
    ) -> Result<T, weir_store::StoreError>
    where
        F: Future<Output = Result<T, ObjectError>> + Send + 'static,
    {
        self.run(call(self.objects.clone()))
    }

    /// Puts `chunks` of `job` (create-only, as [`ChunkObjects::put`]), up to eight at a time.
    pub fn put_all(&self, job: &str, chunks: Vec<(u64, Vec<u8>)>) -> Result<(), weir_store::StoreError> {
        use futures::StreamExt as _;
        let (objects, job) = (self.objects.clone(), job.to_string());
        self.run(async move {
            let puts = chunks.into_iter().map(|(id, bytes)| {
                let (objects, job) = (objects.clone(), job.clone());
                async move { objects.put(&job, id, Bytes::from(bytes)).await }
            });
            let mut done = futures::stream::iter(puts).buffer_unordered(8);
            while let Some(put) = done.next().await {
                put?;
            }
            Ok(())
        })
    }
}

impl Drop for BlockingChunks {
    fn drop(&mut self) {
        // Dropping a runtime may happen on an async thread: do not block there.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl weir_store::ExternalChunks for BlockingChunks {
    fn put(&self, job: &str, id: u64, bytes: &[u8]) -> Result<(), weir_store::StoreError> {
        let (objects, job, bytes) = (self.objects.clone(), job.to_string(), Bytes::copy_from_slice(bytes));
        self.run(async move { objects.put(&job, id, bytes).await })
    }

    fn get(&self, job: &str, id: u64, out: &mut Vec<u8>) -> Result<bool, weir_store::StoreError> {
        let (objects, job) = (self.objects.clone(), job.to_string());
        match self.run(async move { objects.get(&job, id).await })? {
            Some(bytes) => {
                out.extend_from_slice(&bytes);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn delete(&self, job: &str, ids: &[u64]) -> Result<(), weir_store::StoreError> {
        let (objects, job, ids) = (self.objects.clone(), job.to_string(), ids.to_vec());
        self.run(async move {
            for id in ids {
                objects.delete(&job, id).await?;
            }
            Ok(())
        })
    }

    fn list(&self, job: &str) -> Result<Vec<u64>, weir_store::StoreError> {
        let (objects, job) = (self.objects.clone(), job.to_string());
        Ok(self.run(async move { objects.list(&job).await })?.into_iter().map(|(id, _)| id).collect())
    }

    fn put_savepoint(&self, savepoint: &str, n: u64, bytes: &[u8]) -> Result<(), weir_store::StoreError> {
        let (objects, savepoint) = (self.objects.clone(), savepoint.to_string());
        let bytes = Bytes::copy_from_slice(bytes);
        self.run(async move { objects.put_savepoint(&savepoint, n, bytes).await })
    }

    fn get_savepoint(
        &self,
        savepoint: &str,
        n: u64,
        out: &mut Vec<u8>,
    ) -> Result<bool, weir_store::StoreError> {
        let (objects, savepoint) = (self.objects.clone(), savepoint.to_string());
        match self.run(async move { objects.get_savepoint(&savepoint, n).await })? {
            Some(bytes) => {
                out.extend_from_slice(&bytes);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn delete_savepoint(&self, savepoint: &str) -> Result<(), weir_store::StoreError> {
        let (objects, savepoint) = (self.objects.clone(), savepoint.to_string());
        self.run(async move { objects.delete_savepoint(&savepoint).await })
    }

    fn list_savepoints(&self) -> Result<Vec<(String, SystemTime)>, weir_store::StoreError> {
        let objects = self.objects.clone();
        self.run(async move { objects.savepoint_ages().await })
    }

    fn sweep_policy(&self) -> SweepPolicy {
        self.objects.sweep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The behaviour every backend must have (the S3 one is checked against a real server in
    /// `tests/all/cluster/objects.rs`).
    pub(crate) async fn behaves(objects: &ChunkObjects) {
        assert_eq!(objects.get("job-a", 1).await.unwrap(), None);
        objects.put("job-a", 1, Bytes::from_static(b"one")).await.unwrap();
        objects.put("job-a", 1, Bytes::from_static(b"one")).await.expect("a retry of the same bytes");
        let conflict = objects.put("job-a", 1, Bytes::from_static(b"other")).await.unwrap_err();
        assert!(matches!(conflict, ObjectError::Conflict { id: 1, .. }), "{conflict}");
        objects.put("job-a", 0x1_0000_0000, Bytes::from_static(b"big id")).await.unwrap();
        objects.put("job-a/b", 1, Bytes::from_static(b"another job")).await.unwrap();
        assert_eq!(objects.get("job-a", 1).await.unwrap().as_deref(), Some(&b"one"[..]));
        assert_eq!(objects.list("job-a").await.unwrap(), vec![(1, 3), (0x1_0000_0000, 6)]);
        assert_eq!(objects.list("job-a/b").await.unwrap(), vec![(1, 11)]);
        objects.delete("job-a", 1).await.unwrap();
        objects.delete("job-a", 1).await.expect("deleting a deleted chunk");
        assert_eq!(objects.list("job-a").await.unwrap(), vec![(0x1_0000_0000, 6)]);
        assert_eq!(objects.get("job-a", 1).await.unwrap(), None);

        // Savepoint chunks and modules live beside the chunks, apart from them.
        objects.put_savepoint("sp/1", 0, Bytes::from_static(b"zero")).await.unwrap();
        objects.put_savepoint("sp/1", 0, Bytes::from_static(b"zero")).await.expect("a retry");
        let exists = objects.put_savepoint("sp/1", 0, Bytes::from_static(b"other")).await.unwrap_err();
        assert!(matches!(exists, ObjectError::Exists(_)), "{exists}");
        objects.put_savepoint("sp/1", 1, Bytes::from_static(b"one")).await.unwrap();
        objects.put_savepoint("sp2", 0, Bytes::from_static(b"two")).await.unwrap();
        assert_eq!(objects.list_savepoints().await.unwrap(), vec!["sp/1".to_string(), "sp2".to_string()]);
        assert_eq!(objects.get_savepoint("sp/1", 1).await.unwrap().as_deref(), Some(&b"one"[..]));
        objects.delete_savepoint("sp/1").await.unwrap();
        assert_eq!(objects.get_savepoint("sp/1", 0).await.unwrap(), None);
        assert_eq!(objects.list_savepoints().await.unwrap(), vec!["sp2".to_string()]);
        let id = "ab".repeat(32);
        objects.put_module(&id, Bytes::from_static(b"\0asm")).await.unwrap();
        assert_eq!(objects.list_modules().await.unwrap(), vec![id.clone()]);
        assert_eq!(objects.get_module(&id).await.unwrap().as_deref(), Some(&b"\0asm"[..]));
        objects.delete_module(&id).await.unwrap();
        assert!(objects.list_modules().await.unwrap().is_empty());
        assert_eq!(objects.list("job-a").await.unwrap(), vec![(0x1_0000_0000, 6)], "chunks untouched");
    }

    #[tokio::test]
    async fn memory_and_local_files_keep_chunks_create_only() {
        behaves(&ChunkObjects::open(&ObjectStoreConfig::Memory, "").unwrap()).await;
        let dir = tempfile::tempdir().unwrap();
        let config = ObjectStoreConfig::Local { dir: dir.path().join("objects") };
        behaves(&ChunkObjects::open(&config, "weir/").unwrap()).await;
        assert!(dir.path().join("objects/weir/chunks").is_dir());
    }

    #[test]
    fn the_secret_is_not_printed() {
        let config = ObjectStoreConfig::S3 {
            bucket: "b".into(),
            region: default_region(),
            endpoint: None,
            access_key_id: "id".into(),
            secret_access_key: "s3cret".into(),
            allow_http: false,
        };
        assert!(!format!("{config:?}").contains("s3cret"));
    }
}
