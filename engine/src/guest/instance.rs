//! One running operator instance: a wasmtime store and the guest's exports, with every call
//! bounded by the CPU limit and every failure mapped to a [`GuestError`].

use wasmtime::{Store, StoreLimitsBuilder, Trap, UpdateDeadline};

use super::bindings::{Batch, Context, OperatorInfo, OperatorWorld, StateDelta};
use super::error::{Call, GuestError};
use super::host::EPOCH_TICK;
use super::module::OperatorModule;
use super::state::HostState;
use super::timers::TimerService;

/// Resource limits of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceLimits {
    /// Most linear memory the instance may grow to, in bytes.
    pub memory_bytes: usize,
    /// Most wall-clock time (counted in epoch ticks while the guest runs) one call may take.
    pub cpu_limit_ms: u64,
}

impl Default for InstanceLimits {
    fn default() -> Self {
        InstanceLimits { memory_bytes: 512 << 20, cpu_limit_ms: 10_000 }
    }
}

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
    operator: String,
    subtask: u32,
    limits: InstanceLimits,
    poisoned: Option<String>,
}

impl std::fmt::Debug for OperatorInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorInstance")
            .field("operator", &self.operator)
            .field("subtask", &self.subtask)
            .finish_non_exhaustive()
    }
}

