//! Stopping a running job: the request shared by its sources and its coordinator.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// How a stopped job ends its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    /// Sources end at a batch boundary without advancing event time: the final checkpoint
    /// is a stop point the job resumes from as if it had never stopped.
    Suspend,
    /// Sources end and send the end-of-input watermark, so every event-time timer fires and
    /// the pipeline empties before the final checkpoint: the job finishes.
    Drain,
}

/// A stop request shared by a job's sources and its coordinator.
#[derive(Debug, Default)]
pub struct StopSignal {
    /// 0: running; 1: suspend; 2: drain.
    mode: AtomicU8,
    /// The final checkpoint is taken for a savepoint: pin it against retention.
    pin: AtomicBool,
    /// Wakes whoever waits for a request (a cluster forwards it to the workers).
    requests: tokio::sync::Notify,
}

impl StopSignal {
    /// Asks for a stop. A later request replaces an earlier one's mode; a pin stays.
    pub fn request(&self, mode: StopMode, pin: bool) {
        if pin {
            self.pin.store(true, Ordering::Relaxed);
        }
        let m = match mode {
            StopMode::Suspend => 1,
            StopMode::Drain => 2,
        };
        self.mode.store(m, Ordering::Relaxed);
        self.requests.notify_waiters();
    }

    /// Resolves at the next request after it is enabled (`Notified::enable`) or first
    /// polled: check [`requested`](Self::requested) after enabling it, not before.
    pub fn next_request(&self) -> tokio::sync::futures::Notified<'_> {
        self.requests.notified()
    }

    /// The requested stop, if any.
    pub fn requested(&self) -> Option<StopMode> {
        match self.mode.load(Ordering::Relaxed) {
            1 => Some(StopMode::Suspend),
            2 => Some(StopMode::Drain),
            _ => None,
        }
    }

    /// Whether the final checkpoint must be pinned.
    pub fn pinned(&self) -> bool {
        self.pin.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_request_replaces_the_mode_and_a_pin_stays() {
        let s = StopSignal::default();
        assert_eq!(s.requested(), None);
        assert!(!s.pinned());
        s.request(StopMode::Drain, true);
        assert_eq!(s.requested(), Some(StopMode::Drain));
        s.request(StopMode::Suspend, false);
        assert_eq!(s.requested(), Some(StopMode::Suspend));
        assert!(s.pinned());
    }
}
