//! `weir worker`: a worker process that registers with a controller (`weir serve` with
//! `cluster.listen`), keeps its session alive and registers again when it ends. Started by
//! Kubernetes (deploy/kubernetes/), systemd or by hand.

use tokio::net::TcpListener;
use weir::cluster::worker::{WorkerOptions, WorkerStatus, run};

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
    /// Where the data plane listens.
    #[arg(long, env = "WEIR_WORKER_LISTEN", default_value = "0.0.0.0:0")]
    listen: String,
    /// The data address other workers use (default: the bound address; in Kubernetes the
    /// pod's IP and the port).
    #[arg(long, env = "WEIR_WORKER_ADVERTISE")]
    advertise: Option<String>,
    /// Subtasks it runs at once (default: the number of cores).
    #[arg(long, env = "WEIR_WORKER_SLOTS")]
    slots: Option<u32>,
}

/// Runs the worker until Ctrl-C / SIGTERM (it then says goodbye to the controller).
pub async fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    let data = TcpListener::bind(&args.listen).await?;
    let bound = data.local_addr()?;
    let name = match args.name {
        Some(name) => name,
        None => std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default(),
    };
    let options = WorkerOptions {
        controller: args.controller,
        token: args.token,
        name: name.clone(),
        data_addr: args.advertise.unwrap_or_else(|| bound.to_string()),
        slots: args
            .slots
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32)),
    };
    println!("weir worker {name}: data plane on {bound}, registering with {}", options.controller);
    let report = move |status: WorkerStatus| match status {
        WorkerStatus::Registered(id) => println!("weir worker {name} registered as worker {id}"),
        WorkerStatus::SessionEnded(reason) => println!("weir worker {name}: session ended ({reason})"),
    };
    run(options, report, shutdown()).await?;
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
