//! Which states exist, so that a state no checkpoint would save fails loudly.
//!
//! The rule: a [`KeyedState`](super::KeyedState) or [`ValueState`](super::ValueState)
//! belongs to the operator instance whose code created it — its `Default`, `open`,
//! `process`, or any other call the SDK makes into the operator. Every snapshot of an
//! instance must reach (snapshot) every state of the instance that is alive at that moment,
//! wherever it was created; one that it does not reach is not registered in
//! [`States::states`](super::States::states), and the snapshot fails naming its type and
//! where it was created. A state created outside any operator call (a test's local
//! variable) belongs to no instance and is not checked; a state dropped before the snapshot
//! no longer exists. Instances are told apart, so several of them (several test harnesses
//! on one thread) do not see each other's states.
//!
//! The census is per thread, like the instance: a component instance is single-threaded.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::num::NonZeroU64;
use std::panic::Location;

use rustc_hash::FxHashMap;

use crate::{Error, Result};

/// A state the census knows: created by an operator instance and not yet dropped.
struct Created {
    owner: Owner,
    /// The state's type, such as `KeyedState<String, u64>`.
    kind: &'static str,
    at: &'static Location<'static>,
    /// The last snapshot epoch that reached it.
    reached: u64,
}

#[derive(Default)]
struct Census {
    /// The instance whose code runs now.
    current: Option<Owner>,
    last_owner: u32,
    last_state: u64,
    /// Incremented by every checked snapshot.
    epoch: u64,
    live: FxHashMap<NonZeroU64, Created>,
}

thread_local! {
    static CENSUS: RefCell<Census> = RefCell::new(Census::default());
}

/// An operator instance, as the owner of the states its code creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner(u32);

/// While alive, states created on this thread belong to an [`Owner`]; dropping it restores
/// the previous owner.
#[must_use]
pub(crate) struct Entered {
    previous: Option<Owner>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let _ = CENSUS.try_with(|c| c.borrow_mut().current = self.previous);
    }
}

/// One snapshot of one instance being checked.
pub(crate) struct Epoch {
    owner: Owner,
    epoch: u64,
}

impl Owner {
    /// A new instance.
    pub(crate) fn new() -> Self {
        CENSUS.with_borrow_mut(|c| {
            c.last_owner += 1;
            Owner(c.last_owner)
        })
    }

    /// Runs the instance's code until the guard is dropped.
    pub(crate) fn enter(self) -> Entered {
        let previous = CENSUS.with_borrow_mut(|c| c.current.replace(self));
        Entered { previous }
    }

    /// Starts a snapshot: from now on, snapshotting a state marks it as reached.
    pub(crate) fn begin_snapshot(self) -> Epoch {
        let epoch = CENSUS.with_borrow_mut(|c| {
            c.epoch += 1;
            c.epoch
        });
        Epoch { owner: self, epoch }
    }
}

impl Epoch {
    /// Fails when a state of the instance is alive but the snapshot did not reach it (in
    /// any of its parts, for a snapshot in parts: a part reaches the states it writes, each
    /// at an epoch at or after the one the snapshot began with). `registered` are the names
    /// `states()` registered, for the message.
    pub(crate) fn check(self, registered: &[&str]) -> Result<()> {
        let mut missed: Vec<(&'static Location<'static>, &'static str)> = CENSUS.with_borrow(|c| {
            c.live
                .values()
                .filter(|s| s.owner == self.owner && s.reached < self.epoch)
                .map(|s| (s.at, s.kind))
                .collect()
        });
        if missed.is_empty() {
            return Ok(());
        }
        missed.sort_by_key(|(at, _)| (at.file(), at.line(), at.column()));
        let mut message = String::new();
        for (at, kind) in missed {
            if !message.is_empty() {
                message.push_str("; ");
            }
            let _ = write!(
                message,
                "state `{kind}` was created at {at} but is not registered in `states()`; derive \
                 `States` or list it"
            );
        }
        match registered {
            [] => message.push_str(" (no state is registered)"),
            names => {
                let _ = write!(message, " (registered: {})", names.join(", "));
            }
        }
        Err(Error::other(message))
    }
}

