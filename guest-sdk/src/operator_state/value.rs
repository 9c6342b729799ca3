//! `ValueState`: one value of the operator instance (not keyed).

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::tracking::Tracked;
use super::{DeltaWriter, StateStore};
use crate::{Error, Result};

/// One value of the operator instance, not tied to a record key (its checkpoint entry has an
/// empty key). Holds nothing until set.
///
/// Every method that may change the value (`set`, `get_mut`, `take`, ...) marks it as
/// changed for the next snapshot.
#[derive(Clone)]
pub struct ValueState<T> {
    value: Option<T>,
    /// Changed since the last snapshot.
    dirty: bool,
    /// The host holds a value (from a snapshot or a restore).
    persisted: bool,
    tracked: Tracked,
}

impl<T> Default for ValueState<T> {
    #[track_caller]
    fn default() -> Self {
        Self { value: None, dirty: false, persisted: false, tracked: Tracked::new::<Self>() }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ValueState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueState")
            .field("value", &self.value)
            .field("dirty", &self.dirty)
            .field("persisted", &self.persisted)
            .finish()
    }
}

impl<T> ValueState<T> {
    /// The value, if set.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }

    /// The value, if set, to change in place (marks it as changed).
    pub fn get_mut(&mut self) -> Option<&mut T> {
        if self.value.is_some() {
            self.dirty = true;
        }
        self.value.as_mut()
    }

    /// The value, setting it to `default()` first if it is not set (marks it as changed).
    pub fn get_or_insert_with(&mut self, default: impl FnOnce() -> T) -> &mut T {
        self.dirty = true;
        self.value.get_or_insert_with(default)
    }

    /// Sets the value, returning the previous one.
    pub fn set(&mut self, value: T) -> Option<T> {
        self.dirty = true;
        self.value.replace(value)
    }

    /// Removes the value, returning it.
    pub fn take(&mut self) -> Option<T> {
        self.dirty = true;
        self.value.take()
    }

    /// True when the value is set.
    pub fn is_set(&self) -> bool {
        self.value.is_some()
    }
}

impl<T: Serialize + DeserializeOwned> StateStore for ValueState<T> {
    fn snapshot(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<()> {
        self.tracked.reach();
        if full || self.dirty {
            match &self.value {
                Some(value) => delta.put(&[], value)?,
                None if self.persisted && !full => delta.delete(&[]),
                None => {}
            }
            self.persisted = self.value.is_some();
            self.dirty = false;
        }
        Ok(())
    }

    /// One entry at most: written whole in the part that reaches the state (a part holds at
    /// least one entry), so every part call is the whole snapshot of this state.
    fn snapshot_part(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<bool> {
        self.snapshot(full, delta)?;
        Ok(true)
    }

    fn restore(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if !key.is_empty() {
            return Err(Error::invalid_state("a ValueState entry has a key (is it keyed state?)"));
        }
        self.value = match value {
            Some(bytes) => Some(rmp_serde::from_slice(bytes).map_err(|e| {
                Error::invalid_state(format!(
                    "the value does not decode as {}: {e}",
                    std::any::type_name::<T>()
                ))
            })?),
            None => None,
        };
        self.persisted = self.value.is_some();
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator_state::tests::snapshot_of;
    use crate::testing::StateChange;
    use crate::to_msgpack;

    fn put(value: i64) -> StateChange {
        StateChange { state: "s".into(), key: Vec::new(), value: Some(to_msgpack(&value).unwrap()) }
    }

    #[test]
    fn tracks_set_change_and_removal() {
        let mut state = ValueState::<i64>::default();
        assert_eq!(snapshot_of(&mut state, false), vec![]);
        state.set(1);
        assert_eq!(snapshot_of(&mut state, false), vec![put(1)]);
        assert_eq!(snapshot_of(&mut state, false), vec![]);
        *state.get_mut().unwrap() += 1;
        assert_eq!(snapshot_of(&mut state, false), vec![put(2)]);
        assert_eq!(state.take(), Some(2));
        assert_eq!(
            snapshot_of(&mut state, false),
            vec![StateChange { state: "s".into(), key: vec![], value: None }]
        );
        // Set and taken between two snapshots: the host never saw it.
        state.set(3);
        state.take();
        assert_eq!(snapshot_of(&mut state, false), vec![]);
    }

    #[test]
    fn full_snapshot_and_restore() {
        let mut state = ValueState::<i64>::default();
        assert_eq!(snapshot_of(&mut state, true), vec![]);
        state.set(-4);
        snapshot_of(&mut state, false);
        let full = snapshot_of(&mut state, true);
        assert_eq!(full, vec![put(-4)]);

        let mut restored = ValueState::<i64>::default();
        restored.restore(&[], full[0].value.as_deref()).unwrap();
        assert_eq!(restored.get(), Some(&-4));
        assert_eq!(snapshot_of(&mut restored, false), vec![]);
        assert!(restored.restore(b"\xa1k", full[0].value.as_deref()).is_err());
    }
}
