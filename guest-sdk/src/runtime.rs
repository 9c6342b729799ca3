//! Glue between the generated bindings and an [`Operator`], used by the export macros.
//! Not part of the public API.

use std::sync::Once;

use serde::Serialize;

use crate::__bindings::exports::weir::operator::chunked_snapshot::{Guest as ChunkedSnapshot, Part};
use crate::__bindings::exports::weir::operator::operator::Guest;
use crate::__bindings::weir::operator::types::{
    Batch, Context as WitContext, Error as WitError, OperatorInfo, StateDelta,
};
use crate::batch::Records;
use crate::operator_state::tracking::{Epoch, Owner};
use crate::operator_state::{Migration, PART_BYTES, Parts};
use crate::{Context, Error, Operator, Output, Record, Result, StateRegistry};

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
///
/// Every call into the operator runs as its [`Owner`], so that the states it creates are
/// known to belong to it and every snapshot checks that it reached them all (see
/// `operator_state::tracking`).
pub struct Instance<T> {
    operator: T,
    owner: Owner,
    /// Size of the last `process` output, to preallocate the next.
    out_records: usize,
    out_bytes: usize,
    /// The operator has host states (`HostKeyedState`, ...): calls fetch and hand over
    /// their entries.
    host_states: bool,
    /// The snapshot in parts under way. Any other call gives it up: the next part starts a
    /// new snapshot.
    parts: Option<UnderWay>,
}

/// A snapshot in parts between two of its parts.
struct UnderWay {
    checkpoint_id: u64,
    full: bool,
    progress: Parts,
    /// Begun with the first part, checked after the last.
    epoch: Epoch,
}

impl<T: Operator + Default> Default for Instance<T> {
    fn default() -> Self {
        let owner = Owner::new();
        let operator = {
            let _in = owner.enter();
            T::default()
        };
        Self { operator, owner, out_records: 0, out_bytes: 0, host_states: false, parts: None }
    }
}

impl<T: Operator> Instance<T> {
    /// The operator itself.
    pub fn operator(&mut self) -> &mut T {
        &mut self.operator
    }

    /// Opens the instance: checks the state names, then calls the operator's `open`.
    pub fn open(&mut self, context: &Context) -> Result<()> {
        self.parts = None;
        let _in = self.owner.enter();
        crate::host::event_time::invalidate();
        let mut states = StateRegistry::new();
        self.operator.states(&mut states);
        states.check()?;
        self.host_states = states.bind();
        self.operator.open(context)?;
        self.after_call()
    }

    /// Runs the operator over every record of `batch`, then its `end_batch`.
    pub fn process(&mut self, input: u32, batch: &Batch) -> Result<Batch> {
        self.parts = None;
        let _in = self.owner.enter();
        crate::host::event_time::invalidate();
        if self.host_states && crate::operator_state::host_keyed::used() {
            // One fetch per host state for the batch's record keys.
            let keys: Vec<&[u8]> =
                Records::new(input, batch).map(|r| r.map(|r| r.key_bytes())).collect::<Result<_>>()?;
            let mut states = StateRegistry::new();
            self.operator.states(&mut states);
            states.before_batch(&keys)?;
        }
        let mut out = Output::with_capacity(self.out_records, self.out_bytes);
        for record in Records::new(input, batch) {
            self.operator.process(record?, &mut out)?;
        }
        self.operator.end_batch(input, &mut out)?;
        self.after_call()?;
        let batch = out.into_batch();
        self.out_records = batch.entries.len();
        self.out_bytes = batch.data.len();
        Ok(batch)
    }

    /// Calls the operator's `on_watermark`.
    pub fn on_watermark(&mut self, timestamp: i64) -> Result<Batch> {
        self.parts = None;
        let _in = self.owner.enter();
        crate::host::event_time::invalidate();
        let mut out = Output::with_capacity(0, 0);
        self.operator.on_watermark(timestamp, &mut out)?;
        self.after_call()?;
        Ok(out.into_batch())
    }

    /// Calls the operator's `on_timer`.
    pub fn on_timer(&mut self, key: &[u8], timestamp: i64) -> Result<Batch> {
        self.parts = None;
        let _in = self.owner.enter();
        crate::host::event_time::invalidate();
        let mut out = Output::with_capacity(0, 0);
        self.operator.on_timer(key, timestamp, &mut out)?;
        self.after_call()?;
        Ok(out.into_batch())
    }

    /// Host states hand the call's changes to the host.
    fn after_call(&mut self) -> Result<()> {
        if !(self.host_states && crate::operator_state::host_keyed::used()) {
            return Ok(());
        }
        let mut states = StateRegistry::new();
        self.operator.states(&mut states);
        states.after_call()
    }

    /// The changes of every registered state since the last snapshot, or all of it. Fails
    /// when a state the operator created is alive but not registered (so not saved).
    pub fn snapshot(&mut self, full: bool) -> Result<StateDelta> {
        self.parts = None;
        let _in = self.owner.enter();
        let epoch = self.owner.begin_snapshot();
        let mut states = StateRegistry::new();
        self.operator.states(&mut states);
        let delta = states.snapshot(full)?;
        epoch.check(&states.names())?;
        Ok(delta)
    }

