//! The SDK's operator state types: the [`StateStore`] trait, the [`StateRegistry`] of an
//! operator's states and its snapshots in parts; the states themselves are [`ValueState`],
//! [`KeyedState`] (kept in guest memory) and [`HostKeyedState`] (kept by the host).
//!
//! Guest-memory state is handed to the host as keyed changes: each state remembers which of its entries changed since the last snapshot, so that
//! `snapshot(full = false)` returns only puts and deletes and costs as much as the changes,
//! not the state. An entry that was created and removed between two snapshots produces
//! nothing (the host never saw it); an entry that a snapshot saw and that was removed since
//! produces a delete.
//!
//! A snapshot is taken whole (`operator.snapshot`) or in parts (`chunked-snapshot`'s
//! `snapshot-part`, which the host prefers): the SDK then hands over at most
//! [`PART_BYTES`] of entries per call, walking the states in order and each state's entries
//! from where the previous part stopped, so a state close to the memory limit never needs a
//! second copy of itself in guest memory. A part forgets the changes it holds when it is
//! handed over, as a whole snapshot does.

pub(crate) mod host_keyed;
mod keyed;
pub(crate) mod tracking;
mod value;

use serde::Serialize;

pub use self::host_keyed::{HostKeyedState, HostMapState};
pub use self::keyed::{KeyedState, RawKey};
pub use self::value::ValueState;
use weir_flat::Reader;

use crate::__bindings::weir::operator::types::{ChangeKind, StateDelta, StateEntry};
use crate::codec::write_msgpack;
use crate::{Error, Result};

weir_flat::impl_flat_entry!(StateEntry);

/// How many key and value bytes (plus 16 per entry) one part of a snapshot in parts holds,
/// about: a part ends at the first entry that reaches it, and holds at least one entry.
pub const PART_BYTES: usize = 4 << 20;

/// Bytes an entry costs in a part besides its key and value (its `state-entry`).
const ENTRY_BYTES: usize = 16;

/// A part's buffer first holds this much; past half of it, it takes its whole budget and
/// [`PART_SLACK`] at once (a small snapshot never holds [`PART_BYTES`] of memory; a large
/// one never doubles a buffer of megabytes, old and new side by side).
const PART_FIRST: usize = 128 << 10;

/// Room for the entry that reaches a part's budget, past it.
const PART_SLACK: usize = 64 << 10;

