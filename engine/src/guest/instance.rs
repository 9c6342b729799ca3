//! One running operator instance: a wasmtime store and the guest's exports, with every call
//! bounded by the CPU, memory and output limits and every failure mapped to a [`GuestError`].

use std::sync::Arc;

use wasmtime::{PoolConcurrencyLimitError, Store, Trap, UpdateDeadline};

use super::bindings::chunked::ChunkedSnapshot;
use super::bindings::encoded::{BatchFormat, EncodedBatches};
use super::bindings::{Batch, Context, Entry, OperatorInfo, OperatorWorld, StateDelta};
use super::encoded::{self as codec, DecodeError};
use super::error::{Call, GuestError};
use super::host::EPOCH_TICK;
use super::instance_data::{HostState, Limiter};
use super::logs::{InstanceLogs, LogRate, TracingSink};
use super::module::OperatorModule;
use super::side_output::SideOutputs;
use super::timers::TimerService;

mod chunked;
mod encoded_snapshot;

pub use encoded_snapshot::{ENCODED_FALLBACK_RESTORE_CHUNKS, ENCODED_RESTORE_CHUNKS, ENCODED_SNAPSHOTS};

/// Resource limits of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceLimits {
    /// Most linear memory the instance may grow to, in bytes, all its memories together
    /// (lowered to the instance pool's slot size when the engine has a pool).
    pub memory_bytes: usize,
    /// Most time one call may run guest code (counted in epoch ticks while the guest runs).
    pub cpu_limit_ms: u64,
    /// Most wall-clock time one call may take, waiting in host calls (sleeps, polls)
    /// included.
    pub wall_limit_ms: u64,
    /// Most output one `process`, `on-watermark` or `on-timer` call may return, in bytes:
    /// key and value bytes plus 16 bytes (one entry) per record. The host never copies more
    /// out of the guest in those calls (nor in one import call they make: a log line, a
    /// timer key).
    pub max_output_bytes: usize,
}

impl Default for InstanceLimits {
    fn default() -> Self {
        InstanceLimits {
            memory_bytes: 512 << 20,
            cpu_limit_ms: 10_000,
            wall_limit_ms: 60_000,
            max_output_bytes: 64 << 20,
        }
    }
}

/// Bytes one output record costs besides its key and value: its entry.
const ENTRY_BYTES: usize = size_of::<Entry>();

/// What wasmtime says when a guest hands the host more than the store's hostcall fuel.
const HOSTCALL_FUEL_EXHAUSTED: &str = "fuel allocated for hostcalls has been exhausted";

impl Context {
    /// The context of a lone instance: subtask 0 of 1, owning every key group of
    /// `max_parallelism`, one input, not restored. For tools, benchmarks and tests.
    pub fn standalone(operator_id: &str, config: &str, max_parallelism: u32) -> Self {
        Context {
            operator_id: operator_id.to_string(),
            config: config.to_string(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism,
            key_group_start: 0,
            key_group_end: max_parallelism,
            inputs: 1,
            restored: false,
        }
    }
}

/// An instantiated operator. A trapped instance is never entered again: every later call
/// fails with the original error (recovery means a fresh instance).
pub struct OperatorInstance {
    store: Store<HostState>,
    world: OperatorWorld,
    /// The `encoded-batches` fast path, when the component exports it.
    encoded: Option<Encoded>,
    /// Snapshots in parts, when the component exports `chunked-snapshot`.
    chunked: Option<ChunkedSnapshot>,
    who: Who,
    poisoned: Option<String>,
}

/// The fast path of an instance whose component exports `encoded-batches`.
struct Encoded {
    exports: EncodedBatches,
    /// The format the guest asked for after `open` (none: only `process` is called).
    format: Option<BatchFormat>,
    /// The last input document, kept for its allocation.
    doc: Vec<u8>,
    /// The last restore plan asked (`plan-restore`), with the state version and names it
    /// was asked for.
    plan: Option<(u32, Vec<String>, Option<super::bindings::encoded::RestorePlan>)>,
}

/// The counter of batches that went as a document through `process-encoded`.
pub const ENCODED_BATCHES: &str = "encoded_batches";
/// The counter of batches the instance's document format could not carry exactly, which
/// went through the plain `process` instead.
pub const ENCODED_FALLBACK_BATCHES: &str = "encoded_fallback_batches";

/// Which instance, and the limits it runs with: what its errors name.
struct Who {
    operator: String,
    subtask: u32,
    limits: InstanceLimits,
    /// The memory limit after the pool's cap.
    memory_bytes: usize,
    /// The instance pool's size, when the engine has one.
    max_instances: Option<u32>,
}

impl std::fmt::Debug for OperatorInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorInstance")
            .field("operator", &self.who.operator)
            .field("subtask", &self.who.subtask)
            .finish_non_exhaustive()
    }
}

