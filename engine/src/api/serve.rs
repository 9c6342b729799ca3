//! Serving the API: bind the configured address, serve [`super::router`] until Ctrl-C or
//! SIGTERM, then stop the jobs' runs (their statuses stay, so they resume at the next start).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;

use crate::server::Server;

/// Runs `server` over HTTP until Ctrl-C or SIGTERM. `ready` gets the bound address (port 0
/// picks one).
pub async fn serve(server: Arc<Server>, ready: impl FnOnce(SocketAddr)) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&server.config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", server.config.listen))?;
    let address = listener.local_addr()?;
    ready(address);
    let app = super::router(server.clone());
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