/// A state that checkpoints itself as keyed entries.
///
/// [`ValueState`] and [`KeyedState`] implement it; implement it for a state of your own
/// kind only if neither fits.
pub trait StateStore {
    /// Writes the changes since the last snapshot into `delta`, or every live entry as a
    /// put when `full`, and forgets the changes.
    fn snapshot(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<()>;

    /// Writes the next entries of a snapshot taken in parts: what [`StateStore::snapshot`]
    /// would write, from where the previous call of the same snapshot stopped, while
    /// `delta` [has room](DeltaWriter::has_room) (at least one entry: the SDK calls it only
    /// with room). Returns `true` once the state has written everything; until then the SDK
    /// calls it again, in the next part, with a writer of the same
    /// [`snapshot`](DeltaWriter::snapshot). Forgets the changes it writes, as `snapshot` does.
    /// A writer of another snapshot means the previous one was given up: start over, from
    /// the changes not yet written.
    ///
    /// The default writes everything at once with `snapshot` (the part may then grow past
    /// its budget), so a state of your own kind works unchanged.
    fn snapshot_part(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<bool> {
        self.snapshot(full, delta)?;
        Ok(true)
    }

    /// Applies one saved entry (`restore` runs before `open`). `value` is `None` for a
    /// delete, which a restore normally never carries.
    fn restore(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()>;

    /// Tells the state its registered name (at `open`). Host states open their host state
    /// under it; others need not care.
    fn bind(&mut self, _name: &str) {}

    /// Whether the host keeps this state (`HostKeyedState`, `HostMapState`): the SDK then
    /// calls [`StateStore::before_batch`] and [`StateStore::after_call`] around every call.
    fn is_host_state(&self) -> bool {
        false
    }

    /// Before a batch: the batch's record keys, to fetch in one call.
    fn before_batch(&mut self, _keys: &[&[u8]]) -> Result<()> {
        Ok(())
    }

    /// After a call (`process`, `on-timer`, `on-watermark`): hand the call's changes over.
    fn after_call(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Writes one state's entries into a snapshot, or into one part of a snapshot in parts.
#[derive(Debug)]
pub struct DeltaWriter<'d> {
    delta: &'d mut StateDelta,
    state: u32,
    /// Which snapshot this is (a new number for every snapshot, whole or in parts).
    snapshot: u64,
    /// Bytes the part may hold (`usize::MAX` for a whole snapshot).
    budget: usize,
}

thread_local! {
    static LAST_SNAPSHOT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A number for a new snapshot, never given before on this thread.
fn next_snapshot() -> u64 {
    LAST_SNAPSHOT.with(|last| {
        last.set(last.get() + 1);
        last.get()
    })
}

impl DeltaWriter<'_> {
    /// Identifies the snapshot being written: the same for every part of one snapshot in
    /// parts, another for every snapshot (whole or in parts). A state that keeps its place
    /// between parts ([`StateStore::snapshot_part`]) starts over when it changes.
    pub fn snapshot(&self) -> u64 {
        self.snapshot
    }

    /// False once the part being written holds its budget (about [`PART_BYTES`] of keys and
    /// values, 16 bytes per entry); always true in a whole snapshot.
    pub fn has_room(&self) -> bool {
        let used = self.delta.data.len().saturating_add(self.delta.entries.len().saturating_mul(ENTRY_BYTES));
        used < self.budget
    }

    /// Records that `key` (encoded; empty for operator state) now holds `value`, encoded as
    /// MessagePack.
    pub fn put<V: Serialize + ?Sized>(&mut self, key: &[u8], value: &V) -> Result<()> {
        self.grow();
        let start = self.delta.data.len();
        self.delta.data.extend_from_slice(key);
        if let Err(e) = write_msgpack(&mut self.delta.data, value) {
            self.delta.data.truncate(start);
            return Err(e);
        }
        let value_len = self.delta.data.len() - start - key.len();
        self.push(ChangeKind::Put, key.len(), value_len);
        Ok(())
    }

    /// Records that `key` now holds the already encoded `value`.
    pub fn put_raw(&mut self, key: &[u8], value: &[u8]) {
        self.grow();
        self.delta.data.extend_from_slice(key);
        self.delta.data.extend_from_slice(value);
        self.push(ChangeKind::Put, key.len(), value.len());
    }

    /// Records that `key` was removed.
    pub fn delete(&mut self, key: &[u8]) {
        self.grow();
        self.delta.data.extend_from_slice(key);
        self.push(ChangeKind::Delete, key.len(), 0);
    }

    /// In a part past half of [`PART_FIRST`], makes room for the whole budget at once.
    fn grow(&mut self) {
        let data = &mut self.delta.data;
        let whole = self.budget.saturating_add(PART_SLACK);
        if self.budget != usize::MAX && data.len() > data.capacity() / 2 && data.capacity() < whole {
            data.reserve_exact(whole - data.len());
        }
    }

    fn push(&mut self, kind: ChangeKind, key_len: usize, value_len: usize) {
        self.delta.entries.push(StateEntry {
            state: self.state,
            kind,
            key_len: u32::try_from(key_len).expect("a state key larger than 4 GiB"),
            value_len: u32::try_from(value_len).expect("a state value larger than 4 GiB"),
        });
    }
}

/// Where a snapshot in parts stands: the state it is at. `Default` starts a new snapshot.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    /// The snapshot's number, given at its first part.
    snapshot: Option<u64>,
    /// Index of the registered state the next part starts with.
    state: usize,
}

/// Converts one saved entry (state name, key, old value) to the current schema: the new
/// value, or `None` to drop the entry. See [`Operator::migrate`](crate::Operator::migrate).
pub(crate) type Migration<'m> = dyn Fn(&str, &[u8], &[u8]) -> Result<Option<Vec<u8>>> + 'm;

/// The states of an operator, by name: what checkpoints save and restore.
///
/// Derive it — `#[derive(weir_guest::States)]` registers every [`KeyedState`] and
/// [`ValueState`] field under the field's name (`#[state(name = "...")]` sets another name,
/// `#[state]` registers a field of another [`StateStore`] type) — rather than writing it:
/// a state that a hand-written `states()` forgets would never be saved. The SDK knows every
/// state an operator creates and fails the snapshot that does not reach one of them
/// ("state `KeyedState<String, u64>` was created at src/lib.rs:14:10 but is not registered
/// in `states()`; ...").
///
/// ```no_run
/// use weir_guest::{KeyedState, States, ValueState};
///
/// #[derive(Default, States)]
/// struct Window {
///     windows: KeyedState<String, u64>,   // registered as "windows"
///     #[state(name = "wm")]
///     watermark: ValueState<i64>,         // registered as "wm"
///     size: i64,                          // not state
/// }
/// ```
///
/// [`Operator`](crate::Operator) requires it, so an operator that says nothing about its
/// states does not compile ("`Forgot` does not say which states it has"):
///
/// ```compile_fail,E0277
/// use weir_guest::{KeyedState, Operator, Output, Record, Result};
///
/// #[derive(Default)]
/// struct Forgot {
///     counts: KeyedState<String, u64>,
/// }
///
/// impl Operator for Forgot {
///     fn process(&mut self, _: Record<'_>, _: &mut Output) -> Result<()> {
///         Ok(())
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say which states it has",
    label = "an operator must list its states",
    note = "add `#[derive(weir_guest::States)]` to `{Self}`: it registers every `KeyedState` and `ValueState` field"
)]
pub trait States {
    /// Registers every state of the operator by name with [`StateRegistry::register`].
    /// Called before every restore and snapshot, and at `open` to check the names; register
    /// the same names each time.
    fn states<'a>(&'a mut self, registry: &mut StateRegistry<'a>);
}

/// The named states of an operator, filled by [`States::states`].
pub struct StateRegistry<'a> {
    list: Vec<(&'a str, &'a mut dyn StateStore)>,
}