/// A guest call ran past its wall-time limit: its future was dropped mid-call, so the
/// instance is poisoned like after a trap.
#[derive(Debug)]
struct WallLimitHit;

impl std::fmt::Display for WallLimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the call ran past its wall-time limit")
    }
}

impl std::error::Error for WallLimitHit {}

/// Runs a guest call for at most `limit_ms` of wall time. Epoch interruption stops a guest
/// that computes; this stops one that waits in a host call (a sleep, a poll), which never
/// meets an epoch deadline. Dropping the call's future abandons the guest mid-call: the
/// caller poisons the instance, and recovery uses a fresh one.
async fn within<T>(limit_ms: u64, call: impl Future<Output = wasmtime::Result<T>>) -> wasmtime::Result<T> {
    match tokio::time::timeout(std::time::Duration::from_millis(limit_ms), call).await {
        Ok(result) => result,
        Err(_) => Err(wasmtime::Error::new(WallLimitHit)),
    }
}

impl OperatorInstance {
    /// Instantiates `module` for subtask `subtask` of operator `operator`. With an instance
    /// pool, the memory limit is lowered to the pool's slot size.
    pub async fn new(
        module: &OperatorModule,
        operator: &str,
        subtask: u32,
        limits: InstanceLimits,
    ) -> Result<Self, GuestError> {
        let logs = InstanceLogs::new(Arc::new(TracingSink), operator, subtask, 0, LogRate::default());
        Self::with_logs(module, operator, subtask, limits, logs).await
    }

