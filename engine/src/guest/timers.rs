//! Event-time timers of one operator instance, held to the instance's limits.

use std::collections::BTreeSet;

/// Host memory one timer is counted for besides its key: the time, the key's vector and
/// the B-tree's share.
pub const TIMER_OVERHEAD_BYTES: usize = 64;

/// The registered timers of an instance, ordered by time then key. Registering the same
/// key and time twice keeps one timer.
///
/// The timers live in host memory, so they are counted: at most `max_timers`, and at most
/// `max_bytes` of keys plus `TIMER_OVERHEAD_BYTES` each. A registration past either is
/// dropped and remembered ([`TimerService::take_refusal`]); the host fails the guest call
/// that made it, with the reason.
///
/// While the timers due at a watermark fire ([`TimerService::begin_firing`]), a timer
/// registered at or before the time of the timer firing now is deferred: it is held (and
/// counted, and snapshotted) apart, and is due again from [`TimerService::end_firing`] on —
/// it fires at the next advance of the watermark, not in the same loop, which would never
/// end if each `on-timer` registered itself again. A timer registered for a later time that
/// is due still fires in this loop, in time order (a window operator's next window).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerService {
    timers: BTreeSet<(i64, Vec<u8>)>,
    /// Registered, while timers fire, at or before the time of the one firing.
    deferred: BTreeSet<(i64, Vec<u8>)>,
    /// While timers fire: the time of the last one fired (`i64::MIN` before the first).
    firing: Option<i64>,
    bytes: usize,
    max_timers: usize,
    max_bytes: usize,
    refusal: Option<String>,
}

impl Default for TimerService {
    /// No limits (tools and tests that hold timers outside an instance).
    fn default() -> Self {
        TimerService::with_limits(usize::MAX, usize::MAX)
    }
}

impl TimerService {
    /// An empty service holding at most `max_timers` timers and `max_bytes` of them.
    pub fn with_limits(max_timers: usize, max_bytes: usize) -> Self {
        TimerService {
            timers: BTreeSet::new(),
            deferred: BTreeSet::new(),
            firing: None,
            bytes: 0,
            max_timers,
            max_bytes,
            refusal: None,
        }
    }

    fn cost(key: &[u8]) -> usize {
        key.len().saturating_add(TIMER_OVERHEAD_BYTES)
    }

    /// Registers a timer, unless that would pass a limit (then it is refused and remembered).
    pub fn register(&mut self, key: Vec<u8>, timestamp: i64) {
        let entry = (timestamp, key);
        if self.timers.contains(&entry) || self.deferred.contains(&entry) {
            return;
        }
        let cost = Self::cost(&entry.1);
        let registered = self.len();
        if registered >= self.max_timers || self.bytes.saturating_add(cost) > self.max_bytes {
            self.refusal.get_or_insert_with(|| {
                format!(
                    "it registered more timers than its instance may hold ({} timers and {} bytes at most; \
                     {} timers of {} bytes are registered)",
                    self.max_timers, self.max_bytes, registered, self.bytes
                )
            });
            return;
        }
        self.bytes += cost;
        if self.firing.is_some_and(|at| timestamp <= at) {
            self.deferred.insert(entry);
        } else {
            self.timers.insert(entry);
        }
    }

    /// Deletes a timer if present.
    pub fn delete(&mut self, key: Vec<u8>, timestamp: i64) {
        let entry = (timestamp, key);
        if self.timers.remove(&entry) || self.deferred.remove(&entry) {
            self.bytes -= Self::cost(&entry.1);
        }
    }

    /// The due timers start firing: from now on, one registered at or before the time of
    /// the timer last fired is deferred until [`TimerService::end_firing`].
    pub fn begin_firing(&mut self) {
        self.firing = Some(i64::MIN);
    }

    /// The firing ended (or failed): deferred timers are due again, at the next advance.
    pub fn end_firing(&mut self) {
        self.firing = None;
        self.timers.append(&mut self.deferred);
    }

    /// Removes and returns the earliest timer at or before `watermark`.
    pub fn pop_due(&mut self, watermark: i64) -> Option<(i64, Vec<u8>)> {
        match self.timers.first() {
            Some((ts, _)) if *ts <= watermark => {
                let timer = self.timers.pop_first()?;
                self.bytes -= Self::cost(&timer.1);
                if let Some(at) = &mut self.firing {
                    *at = timer.0;
                }
                Some(timer)
            }
            _ => None,
        }
    }

