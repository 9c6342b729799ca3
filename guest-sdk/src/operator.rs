//! The trait a stateful operator implements.

use crate::{Context, Error, Output, Record, Result, States};

/// A stream operator: the host calls it with batches of records, watermarks and timers.
///
/// Implement [`Operator::process`] (called once per input record, in batch order) and, as
/// needed, the other methods; then export the type with [`export_operator!`](crate::export_operator).
/// The type must implement [`Default`]: the instance is built before its state is restored
/// and before [`Operator::open`] sees the configuration.
///
/// State kept across records belongs in [`ValueState`](crate::ValueState) and
/// [`KeyedState`](crate::KeyedState) fields, which checkpoints save and restore by name: an
/// operator implements [`States`], which `#[derive(States)]` does from its fields (a
/// stateless operator derives it too, and registers nothing).
///
/// ```no_run
/// use weir_guest::{KeyedState, Operator, Output, Record, Result, States};
///
/// #[derive(Default, States)]
/// struct WordCount {
///     counts: KeyedState<String, u64>,
/// }
///
/// impl Operator for WordCount {
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
pub trait Operator: States + 'static {
    /// Version of the state schema — the state names and how keys and values are encoded —
    /// reported to the host. Raise it when a new version of the operator can no longer read
    /// the state an older one wrote as it is, and list the older version in
    /// [`Operator::MIGRATES_FROM`] if [`Operator::migrate`] can convert it. Saved state of
    /// any other version is refused.
    const STATE_VERSION: u32 = 0;

    /// Older state schema versions whose state this operator restores by converting every
    /// entry with [`Operator::migrate`]; reported to the host by `describe`. Empty by
    /// default: only state of [`Operator::STATE_VERSION`] is restored.
    const MIGRATES_FROM: &'static [u32] = &[];

    /// Converts one saved state entry written by an operator of state schema version
    /// `from_version` (one of [`Operator::MIGRATES_FROM`]) to the current schema, while it
    /// is restored: `state` is the entry's state name, `key` its encoded key (the record key
    /// for keyed state, empty for a [`ValueState`](crate::ValueState)) and `value` its
    /// encoded value in the old format. Returns the value encoded for the current schema
    /// (with [`to_msgpack`](crate::to_msgpack)), or `None` to drop the entry. Keys and state
    /// names stay as they are: keys place entries in key groups, and the entry is restored
    /// into the state registered under `state` (an entry of a state the operator no longer
    /// has must be dropped).
    ///
    /// An associated function (no `self`): it runs before the instance's state exists. An
    /// error fails the restore with [`Error::InvalidState`]. The default refuses every
    /// version, for operators that list none in [`Operator::MIGRATES_FROM`].
    fn migrate(from_version: u32, state: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let _ = (state, key, value);
        Err(Error::invalid_state(format!(
            "there is no migration from state schema version {from_version} (implement Operator::migrate)"
        )))
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
    /// encoded key `key` at `timestamp` fired. A timer it registers at or before `timestamp`
    /// fires at the watermark's next advance, not in the same round.
    fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
        let _ = (key, timestamp, out);
        Ok(())
    }
}
