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
pub mod builtin;
pub mod clock;
pub mod cluster;
pub mod connectors;
pub mod guest;
pub mod key_groups;
pub mod local_state;
pub mod modules;
pub mod plan;
pub mod record;
pub mod retry;
pub mod runtime;
pub mod savepoint;
pub mod server;