    /// The first refused registration since the last call, if any.
    pub fn take_refusal(&mut self) -> Option<String> {
        self.refusal.take()
    }

    /// Bytes the registered timers are counted for.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Number of registered timers.
    pub fn len(&self) -> usize {
        self.timers.len() + self.deferred.len()
    }

    /// True when no timer is registered.
    pub fn is_empty(&self) -> bool {
        self.timers.is_empty() && self.deferred.is_empty()
    }

    /// Every registered timer (for snapshots): the due ones in firing order, then any
    /// deferred.
    pub fn iter(&self) -> impl Iterator<Item = &(i64, Vec<u8>)> {
        self.timers.iter().chain(&self.deferred)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_time_order_and_dedupes() {
        let mut t = TimerService::default();
        t.register(b"b".to_vec(), 10);
        t.register(b"a".to_vec(), 10);
        t.register(b"a".to_vec(), 10);
        t.register(b"c".to_vec(), 5);
        t.register(b"d".to_vec(), 20);
        t.delete(b"d".to_vec(), 20);
        assert_eq!(t.len(), 3);
        assert_eq!(t.pop_due(4), None);
        assert_eq!(t.pop_due(10), Some((5, b"c".to_vec())));
        assert_eq!(t.pop_due(10), Some((10, b"a".to_vec())));
        assert_eq!(t.pop_due(10), Some((10, b"b".to_vec())));
        assert_eq!(t.pop_due(i64::MAX), None);
        assert_eq!(t.bytes(), 0);
    }

    #[test]
    fn a_timer_registered_at_or_before_the_one_firing_waits_for_the_next_advance() {
        let mut t = TimerService::default();
        t.register(b"a".to_vec(), 5);
        t.begin_firing();
        assert_eq!(t.pop_due(10), Some((5, b"a".to_vec())));
        // The on-timer of "a" at 5 registers itself again, an earlier one, a later due one
        // (its next window) and one not due.
        t.register(b"a".to_vec(), 5);
        t.register(b"z".to_vec(), 4);
        t.register(b"a".to_vec(), 8);
        t.register(b"b".to_vec(), 11);
        assert_eq!(t.pop_due(10), Some((8, b"a".to_vec())), "a later due timer fires in this loop");
        t.register(b"a".to_vec(), 8);
        assert_eq!(t.pop_due(10), None, "the rest are deferred or not due");
        assert_eq!((t.len(), t.iter().count()), (4, 4));
        // Deleting a deferred timer works as for any other.
        t.delete(b"z".to_vec(), 4);
        t.end_firing();
        assert_eq!(t.pop_due(10), Some((5, b"a".to_vec())));
        assert_eq!(t.pop_due(10), Some((8, b"a".to_vec())));
        assert_eq!(t.pop_due(11), Some((11, b"b".to_vec())));
        assert_eq!((t.len(), t.bytes()), (0, 0));
    }

    #[test]
    fn registrations_past_a_limit_are_refused_and_reported_once() {
        let mut t = TimerService::with_limits(2, usize::MAX);
        t.register(b"a".to_vec(), 1);
        t.register(b"b".to_vec(), 1);
        t.register(b"a".to_vec(), 1); // already there: no new timer, no refusal
        assert_eq!(t.take_refusal(), None);
        t.register(b"c".to_vec(), 1);
        t.register(b"d".to_vec(), 1);
        assert_eq!(t.len(), 2);
        let refusal = t.take_refusal().expect("refused");
        assert!(refusal.contains("2 timers"), "{refusal}");
        assert_eq!(t.take_refusal(), None);
        // Firing one makes room again.
        assert!(t.pop_due(1).is_some());
        t.register(b"c".to_vec(), 1);
        assert_eq!((t.len(), t.take_refusal()), (2, None));

        let mut t = TimerService::with_limits(usize::MAX, 2 * TIMER_OVERHEAD_BYTES + 10);
        t.register(vec![0; 5], 1);
        t.register(vec![1; 5], 1);
        assert_eq!(t.bytes(), 2 * TIMER_OVERHEAD_BYTES + 10);
        t.register(vec![2; 1], 1);
        assert!(t.take_refusal().is_some());
        t.delete(vec![0; 5], 1);
        t.register(vec![2; 1], 1);
        assert_eq!(t.take_refusal(), None);
    }
}
