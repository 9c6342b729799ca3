//! The Weir server: tenants, their modules, jobs and streams, behind the HTTP API
//! ([`crate::api`]). Everything lives in one data directory: the store (`weir.redb`: tenants,
//! token hashes, modules, jobs, checkpoints, state, streams), the uploaded module bytes
//! (`modules/`) and the compiled-module cache (`module-cache/`).

pub mod config;
pub mod demo;
pub mod error;
pub mod jobs;
pub mod registry;
pub mod savepoints;
pub mod streams;
pub mod telemetry;
pub mod tenants;

use std::net::SocketAddr;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use weir_store::Store;

pub use config::ServerConfig;
pub use error::{ServerError, ServerResult};

use crate::guest::GuestHost;
use jobs::JobManager;
use registry::ModuleRegistry;
use savepoints::Savepoints;
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
    /// Savepoints.
    pub savepoints: Savepoints,
    /// Streams.
    pub streams: Streams,
    /// Metrics.
    pub telemetry: Arc<Telemetry>,
    admin_token_hash: Option<[u8; 32]>,
}

impl Server {
    /// Opens the data directory (creating it) and the store, then resumes the jobs that were
    /// running when the server last stopped.
    pub async fn open(config: ServerConfig) -> anyhow::Result<Arc<Server>> {
        use anyhow::Context as _;
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
        let host = GuestHost::with_options(config.host_options(dir.join("module-cache")))?;
        let telemetry = Arc::new(Telemetry::new());
        let tenants = Tenants::open(&store)?;
        let modules = ModuleRegistry::open(&store, host.clone(), dir.join("modules"))?;
        let jobs = JobManager::open(&store, modules.clone(), telemetry.clone())?;
        let streams = Streams::open(&store)?;
        let savepoints = Savepoints::open(&store, jobs.clone())?;
        let admin_token_hash = config.admin_token.as_deref().map(|t| Sha256::digest(t.as_bytes()).into());
        let server = Arc::new(Server {
            config,
            store,
            host,
            tenants,
            modules,
            jobs,
            savepoints,
            streams,
            telemetry,
            admin_token_hash,
        });
        let resumed = server.jobs.resume_all().await?;
        if resumed > 0 {
            tracing::info!(jobs = resumed, "resumed the jobs that were running");
        }
        Ok(server)
    }

    /// True when `token` is the admin token.
    pub fn is_admin(&self, token: &str) -> bool {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        self.admin_token_hash.is_some_and(|h| h == hash)
    }

    /// Bytes stored for `tenant`: modules, stream records appended over the API, the state
    /// of its jobs' latest checkpoints, and its savepoints.
    pub fn storage_usage(&self, tenant: &str) -> ServerResult<u64> {
        Ok(self.modules.usage(tenant)?
            + self.streams.usage(tenant)?
            + self.jobs.state_usage(tenant)?
            + self.savepoints.usage(tenant)?)
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
}

/// Runs the server until Ctrl-C or SIGTERM. `ready` gets the bound address (port 0 picks
/// one).
pub async fn serve(server: Arc<Server>, ready: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let listener = tokio::net::TcpListener::bind(&server.config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", server.config.listen))?;
    let address = listener.local_addr()?;
    ready(address);
    let app = crate::api::router(server.clone());
    axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await?;
    server.jobs.abort_all();
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down");
}
