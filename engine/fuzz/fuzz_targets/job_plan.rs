//! A job spec, as `POST /api/v1/jobs` and `weir run` take it: JSON text parsed into a
//! `JobSpec` and planned (settings, ids, edges, cycles, connector configs, module
//! references). Operators resolve `builtin:<name>` to the embedded example modules
//! (compiled once, then cached by the host); any other reference is a missing file.

#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use weir::guest::GuestHost;
use weir::modules::LocalModules;
use weir::plan::{JobSpec, plan};

fn modules() -> &'static (tempfile::TempDir, LocalModules) {
    static MODULES: OnceLock<(tempfile::TempDir, LocalModules)> = OnceLock::new();
    MODULES.get_or_init(|| {
        let host: Arc<GuestHost> = GuestHost::new(None).expect("wasmtime engine");
        let dir = tempfile::tempdir().expect("temporary directory");
        let loader = LocalModules::new(host, dir.path());
        (dir, loader)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(spec) = JobSpec::from_json(text) else { return };
    let (_, loader) = modules();
    if let Ok(plan) = plan(&spec, loader) {
        // What the server stores and counts for a planned job.
        let _ = plan.subtask_count();
        assert_eq!(plan.nodes.len(), spec.nodes.len());
        assert_eq!(plan.topo_order.len(), plan.nodes.len());
        let json = serde_json::to_string(&plan.spec).expect("a planned spec serializes");
        JobSpec::from_json(&json).expect("a planned spec parses again");
    }
});
