//! The Weir server: the service behind the HTTP API (`crate::api`, which depends on this
//! module, never the reverse): tenants, their modules, jobs, checkpoints, savepoints and
//! streams. Everything lives in one data directory: the store (`weir.redb`: tenants, token
//! hashes, modules, jobs, checkpoints, state, streams), the uploaded module bytes
//! (`modules/`) and the compiled-module cache (`module-cache/`). Work that blocks (store
//! transactions of some size, compiling, copying state) runs on tokio's blocking pool inside
//! the service's async methods.

pub mod checkpoints;
pub(crate) mod codec;
pub mod config;
pub mod error;
pub mod health;
pub mod ids;
pub mod jobs;
pub mod ledger;
pub mod msgpack;
pub mod recount;
pub mod registry;
pub mod savepoints;
pub mod state_pages;
pub mod streams;
pub mod telemetry;
pub mod tenants;
pub mod worker_load;

use std::sync::Arc;

use sha2::{Digest, Sha256};
use weir_store::Store;

pub use config::{ServerConfig, ServerConfigError, SharedCluster, SharedConfig};
pub use error::{ServerError, ServerResult};

use crate::cluster::Workers;
use crate::guest::GuestHost;
use checkpoints::Checkpoints;
use health::{StoreHealth, StoreStatus};
use jobs::{JobManager, JobRecord};
use registry::ModuleRegistry;
use savepoints::{SavepointRecord, Savepoints};
use streams::Streams;
use telemetry::Telemetry;
use tenants::{Tenant, Tenants};

/// The server's state, shared by every request.
#[derive(Debug)]
pub struct Server {
    /// Its configuration.
    pub config: ServerConfig,
    /// The store.
    pub store: Store,
    /// The wasmtime host.
    pub host: Arc<GuestHost>,
    /// Tenants and tokens.
    pub tenants: Tenants,
    /// Uploaded modules.
    pub modules: ModuleRegistry,
    /// Jobs.
    pub jobs: JobManager,
    /// Checkpoints of the jobs.
    pub checkpoints: Checkpoints,
    /// Savepoints.
    pub savepoints: Savepoints,
    /// Streams.
    pub streams: Streams,
    /// Metrics.
    pub telemetry: Arc<Telemetry>,
    /// Whether the store serves (see [`health`]).
    pub store_health: StoreHealth,
    /// The workers registered with this server (none without `cluster.listen`).
    pub workers: Workers,
    /// Where workers register and where the server's own data plane listens (with
    /// `cluster.listen`).
    pub cluster_addresses: Option<(std::net::SocketAddr, std::net::SocketAddr)>,
    admin_token_hash: Option<[u8; 32]>,
}