    /// [`OperatorInstance::new`] whose log lines (the logging import, stdout and stderr) go
    /// to `logs`.
    pub async fn with_logs(
        module: &OperatorModule,
        operator: &str,
        subtask: u32,
        limits: InstanceLimits,
        logs: InstanceLogs,
    ) -> Result<Self, GuestError> {
        let pool = module.pool();
        let who = Who {
            operator: operator.to_string(),
            subtask,
            limits,
            memory_bytes: pool.map_or(limits.memory_bytes, |p| limits.memory_bytes.min(p.max_memory_bytes)),
            max_instances: pool.map(|p| p.max_instances),
        };
        let tick_ms = EPOCH_TICK.as_millis().max(1) as u64;
        let max_ticks = limits.cpu_limit_ms.div_ceil(tick_ms).max(1);
        let mut state = HostState::new(logs, Limiter::new(who.memory_bytes), max_ticks);
        state.side_outputs = SideOutputs::new(Vec::new(), limits.max_output_bytes);
        let mut store = Store::new(module.component().engine(), state);
        store.limiter(|s| &mut s.limits);
        store.set_hostcall_fuel(who.hostcall_fuel(Call::Instantiate));
        store.epoch_deadline_callback(|mut ctx| {
            let s = ctx.data_mut();
            s.ticks_in_call += 1;
            if s.ticks_in_call > s.max_ticks {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        let (world, encoded, chunked) = instantiate(module, &mut store, &who).await?;
        let encoded = encoded.map(|exports| Encoded { exports, format: None, doc: Vec::new(), plan: None });
        let mut inst = OperatorInstance { world, encoded, chunked, store, who, poisoned: None };
        inst.store.data_mut().ticks_in_call = 0;
        Ok(inst)
    }

    /// The operator's node id.
    pub fn operator(&self) -> &str {
        &self.who.operator
    }

    /// The subtask index.
    pub fn subtask(&self) -> u32 {
        self.who.subtask
    }

    /// The instance's timers.
    pub fn timers(&mut self) -> &mut TimerService {
        &mut self.store.data_mut().timers
    }

    /// Sets the watermarks the `event-time` import reports: the combined one and each
    /// input's.
    pub fn set_watermarks(&mut self, current: i64, inputs: &[i64]) {
        let s = self.store.data_mut();
        s.watermark = current;
        s.input_watermarks.clear();
        s.input_watermarks.extend_from_slice(inputs);
    }

    /// Names the side outputs the job's edges carry; records on other names are dropped.
    pub fn set_side_outputs(&mut self, consumed: Vec<String>) {
        self.store.data_mut().side_outputs.set_consumed(consumed);
    }

    /// Hands the side-output records of the last call to `route`, by name.
    pub fn drain_side_outputs(&mut self, route: impl FnMut(&str, Batch)) {
        self.store.data_mut().side_outputs.drain(route);
    }

    /// The instance's host keyed state (`keyed-state`).
    pub fn keyed_states(&mut self) -> &mut super::keyed_store::KeyedStates {
        &mut self.store.data_mut().keyed
    }

    /// The instance's metric counters.
    pub fn counters(&self) -> &std::collections::BTreeMap<String, u64> {
        &self.store.data().counters
    }

    /// Calls `describe`: the operator's name, state schema version and the older versions
    /// it can migrate.
    pub async fn describe(&mut self) -> Result<OperatorInfo, GuestError> {
        self.begin(Call::Describe)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            self.world.weir_operator_operator().call_describe(&mut self.store),
        )
        .await;
        self.finish(Call::Describe, r.map(Ok::<_, super::bindings::GuestOperatorError>))
    }

    /// Calls `open`, then asks a component with the `encoded-batches` export which document
    /// format it wants.
    pub async fn open(&mut self, context: &Context) -> Result<(), GuestError> {
        self.store.data_mut().keyed.default_place(
            &self.who.operator,
            self.who.subtask,
            context.max_parallelism,
            context.key_group_start..context.key_group_end,
        );
        self.begin(Call::Open)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            self.world.weir_operator_operator().call_open(&mut self.store, context),
        )
        .await;
        self.finish(Call::Open, r)?;
        let Some(exports) = self.encoded.as_ref().map(|e| e.exports.clone()) else { return Ok(()) };
        self.begin(Call::Open)?;
        let r = within(self.who.limits.wall_limit_ms, exports.call_wanted_format(&mut self.store)).await;
        let format = self.finish(Call::Open, r.map(Ok::<_, super::bindings::GuestOperatorError>))?;
        if let Some(encoded) = &mut self.encoded {
            encoded.format = format;
        }
        Ok(())
    }

    /// The document format the instance's `process-encoded` takes, if it asked for one.
    pub fn batch_format(&self) -> Option<BatchFormat> {
        self.encoded.as_ref().and_then(|e| e.format)
    }

    /// Calls `process` with a batch that arrived on input `input`; returns the output. An
    /// instance that asked for a document format gets the batch through `process-encoded`
    /// when the format carries it exactly.
    pub async fn process(&mut self, input: u32, batch: &Batch) -> Result<Batch, GuestError> {
        if let Some(out) = self.process_encoded(input, batch).await {
            return out;
        }
        self.begin(Call::Process)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            self.world.weir_operator_operator().call_process(&mut self.store, input, batch),
        )
        .await;
        let out = self.finish(Call::Process, r)?;
        self.check_batch(Call::Process, out)
    }

