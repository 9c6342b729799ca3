//! `weir worker`: a worker process that registers with a controller (`weir serve` with
//! `cluster.listen`), keeps its session alive and registers again when it ends. Started by
//! Kubernetes (deploy/kubernetes/), systemd or by hand.

use anyhow::Context as _;
use std::sync::Arc;
use tokio::net::TcpListener;

use weir::cluster::data::{DATA_FRAME_BYTES, DataPlane};
use weir::cluster::objects::{BlockingChunks, ChunkObjects};
use weir::cluster::tls::{Transport, is_loopback};
use weir::cluster::workdir::WorkDir;
use weir::cluster::worker::{WorkerOptions, WorkerStatus, run};
use weir::cluster::{ExecutorConfig, WorkerChunks};
use weir::guest::GuestHost;

/// `weir worker`'s options.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// The controller's cluster address (`host:port`, its `cluster.listen`).
    #[arg(long, env = "WEIR_CONTROLLER")]
    controller: String,
    /// The cluster token (the controller's `cluster.token`).
    #[arg(long, env = "WEIR_CLUSTER_TOKEN", hide_env_values = true)]
    token: String,
    /// The worker's name, unique in the cluster (default: the host name).
    #[arg(long, env = "WEIR_WORKER_NAME")]
    name: Option<String>,
    /// Where the data plane listens (default: `127.0.0.1:0` when the controller's address
    /// is loopback, `0.0.0.0:0` otherwise).
    #[arg(long, env = "WEIR_WORKER_LISTEN")]
    listen: Option<String>,
    /// The data address other workers use (default: the bound address; in Kubernetes the
    /// pod's IP and the port).
    #[arg(long, env = "WEIR_WORKER_ADVERTISE")]
    advertise: Option<String>,
    /// Subtasks it runs at once (default: the number of cores).
    #[arg(long, env = "WEIR_WORKER_SLOTS")]
    slots: Option<u32>,
    /// Where the worker keeps compiled modules and the working copies of host keyed state
    /// (default: a fresh private folder under the system's temporary folder, removed at
    /// exit). It must be this user's and not writable by group or others (created 0700).
    /// Nothing here must survive the worker: checkpoints live with the controller.
    #[arg(long, env = "WEIR_WORKER_DIR")]
    dir: Option<std::path::PathBuf>,
    /// A config file (TOML, as `weir serve`'s) whose `chunk_store`, `chunk_store_prefix`,
    /// `min_free_bytes` and `cluster.tls` the worker uses (`WEIR_CHUNK_STORE__*`,
    /// `WEIR_MIN_FREE_BYTES` and `WEIR_CLUSTER__TLS__*` variables too): when they name the
    /// controller's chunk store, the worker puts its subtasks' chunks there itself; with
    /// `cluster.tls`, it speaks mutual TLS to the controller and the other workers.
    #[arg(long, env = "WEIR_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// Plain TCP off loopback (without `cluster.tls`): for a network that is private, or a
    /// mesh that adds mTLS. Without it (or TLS), every cluster address must be loopback.
    #[arg(long, env = "WEIR_CLUSTER_INSECURE_PLAINTEXT")]
    insecure_plaintext: bool,
}

/// Runs the worker until Ctrl-C / SIGTERM (it then says goodbye to the controller).
pub async fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    let listen = args.listen.unwrap_or_else(|| {
        if is_loopback(&args.controller) { "127.0.0.1:0" } else { "0.0.0.0:0" }.to_string()
    });
    let data_listener =
        TcpListener::bind(&listen).await.with_context(|| format!("cannot listen on {listen}"))?;
    let bound = data_listener.local_addr()?;
    let name = match args.name {
        Some(name) => name,
        None => std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default(),
    };
    let data_addr = args.advertise.unwrap_or_else(|| bound.to_string());
    let shared = weir::server::ServerConfig::load_shared(args.config.as_deref())?;
    let transport = match &shared.cluster.tls {
        Some(files) => Transport::tls(files)?,
        None => Transport::plain(),
    };
    let addresses = [
        ("--controller", args.controller.as_str()),
        ("--listen", &bound.to_string()),
        ("--advertise", &data_addr),
    ];
    transport.check_plaintext(&addresses, "--insecure-plaintext", args.insecure_plaintext)?;
    // Compiled modules are native code the worker runs: kept where only this user writes.
    let dir = WorkDir::open(args.dir.as_deref())?;
    println!("weir worker {name}: working directory {}", dir.path().display());
    let host = GuestHost::new(Some(dir.folder("module-cache")?))?;
    let data = DataPlane::new(&args.token, &data_addr, DATA_FRAME_BYTES, transport.clone());
    tokio::spawn(data.clone().serve(data_listener));
    let prefix = shared.chunk_store_prefix;
    let chunks = match &shared.chunk_store {
        Some(config) => match config.location(&prefix) {
            Some(location) => {
                let objects = ChunkObjects::open(config, &prefix)?;
                Some(WorkerChunks { objects: Arc::new(BlockingChunks::new(objects)?), location })
            }
            None => None,
        },
        None => None,
    };
    if let Some(chunks) = &chunks {
        println!("weir worker {name}: chunks go to {}", chunks.location);
    }
    let local_state = dir.folder("local-state")?;
    let disk_floor = Arc::new(weir_store::DiskFloor::new(local_state.clone()));
    disk_floor.set_reserve(shared.min_free_bytes);
    let executor = ExecutorConfig { host, data, local_state, chunks, disk_floor };
    let options = WorkerOptions {
        controller: args.controller,
        token: args.token,
        name: name.clone(),
        data_addr,
        slots: args
            .slots
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32)),
        executor,
        transport: transport.clone(),
    };
    let over = if transport.is_tls() { "mutual TLS" } else { "plain TCP" };
    println!(
        "weir worker {name}: data plane on {bound}, registering with {} over {over}",
        options.controller
    );
    let report = move |status: WorkerStatus| match status {
        WorkerStatus::Registered(id) => println!("weir worker {name} registered as worker {id}"),
        WorkerStatus::SessionEnded(reason) => println!("weir worker {name}: session ended ({reason})"),
    };
    run(options, report, shutdown()).await?;
    // A fresh directory goes with the worker.
    drop(dir);
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
    }
}