impl OperatorInstance {
    /// Instantiates `module` for subtask `subtask` of operator `operator`.
    pub async fn new(
        module: &OperatorModule,
        operator: &str,
        subtask: u32,
        limits: InstanceLimits,
    ) -> Result<Self, GuestError> {
        let store_limits =
            StoreLimitsBuilder::new().memory_size(limits.memory_bytes).trap_on_grow_failure(true).build();
        let tick_ms = EPOCH_TICK.as_millis().max(1) as u64;
        let max_ticks = limits.cpu_limit_ms.div_ceil(tick_ms).max(1);
        let state = HostState::new(format!("{operator}/{subtask}"), store_limits, max_ticks);
        let mut store = Store::new(module.component().engine(), state);
        store.limiter(|s| &mut s.limits);
        // Data a guest hands over in one call (a batch, a snapshot) lives in its memory, so
        // the memory limit already bounds it; wasmtime's default cap (128 MiB) would trap
        // the snapshot of a larger state.
        store.set_hostcall_fuel(limits.memory_bytes.max(128 << 20));
        store.epoch_deadline_callback(|mut ctx| {
            let s = ctx.data_mut();
            s.ticks_in_call += 1;
            if s.ticks_in_call > s.max_ticks {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        let mut inst = OperatorInstance {
            world: instantiate(module, &mut store, operator, subtask, limits).await?,
            store,
            operator: operator.to_string(),
            subtask,
            limits,
            poisoned: None,
        };
        inst.store.data_mut().ticks_in_call = 0;
        Ok(inst)
    }

    /// The operator's node id.
    pub fn operator(&self) -> &str {
        &self.operator
    }

    /// The subtask index.
    pub fn subtask(&self) -> u32 {
        self.subtask
    }

    /// The instance's timers.
    pub fn timers(&mut self) -> &mut TimerService {
        &mut self.store.data_mut().timers
    }

    /// The instance's metric counters.
    pub fn counters(&self) -> &std::collections::BTreeMap<String, u64> {
        &self.store.data().counters
    }

    /// Calls `describe`.
    pub async fn describe(&mut self) -> Result<OperatorInfo, GuestError> {
        self.begin(Call::Describe)?;
        let r = self.world.weir_operator_operator().call_describe(&mut self.store).await;
        self.finish(Call::Describe, r.map(Ok::<_, super::bindings::GuestOperatorError>))
    }

    /// Calls `open`.
    pub async fn open(&mut self, context: &Context) -> Result<(), GuestError> {
        self.begin(Call::Open)?;
        let r = self.world.weir_operator_operator().call_open(&mut self.store, context).await;
        self.finish(Call::Open, r)
    }

    /// Calls `process` with a batch that arrived on input `input`; returns the output.
    pub async fn process(&mut self, input: u32, batch: &Batch) -> Result<Batch, GuestError> {
        self.begin(Call::Process)?;
        let r = self.world.weir_operator_operator().call_process(&mut self.store, input, batch).await;
        let out = self.finish(Call::Process, r)?;
        self.check_batch(Call::Process, out)
    }

    /// Calls `on-watermark`.
    pub async fn on_watermark(&mut self, timestamp: i64) -> Result<Batch, GuestError> {
        self.begin(Call::OnWatermark)?;
        let r = self.world.weir_operator_operator().call_on_watermark(&mut self.store, timestamp).await;
        let out = self.finish(Call::OnWatermark, r)?;
        self.check_batch(Call::OnWatermark, out)
    }

    /// Calls `on-timer`.
    pub async fn on_timer(&mut self, key: &[u8], timestamp: i64) -> Result<Batch, GuestError> {
        self.begin(Call::OnTimer)?;
        let r = self.world.weir_operator_operator().call_on_timer(&mut self.store, key, timestamp).await;
        let out = self.finish(Call::OnTimer, r)?;
        self.check_batch(Call::OnTimer, out)
    }

    /// Calls `snapshot`.
    pub async fn snapshot(&mut self, checkpoint_id: u64, full: bool) -> Result<StateDelta, GuestError> {
        self.begin(Call::Snapshot)?;
        let r = self.world.weir_operator_operator().call_snapshot(&mut self.store, checkpoint_id, full).await;
        let delta = self.finish(Call::Snapshot, r)?;
        check_delta(&delta).map_err(|reason| self.malformed(Call::Snapshot, reason))?;
        Ok(delta)
    }

    /// Calls `restore` with one chunk of live entries.
    pub async fn restore(&mut self, chunk: &StateDelta) -> Result<(), GuestError> {
        self.begin(Call::Restore)?;
        let r = self.world.weir_operator_operator().call_restore(&mut self.store, chunk).await;
        self.finish(Call::Restore, r)
    }

    fn begin(&mut self, call: Call) -> Result<(), GuestError> {
        if let Some(message) = &self.poisoned {
            return Err(GuestError::Trap {
                operator: self.operator.clone(),
                subtask: self.subtask,
                call,
                message: format!("the instance trapped earlier and cannot be entered again ({message})"),
            });
        }
        self.store.data_mut().ticks_in_call = 0;
        self.store.set_epoch_deadline(1);
        Ok(())
    }

    fn finish<T>(
        &mut self,
        call: Call,
        result: wasmtime::Result<Result<T, super::bindings::GuestOperatorError>>,
    ) -> Result<T, GuestError> {
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(GuestError::Operator {
                operator: self.operator.clone(),
                subtask: self.subtask,
                call,
                error: e.into(),
            }),
            Err(e) => {
                let err =
                    trap_error(&self.operator, self.subtask, call, self.limits, self.store.data_mut(), e);
                self.poisoned = Some(err.to_string());
                Err(err)
            }
        }
    }

    fn malformed(&self, call: Call, reason: String) -> GuestError {
        GuestError::Malformed { operator: self.operator.clone(), subtask: self.subtask, call, reason }
    }

    fn check_batch(&self, call: Call, batch: Batch) -> Result<Batch, GuestError> {
        batch.validate().map_err(|reason| self.malformed(call, reason))?;
        Ok(batch)
    }
}

async fn instantiate(
    module: &OperatorModule,
    store: &mut Store<HostState>,
    operator: &str,
    subtask: u32,
    limits: InstanceLimits,
) -> Result<OperatorWorld, GuestError> {
    store.set_epoch_deadline(1);
    module
        .pre()
        .instantiate_async(&mut *store)
        .await
        .map_err(|e| trap_error(operator, subtask, Call::Instantiate, limits, store.data_mut(), e))
}

fn trap_error(
    operator: &str,
    subtask: u32,
    call: Call,
    limits: InstanceLimits,
    state: &mut HostState,
    e: wasmtime::Error,
) -> GuestError {
    if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
        return GuestError::CpuLimit {
            operator: operator.to_string(),
            subtask,
            call,
            limit_ms: limits.cpu_limit_ms,
        };
    }
    let trap = match e.downcast_ref::<Trap>() {
        Some(t) => t.to_string(),
        None => format!("{e:#}"),
    };
    let message = match state.last_error.take() {
        Some(guest) => format!("{guest} ({trap})"),
        None => format!("{e:#}"),
    };
    GuestError::Trap { operator: operator.to_string(), subtask, call, message }
}

fn check_delta(delta: &StateDelta) -> Result<(), String> {
    let mut total: u64 = 0;
    for e in &delta.entries {
        if e.state as usize >= delta.names.len() {
            return Err(format!(
                "state entry refers to state #{} but only {} names were given",
                e.state,
                delta.names.len()
            ));
        }
        total += u64::from(e.key_len) + u64::from(e.value_len);
    }
    if total != delta.data.len() as u64 {
        return Err(format!("state entries describe {total} bytes but the delta holds {}", delta.data.len()));
    }
    Ok(())
}
