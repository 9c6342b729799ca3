//! What `weir demo` sets up on a fresh server: a demo tenant, the example modules uploaded,
//! an input stream and two word-count jobs checkpointing every 2 s.

use serde_json::json;

use weir::plan::JobSpec;
use weir::server::Server;
use weir::server::error::ServerResult;
use weir::server::jobs::JobRecord;
use weir::server::tenants::{Quotas, Tenant};

/// The demo's tenant, its token and jobs.
#[derive(Debug)]
pub struct Demo {
    /// The tenant.
    pub tenant: Tenant,
    /// Its token.
    pub token: String,
    /// The jobs started.
    pub jobs: Vec<JobRecord>,
}

/// The example modules uploaded for the demo tenant.
pub const DEMO_MODULES: [&str; 5] = ["tokenizer", "wordcount", "nexmark-q1", "nexmark-q2", "tumbling-window"];

/// Sets the demo up on `server`.
pub async fn setup(server: &Server) -> ServerResult<Demo> {
    let (tenant, token) = server.tenants.create("demo", Quotas::default()).await?;
    for name in DEMO_MODULES {
        if let Some(bytes) = weir::builtin::get(name) {
            server.modules.upload(&tenant.id, name, bytes).await?;
        }
    }
    server.streams.create(&tenant.id, "lines", 2).await?;
    let generated: JobSpec = serde_json::from_value(json!({
        "name": "wordcount",
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "generator",
              "config": { "mode": "words", "lines": 1_000_000_000u64, "words_per_line": 8, "vocabulary": 500,
                          "seed": 7, "records_per_second": 2000 } },
            { "id": "split", "kind": "operator", "module": "tokenizer", "parallelism": 2 },
            { "id": "count", "kind": "operator", "module": "wordcount", "parallelism": 2 },
            { "id": "out", "kind": "sink", "connector": "stream", "parallelism": 2,
              "config": { "stream": "word-counts", "partitions": 2 } }
        ],
        "edges": [
            { "from": "lines", "to": "split", "partitioning": "rebalance" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out", "partitioning": "forward" }
        ],
        "settings": { "checkpoint": { "interval_ms": 2000 } }
    }))
    .map_err(|e| weir::server::ServerError::Internal(format!("demo job: {e}")))?;
    let pushed: JobSpec = serde_json::from_value(json!({
        "name": "live-wordcount",
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "stream", "config": { "stream": "lines", "follow": true } },
            { "id": "split", "kind": "operator", "module": "tokenizer" },
            { "id": "count", "kind": "operator", "module": "wordcount" },
            { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": "live-counts", "partitions": 1 } }
        ],
        "edges": [
            { "from": "lines", "to": "split" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 2000 } }
    }))
    .map_err(|e| weir::server::ServerError::Internal(format!("demo job: {e}")))?;
    let mut jobs = Vec::new();
    for spec in [generated, pushed] {
        jobs.push(server.jobs.create(&tenant, spec, None).await?);
    }
    Ok(Demo { tenant, token, jobs })
}