    /// The fast path of [`Self::process`]: `None` when the instance has no document format
    /// or the format cannot carry `batch` (the plain `process` then takes it).
    async fn process_encoded(&mut self, input: u32, batch: &Batch) -> Option<Result<Batch, GuestError>> {
        let encoded = self.encoded.as_mut()?;
        let format = encoded.format?;
        let mut doc = std::mem::take(&mut encoded.doc);
        if codec::encode_batch(format, batch, &mut doc).is_err() {
            encoded.doc = doc;
            self.count(ENCODED_FALLBACK_BATCHES);
            return None;
        }
        let exports = encoded.exports.clone();
        self.count(ENCODED_BATCHES);
        Some(self.call_encoded(&exports, format, input, doc).await)
    }

    async fn call_encoded(
        &mut self,
        exports: &EncodedBatches,
        format: BatchFormat,
        input: u32,
        doc: Vec<u8>,
    ) -> Result<Batch, GuestError> {
        self.begin(Call::Process)?;
        let r =
            within(self.who.limits.wall_limit_ms, exports.call_process_encoded(&mut self.store, input, &doc))
                .await;
        if let Some(encoded) = &mut self.encoded {
            encoded.doc = doc;
        }
        let out = self.finish(Call::Process, r)?;
        match codec::decode_batch(format, &out, self.who.limits.max_output_bytes) {
            Ok(batch) => self.check_batch(Call::Process, batch),
            Err(DecodeError::Malformed(reason)) => Err(self
                .malformed(Call::Process, format!("its {} output document: {reason}", format_name(format)))),
            Err(e @ DecodeError::HostMemory(_)) => {
                Err(self
                    .malformed(Call::Process, format!("its {} output document: {e}", format_name(format))))
            }
            Err(DecodeError::TooLarge) => {
                let err = self.who.output_limit(Call::Process);
                self.poisoned = Some(err.to_string());
                Err(err)
            }
        }
    }

    fn count(&mut self, counter: &str) {
        super::bindings::weir::operator::metrics::Host::counter_add(
            self.store.data_mut(),
            counter.to_string(),
            1,
        );
    }

