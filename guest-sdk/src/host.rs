//! Services of the host: timers, logging and metrics.
//!
//! On `wasm32` these call the world's imports. Compiled natively (unit tests of an operator),
//! they record the calls in a per-thread [`native`] host that [`crate::testing::Harness`]
//! reads, since the imports exist only inside a component.

/// Event-time timers, kept by the host per instance and checkpointed with it.
///
/// A timer fires once the input watermark reaches its time: the host calls
/// [`Operator::on_timer`](crate::Operator::on_timer) with its key, in timestamp order,
/// before [`Operator::on_watermark`](crate::Operator::on_watermark).
pub mod timers {
    use serde::Serialize;

    use crate::Result;
    use crate::codec::to_msgpack;

    /// Registers a timer for `key` (encoded as MessagePack, like record keys) at event time
    /// `timestamp`. Registering the same key and time twice keeps one timer.
    pub fn register<K: Serialize + ?Sized>(key: &K, timestamp: i64) -> Result<()> {
        register_raw(&to_msgpack(key)?, timestamp);
        Ok(())
    }

    /// Registers a timer for the encoded key `key` (for example a record's key bytes; may be
    /// empty) at event time `timestamp`.
    pub fn register_raw(key: &[u8], timestamp: i64) {
        #[cfg(target_arch = "wasm32")]
        crate::__bindings::weir::operator::timers::register(key, timestamp);
        #[cfg(not(target_arch = "wasm32"))]
        super::native::with(|host| {
            host.timers.insert((timestamp, key.to_vec()));
        });
    }

    /// Deletes the timer for `key` (encoded as MessagePack) at `timestamp`, if any.
    pub fn delete<K: Serialize + ?Sized>(key: &K, timestamp: i64) -> Result<()> {
        delete_raw(&to_msgpack(key)?, timestamp);
        Ok(())
    }

    /// Deletes the timer for the encoded key `key` at `timestamp`, if any.
    pub fn delete_raw(key: &[u8], timestamp: i64) {
        #[cfg(target_arch = "wasm32")]
        crate::__bindings::weir::operator::timers::delete(key, timestamp);
        #[cfg(not(target_arch = "wasm32"))]
        super::native::with(|host| {
            host.timers.remove(&(timestamp, key.to_vec()));
        });
    }
}

/// Log lines, attributed by the host to the job, operator and subtask. The macros
/// [`trace!`](crate::trace), [`debug!`](crate::debug), [`info!`](crate::info),
/// [`warn!`](crate::warn) and [`error!`](crate::error) format and log in one step.
pub mod logging {
    /// How important a log line is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub enum Level {
        /// Detailed tracing.
        Trace,
        /// Debugging information.
        Debug,
        /// Normal operation.
        Info,
        /// Something unexpected that the operator handled.
        Warn,
        /// A failure. The host attaches the last error line to the job's error if the
        /// instance traps.
        Error,
    }

    /// Writes one log line.
    pub fn log(level: Level, message: &str) {
        #[cfg(target_arch = "wasm32")]
        {
            use crate::__bindings::weir::operator::logging::{Level as L, log};
            let level = match level {
                Level::Trace => L::Trace,
                Level::Debug => L::Debug,
                Level::Info => L::Info,
                Level::Warn => L::Warn,
                Level::Error => L::Error,
            };
            log(level, message);
        }
        #[cfg(not(target_arch = "wasm32"))]
        super::native::with(|host| host.logs.push((level, message.to_owned())));
    }
}

/// Counters that the host exports as metrics of the operator.
pub mod metrics {
    /// Adds `delta` to the counter `name` of this operator instance.
    pub fn counter_add(name: &str, delta: u64) {
        #[cfg(target_arch = "wasm32")]
        crate::__bindings::weir::operator::metrics::counter_add(name, delta);
        #[cfg(not(target_arch = "wasm32"))]
        super::native::with(|host| *host.counters.entry(name.to_owned()).or_default() += delta);
    }
}

/// The host services as seen by code compiled natively: a record of the calls, per thread.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod native {
    use std::cell::RefCell;
    use std::collections::{BTreeMap, BTreeSet};

    use super::logging::Level;

    /// What the operator asked of the host.
    #[derive(Debug, Default)]
    pub(crate) struct NativeHost {
        /// Registered timers, ordered by time then key.
        pub(crate) timers: BTreeSet<(i64, Vec<u8>)>,
        pub(crate) logs: Vec<(Level, String)>,
        pub(crate) counters: BTreeMap<String, u64>,
    }

    thread_local! {
        static HOST: RefCell<NativeHost> = RefCell::new(NativeHost::default());
    }

    pub(crate) fn with<R>(f: impl FnOnce(&mut NativeHost) -> R) -> R {
        HOST.with_borrow_mut(f)
    }
}

/// Logs a formatted line at [`Level::Trace`](logging::Level::Trace).
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::logging::log($crate::logging::Level::Trace, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Debug`](logging::Level::Debug).
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::logging::log($crate::logging::Level::Debug, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Info`](logging::Level::Info).
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::logging::log($crate::logging::Level::Info, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Warn`](logging::Level::Warn).
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::logging::log($crate::logging::Level::Warn, &::std::format!($($arg)+)) };
}

/// Logs a formatted line at [`Level::Error`](logging::Level::Error).
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::logging::log($crate::logging::Level::Error, &::std::format!($($arg)+)) };
}
