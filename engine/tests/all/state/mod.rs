//! Operator state through the real wasmtime host: the guest's `snapshot`/`restore` contract,
//! snapshots in parts, state documents of the Python components, schema versions and
//! migration, and host keyed state (the local store, from Rust and from Python) across
//! rescales, checkpoints and kills.

mod chunked_snapshot;
mod encoded;
mod host;
mod host_python;
mod snapshot;
mod versions;
