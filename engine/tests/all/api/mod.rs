//! The HTTP API and its clients: a job's life over the API (upload, create, checkpoints,
//! stop, a server killed and resumed), the OpenAPI document and the routes it lists, tenant
//! isolation and authentication over every operation, tokens, disabled tenants and
//! `/metrics`, the web UI the binary serves, the CLI client driving a real server, a job's
//! exception history, and upgrading a running job (with rollback, and a server killed in
//! the middle of it).

mod cli;
mod exceptions;
mod lifecycle;
pub(crate) mod observing;
mod openapi;
mod prometheus;
mod tenants;
pub(crate) mod tokens;
mod ui;
mod upgrade;
