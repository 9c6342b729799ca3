//! Weir's WIT host imports (`timers`, `logging`, `metrics`) and WASI, implemented on an
//! instance's [`HostState`].

use wasmtime_wasi::{WasiCtxView, WasiView};

use super::bindings::weir::operator::{logging, metrics, timers, types};
use super::host_state::HostState;

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl types::Host for HostState {}

impl timers::Host for HostState {
    fn register(&mut self, key: Vec<u8>, timestamp: i64) {
        self.timers.register(key, timestamp);
    }

    fn delete(&mut self, key: Vec<u8>, timestamp: i64) {
        self.timers.delete(key, timestamp);
    }
}

/// Longest log line kept from a guest; longer lines are cut.
const MAX_LOG_LINE: usize = 4096;

impl logging::Host for HostState {
    fn log(&mut self, level: logging::Level, mut message: String) {
        if message.len() > MAX_LOG_LINE {
            let mut cut = MAX_LOG_LINE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        let label = &self.label;
        match level {
            logging::Level::Trace => tracing::trace!(target: "weir::guest", operator = %label, "{message}"),
            logging::Level::Debug => tracing::debug!(target: "weir::guest", operator = %label, "{message}"),
            logging::Level::Info => tracing::info!(target: "weir::guest", operator = %label, "{message}"),
            logging::Level::Warn => tracing::warn!(target: "weir::guest", operator = %label, "{message}"),
            logging::Level::Error => {
                tracing::error!(target: "weir::guest", operator = %label, "{message}");
                self.last_error = Some(message);
            }
        }
    }
}

/// Most distinct counters one instance may create.
const MAX_COUNTERS: usize = 256;

impl metrics::Host for HostState {
    fn counter_add(&mut self, name: String, delta: u64) {
        if let Some(c) = self.counters.get_mut(&name) {
            *c = c.saturating_add(delta);
        } else if self.counters.len() < MAX_COUNTERS && name.len() <= 128 {
            self.counters.insert(name, delta);
        }
    }
}