impl Server {
    /// Opens the data directory (creating it) and the store, then resumes the jobs that were
    /// running when the server last stopped.
    pub async fn open(config: ServerConfig) -> anyhow::Result<Arc<Server>> {
        use anyhow::Context as _;
        config.validate()?;
        let dir = config.data_dir.clone();
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // Uploads a server that went down was still receiving.
        let _ = std::fs::remove_dir_all(dir.join("tmp"));
        let path = dir.join("weir.redb");
        let store = {
            let p = path.clone();
            tokio::task::spawn_blocking(move || Store::open(&p))
                .await?
                .with_context(|| format!("cannot open the store {}", path.display()))?
        };
        store.set_min_free_bytes(config.min_free_bytes);
        let objects = match &config.chunk_store {
            Some(objects) => {
                let objects =
                    crate::cluster::objects::ChunkObjects::open(objects, &config.chunk_store_prefix)?
                        .with_sweep(config.chunk_store_sweep);
                let objects = Arc::new(crate::cluster::objects::BlockingChunks::new(objects)?);
                store.set_external_chunks(objects.clone());
                Some(objects)
            }
            None => None,
        };
        let host = GuestHost::with_options(config.host_options(dir.join("module-cache")))?;
        let telemetry = Arc::new(Telemetry::new());
        let tenants = Tenants::open(&store)?;
        let mut modules = ModuleRegistry::open(&store, host.clone(), dir.join("modules"))?
            .with_compile_limits(config.max_compiles_per_tenant, config.max_compiles);
        if let Some(objects) = objects {
            modules = modules.with_objects(objects);
            // What failed uploads, savepoints and deletions left in object storage, and the
            // modules uploaded before the store was set.
            let (store, modules) = (store.clone(), modules.clone());
            let (savepoints, (modules, uploaded)) = tokio::task::spawn_blocking(move || {
                anyhow::Ok((store.sweep_savepoint_objects()?, modules.sync_objects()?))
            })
            .await??;
            if savepoints + modules + uploaded > 0 {
                tracing::info!(
                    savepoints,
                    modules,
                    uploaded,
                    "object storage: deleted the objects of savepoints and modules no record names, \
                     put modules that had only their local file"
                );
            }
        }
        let jobs = JobManager::open(
            &store,
            modules.clone(),
            telemetry.clone(),
            config.plan_limits.clone(),
            config.kafka_connections.clone(),
        )?;
        let streams = Streams::open(&store)?;
        let checkpoints = Checkpoints::new(&store, jobs.clone());
        let savepoints = Savepoints::open(&store, jobs.clone(), dir.join("tmp"))?;
        recount::prepare(&store, &tenants, &jobs)?;
        let workers = Workers::new(config.cluster.clone());
        let cluster_addresses = match &config.cluster.listen {
            Some(listen) => {
                let chunk_store = config
                    .chunk_store
                    .as_ref()
                    .and_then(|objects| objects.location(&config.chunk_store_prefix));
                Some(start_cluster(&config.cluster, listen, &workers, &jobs, chunk_store).await?)
            }
            None => None,
        };
        let admin_token_hash = config.admin_token.as_deref().map(|t| Sha256::digest(t.as_bytes()).into());
        let server = Arc::new(Server {
            config,
            store,
            host,
            tenants,
            modules,
            jobs,
            checkpoints,
            savepoints,
            streams,
            telemetry,
            store_health: StoreHealth::default(),
            workers,
            cluster_addresses,
            admin_token_hash,
        });
        if server.cluster_addresses.is_some() && !server.jobs.active_jobs()?.is_empty() {
            wait_for_a_worker(&server.workers, server.config.cluster.resume_wait_ms).await;
        }
        let resumed = server.jobs.resume_all().await?;
        if resumed > 0 {
            tracing::info!(jobs = resumed, "resumed the jobs that were running");
        }
        health::spawn_watchdog(&server);
        Ok(server)
    }

    /// Fails with 507 ([`ServerError::InsufficientStorage`]) when writing `bytes` would leave
    /// less than `min_free_bytes` free on the data directory's disk. Call before a large write.
    pub fn check_disk(&self, bytes: u64) -> ServerResult<()> {
        Ok(self.store.check_disk(bytes)?)
    }

    /// The store's state and the data directory's free space against the floor.
    pub fn health(&self) -> Health {
        Health { store: self.store_health.status(), disk: self.store.disk_space().ok() }
    }

    /// True when `token` is the admin token.
    pub fn is_admin(&self, token: &str) -> bool {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        self.admin_token_hash.is_some_and(|h| h == hash)
    }

    /// Bytes stored for `tenant` (every byte the server keeps for it: modules, stream
    /// records, checkpoints, savepoints, job and savepoint records) plus what its uploads in
    /// flight hold: the storage ledger ([`ledger`]), one read, no scan.
    pub fn storage_usage(&self, tenant: &str) -> ServerResult<u64> {
        Ok(self.store.usage(tenant)?)
    }

    /// Fails with the storage quota error when `tenant` would store more than allowed after
    /// adding `extra` bytes.
    pub fn check_storage(&self, tenant: &Tenant, extra: u64) -> ServerResult<()> {
        let used = self.storage_usage(&tenant.id)?;
        let max = tenant.quotas.max_storage_bytes;
        if used.saturating_add(extra) > max {
            return Err(ServerError::Quota {
                limit: "max_storage_bytes",
                message: format!("the tenant stores {used} bytes, this adds {extra}, and the limit is {max}"),
            });
        }
        Ok(())
    }

    /// The registered workers, each with what the running jobs' subtasks do on it (nothing
    /// for a lost worker: a sample taken before it was lost may still name it).
    pub fn workers_with_loads(&self) -> Vec<(crate::cluster::WorkerInfo, worker_load::WorkerLoad)> {
        let mut loads = self.jobs.worker_loads();
        let mut workers = Vec::new();
        for w in self.workers.list() {
            let load = if w.lost.is_none() { loads.remove(&w.id) } else { None };
            workers.push((w, load.unwrap_or_default()));
        }
        workers
    }