    /// The next part of the snapshot of `checkpoint_id` (`full` or not) in parts of about
    /// `budget` bytes, and whether it is the last: continues the snapshot under way when it
    /// has the same arguments and nothing else was called since its last part, else starts
    /// a new one. Each part forgets the changes it holds; the check that every state was
    /// reached runs after the last.
    pub fn snapshot_part(
        &mut self,
        checkpoint_id: u64,
        full: bool,
        budget: usize,
    ) -> Result<(StateDelta, bool)> {
        let _in = self.owner.enter();
        let mut under_way = match self.parts.take() {
            Some(p) if p.checkpoint_id == checkpoint_id && p.full == full => p,
            _ => UnderWay {
                checkpoint_id,
                full,
                progress: Parts::default(),
                epoch: self.owner.begin_snapshot(),
            },
        };
        let mut states = StateRegistry::new();
        self.operator.states(&mut states);
        let (delta, last) = states.snapshot_part(full, &mut under_way.progress, budget)?;
        if last {
            under_way.epoch.check(&states.names())?;
        } else {
            self.parts = Some(under_way);
        }
        Ok((delta, last))
    }

    /// Applies one restored chunk, written by an operator of state schema version
    /// `state_version`, to the registered states: as it is when that is the operator's
    /// own version, through [`Operator::migrate`] when it is one of its
    /// [`Operator::MIGRATES_FROM`]; any other version is refused.
    pub fn restore(&mut self, state_version: u32, chunk: &StateDelta) -> Result<()> {
        self.parts = None;
        let migrate = |state: &str, key: &[u8], value: &[u8]| T::migrate(state_version, state, key, value);
        let migration: Option<&Migration<'_>> = if state_version == T::STATE_VERSION {
            None
        } else if T::MIGRATES_FROM.contains(&state_version) {
            Some(&migrate)
        } else {
            return Err(Error::invalid_state(format!(
                "state schema version {state_version} cannot be restored by this operator (version {}, \
                 migrates from {:?})",
                T::STATE_VERSION,
                migrates_from::<T>()
            )));
        };
        let _in = self.owner.enter();
        let mut states = StateRegistry::new();
        self.operator.states(&mut states);
        states.restore(chunk, migration.map(|m| (state_version, m)))
    }
}

/// The versions an operator reports in `migrates-from`: its [`Operator::MIGRATES_FROM`]
/// without its own [`Operator::STATE_VERSION`] (state of its own version is never migrated).
pub(crate) fn migrates_from<T: Operator>() -> Vec<u32> {
    T::MIGRATES_FROM.iter().copied().filter(|&v| v != T::STATE_VERSION).collect()
}

