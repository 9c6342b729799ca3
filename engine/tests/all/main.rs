//! The engine's integration tests, built as one test binary (wasmtime's `tests/all`
//! pattern): one link of wasmtime instead of one per file. Each area is a folder whose
//! `mod.rs` says what its tests cover; each file is a module, and a test's name is its path
//! (`cluster::tls::...`), which nextest filters match. nextest still runs every test in its
//! own process. Shared helpers: `common` (plans, guests, outputs, brokers, the other-language
//! builds) and `server` (an in-process or child-process server and a JSON client).

mod common;
mod server;

mod api;
mod bench_smoke;
mod checkpoints;
mod cluster;
mod dataflow;
mod hostile;
mod kafka;
mod languages;
mod layout;
mod state;
