//! The HTTP API and its clients: a job's life over the API (upload, create, checkpoints,
//! stop, a server killed and resumed), the OpenAPI document and the routes it lists, tenant
//! isolation and authentication over every operation, tokens, disabled tenants and
//! `/metrics`, the web UI the binary serves, the CLI client driving a real server, and a
//! job's exception history.

mod cli;
mod exceptions;
mod lifecycle;
pub(crate) mod observing;
mod openapi;
mod prometheus;
mod tenants;
pub(crate) mod tokens;
mod ui;
