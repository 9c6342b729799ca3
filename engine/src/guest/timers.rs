//! Event-time timers of one operator instance.

use std::collections::BTreeSet;

/// The registered timers of an instance, ordered by time then key. Registering the same
/// key and time twice keeps one timer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TimerService {
    timers: BTreeSet<(i64, Vec<u8>)>,
}

impl TimerService {
    /// Registers a timer.
    pub fn register(&mut self, key: Vec<u8>, timestamp: i64) {
        self.timers.insert((timestamp, key));
    }

    /// Deletes a timer if present.
    pub fn delete(&mut self, key: Vec<u8>, timestamp: i64) {
        self.timers.remove(&(timestamp, key));
    }

    /// Removes and returns the earliest timer at or before `watermark`.
    pub fn pop_due(&mut self, watermark: i64) -> Option<(i64, Vec<u8>)> {
        match self.timers.first() {
            Some((ts, _)) if *ts <= watermark => self.timers.pop_first(),
            _ => None,
        }
    }

    /// Number of registered timers.
    pub fn len(&self) -> usize {
        self.timers.len()
    }

    /// True when no timer is registered.
    pub fn is_empty(&self) -> bool {
        self.timers.is_empty()
    }

    /// Every registered timer, in firing order (for snapshots).
    pub fn iter(&self) -> impl Iterator<Item = &(i64, Vec<u8>)> {
        self.timers.iter()
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
    }
}
