//! Jobs as dataflows through the real runtime and real wasmtime, each against a native
//! reference: the word count, Nexmark queries, event-time windows and joins (also rescaled
//! through savepoints), several inputs, backpressure, idle sources, and a file read by
//! several subtasks.

mod backpressure;
mod event_time_rescale;
mod event_windows;
mod file_splits;
mod join;
mod nexmark;
mod nexmark_queries;
mod source_idleness;
mod two_inputs;
mod window;
mod wordcount;
