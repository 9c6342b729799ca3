//! The trait a stateful operator implements.

use crate::{Context, Output, Record, Result, States};

/// A stream operator: the host calls it with batches of records, watermarks and timers.
///
/// Implement [`Operator::process`] (called once per input record, in batch order) and, as
/// needed, the other methods; then export the type with [`export_operator!`](crate::export_operator).
/// The type must implement [`Default`]: the instance is built before its state is restored
/// and before [`Operator::open`] sees the configuration.
///
/// State kept across records belongs in [`ValueState`](crate::ValueState) and
/// [`KeyedState`](crate::KeyedState) fields, named in [`Operator::states`] so that checkpoints
/// save and restore them.
///
/// ```no_run
/// use weir_guest::{KeyedState, Operator, Output, Record, Result, States};
///
/// #[derive(Default)]
/// struct WordCount {
///     counts: KeyedState<String, u64>,
/// }
///
/// impl Operator for WordCount {
///     fn states<'a>(&'a mut self, states: &mut States<'a>) {
///         states.register("counts", &mut self.counts);
///     }
///
///     fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
///         let word: &str = record.key()?;
///         let count = self.counts.get_or_insert_with(word, || 0);
///         *count += record.value::<u64>()?;
///         out.emit(word, count, record.timestamp())
///     }
/// }
///
/// weir_guest::export_operator!(WordCount);
/// ```
pub trait Operator: 'static {
    /// Version of the state schema, reported to the host: a job restored from saved state
    /// refuses a module whose version differs from the one that wrote it.
    const STATE_VERSION: u32 = 0;

    /// Registers the operator's states by name with [`States::register`]. Called before
    /// every `restore` and `snapshot`; register the same names each time.
    fn states<'a>(&'a mut self, states: &mut States<'a>) {
        let _ = states;
    }

    /// Prepares the instance, after any restore. Decode the configuration here with
    /// [`Context::config`].
    fn open(&mut self, context: &Context) -> Result<()> {
        let _ = context;
        Ok(())
    }

    /// Handles one input record; emits any number of records into `out`.
    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()>;

    /// Called after the last record of each input batch (of input `input`), with the same
    /// output: the place to emit per-batch aggregates.
    fn end_batch(&mut self, input: u32, out: &mut Output) -> Result<()> {
        let _ = (input, out);
        Ok(())
    }

    /// The input watermark advanced to `timestamp`; every timer at or before it has fired.
    fn on_watermark(&mut self, timestamp: i64, out: &mut Output) -> Result<()> {
        let _ = (timestamp, out);
        Ok(())
    }

    /// The timer registered (with [`timers::register`](crate::timers::register)) for the
    /// encoded key `key` at `timestamp` fired.
    fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
        let _ = (key, timestamp, out);
        Ok(())
    }
}