    /// Calls `on-watermark`.
    pub async fn on_watermark(&mut self, timestamp: i64) -> Result<Batch, GuestError> {
        self.begin(Call::OnWatermark)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            self.world.weir_operator_operator().call_on_watermark(&mut self.store, timestamp),
        )
        .await;
        let out = self.finish(Call::OnWatermark, r)?;
        self.check_batch(Call::OnWatermark, out)
    }

    /// Calls `on-timer`.
    pub async fn on_timer(&mut self, key: &[u8], timestamp: i64) -> Result<Batch, GuestError> {
        self.begin(Call::OnTimer)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            self.world.weir_operator_operator().call_on_timer(&mut self.store, key, timestamp),
        )
        .await;
        let out = self.finish(Call::OnTimer, r)?;
        self.check_batch(Call::OnTimer, out)
    }

    /// Calls `snapshot`: through `snapshot-encoded` when the component exports
    /// `encoded-batches` and answers with a state document, else the plain `snapshot`.
    pub async fn snapshot(&mut self, checkpoint_id: u64, full: bool) -> Result<StateDelta, GuestError> {
        if let Some(delta) = self.snapshot_encoded(checkpoint_id, full).await? {
            return Ok(delta);
        }
        self.snapshot_plain(checkpoint_id, full).await
    }

    /// Takes the snapshot without `snapshot-encoded` (tests and benchmarks compare the
    /// two): in parts (`snapshot-part`) when the component exports `chunked-snapshot`, else
    /// with the plain `snapshot`.
    pub async fn snapshot_plain(&mut self, checkpoint_id: u64, full: bool) -> Result<StateDelta, GuestError> {
        if let Some(delta) = self.snapshot_parts(checkpoint_id, full).await? {
            return Ok(delta);
        }
        self.snapshot_whole(checkpoint_id, full).await
    }

    /// Calls the plain `snapshot` alone, even when the component could hand the snapshot
    /// over in parts (tests: a state near the memory limit cannot be snapshotted whole).
    pub async fn snapshot_whole(&mut self, checkpoint_id: u64, full: bool) -> Result<StateDelta, GuestError> {
        self.begin(Call::Snapshot)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            self.world.weir_operator_operator().call_snapshot(&mut self.store, checkpoint_id, full),
        )
        .await;
        let delta = self.finish(Call::Snapshot, r)?;
        check_delta(&delta).map_err(|reason| self.malformed(Call::Snapshot, reason.to_string()))?;
        Ok(delta)
    }

    /// Calls `restore` with one chunk of live entries written by an operator of state schema
    /// version `state_version`: the operator's own version restores the entries as they are,
    /// a version it lists in `migrates-from` migrates them, any other fails (`invalid-state`).
    /// Goes through `restore-encoded` when the component plans it for the chunk's version and
    /// names and the planned format carries the chunk exactly.
    pub async fn restore(&mut self, state_version: u32, chunk: &StateDelta) -> Result<(), GuestError> {
        if self.restore_encoded(state_version, chunk).await? {
            return Ok(());
        }
        self.restore_plain(state_version, chunk).await
    }

    /// Calls the plain `restore`, never `restore-encoded`.
    pub async fn restore_plain(&mut self, state_version: u32, chunk: &StateDelta) -> Result<(), GuestError> {
        self.begin(Call::Restore)?;
        let r = within(
            self.who.limits.wall_limit_ms,
            self.world.weir_operator_operator().call_restore(&mut self.store, state_version, chunk),
        )
        .await;
        self.finish(Call::Restore, r)
    }

    fn begin(&mut self, call: Call) -> Result<(), GuestError> {
        if let Some(message) = &self.poisoned {
            return Err(GuestError::Trap {
                operator: self.who.operator.clone(),
                subtask: self.who.subtask,
                call,
                message: format!("the instance trapped earlier and cannot be entered again ({message})"),
            });
        }
        self.store.data_mut().ticks_in_call = 0;
        self.store.data_mut().side_outputs.begin();
        self.store.set_epoch_deadline(1);
        self.store.set_hostcall_fuel(self.who.hostcall_fuel(call));
        Ok(())
    }

    fn finish<T>(
        &mut self,
        call: Call,
        result: wasmtime::Result<Result<T, super::bindings::GuestOperatorError>>,
    ) -> Result<T, GuestError> {
        // A host import refused something during the call: the call fails, and the instance
        // (whose guest saw the import return normally) cannot be trusted again.
        let state = self.store.data_mut();
        let refused = match (
            state.timers.take_refusal(),
            state.side_outputs.take_refusal(),
            state.keyed.take_refusal(),
        ) {
            (Some(reason), _, _) => Some((reason, 0)),
            (None, Some(reason), _) => Some((reason, 1)),
            (None, None, Some(reason)) => Some((reason, 2)),
            (None, None, None) => None,
        };
        if let Some((reason, kind)) = refused {
            let (operator, subtask) = (self.who.operator.clone(), self.who.subtask);
            let err = match kind {
                0 => GuestError::TimerLimit { operator, subtask, call, reason },
                1 => GuestError::SideOutputLimit { operator, subtask, call, reason },
                _ => GuestError::KeyedState { operator, subtask, call, reason },
            };
            self.poisoned = Some(err.to_string());
            return Err(err);
        }
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(GuestError::Operator {
                operator: self.who.operator.clone(),
                subtask: self.who.subtask,
                call,
                error: e.into(),
            }),
            Err(e) => {
                let err = self.who.failure(call, self.store.data_mut(), e);
                self.poisoned = Some(err.to_string());
                Err(err)
            }
        }
    }

    fn malformed(&self, call: Call, reason: String) -> GuestError {
        GuestError::Malformed { operator: self.who.operator.clone(), subtask: self.who.subtask, call, reason }
    }

    /// Checks an output batch: well formed, and within the output limit (which the hostcall
    /// fuel already enforced while copying it; this keeps the limit exact).
    fn check_batch(&mut self, call: Call, batch: Batch) -> Result<Batch, GuestError> {
        batch.validate().map_err(|m| {
            let reason =
                format!("batch entries describe {} bytes but the batch holds {} bytes", m.described, m.held);
            self.malformed(call, reason)
        })?;
        let bytes = batch.data.len().saturating_add(batch.entries.len().saturating_mul(ENTRY_BYTES));
        if bytes > self.who.limits.max_output_bytes {
            let err = self.who.output_limit(call);
            self.poisoned = Some(err.to_string());
            return Err(err);
        }
        Ok(batch)
    }
}

