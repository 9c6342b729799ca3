//! What one operator instance's wasmtime store holds ([`HostState`]: what the guest's imports
//! act on) and the limiter that holds the instance to its memory limit. The imports
//! themselves are in `imports.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::WasiCtx;

use super::keyed_store::KeyedStates;
use super::logs::{GuestOutput, InstanceLogs};
use super::side_output::SideOutputs;
use super::timers::TimerService;

/// Data of one operator instance's store.
pub struct HostState {
    pub(super) wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(crate) limits: Limiter,
    /// The instance's event-time timers.
    pub timers: TimerService,
    /// The instance's metric counters.
    pub counters: BTreeMap<String, u64>,
    /// The instance's input watermark, as the `event-time` import reports it.
    pub watermark: i64,
    /// The watermark of each input, by input index.
    pub input_watermarks: Vec<i64>,
    /// Records emitted on side outputs during the current call.
    pub side_outputs: SideOutputs,
    /// Host keyed state (`keyed-state`), in a local store.
    pub keyed: KeyedStates,
    /// The last error-level log line (a panic message, with the guest SDK).
    pub last_error: Option<String>,
    /// Where its log lines go (the logging import, stdout and stderr), at its rate.
    pub(crate) logs: Arc<Mutex<InstanceLogs>>,
    /// Epoch ticks the current call has run for.
    pub(crate) ticks_in_call: u64,
    /// Ticks after which the current call is stopped.
    pub(crate) max_ticks: u64,
}

impl HostState {
    pub(crate) fn new(logs: InstanceLogs, limits: Limiter, max_ticks: u64) -> Self {
        let timer_bytes = limits.memory_limit / 4;
        let memory_limit = limits.memory_limit;
        // Sandbox: no files, no environment, no network; stdout and stderr are lines of the
        // instance's log, like the logging import's.
        let logs = Arc::new(Mutex::new(logs));
        let wasi = wasmtime_wasi::WasiCtxBuilder::new()
            .stdout(GuestOutput { logs: logs.clone(), stream: 0 })
            .stderr(GuestOutput { logs: logs.clone(), stream: 1 })
            .build();
        HostState {
            wasi,
            table: ResourceTable::new(),
            limits,
            timers: TimerService::with_limits(MAX_TIMERS, timer_bytes),
            counters: BTreeMap::new(),
            watermark: i64::MIN,
            input_watermarks: Vec::new(),
            side_outputs: SideOutputs::default(),
            keyed: KeyedStates::new(memory_limit),
            last_error: None,
            logs,
            ticks_in_call: 0,
            max_ticks,
        }
    }
}

/// Most timers one instance may hold; their bytes may take a quarter of its memory limit.
const MAX_TIMERS: usize = 1 << 20;
/// Most elements one table may grow to (a host pointer each).
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// Most core instances, tables and linear memories one instance may create (a Rust
/// component has a few of each; every memory reserves address space).
const MAX_INSTANCES: usize = 64;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 16;

/// Holds an instance to its memory limit: the linear memories it creates and grows, together.
/// Going past it, or any failed growth, traps the call (rather than the guest allocator's
/// `unreachable`), and the limiter remembers that the limit was the cause.
#[derive(Debug)]
pub(crate) struct Limiter {
    memory_limit: usize,
    memory_used: usize,
    /// A growth was refused because of the limit.
    pub(crate) limit_hit: bool,
}

impl Limiter {
    pub(crate) fn new(memory_limit: usize) -> Self {
        Limiter { memory_limit, memory_used: 0, limit_hit: false }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.memory_used.saturating_add(desired.saturating_sub(current));
        if total > self.memory_limit {
            self.limit_hit = true;
            wasmtime::bail!("memory limit of {} bytes reached: growing to {total} bytes", self.memory_limit);
        }
        self.memory_used = total;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error.context("linear memory could not grow"))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            wasmtime::bail!("a table may hold at most {MAX_TABLE_ELEMENTS} elements; growing to {desired}");
        }
        Ok(true)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        Err(error.context("a table could not grow"))
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}
