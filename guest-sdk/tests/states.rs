//! `#[derive(States)]` and the check that every state an operator creates is registered.

use weir_guest::testing::{Harness, StateChange, TestRecord};
use weir_guest::{
    Context, DeltaWriter, Error, KeyedState, Operator, Output, Record, Result, StateRegistry, StateStore,
    States, ValueState,
};

/// A state of its own kind: remembers the last value as an operator entry.
#[derive(Default)]
struct Last(ValueState<u64>);

impl StateStore for Last {
    fn snapshot(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<()> {
        self.0.snapshot(full, delta)
    }

    fn restore(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.0.restore(key, value)
    }
}

#[derive(Default, States)]
#[allow(unused_qualifications)] // a state type named by its path is a state field too
struct Everything {
    counts: KeyedState<String, u64>,
    total: weir_guest::ValueState<u64>,
    #[state(name = "renamed")]
    r#type: ValueState<String>,
    #[state]
    last: Last,
    /// Not state.
    seen: u64,
}

impl Operator for Everything {
    fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
        let n: u64 = record.value()?;
        *self.counts.get_or_insert_with(record.key::<&str>()?, || 0) += n;
        *self.total.get_or_insert_with(|| 0) += n;
        self.r#type.set("t".into());
        self.last.0.set(n);
        self.seen += 1;
        Ok(())
    }
}

fn names(changes: &[StateChange]) -> Vec<&str> {
    changes.iter().map(|c| c.state.as_str()).collect()
}

#[test]
fn the_derive_registers_every_state_field_in_order() {
    let mut h = Harness::<Everything>::new();
    h.open("{}").unwrap();
    h.process(&[TestRecord::keyed("a", &2u64, 0)]).unwrap();
    let saved = h.snapshot(false).unwrap();
    assert_eq!(names(&saved), ["counts", "total", "renamed", "last"]);

    let mut restored = Harness::<Everything>::new();
    restored.restore(&saved).unwrap();
    restored.open("{}").unwrap();
    assert_eq!(restored.operator().counts.get("a"), Some(&2));
    assert_eq!(restored.operator().r#type.get().map(String::as_str), Some("t"));
    assert_eq!(restored.operator().last.0.get(), Some(&2));
    assert_eq!(restored.operator().seen, 0, "a plain field is not state");
}

#[derive(Default, States)]
struct Stateless;

impl Operator for Stateless {
    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        out.forward(&record);
        Ok(())
    }
}

#[derive(Default, States)]
struct NoStateFields {
    size: i64,
}

impl Operator for NoStateFields {
    fn process(&mut self, _record: Record<'_>, _out: &mut Output) -> Result<()> {
        self.size += 1;
        Ok(())
    }
}

#[test]
fn a_derive_without_state_fields_registers_nothing() {
    let mut h = Harness::<Stateless>::new();
    h.open("{}").unwrap();
    let input = [TestRecord::unkeyed(&1u64, 0)];
    assert_eq!(h.process(&input).unwrap(), input);
    assert_eq!(h.snapshot(true).unwrap(), []);

    let mut h = Harness::<NoStateFields>::new();
    h.open("{}").unwrap();
    h.process(&input).unwrap();
    assert_eq!(h.snapshot(false).unwrap(), []);
}

/// Registers `counts` by hand and forgets `totals`.
#[derive(Default)]
struct Forgets {
    counts: KeyedState<String, u64>,
    totals: ValueState<u64>,
}

impl States for Forgets {
    fn states<'a>(&'a mut self, registry: &mut StateRegistry<'a>) {
        registry.register("counts", &mut self.counts);
    }
}

impl Operator for Forgets {
    fn process(&mut self, _record: Record<'_>, _out: &mut Output) -> Result<()> {
        self.totals.set(1);
        Ok(())
    }
}

#[test]
fn a_state_that_is_not_registered_fails_the_snapshot() {
    let mut h = Harness::<Forgets>::new();
    h.open("{}").unwrap();
    h.process(&[TestRecord::unkeyed(&1u64, 0)]).unwrap();
    for full in [false, true] {
        let Err(Error::Other(message)) = h.snapshot(full) else { panic!("the snapshot must fail") };
        assert!(
            message.starts_with("state `ValueState<u64>` was created at ")
                && message.contains("tests/states.rs:")
                && message.contains(" but is not registered in `states()`; derive `States` or list it")
                && message.ends_with("(registered: counts)"),
            "{message}"
        );
        assert!(!message.contains("KeyedState"), "the registered state is not named: {message}");
    }
}

/// Creates its state in `open`; registers it only when told to.
#[derive(Default)]
struct OpensState {
    register: bool,
    windows: Option<KeyedState<u64, u64>>,
}

impl States for OpensState {
    fn states<'a>(&'a mut self, registry: &mut StateRegistry<'a>) {
        if let (true, Some(windows)) = (self.register, &mut self.windows) {
            registry.register("windows", windows);
        }
    }
}

impl Operator for OpensState {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.register = context.config::<bool>()?;
        self.windows = Some(KeyedState::default());
        Ok(())
    }

    fn process(&mut self, _record: Record<'_>, _out: &mut Output) -> Result<()> {
        // A state that lives only during the call is not checked.
        let mut scratch = ValueState::<u8>::default();
        scratch.set(1);
        Ok(())
    }
}

#[test]
fn a_state_created_in_open_must_be_registered_too() {
    let mut h = Harness::<OpensState>::new();
    h.open("false").unwrap();
    h.process(&[TestRecord::unkeyed(&1u64, 0)]).unwrap();
    let e = h.snapshot(false).unwrap_err().to_string();
    assert!(
        e.contains("state `KeyedState<u64, u64>` was created at") && e.ends_with("(no state is registered)"),
        "{e}"
    );

    let mut h = Harness::<OpensState>::new();
    h.open("true").unwrap();
    h.process(&[TestRecord::unkeyed(&1u64, 0)]).unwrap();
    assert_eq!(h.snapshot(false).unwrap(), []);
}

#[test]
fn instances_on_one_thread_and_states_outside_them_do_not_interfere() {
    // A state of the test itself belongs to no operator.
    let mut local = ValueState::<u64>::default();
    local.set(3);
    let mut forgets = Harness::<Forgets>::new();
    let mut fine = Harness::<Everything>::new();
    fine.open("{}").unwrap();
    forgets.open("{}").unwrap();
    fine.process(&[TestRecord::keyed("a", &1u64, 0)]).unwrap();
    assert_eq!(fine.snapshot(false).unwrap().len(), 4, "the other harness's state is not this one's");
    assert!(forgets.snapshot(false).is_err());
    drop(forgets);
    assert_eq!(fine.snapshot(true).unwrap().len(), 4);
    assert_eq!(local.get(), Some(&3));
}

#[derive(Default, States)]
struct Tuple(#[state(name = "total")] ValueState<u64>, u8);

impl Operator for Tuple {
    fn process(&mut self, _record: Record<'_>, _out: &mut Output) -> Result<()> {
        self.0.set(u64::from(self.1));
        Ok(())
    }
}

#[test]
fn a_tuple_struct_names_its_states() {
    let mut h = Harness::<Tuple>::new();
    h.process(&[TestRecord::unkeyed(&1u64, 0)]).unwrap();
    assert_eq!(names(&h.snapshot(false).unwrap()), ["total"]);
}