impl Who {
    /// Most bytes the host copies out of the guest in one lift: a call's output for the
    /// calls that return records; otherwise what the guest's memory can hold (a snapshot
    /// may be large; wasmtime's default of 128 MiB would trap a larger state).
    fn hostcall_fuel(&self, call: Call) -> usize {
        if returns_records(call) { self.limits.max_output_bytes } else { self.memory_bytes.max(128 << 20) }
    }

    fn output_limit(&self, call: Call) -> GuestError {
        GuestError::OutputLimit {
            operator: self.operator.clone(),
            subtask: self.subtask,
            call,
            limit_bytes: self.limits.max_output_bytes,
        }
    }

    /// The error of a call (or instantiation) that did not return: a limit, or a trap with
    /// the guest's last error line (its panic message).
    fn failure(&self, call: Call, state: &mut HostState, e: wasmtime::Error) -> GuestError {
        let (operator, subtask) = (self.operator.clone(), self.subtask);
        if e.downcast_ref::<WallLimitHit>().is_some() {
            return GuestError::WallLimit { operator, subtask, call, limit_ms: self.limits.wall_limit_ms };
        }
        if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            return GuestError::CpuLimit { operator, subtask, call, limit_ms: self.limits.cpu_limit_ms };
        }
        if std::mem::take(&mut state.limits.limit_hit) {
            let limit = if self.memory_bytes < self.limits.memory_bytes {
                format!(
                    "the job's memory_limit_mb asks for {} MiB; the server's max_instance_memory_mb caps an instance at {} MiB",
                    self.limits.memory_bytes >> 20,
                    self.memory_bytes >> 20
                )
            } else {
                "the job's memory_limit_mb".to_string()
            };
            return GuestError::MemoryLimit {
                operator,
                subtask,
                call,
                limit_bytes: self.memory_bytes,
                limit,
            };
        }
        if returns_records(call) && format!("{e:#}").contains(HOSTCALL_FUEL_EXHAUSTED) {
            return self.output_limit(call);
        }
        if let (Some(max_instances), Some(pool)) =
            (self.max_instances, e.downcast_ref::<PoolConcurrencyLimitError>())
        {
            return GuestError::PoolExhausted { operator, subtask, max_instances, reason: pool.to_string() };
        }
        let message = match state.last_error.take() {
            Some(guest) => format!("{guest} ({})", trap_message(&e)),
            None => trap_message(&e),
        };
        GuestError::Trap { operator, subtask, call, message }
    }
}

/// What wasmtime prints before a backtrace.
const BACKTRACE_HEADER: &str = "error while executing at wasm backtrace:";
/// What wasmtime prints before the address of a faulting memory access.
const MEMORY_FAULT: &str = "memory fault at wasm address 0x";
/// Out-of-bounds addresses from here up are pointers that went below 0 and wrapped around.
const WRAPPED_BELOW_ZERO: u64 = 0xF000_0000;

