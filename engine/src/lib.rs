//! Weir: a stream-processing engine whose operators are user functions running as
//! sandboxed WebAssembly components.
//!
//! A job ([`plan::JobSpec`], JSON) is validated into a [`plan::Plan`] and run by
//! [`runtime::run_job`]: sources ([`connectors`]) produce record batches
//! ([`record::Batch`]) that flow through bounded channels to operator subtasks, each a
//! Wasm component instance ([`guest::OperatorInstance`]), and on to sinks. The design and
//! its invariants are in `docs/design.md`.
#![deny(missing_docs)]

pub mod api;
pub mod bench;
pub mod builtin;
pub mod checkpoint_bench;
pub mod client;
pub mod connectors;
pub mod guest;
pub mod lang_bench;
pub mod modules;
pub mod plan;
pub mod record;
pub mod runtime;
pub mod savepoint;
pub mod savepoint_bench;
pub mod server;
pub mod server_bench;

use std::path::Path;
use std::sync::Arc;

/// Reads a job file, plans it (resolving modules relative to the file) and runs it.
pub async fn run_job_file(host: Arc<guest::GuestHost>, path: &Path) -> anyhow::Result<runtime::JobReport> {
    use anyhow::Context as _;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read job file {}", path.display()))?;
    let spec = plan::JobSpec::from_json(&text)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let plan = plan::plan(&spec, &modules::LocalModules::new(host, base))?;
    Ok(runtime::run_job(&plan).await?)
}