    /// What `tenant` uses of its quotas.
    pub fn usage(&self, tenant: &str) -> ServerResult<Usage> {
        let holding: Vec<JobRecord> =
            self.jobs.list(tenant)?.into_iter().filter(|j| j.status.holds_quota()).collect();
        Ok(Usage {
            jobs: holding.len() as u32,
            subtasks: holding.iter().map(|j| j.subtasks).sum(),
            storage_bytes: self.storage_usage(tenant)?,
            buffered_bytes: holding
                .iter()
                .map(|j| jobs::buffered_bytes(&j.spec))
                .fold(0, u64::saturating_add),
        })
    }

    /// Deletes module `id` of `tenant`, which no job of the tenant that may still run uses
    /// (finished jobs do not count).
    pub async fn delete_module(&self, tenant: &str, id: &str) -> ServerResult<()> {
        self.modules.get(tenant, id)?;
        if let Some((_, job)) = self.jobs.modules_in_use(tenant)?.into_iter().find(|(m, _)| m == id) {
            return Err(ServerError::Conflict(format!(
                "module `{id}` is used by job `{job}`; cancel the job (or let it finish) first"
            )));
        }
        let (modules, tenant, id) = (self.modules.clone(), tenant.to_string(), id.to_string());
        tokio::task::spawn_blocking(move || modules.delete(&tenant, &id)).await?
    }

    /// Imports a savepoint file arriving as `chunks` for `tenant`, held to its storage quota
    /// and to `max_request_bytes` while it streams (see [`Savepoints::import`]).
    pub async fn import_savepoint<E: std::fmt::Display>(
        &self,
        tenant: &Tenant,
        chunks: impl futures::Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    ) -> ServerResult<SavepointRecord> {
        let max = self.config.max_request_bytes as u64;
        self.savepoints.import(tenant, max, chunks).await
    }
}

/// The server's health: its store, its disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Whether the store serves.
    pub store: StoreStatus,
    /// The data directory's free space against the floor (none when it cannot be measured).
    pub disk: Option<weir_store::DiskSpace>,
}

/// What a tenant uses of its quotas.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Jobs that count against `max_jobs` (running, restarting, stopping or stopped).
    pub jobs: u32,
    /// Their subtasks.
    pub subtasks: u32,
    /// Bytes stored.
    pub storage_bytes: u64,
    /// Bytes the channels of those jobs may hold ([`jobs::buffered_bytes`]).
    pub buffered_bytes: u64,
}

/// Listens for workers and starts the server's own data plane; attempts run on the workers
/// from now on (while any is live). Returns the two bound addresses.
async fn start_cluster(
    config: &crate::cluster::ClusterConfig,
    listen: &str,
    workers: &Workers,
    jobs: &JobManager,
    chunk_store: Option<String>,
) -> anyhow::Result<(std::net::SocketAddr, std::net::SocketAddr)> {
    use anyhow::Context as _;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen for workers on {listen}"))?;
    let bound = listener.local_addr()?;
    let data_listen = config.data_listen.clone().unwrap_or_else(|| format!("{}:0", bound.ip()));
    let data = tokio::net::TcpListener::bind(&data_listen)
        .await
        .with_context(|| format!("cannot listen for the data plane on {data_listen}"))?;
    let data_bound = data.local_addr()?;
    let transport = match &config.tls {
        Some(files) => crate::cluster::tls::Transport::tls(files)?,
        None => crate::cluster::tls::Transport::plain(),
    };
    let cluster = crate::cluster::Cluster::start(
        workers.clone(),
        data,
        config.data_advertise.clone(),
        transport.clone(),
    )?
    .with_chunk_store(chunk_store);
    jobs.set_cluster(Arc::new(cluster));
    tokio::spawn(crate::cluster::accept(listener, workers.clone(), transport));
    Ok((bound, data_bound))
}

/// Jobs to resume after a restart wait up to `wait_ms` for a worker to register again, so
/// that they go back to the workers rather than into this process.
async fn wait_for_a_worker(workers: &Workers, wait_ms: u64) {
    let mut events = workers.subscribe();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(wait_ms);
    while !workers.any_live() {
        tokio::select! {
            _ = events.recv() => {}
            () = tokio::time::sleep_until(deadline) => {
                tracing::warn!("no worker registered within {wait_ms} ms: resuming jobs in this process");
                return;
            }
        }
    }
}
