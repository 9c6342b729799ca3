//! Services of the host: timers, event time, side outputs, logging and metrics.
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

/// Event time as the host sees it for this instance: its input watermarks.
///
/// The host sets them before each call; the SDK reads each at most once per call (the
/// answers cannot change during a call), so asking per record costs no host call.
pub mod event_time {
    use std::cell::Cell;

    thread_local! {
        static CURRENT: Cell<Option<i64>> = const { Cell::new(None) };
        static INPUTS: Cell<[Option<i64>; 4]> = const { Cell::new([None; 4]) };
    }

    /// Forgets the answers of the previous call (the SDK calls it as each call begins).
    pub(crate) fn invalidate() {
        CURRENT.set(None);
        INPUTS.set([None; 4]);
    }

    /// The instance's input watermark: the smallest over its inputs. Every timer at or before
    /// it has fired, or fires in this round of [`Operator::on_timer`](crate::Operator::on_timer)
    /// calls. `i64::MIN` before the first watermark. After a restore from a checkpoint it is
    /// the watermark the instance had then, from [`Operator::open`](crate::Operator::open) on.
    /// A record with a timestamp at or below it is late: its input promised no more of those.
    pub fn current_watermark() -> i64 {
        if let Some(w) = CURRENT.get() {
            return w;
        }
        #[cfg(target_arch = "wasm32")]
        let w = crate::__bindings::weir::operator::event_time::current_watermark();
        #[cfg(not(target_arch = "wasm32"))]
        let w = super::native::with(|host| host.watermark);
        CURRENT.set(Some(w));
        w
    }

    /// The watermark of input `input` alone (see [`Record::input`](crate::Record::input));
    /// `i64::MIN` for an input the operator does not have.
    pub fn input_watermark(input: u32) -> i64 {
        let i = input as usize;
        let mut cached = INPUTS.get();
        if let Some(Some(w)) = cached.get(i) {
            return *w;
        }
        #[cfg(target_arch = "wasm32")]
        let w = crate::__bindings::weir::operator::event_time::input_watermark(input);
        #[cfg(not(target_arch = "wasm32"))]
        let w = super::native::with(|host| host.input_watermarks.get(i).copied().unwrap_or(i64::MIN));
        if i < cached.len() {
            cached[i] = Some(w);
            INPUTS.set(cached);
        }
        w
    }
}

/// Side outputs: records sent on a named output instead of the main one (late records of a
/// window, say). A job routes them with edges that name the output (`"output": "late"`);
/// records on a name no edge carries are dropped and counted by the host.
pub mod side_output {
    use serde::Serialize;

    use crate::Result;
    use crate::codec::to_msgpack;

    /// Emits a record with `key` and `value` encoded as MessagePack on side output `name`.
    pub fn emit<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        name: &str,
        key: &K,
        value: &V,
        timestamp: i64,
    ) -> Result<()> {
        emit_raw(name, &to_msgpack(key)?, &to_msgpack(value)?, timestamp);
        Ok(())
    }

    /// Emits a record of already encoded key and value bytes on side output `name` (for
    /// example an input record as it came).
    pub fn emit_raw(name: &str, key: &[u8], value: &[u8], timestamp: i64) {
        #[cfg(target_arch = "wasm32")]
        crate::__bindings::weir::operator::side_output::emit(name, key, value, timestamp);
        #[cfg(not(target_arch = "wasm32"))]
        super::native::with(|host| {
            host.side_outputs.push((name.to_owned(), key.to_vec(), value.to_vec(), timestamp))
        });
    }
}

/// Dead letters: a record the operator will not process, sent with a reason to the job's
/// dead-letter destination (the spec's `dead_letter`), which keeps it with the job, node and
/// subtask, the time and the reason. Without a destination the record is dropped. Either
/// way the host counts them (`weir_dead_letters_total`, or `weir_dropped_records_total`
/// without a destination) and holds them to the job's `max_dead_letters_per_minute`.
pub mod dead_letter {
    /// The side output the host reads dead letters from.
    pub const OUTPUT: &str = "dead-letter";

    /// Sends `record` (as it came: its key, value and event time) to the dead letters with
    /// `reason`.
    pub fn send(record: &crate::Record<'_>, reason: &str) {
        send_raw(record.key_bytes(), record.value_bytes(), record.timestamp(), reason);
    }

    /// Sends a record of already encoded key and value bytes to the dead letters with `reason`.
    pub fn send_raw(key: &[u8], value: &[u8], timestamp: i64, reason: &str) {
        // `[reason, key, value]`, as the host reads it.
        let mut out = Vec::with_capacity(16 + reason.len() + key.len() + value.len());
        out.push(0x93);
        push_str(&mut out, reason.as_bytes());
        push_bin(&mut out, key);
        push_bin(&mut out, value);
        super::side_output::emit_raw(OUTPUT, &[], &out, timestamp);
    }

    fn push_str(out: &mut Vec<u8>, s: &[u8]) {
        let n = s.len();
        match n {
            0..=31 => out.push(0xa0 | n as u8),
            32..=0xff => out.extend_from_slice(&[0xd9, n as u8]),
            0x100..=0xffff => {
                out.push(0xda);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            _ => {
                out.push(0xdb);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
        }
        out.extend_from_slice(s);
    }

    fn push_bin(out: &mut Vec<u8>, b: &[u8]) {
        let n = b.len();
        match n {
            0..=0xff => out.extend_from_slice(&[0xc4, n as u8]),
            0x100..=0xffff => {
                out.push(0xc5);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            _ => {
                out.push(0xc6);
                out.extend_from_slice(&(n as u32).to_be_bytes());
            }
        }
        out.extend_from_slice(b);
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
pub(crate) mod native;

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