/// The census entry of one state: present when the state was created by an operator
/// instance, removed when the state is dropped.
pub(crate) struct Tracked {
    id: Option<NonZeroU64>,
    /// The state's full type name.
    type_name: &'static str,
}

impl Clone for Tracked {
    /// A clone is another state, created where `clone` is called.
    #[track_caller]
    fn clone(&self) -> Self {
        Self::named(self.type_name)
    }
}

impl Tracked {
    /// Registers a state of type `S` created at the caller's location, if an operator
    /// instance is running.
    #[track_caller]
    pub(crate) fn new<S: ?Sized>() -> Self {
        Self::named(std::any::type_name::<S>())
    }

    #[track_caller]
    fn named(type_name: &'static str) -> Self {
        let at = Location::caller();
        let id = CENSUS
            .try_with(|c| {
                let c = &mut *c.borrow_mut();
                let owner = c.current?;
                c.last_state += 1;
                let id = NonZeroU64::new(c.last_state).expect("the count starts at 1");
                let kind = short_type_name(type_name);
                c.live.insert(id, Created { owner, kind, at, reached: 0 });
                Some(id)
            })
            .ok()
            .flatten();
        Self { id, type_name }
    }

    /// Marks the state as reached by the snapshot being taken.
    #[inline]
    pub(crate) fn reach(&self) {
        if let Some(id) = self.id {
            CENSUS.with_borrow_mut(|c| {
                let epoch = c.epoch;
                if let Some(state) = c.live.get_mut(&id) {
                    state.reached = epoch;
                }
            });
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            // The census may be gone already when the thread exits.
            let _ = CENSUS.try_with(|c| c.borrow_mut().live.remove(&id));
        }
    }
}

/// `a::b::KeyedState<alloc::string::String, u64>` → `KeyedState<String, u64>`, leaked
/// once per type (a type name is `'static`; the census keeps a few of them).
fn short_type_name(full: &'static str) -> &'static str {
    thread_local! {
        static SHORT: RefCell<FxHashMap<&'static str, &'static str>> = RefCell::default();
    }
    SHORT.with_borrow_mut(|names| {
        *names.entry(full).or_insert_with(|| {
            let mut short = String::with_capacity(full.len());
            let mut word_start = 0;
            let mut chars = full.chars().peekable();
            while let Some(ch) = chars.next() {
                if ch == ':' && chars.peek() == Some(&':') {
                    chars.next();
                    short.truncate(word_start);
                } else {
                    short.push(ch);
                    if !(ch.is_alphanumeric() || ch == '_') {
                        word_start = short.len();
                    }
                }
            }
            Box::leak(short.into_boxed_str())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_lose_their_paths() {
        assert_eq!(
            short_type_name("weir_guest::operator_state::keyed::KeyedState<alloc::string::String, u64>"),
            "KeyedState<String, u64>"
        );
        assert_eq!(
            short_type_name("weir_guest::ValueState<(a::B, [c::D; 2], &str)>"),
            "ValueState<(B, [D; 2], &str)>"
        );
    }

    #[test]
    fn only_states_of_the_instance_count_and_dropped_ones_are_forgotten() {
        let (a, b) = (Owner::new(), Owner::new());
        let outside = Tracked::new::<u8>();
        let (kept, dropped, other) = {
            let _in = a.enter();
            (Tracked::new::<u16>(), Tracked::new::<u32>(), {
                let _in = b.enter();
                Tracked::new::<u64>()
            })
        };
        assert!(outside.id.is_none(), "created outside any instance");
        drop(dropped);
        let epoch = a.begin_snapshot();
        let e = epoch.check(&[]).unwrap_err().to_string();
        assert!(e.contains("state `u16` was created at ") && !e.contains("u32") && !e.contains("u64"), "{e}");
        let epoch = a.begin_snapshot();
        kept.reach();
        epoch.check(&["x"]).unwrap();
        assert!(b.begin_snapshot().check(&[]).is_err(), "b's own state");
        drop(other);
        b.begin_snapshot().check(&[]).unwrap();
    }
}
