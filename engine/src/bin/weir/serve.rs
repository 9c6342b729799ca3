//! `weir serve` and `weir demo`: a server over a data directory (the demo's tenant, modules
//! and jobs are set up by `demo.rs`).

use std::path::PathBuf;

use anyhow::Context as _;

use crate::client::ClientConfig;

/// Runs `weir serve`.
pub async fn serve(
    data_dir: Option<PathBuf>,
    listen: Option<String>,
    config: Option<PathBuf>,
) -> anyhow::Result<()> {
    let mut config = weir::server::ServerConfig::load(config.as_deref())?;
    if let Some(listen) = listen {
        config.listen = listen;
    }
    // `--data-dir` wins over the config file (WEIR_DATA_DIR is read by both).
    if let Some(dir) = data_dir {
        config.data_dir = dir;
    }
    if config.admin_token.is_none() {
        tracing::warn!(
            "no admin_token configured (WEIR_ADMIN_TOKEN): tenants cannot be managed over the API"
        );
    }
    let server = weir::server::Server::open(config).await?;
    if let Some((cluster, data)) = server.cluster_addresses {
        println!("weir cluster listening on {cluster}");
        println!("weir data plane listening on {data}");
    }
    weir::api::serve(server, |address| {
        println!("weir server listening on http://{address}");
    })
    .await
}

/// Runs `weir demo`.
pub async fn demo(data_dir: PathBuf, listen: String) -> anyhow::Result<()> {
    let dir = data_dir.join("demo");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let admin_token = weir::server::ids::new_token();
    let config = weir::server::ServerConfig {
        listen,
        data_dir: dir.clone(),
        admin_token: Some(admin_token.clone()),
        ..weir::server::ServerConfig::default()
    };
    let server = weir::server::Server::open(config).await?;
    let demo = crate::demo::setup(&server).await?;
    let token = demo.token.clone();
    weir::api::serve(server, move |address| {
        let url = format!("http://{address}");
        let client = ClientConfig { url: Some(url.clone()), token: Some(token.clone()) };
        let written = client.write(&data_dir).is_ok();
        println!("Weir demo on {url} (data in {})", dir.display());
        println!("  open {url}/ in a browser and sign in with the tenant's token");
        println!("  tenant `{}`, token: {token}", demo.tenant.name);
        println!("  admin token:          {admin_token}");
        for job in &demo.jobs {
            println!("  job {} `{}` started, checkpoint every 2 s", job.id, job.name);
        }
        println!();
        if written {
            println!("The CLI finds this server ({}/client.toml):", data_dir.display());
        }
        println!("  weir job list");
        println!("  weir checkpoint list {}", demo.jobs[0].id);
        println!("  echo '\"to be or not to be\"' | weir stream push lines");
        println!("  weir stream read live-counts");
        println!("  curl -H 'Authorization: Bearer {token}' {url}/api/v1/jobs");
        println!(
            "Press Ctrl-C to stop; jobs resume when the server starts again on the same data directory."
        );
    })
    .await
}
