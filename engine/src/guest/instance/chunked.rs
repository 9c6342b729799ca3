//! Snapshots handed over in parts (`chunked-snapshot` of wit/operator.wit): the host calls
//! `snapshot-part` until a part says `last` and joins the parts into the one `StateDelta`
//! `operator.snapshot` would have returned, so the guest never holds the whole delta in its
//! memory (a state near the memory limit could not hold a second copy of itself).
//!
//! Invariants: every part is checked like a plain delta (`check_delta`) and copied out
//! under the snapshot's hostcall fuel, as a plain snapshot is; the parts together are
//! bounded ([`max_parts_bytes`]), and a part without entries must be the last, so a guest
//! that never says `last` fails the snapshot instead of running forever. The guest forgets
//! what each part hands over, so a snapshot that fails after its first part poisons the
//! instance (a later snapshot of it would miss those changes). The snapshot is one call for
//! the wall-time limit (`wall_limit_ms` over all its parts: a guest cannot stall a barrier
//! longer by cutting its snapshot small); the CPU limit and the hostcall fuel hold per part.

use std::time::{Duration, Instant};

use super::super::bindings::{StateDelta, StateEntry};
use super::super::error::{Call, GuestError};
use super::{OperatorInstance, check_delta, within};

/// What a part costs against [`max_parts_bytes`] besides its entries: many tiny parts
/// reach the bound too.
const PART_COST: usize = 64 << 10;

/// What an entry costs against [`max_parts_bytes`] besides its key and value.
const ENTRY_COST: usize = size_of::<StateEntry>();

/// Most bytes the parts of one snapshot may add up to (keys and values, [`ENTRY_COST`] per
/// entry, [`PART_COST`] per part) for an instance of `memory_bytes`: twice the memory (the
/// encoded entries of a state may be larger than the state, not much larger) and 64 MiB.
pub(super) fn max_parts_bytes(memory_bytes: usize) -> usize {
    memory_bytes.saturating_mul(2).saturating_add(64 << 20)
}

impl OperatorInstance {
    /// `snapshot-part` until the last part, joined, when the component exports
    /// `chunked-snapshot`; `None` when it does not (the plain `snapshot` then runs).
    pub(super) async fn snapshot_parts(
        &mut self,
        checkpoint_id: u64,
        full: bool,
    ) -> Result<Option<StateDelta>, GuestError> {
        let Some(exports) = self.chunked.clone() else { return Ok(None) };
        let max = max_parts_bytes(self.who.memory_bytes);
        let deadline = Instant::now() + Duration::from_millis(self.who.limits.wall_limit_ms);
        let (mut joined, mut parts, mut bytes): (Option<StateDelta>, u64, usize) = (None, 0, 0);
        loop {
            self.begin(Call::Snapshot)?;
            let left = deadline.saturating_duration_since(Instant::now()).as_millis() as u64;
            let r = within(left, exports.call_snapshot_part(&mut self.store, checkpoint_id, full)).await;
            let part = match self.finish(Call::Snapshot, r) {
                Ok(part) => part,
                Err(e) if parts > 0 && self.poisoned.is_none() => {
                    self.poisoned = Some(e.to_string());
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            parts += 1;
            check_delta(&part.delta)
                .map_err(|reason| self.failed_snapshot(format!("part {parts}: {reason}")))?;
            if part.delta.entries.is_empty() && !part.last {
                let reason = format!("part {parts} of its snapshot holds no entry but is not the last");
                return Err(self.failed_snapshot(reason));
            }
            let cost =
                part.delta.data.len().saturating_add(part.delta.entries.len().saturating_mul(ENTRY_COST));
            bytes = bytes.saturating_add(cost).saturating_add(PART_COST);
            if bytes > max {
                let reason = format!(
                    "its snapshot in parts passed {max} bytes (twice the memory limit and 64 MiB) after \
                     {parts} parts without a last one"
                );
                return Err(self.failed_snapshot(reason));
            }
            match &mut joined {
                None => joined = Some(part.delta),
                Some(joined) => append(joined, part.delta),
            }
            if part.last {
                return Ok(joined);
            }
        }
    }
}

/// Appends the entries of `part` to `joined`: a part's state indices refer to its own names
/// table, so each is mapped to the name's index in `joined` (added when new).
fn append(joined: &mut StateDelta, part: StateDelta) {
    let index: Vec<u32> = part
        .names
        .into_iter()
        .map(|name| match joined.names.iter().position(|n| *n == name) {
            Some(i) => i as u32,
            None => {
                joined.names.push(name);
                (joined.names.len() - 1) as u32
            }
        })
        .collect();
    joined.data.extend_from_slice(&part.data);
    joined.entries.extend(part.entries.iter().map(|e| StateEntry {
        state: index[e.state as usize],
        kind: e.kind,
        key_len: e.key_len,
        value_len: e.value_len,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::bindings::ChangeKind;

    fn delta(names: &[&str], entries: &[(u32, &[u8], &[u8])]) -> StateDelta {
        let mut d = StateDelta {
            names: names.iter().map(|n| n.to_string()).collect(),
            data: vec![],
            entries: vec![],
        };
        for (state, key, value) in entries {
            d.data.extend_from_slice(key);
            d.data.extend_from_slice(value);
            d.entries.push(StateEntry {
                state: *state,
                kind: ChangeKind::Put,
                key_len: key.len() as u32,
                value_len: value.len() as u32,
            });
        }
        d
    }

    #[test]
    fn parts_join_by_state_name() {
        let mut joined = delta(&["a", "b"], &[(0, b"k1", b"1"), (1, b"k2", b"2")]);
        append(&mut joined, delta(&["b", "c", "a"], &[(2, b"k3", b"3"), (0, b"k4", b"4"), (1, b"k5", b"5")]));
        assert_eq!(joined.names, ["a", "b", "c"]);
        let states: Vec<u32> = joined.entries.iter().map(|e| e.state).collect();
        assert_eq!(states, [0, 1, 0, 1, 2]);
        assert_eq!(joined.data, b"k11k22k33k44k55");
        check_delta(&joined).unwrap();
    }

    #[test]
    fn the_bound_is_twice_the_memory_and_64_mib() {
        assert_eq!(max_parts_bytes(128 << 20), 320 << 20);
        assert_eq!(max_parts_bytes(usize::MAX), usize::MAX);
    }
}
