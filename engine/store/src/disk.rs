//! The free-space floor of the store's filesystem: large writes are refused while fewer
//! than the reserve plus the write's size are free, so that the disk never fills under redb
//! (a failed write latches redb into an error state) and deletes, stops and cancels keep
//! working.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::StoreError;

/// How long a measurement of the free space is used before `statvfs` is asked again. Each
/// check within it subtracts its write from the measurement, so a burst of writes cannot
/// overrun the reserve by more than what the filesystem's other users write meanwhile.
const FRESH_FOR: Duration = Duration::from_millis(100);

/// Every write is counted as at least this many bytes: a commit copies a few B-tree pages
/// on write whatever its size, and a check for a write of unknown size (a job creation, a
/// checkpoint's begin) must still fail at the floor.
const MIN_WRITE: u64 = 64 << 10;

/// The reserve is at most this fraction (1/n) of the filesystem's size, so that a small disk
/// is not refused every write by a default meant for large ones.
const MAX_RESERVE_SHARE: u64 = 10;

/// What `statvfs` said, less what was admitted since.
#[derive(Clone, Copy)]
struct Measure {
    at: Instant,
    free: u64,
    total: u64,
}

/// The floor: a reserve of free bytes on the filesystem of `dir` (the store's; a cluster
/// worker keeps one for its own disk).
pub struct DiskFloor {
    dir: PathBuf,
    reserve: AtomicU64,
    last: Mutex<Option<Measure>>,
    fresh_for: Duration,
}

impl std::fmt::Debug for DiskFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskFloor")
            .field("dir", &self.dir)
            .field("reserve", &self.reserve)
            .finish_non_exhaustive()
    }
}

/// The free space of the store's filesystem against the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSpace {
    /// Bytes free for unprivileged writers (`f_bavail`).
    pub free_bytes: u64,
    /// The filesystem's size.
    pub total_bytes: u64,
    /// Bytes kept free: writes that would leave fewer are refused.
    pub reserved_bytes: u64,
}

impl DiskFloor {
    /// A floor on the filesystem of `dir`, with no reserve yet.
    pub fn new(dir: PathBuf) -> Self {
        DiskFloor { dir, reserve: AtomicU64::new(0), last: Mutex::new(None), fresh_for: FRESH_FOR }
    }

    /// Keeps `bytes` free (at most a tenth of the filesystem).
    pub fn set_reserve(&self, bytes: u64) {
        self.reserve.store(bytes, Ordering::Relaxed);
    }

    /// The configured reserve, capped at a tenth of the filesystem.
    fn reserve(&self, total: u64) -> u64 {
        self.reserve.load(Ordering::Relaxed).min(total / MAX_RESERVE_SHARE)
    }

    /// The free space now (measured at most `FRESH_FOR` ago).
    pub fn space(&self) -> std::io::Result<DiskSpace> {
        let m = self.measure()?;
        Ok(DiskSpace { free_bytes: m.free, total_bytes: m.total, reserved_bytes: self.reserve(m.total) })
    }

    /// Fails with [`StoreError::DiskFull`] when writing `extra` bytes would leave less than the
    /// reserve free (invariant T8); otherwise counts `extra` as used until the next measurement. A filesystem
    /// that cannot be measured is not refused (the write then meets the disk as it is).
    pub fn check(&self, extra: u64) -> Result<(), StoreError> {
        let Ok(m) = self.measure() else { return Ok(()) };
        let reserved = self.reserve(m.total);
        let needed = extra.max(MIN_WRITE);
        if m.free < reserved.saturating_add(needed) {
            return Err(StoreError::DiskFull { free: m.free, reserved, needed });
        }
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(l) = last.as_mut() {
            l.free = l.free.saturating_sub(extra);
        }
        Ok(())
    }

    fn measure(&self) -> std::io::Result<Measure> {
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(m) = *last
            && m.at.elapsed() < self.fresh_for
        {
            return Ok(m);
        }
        let stat = rustix::fs::statvfs(&self.dir)?;
        let m = Measure {
            at: Instant::now(),
            free: stat.f_bavail.saturating_mul(stat.f_frsize),
            total: stat.f_blocks.saturating_mul(stat.f_frsize),
        };
        *last = Some(m);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_would_cross_the_reserve_is_refused_and_admitted_writes_count() {
        let dir = std::env::temp_dir();
        let floor = DiskFloor { fresh_for: Duration::from_secs(3600), ..DiskFloor::new(dir) };
        let space = floor.space().unwrap();
        assert!(space.total_bytes > 0 && space.free_bytes <= space.total_bytes);
        floor.set_reserve(u64::MAX);
        let reserved = floor.space().unwrap().reserved_bytes;
        assert_eq!(reserved, space.total_bytes / MAX_RESERVE_SHARE, "the reserve is capped");
        floor.set_reserve(0);
        assert!(floor.check(0).is_ok());
        if let Err(StoreError::DiskFull { needed, .. }) = floor.check(0) {
            assert_eq!(needed, MIN_WRITE);
        }
        match floor.check(u64::MAX) {
            Err(StoreError::DiskFull { needed, .. }) => assert_eq!(needed, u64::MAX),
            other => panic!("expected DiskFull, got {other:?}"),
        }
        // Within one measurement, admitted bytes are subtracted from the free space.
        let free = floor.space().unwrap().free_bytes;
        floor.check(free / 2).unwrap();
        let err = floor.check(free / 2 + free / 4).unwrap_err();
        assert!(err.to_string().contains("nearly full"), "{err}");
    }
}
