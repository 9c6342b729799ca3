//! The engine's integration tests, built as one test binary (wasmtime's `tests/all`
//! pattern): one link of wasmtime instead of one per file. Each file is a module; nextest
//! still runs every test in its own process. Shared helpers: `common` (plans, guests,
//! outputs) and `server` (an in-process or child-process server and a JSON client).

mod common;
mod server;

mod api_bad_input;
mod api_languages;
mod api_lifecycle;
mod api_openapi;
mod api_requests;
mod api_savepoints;
mod api_tenants;
mod api_tokens;
mod api_ui;
mod backpressure;
mod bad_input;
mod bench_smoke;
mod checkpoint_history;
mod checkpoint_unaligned_view;
mod chunked_snapshot;
mod cli_client;
mod cluster_data;
mod cluster_jobs;
mod cluster_kafka;
mod cluster_objects;
mod cluster_tls;
mod cluster_workers;
mod coordinator;
mod disk_full;
mod encoded_batches;
mod encoded_state;
mod event_time_rescale;
mod event_windows;
mod exactly_once;
mod file_splits;
mod host_state;
mod host_state_python;
mod hostile;
mod hostile_tenants;
mod join;
mod kafka_access;
mod kafka_connectors;
mod kafka_exactly_once;
mod kafka_transactional;
mod layout;
mod nexmark;
mod nexmark_queries;
mod plan_limits;
mod recovery;
mod savepoint_restore;
mod snapshot;
mod source_idleness;
mod state_versions;
mod storage_quota;
mod tansu_broker;
mod two_inputs;
mod unaligned_checkpoints;
mod window;
mod wordcount;