/// A trap in one line: the error chain without the backtrace, the innermost function, and
/// a hint when it looks like a stack overflow. Rust guests keep their stack in linear memory
/// below the data (it grows down towards 0), so an overflow is an out-of-bounds access at
/// an address that wrapped around below 0 rather than wasmtime's `call stack exhausted`.
fn trap_message(e: &wasmtime::Error) -> String {
    let parts: Vec<String> =
        e.chain().map(|c| c.to_string()).filter(|c| !c.starts_with(BACKTRACE_HEADER)).collect();
    let mut message = parts.join(": ");
    if let Some(function) = e.downcast_ref::<wasmtime::WasmBacktrace>().and_then(innermost_function) {
        message.push_str(&format!(" (in {function})"));
    }
    let wrapped = parts.iter().find_map(|p| p.strip_prefix(MEMORY_FAULT)).is_some_and(|rest| {
        let hex: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
        u64::from_str_radix(&hex, 16).is_ok_and(|address| address >= WRAPPED_BELOW_ZERO)
    });
    if wrapped && matches!(e.downcast_ref::<Trap>(), Some(Trap::MemoryOutOfBounds)) {
        message.push_str(
            "; the address wrapped around below 0, so the guest most likely overflowed its stack \
             (unbounded recursion, or too large values on the stack)",
        );
    }
    message
}

/// The innermost function of a backtrace, demangled, without the Rust symbol hash.
fn innermost_function(backtrace: &wasmtime::WasmBacktrace) -> Option<String> {
    let text = backtrace.to_string();
    let frame = text.lines().nth(1)?;
    let (_, function) = frame.split_once(" - ")?;
    let function = function.split_once('!').map_or(function, |(_, f)| f).trim();
    let function = match function.rsplit_once("::h") {
        Some((f, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => f,
        _ => function,
    };
    Some(function.to_string())
}

/// A document format as the WIT names it.
fn format_name(format: BatchFormat) -> &'static str {
    match format {
        BatchFormat::Pickle => "pickle",
        BatchFormat::Json => "json",
    }
}

/// The calls whose result is a batch of records.
fn returns_records(call: Call) -> bool {
    matches!(call, Call::Process | Call::OnWatermark | Call::OnTimer)
}

/// The world's exports and the optional ones the component has.
type Exports = (OperatorWorld, Option<EncodedBatches>, Option<ChunkedSnapshot>);

async fn instantiate(
    module: &OperatorModule,
    store: &mut Store<HostState>,
    who: &Who,
) -> Result<Exports, GuestError> {
    store.set_epoch_deadline(1);
    let instance =
        within(who.limits.wall_limit_ms, module.pre().instance_pre().instantiate_async(&mut *store))
            .await
            .map_err(|e| who.failure(Call::Instantiate, store.data_mut(), e))?;
    let wrong = |e: wasmtime::Error| GuestError::WrongWorld {
        module: module.name().to_string(),
        reason: format!("{e:#}"),
    };
    let world = module.indices().load(&mut *store, &instance).map_err(wrong)?;
    let encoded = module.encoded().map(|i| i.load(&mut *store, &instance)).transpose().map_err(wrong)?;
    let chunked = module.chunked().map(|i| i.load(&mut *store, &instance)).transpose().map_err(wrong)?;
    Ok((world, encoded, chunked))
}

/// Why a guest's state delta does not hold together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum MalformedDelta {
    #[error("state entry refers to state #{state} but only {names} names were given")]
    UnknownState { state: u32, names: usize },
    #[error("state entries describe {described} bytes but the delta holds {held}")]
    DataMismatch { described: u64, held: usize },
}

fn check_delta(delta: &StateDelta) -> Result<(), MalformedDelta> {
    if let Some(e) = delta.entries.iter().find(|e| e.state as usize >= delta.names.len()) {
        return Err(MalformedDelta::UnknownState { state: e.state, names: delta.names.len() });
    }
    weir_flat::validate(&delta.data, &delta.entries)
        .map_err(|m| MalformedDelta::DataMismatch { described: m.described, held: m.held })
}