impl std::fmt::Debug for StateRegistry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.list.iter().map(|(name, _)| name)).finish()
    }
}

impl<'a> StateRegistry<'a> {
    pub(crate) fn new() -> Self {
        Self { list: Vec::new() }
    }

    /// Registers `state` under `name`. The name identifies the state in checkpoints: keep it
    /// stable across versions of the operator, and unique within it.
    pub fn register(&mut self, name: &'a str, state: &'a mut dyn StateStore) -> &mut Self {
        self.list.push((name, state));
        self
    }

    /// Names every state (at `open`); returns whether any is a host state.
    pub(crate) fn bind(&mut self) -> bool {
        let mut host = false;
        for (name, state) in &mut self.list {
            state.bind(name);
            host |= state.is_host_state();
        }
        host
    }

    /// Host states fetch the values of `keys` (a batch's record keys).
    pub(crate) fn before_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        for (name, state) in &mut self.list {
            if state.is_host_state() {
                state
                    .before_batch(keys)
                    .map_err(|e| Error::other(format!("host state \"{name}\": {}", e.message())))?;
            }
        }
        Ok(())
    }

    /// Host states hand the call's changes to the host.
    pub(crate) fn after_call(&mut self) -> Result<()> {
        for (name, state) in &mut self.list {
            if state.is_host_state() {
                state
                    .after_call()
                    .map_err(|e| Error::other(format!("host state \"{name}\": {}", e.message())))?;
            }
        }
        Ok(())
    }

    /// The registered names, in order.
    pub(crate) fn names(&self) -> Vec<&'a str> {
        self.list.iter().map(|(name, _)| *name).collect()
    }

    /// Fails when a name is empty or registered twice.
    pub(crate) fn check(&self) -> Result<()> {
        for (i, (name, _)) in self.list.iter().enumerate() {
            if name.is_empty() {
                return Err(Error::other("a state is registered with an empty name"));
            }
            if self.list[..i].iter().any(|(other, _)| other == name) {
                return Err(Error::other(format!("the state name \"{name}\" is registered twice")));
            }
        }
        Ok(())
    }

    /// The changes of every state since the last snapshot, or every live entry when `full`.
    pub(crate) fn snapshot(&mut self, full: bool) -> Result<StateDelta> {
        self.check()?;
        let mut delta = self.empty_delta(0);
        let snapshot = next_snapshot();
        for (index, (name, state)) in self.list.iter_mut().enumerate() {
            let mut writer =
                DeltaWriter { delta: &mut delta, state: index as u32, snapshot, budget: usize::MAX };
            state
                .snapshot(full, &mut writer)
                .map_err(|e| Error::other(format!("snapshot of state \"{name}\": {}", e.message())))?;
        }
        Ok(delta)
    }

    /// The next part of the snapshot `progress` keeps the place of (a new one when it is
    /// [`Parts::default`]): entries of the states in order, about `budget` bytes, and whether
    /// this is the last part. Every part names every state.
    pub(crate) fn snapshot_part(
        &mut self,
        full: bool,
        progress: &mut Parts,
        budget: usize,
    ) -> Result<(StateDelta, bool)> {
        self.check()?;
        let snapshot = *progress.snapshot.get_or_insert_with(next_snapshot);
        let budget = budget.max(1);
        let mut delta = self.empty_delta(PART_FIRST.min(budget.saturating_add(PART_SLACK)));
        while let Some((name, state)) = self.list.get_mut(progress.state) {
            let mut writer =
                DeltaWriter { delta: &mut delta, state: progress.state as u32, snapshot, budget };
            if !writer.has_room() {
                return Ok((delta, false));
            }
            let entries = writer.delta.entries.len();
            let done = state
                .snapshot_part(full, &mut writer)
                .map_err(|e| Error::other(format!("snapshot of state \"{name}\": {}", e.message())))?;
            if done {
                progress.state += 1;
            } else if delta.entries.len() == entries {
                return Err(Error::other(format!(
                    "snapshot of state \"{name}\": a part with room for entries got none, but the state \
                     is not done"
                )));
            }
        }
        Ok((delta, true))
    }

    /// A delta naming every registered state, without entries.
    fn empty_delta(&self, capacity: usize) -> StateDelta {
        StateDelta {
            names: self.list.iter().map(|(name, _)| (*name).to_owned()).collect(),
            data: Vec::with_capacity(capacity),
            entries: Vec::new(),
        }
    }

    /// Applies one restored chunk. With `migration` (the chunk's state schema version and
    /// the conversion), every put is converted first and restored only if the conversion
    /// keeps it. Entries naming a state that is not registered fail with
    /// [`Error::InvalidState`].
    pub(crate) fn restore(
        &mut self,
        chunk: &StateDelta,
        migration: Option<(u32, &Migration<'_>)>,
    ) -> Result<()> {
        self.check()?;
        let targets: Vec<Option<usize>> = chunk
            .names
            .iter()
            .map(|name| self.list.iter().position(|(registered, _)| *registered == name))
            .collect();
        for (i, read) in Reader::new(&chunk.data, &chunk.entries).enumerate() {
            let (key, value, entry) = read.map_err(|overrun| {
                Error::invalid_state(format!(
                    "restore entry {i} runs past the end of the chunk data ({} bytes)",
                    overrun.data_len
                ))
            })?;
            let name = chunk.names.get(entry.state as usize).map_or("<no name>", String::as_str);
            let migrated = match (migration, entry.kind) {
                (Some((version, migrate)), ChangeKind::Put) => match migrate(name, key, value) {
                    Ok(Some(value)) => Some(value),
                    Ok(None) => continue,
                    Err(e) => {
                        return Err(Error::invalid_state(format!(
                            "restore entry {i} of state \"{name}\" cannot be migrated from state schema \
                             version {version}: {}",
                            e.message()
                        )));
                    }
                },
                _ => None,
            };
            let Some(&Some(target)) = targets.get(entry.state as usize) else {
                return Err(Error::invalid_state(format!(
                    "restore entry {i} belongs to state \"{name}\", which this operator does not have"
                )));
            };
            let (name, state) = &mut self.list[target];
            let value = match entry.kind {
                ChangeKind::Put => Some(migrated.as_deref().unwrap_or(value)),
                ChangeKind::Delete => None,
            };
            state
                .restore(key, value)
                .map_err(|e| Error::invalid_state(format!("restore of state \"{name}\": {}", e.message())))?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::{StateChange, changes_of, delta_of};
    use crate::to_msgpack;

    /// Snapshots one state registered as "s".
    pub(crate) fn snapshot_of(state: &mut dyn StateStore, full: bool) -> Vec<StateChange> {
        let mut states = StateRegistry::new();
        states.register("s", state);
        changes_of(&states.snapshot(full).unwrap())
    }

    #[test]
    fn snapshot_names_every_state_and_restore_routes_by_name() {
        let mut counts = KeyedState::<String, u64>::default();
        let mut total = ValueState::<u64>::default();
        counts.insert("a", 1);
        total.set(1);
        let delta = {
            let mut states = StateRegistry::new();
            states.register("counts", &mut counts).register("total", &mut total);
            states.snapshot(true).unwrap()
        };
        assert_eq!(delta.names, ["counts", "total"]);
        assert_eq!(delta.entries.len(), 2);

        // Restore through a chunk that lists the names in another order.
        let mut changes = changes_of(&delta);
        changes.reverse();
        let (mut counts2, mut total2) = (KeyedState::<String, u64>::default(), ValueState::<u64>::default());
        let mut states = StateRegistry::new();
        states.register("counts", &mut counts2).register("total", &mut total2);
        states.restore(&delta_of(&changes), None).unwrap();
        assert_eq!(counts2.get("a"), Some(&1));
        assert_eq!(total2.get(), Some(&1));
    }

    #[test]
    fn restore_rejects_unknown_states_and_bad_chunks() {
        let mut counts = KeyedState::<String, u64>::default();
        let mut states = StateRegistry::new();
        states.register("counts", &mut counts);
        let unknown =
            StateChange { state: "gone".into(), key: to_msgpack("k").unwrap(), value: Some(vec![1]) };
        let err = states.restore(&delta_of(&[unknown]), None).unwrap_err();
        assert!(matches!(&err, Error::InvalidState(m) if m.contains("\"gone\"")), "{err}");

        let mut short =
            delta_of(&[StateChange { state: "counts".into(), key: vec![0xa1, b'k'], value: Some(vec![1]) }]);
        short.data.pop();
        assert!(matches!(states.restore(&short, None), Err(Error::InvalidState(_))));
    }

    #[test]
    fn a_part_holds_little_memory_when_small_and_never_doubles_when_large() {
        let mut counts = KeyedState::<u32, String>::default();
        counts.insert(&1, "x".into());
        let mut states = StateRegistry::new();
        states.register("counts", &mut counts);
        let (small, last) = states.snapshot_part(true, &mut Parts::default(), PART_BYTES).unwrap();
        assert!(last && small.data.capacity() <= PART_FIRST, "{}", small.data.capacity());
        drop(states);

        for i in 0..10_000 {
            counts.insert(&i, "y".repeat(1000));
        }
        let mut states = StateRegistry::new();
        states.register("counts", &mut counts);
        let (large, last) = states.snapshot_part(true, &mut Parts::default(), PART_BYTES).unwrap();
        assert!(!last && large.data.len() >= PART_BYTES - large.entries.len() * ENTRY_BYTES);
        assert_eq!(large.data.capacity(), PART_BYTES + PART_SLACK, "one reservation, no doubling");
    }

    #[test]
    fn duplicate_state_names_are_refused() {
        let (mut a, mut b) = (ValueState::<u8>::default(), ValueState::<u8>::default());
        let mut states = StateRegistry::new();
        states.register("x", &mut a).register("x", &mut b);
        assert!(states.snapshot(false).unwrap_err().to_string().contains("registered twice"));
    }
}
