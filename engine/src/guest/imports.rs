//! Weir's WIT host imports (`timers`, `event-time`, `side-output`, `keyed-state`, `logging`,
//! `metrics`) and WASI, implemented on an instance's [`HostState`].

use wasmtime_wasi::{WasiCtxView, WasiView};

use super::bindings::weir::operator::keyed_state::{self, Change, FieldValue, Lookup};
use super::bindings::weir::operator::{event_time, logging, metrics, side_output, timers, types};
use super::instance_data::HostState;
use super::logs::{LogLevel, MAX_LOG_LINE};

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

impl event_time::Host for HostState {
    fn current_watermark(&mut self) -> i64 {
        self.watermark
    }

    fn input_watermark(&mut self, input: u32) -> i64 {
        self.input_watermarks.get(input as usize).copied().unwrap_or(i64::MIN)
    }
}

impl side_output::Host for HostState {
    fn emit(&mut self, name: String, key: Vec<u8>, value: Vec<u8>, timestamp: i64) {
        if !self.side_outputs.emit(&name, &key, &value, timestamp) {
            metrics::Host::counter_add(self, SIDE_OUTPUT_DROPPED.to_string(), 1);
        }
    }
}

impl keyed_state::Host for HostState {
    fn open_state(&mut self, name: String) -> u32 {
        self.keyed.with(0, |s| s.state_id(&name).map(u32::from))
    }

    fn get(&mut self, state: u32, key: Vec<u8>, field: Vec<u8>) -> Option<Vec<u8>> {
        self.keyed.with(None, |s| s.get(state, &key, &field))
    }

    fn multi_get(&mut self, state: u32, lookups: Vec<Lookup>) -> Vec<Option<Vec<u8>>> {
        self.keyed.with(Vec::new(), |s| {
            s.multi_get(state, lookups.iter().map(|l| (l.key.as_slice(), l.field.as_slice())))
        })
    }

    fn put(&mut self, state: u32, key: Vec<u8>, field: Vec<u8>, value: Vec<u8>) {
        self.keyed.with((), |s| s.put(state, &key, &field, &value));
    }

    fn delete(&mut self, state: u32, key: Vec<u8>, field: Vec<u8>) {
        self.keyed.with((), |s| s.delete(state, &key, &field));
    }

    fn clear(&mut self, state: u32, key: Vec<u8>) {
        self.keyed.with((), |s| s.clear(state, &key));
    }

    fn apply(&mut self, state: u32, changes: Vec<Change>) {
        self.keyed.with((), |s| {
            s.apply(state, changes.iter().map(|c| (c.key.as_slice(), c.field.as_slice(), c.value.as_deref())))
        });
    }

    fn scan(&mut self, state: u32, key: Vec<u8>, start: Option<Vec<u8>>, limit: u32) -> Vec<FieldValue> {
        self.keyed.with(Vec::new(), |s| {
            Ok(s.scan(state, &key, start.as_deref(), limit)?
                .into_iter()
                .map(|(field, value)| FieldValue { field, value })
                .collect())
        })
    }
}

/// The counter of side-output records that no edge carried.
pub const SIDE_OUTPUT_DROPPED: &str = "side_output_dropped";

impl logging::Host for HostState {
    fn log(&mut self, level: logging::Level, message: String) {
        let level = match level {
            logging::Level::Trace => LogLevel::Trace,
            logging::Level::Debug => LogLevel::Debug,
            logging::Level::Info => LogLevel::Info,
            logging::Level::Warn => LogLevel::Warn,
            logging::Level::Error => LogLevel::Error,
        };
        if level == LogLevel::Error {
            // The panic message a trap is reported with (cut like any line).
            let mut last: String = message.chars().take(MAX_LOG_LINE).collect();
            if last.len() < message.len() {
                last.push('…');
            }
            self.last_error = Some(last);
        }
        if let Ok(mut logs) = self.logs.lock() {
            logs.line(level, message);
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
