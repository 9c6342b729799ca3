//! Bytes uploaded as a module (`POST /api/v1/modules`): what the registry runs on them,
//! `GuestHost::load`: the header check, wasmtime's parsing and validation of the component,
//! Cranelift's compile of what validates, and the check against the `weir:operator` world
//! (exports, imports, linking). Nothing is instantiated or run.

#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use weir::guest::GuestHost;

fn host() -> &'static Arc<GuestHost> {
    static HOST: OnceLock<Arc<GuestHost>> = OnceLock::new();
    HOST.get_or_init(|| GuestHost::new(None).expect("wasmtime engine"))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(module) = host().load("fuzz", data) {
        // The host caches accepted modules in memory: forget them to keep the run's memory flat.
        host().forget(&module.sha256_hex());
    }
});