/// What `describe` reports for operator `T` exported under `name`.
pub(crate) fn operator_info<T: Operator>(name: &str) -> OperatorInfo {
    OperatorInfo {
        name: name.to_owned(),
        state_version: T::STATE_VERSION,
        migrates_from: migrates_from::<T>(),
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
        operator_info::<E::Operator>(E::NAME)
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

    fn restore(state_version: u32, chunk: StateDelta) -> Result<(), WitError> {
        enter::<E, _>(|instance| instance.restore(state_version, &chunk))
    }
}

impl<E: Export> ChunkedSnapshot for E {
    fn snapshot_part(checkpoint_id: u64, full: bool) -> Result<Part, WitError> {
        enter::<E, _>(|instance| {
            let (delta, last) = instance.snapshot_part(checkpoint_id, full, PART_BYTES)?;
            Ok(Part { delta, last })
        })
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

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::testing::{Harness, StateChange, TestRecord};
    use crate::{KeyedState, States, from_msgpack, to_msgpack};

    #[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
    struct Tally {
        count: u64,
        records: u64,
    }

    /// Version 2 of a word counter. Version 0 kept a bare u64 count per word in "counts";
    /// version 1 kept a `Tally` there and also a state "legacy", which version 2 dropped.
    #[derive(Default, States)]
    struct CounterV2 {
        counts: KeyedState<String, Tally>,
    }

    impl Operator for CounterV2 {
        const STATE_VERSION: u32 = 2;
        // Its own version too, which `describe` leaves out and `restore` never migrates.
        const MIGRATES_FROM: &'static [u32] = &[0, 1, 2];

        fn migrate(from_version: u32, state: &str, _key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
            match (from_version, state) {
                (0, "counts") => match from_msgpack::<u64>(value)? {
                    0 => Ok(None),
                    count => to_msgpack(&Tally { count, records: 0 }).map(Some),
                },
                (1, "counts") => Ok(Some(value.to_vec())),
                (1, "legacy") => Ok(None),
                _ => Err(Error::invalid_state(format!("unexpected state {state} of version {from_version}"))),
            }
        }

        fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
            let tally = self.counts.get_or_insert_with(record.key::<&str>()?, Tally::default);
            tally.count += record.value::<u64>()?;
            tally.records += 1;
            Ok(())
        }
    }

    /// An operator that lists a version but never implemented `migrate`.
    #[derive(Default, States)]
    struct Forgetful {
        counts: KeyedState<String, u64>,
    }

    impl Operator for Forgetful {
        const STATE_VERSION: u32 = 4;
        const MIGRATES_FROM: &'static [u32] = &[3];

        fn process(&mut self, _record: Record<'_>, _out: &mut Output) -> Result<()> {
            Ok(())
        }
    }

    fn put<V: Serialize>(state: &str, word: &str, value: &V) -> StateChange {
        StateChange {
            state: state.into(),
            key: to_msgpack(word).unwrap(),
            value: Some(to_msgpack(value).unwrap()),
        }
    }

    fn tallies(changes: &[StateChange]) -> Vec<(String, Tally)> {
        let mut out: Vec<(String, Tally)> = changes
            .iter()
            .map(|c| (rmp_serde::from_slice(&c.key).unwrap(), c.decode_value().expect("a put")))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn describe_reports_the_versions_it_migrates_from_without_its_own() {
        let info = operator_info::<CounterV2>("counter");
        assert_eq!((info.name.as_str(), info.state_version), ("counter", 2));
        assert_eq!(info.migrates_from, [0, 1]);
        assert_eq!(operator_info::<Forgetful>("f").migrates_from, [3]);
    }

    #[test]
    fn entries_of_an_older_version_are_migrated_and_dropped_ones_are_gone() {
        let mut h = Harness::<CounterV2>::new();
        h.restore_version(0, &[put("counts", "a", &3u64), put("counts", "zero", &0u64)]).unwrap();
        h.restore_version(0, &[put("counts", "b", &5u64)]).unwrap();
        h.open("{}").unwrap();
        h.process(&[TestRecord::keyed("a", &1u64, 0)]).unwrap();
        assert_eq!(
            tallies(&h.snapshot(true).unwrap()),
            [("a".into(), Tally { count: 4, records: 1 }), ("b".into(), Tally { count: 5, records: 0 }),],
            "the zero count was dropped, the others converted and counted on"
        );
    }

    #[test]
    fn entries_of_a_state_the_operator_dropped_can_be_dropped_by_the_migration() {
        let tally = Tally { count: 2, records: 2 };
        let mut h = Harness::<CounterV2>::new();
        h.restore_version(1, &[put("legacy", "a", &"old"), put("counts", "a", &tally)]).unwrap();
        h.open("{}").unwrap();
        assert_eq!(tallies(&h.snapshot(true).unwrap()), [("a".into(), tally)]);
    }

    #[test]
    fn the_own_version_is_restored_as_it_is() {
        let tally = Tally { count: 7, records: 1 };
        let mut h = Harness::<CounterV2>::new();
        // Listing its own version in MIGRATES_FROM does not make the operator migrate it: a
        // "legacy" entry would be dropped by `migrate`, but here it is refused as unknown.
        let e = h.restore_version(2, &[put("legacy", "a", &"old")]).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidState(m) if m.contains("which this operator does not have")),
            "{e}"
        );
        h.restore(&[put("counts", "a", &tally)]).unwrap();
        h.open("{}").unwrap();
        assert_eq!(tallies(&h.snapshot(true).unwrap()), [("a".into(), tally)]);
    }

    #[test]
    fn a_version_it_does_not_migrate_from_is_refused() {
        let mut h = Harness::<CounterV2>::new();
        let e = h.restore_version(7, &[]).unwrap_err();
        assert_eq!(
            e,
            Error::invalid_state(
                "state schema version 7 cannot be restored by this operator (version 2, migrates from [0, 1])"
            )
        );
        // A newer version of the operator wrote state that an older one cannot read.
        let mut h = Harness::<Forgetful>::new();
        let e = h.restore_version(5, &[]).unwrap_err().to_string();
        assert!(
            e.contains("state schema version 5 cannot be restored")
                && e.contains("(version 4, migrates from [3])"),
            "{e}"
        );
    }

    #[test]
    fn a_failed_migration_names_the_entry_its_state_and_the_version() {
        let mut h = Harness::<CounterV2>::new();
        let e = h.restore_version(0, &[put("counts", "a", &1u64), put("counts", "b", &"text")]).unwrap_err();
        let Error::InvalidState(m) = &e else { panic!("{e}") };
        assert!(
            m.starts_with(
                "restore entry 1 of state \"counts\" cannot be migrated from state schema version 0: "
            ),
            "{m}"
        );
        assert!(m.contains("cannot decode MessagePack"), "{m}");

        // Listed in MIGRATES_FROM but `migrate` is the default: refused, entry by entry.
        let mut h = Harness::<Forgetful>::new();
        h.restore_version(3, &[]).unwrap();
        let e = h.restore_version(3, &[put("counts", "a", &1u64)]).unwrap_err().to_string();
        assert!(
            e.contains("there is no migration from state schema version 3 (implement Operator::migrate)"),
            "{e}"
        );
    }
}
