//! Glue between the generated bindings and an [`Operator`], used by the export macros.
//! Not part of the public API.

use std::sync::Once;

use serde::Serialize;

use crate::__bindings::exports::weir::operator::operator::Guest;
use crate::__bindings::weir::operator::types::{
    Batch, Context as WitContext, Error as WitError, OperatorInfo, StateDelta,
};
use crate::batch::Records;
use crate::{Context, Operator, Output, Record, Result, States};

/// What [`export_operator!`](crate::export_operator) defines for an operator type: where
/// its single instance lives.
pub trait Export: 'static {
    /// The exported operator.
    type Operator: Operator + Default;
    /// The name reported by `describe`.
    const NAME: &'static str;
    /// Runs `f` on the instance, creating it on first use.
    fn with<R>(f: impl FnOnce(&mut Instance<Self::Operator>) -> R) -> R;
}

/// An operator instance and the buffers the SDK keeps between calls.
pub struct Instance<T> {
    operator: T,
    /// Size of the last `process` output, to preallocate the next.
    out_records: usize,
    out_bytes: usize,
}

impl<T: Operator + Default> Default for Instance<T> {
    fn default() -> Self {
        Self { operator: T::default(), out_records: 0, out_bytes: 0 }
    }
}

impl<T: Operator> Instance<T> {
    /// The operator itself.
    pub fn operator(&mut self) -> &mut T {
        &mut self.operator
    }

    /// Opens the instance: checks the state names, then calls the operator's `open`.
    pub fn open(&mut self, context: &Context) -> Result<()> {
        let mut states = States::new();
        self.operator.states(&mut states);
        states.check()?;
        self.operator.open(context)
    }

    /// Runs the operator over every record of `batch`, then its `end_batch`.
    pub fn process(&mut self, input: u32, batch: &Batch) -> Result<Batch> {
        let mut out = Output::with_capacity(self.out_records, self.out_bytes);
        for record in Records::new(input, batch) {
            self.operator.process(record?, &mut out)?;
        }
        self.operator.end_batch(input, &mut out)?;
        let batch = out.into_batch();
        self.out_records = batch.entries.len();
        self.out_bytes = batch.data.len();
        Ok(batch)
    }

    /// Calls the operator's `on_watermark`.
    pub fn on_watermark(&mut self, timestamp: i64) -> Result<Batch> {
        let mut out = Output::with_capacity(0, 0);
        self.operator.on_watermark(timestamp, &mut out)?;
        Ok(out.into_batch())
    }

    /// Calls the operator's `on_timer`.
    pub fn on_timer(&mut self, key: &[u8], timestamp: i64) -> Result<Batch> {
        let mut out = Output::with_capacity(0, 0);
        self.operator.on_timer(key, timestamp, &mut out)?;
        Ok(out.into_batch())
    }

    /// The changes of every registered state since the last snapshot, or all of it.
    pub fn snapshot(&mut self, full: bool) -> Result<StateDelta> {
        let mut states = States::new();
        self.operator.states(&mut states);
        states.snapshot(full)
    }

    /// Applies one restored chunk to the registered states.
    pub fn restore(&mut self, chunk: &StateDelta) -> Result<()> {
        let mut states = States::new();
        self.operator.states(&mut states);
        states.restore(chunk)
    }
}

/// Runs `f` on the instance of `E`, with the panic hook installed.
fn enter<E: Export, R>(f: impl FnOnce(&mut Instance<E::Operator>) -> Result<R>) -> Result<R, WitError> {
    install_panic_hook();
    E::with(f).map_err(WitError::from)
}

impl<E: Export> Guest for E {
    fn describe() -> OperatorInfo {
        install_panic_hook();
        OperatorInfo { name: E::NAME.to_owned(), state_version: E::Operator::STATE_VERSION }
    }

    fn open(context: WitContext) -> Result<(), WitError> {
        enter::<E, _>(|instance| instance.open(&Context::from(context)))
    }

    fn process(input: u32, batch: Batch) -> Result<Batch, WitError> {
        enter::<E, _>(|instance| instance.process(input, &batch))
    }

    fn on_watermark(timestamp: i64) -> Result<Batch, WitError> {
        enter::<E, _>(|instance| instance.on_watermark(timestamp))
    }

    fn on_timer(key: Vec<u8>, timestamp: i64) -> Result<Batch, WitError> {
        enter::<E, _>(|instance| instance.on_timer(&key, timestamp))
    }

    fn snapshot(_checkpoint_id: u64, full: bool) -> Result<StateDelta, WitError> {
        enter::<E, _>(|instance| instance.snapshot(full))
    }

    fn restore(chunk: StateDelta) -> Result<(), WitError> {
        enter::<E, _>(|instance| instance.restore(&chunk))
    }
}

/// Sends panic messages, with their location, to the host's log at level error: the host
/// attaches the last error line to the trap it reports.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info.payload_as_str().unwrap_or("(a panic payload that is not a string)");
            let line = match info.location() {
                Some(at) => {
                    format!("operator panicked at {}:{}:{}: {message}", at.file(), at.line(), at.column())
                }
                None => format!("operator panicked: {message}"),
            };
            crate::logging::log(crate::logging::Level::Error, &line);
            if cfg!(not(target_arch = "wasm32")) {
                previous(info);
            }
        }));
    });
}

/// Emits `value` with the key and timestamp of `record` (the `map` family of attributes).
#[inline]
pub fn emit_value<V: Serialize + ?Sized>(out: &mut Output, record: &Record<'_>, value: &V) -> Result<()> {
    out.emit_with_key_bytes(record.key_bytes(), value, record.timestamp())
}

/// Emits `(key, value)` with the timestamp of `record` (the `keyed` attribute variants).
#[inline]
pub fn emit_pair<K: Serialize, V: Serialize>(
    out: &mut Output,
    record: &Record<'_>,
    pair: &(K, V),
) -> Result<()> {
    out.emit(&pair.0, &pair.1, record.timestamp())
}
