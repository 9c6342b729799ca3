//! A test component for the engine: a pass-through operator over u64 values that fails on
//! demand, so that tests can exercise traps, errors, timeouts and memory limits.
//!
//! Config (JSON, every field optional): when a record's value equals
//! - `panic_at`: panics with "poison record {n}";
//! - `error_at`: returns `error::other("refused record {n}")`;
//! - `loop_at`: spins forever;
//! - `sleep_at`: sleeps for an hour (waits in `wasi:io/poll`, using no CPU);
//! - `socket_at`: tries to open a TCP connection to 127.0.0.1:9;
//! - `timers_at`: registers `timer_count` timers (default 2,000,000) with 1 KiB keys;
//! - `alloc_at`: allocates memory without bound;
//! - `stack_at`: recurses without bound;
//! - `side_at`: emits the record `flood_records` times on side output `side` (default
//!   `late`), or once on each of `side_names` outputs `s0`, `s1`, … when that is given;
//! - `flood_at`: emits the record `flood_records` times (default 5,000,000: about 85 MB of
//!   output, past the default per-call output limit of 64 MiB, in less than the default
//!   512 MiB of guest memory);
//! - `storm_at`: registers `timer_count` timers (keys 0, 1, … as MessagePack u64) at the
//!   record's event time. Each timer that fires emits `storm_records` records (value 0, at
//!   the timer's time; default 1) and, with `storm_rearm: true`, registers itself again at
//!   the same time (already due: a timer storm that would never end if fired at once).
//!
//! With `work: n` every record costs `n` rounds of busy work (a slow operator downstream).
//!
//! With `tag_input: true` each output record's key is its input index (MessagePack u32).
//! With `endless_snapshot: true` a snapshot in parts (`snapshot-part`) never ends: the state
//! "endless" fills every part with entries and is never done.
//!
//! A value that is not a u64 fails with the SDK's `invalid-input` error. The keyed state
//! "seen" counts every value (key = the value, MessagePack u64).

use std::hint::black_box;

use serde::Deserialize;
use weir_guest::{
    Context, DeltaWriter, Error, KeyedState, Operator, Output, Record, Result, StateStore, States,
};

/// Which values make the operator fail, and how.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    panic_at: Option<u64>,
    error_at: Option<u64>,
    loop_at: Option<u64>,
    sleep_at: Option<u64>,
    socket_at: Option<u64>,
    timers_at: Option<u64>,
    timer_count: Option<u64>,
    alloc_at: Option<u64>,
    stack_at: Option<u64>,
    flood_at: Option<u64>,
    flood_records: Option<u64>,
    side_at: Option<u64>,
    side: Option<String>,
    side_names: Option<u64>,
    storm_at: Option<u64>,
    storm_records: Option<u64>,
    storm_rearm: bool,
    work: Option<u64>,
    tag_input: bool,
    endless_snapshot: bool,
}

/// Records `flood_at` emits unless `flood_records` says otherwise.
const FLOOD_RECORDS: u64 = 5_000_000;

/// The faulty operator.
#[derive(Default, States)]
pub struct Faulty {
    config: Config,
    seen: KeyedState<u64, u64>,
    #[state]
    endless: Endless,
}

/// A state whose snapshot in parts never ends when `on` (a guest that never says `last`).
#[derive(Default)]
struct Endless {
    on: bool,
}

impl StateStore for Endless {
    fn snapshot(&mut self, _full: bool, _delta: &mut DeltaWriter<'_>) -> Result<()> {
        Ok(())
    }

    fn snapshot_part(&mut self, _full: bool, delta: &mut DeltaWriter<'_>) -> Result<bool> {
        if self.on {
            delta.put(&[], &0u64)?;
        }
        Ok(!self.on)
    }

    fn restore(&mut self, _key: &[u8], _value: Option<&[u8]>) -> Result<()> {
        Ok(())
    }
}

impl Operator for Faulty {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.config = context.config()?;
        self.endless.on = self.config.endless_snapshot;
        Ok(())
    }

    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        let n: u64 = record.value()?;
        let c = &self.config;
        if c.panic_at == Some(n) {
            panic!("poison record {n}");
        }
        if c.error_at == Some(n) {
            return Err(Error::other(format!("refused record {n}")));
        }
        if c.loop_at == Some(n) {
            spin();
        }
        if c.sleep_at == Some(n) {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
        if c.socket_at == Some(n) {
            // Whatever the host allows, the operator reports it: a connection it should not
            // have is an error the test sees.
            if let Ok(stream) = std::net::TcpStream::connect("127.0.0.1:9") {
                return Err(Error::other(format!("a socket was opened: {stream:?}")));
            }
            return Err(Error::other("socket refused".to_string()));
        }
        if c.timers_at == Some(n) {
            let mut key = vec![0u8; 1024];
            for i in 0..c.timer_count.unwrap_or(2_000_000) {
                key[..8].copy_from_slice(&i.to_le_bytes());
                weir_guest::timers::register_raw(&key, i64::MAX - 1);
            }
        }
        if c.storm_at == Some(n) {
            for i in 0..c.timer_count.unwrap_or(2_000_000) {
                weir_guest::timers::register(&i, record.timestamp())?;
            }
        }
        if let Some(rounds) = c.work {
            let mut x = n;
            for _ in 0..rounds {
                x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        if c.alloc_at == Some(n) {
            hog_memory();
        }
        if c.stack_at == Some(n) {
            black_box(recurse(n));
        }
        if c.side_at == Some(n) {
            let (key, value, ts) = (record.key_bytes(), record.value_bytes(), record.timestamp());
            match c.side_names {
                Some(names) => {
                    for i in 0..names {
                        weir_guest::side_output::emit_raw(&format!("s{i}"), key, value, ts);
                    }
                }
                None => {
                    let name = c.side.as_deref().unwrap_or("late");
                    for _ in 0..c.flood_records.unwrap_or(FLOOD_RECORDS) {
                        weir_guest::side_output::emit_raw(name, key, value, ts);
                    }
                }
            }
        }
        if c.flood_at == Some(n) {
            for _ in 0..c.flood_records.unwrap_or(FLOOD_RECORDS) {
                out.forward(&record);
            }
        }
        *self.seen.get_or_insert_with(&n, || 0) += 1;
        if c.tag_input {
            out.emit(&record.input(), &n, record.timestamp())?;
        } else {
            out.forward(&record);
        }
        Ok(())
    }

    fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
        for _ in 0..self.config.storm_records.unwrap_or(1) {
            out.emit_value(&0u64, timestamp)?;
        }
        if self.config.storm_rearm {
            weir_guest::timers::register_raw(key, timestamp);
        }
        Ok(())
    }
}

weir_guest::export_operator!(Faulty, name = "faulty");

/// Loops forever; `black_box` keeps the compiler from removing the loop.
fn spin() -> ! {
    let mut i = 0u64;
    loop {
        i = black_box(i.wrapping_add(1));
    }
}

/// Grows memory, touching every page, until allocation fails or the host stops the call.
fn hog_memory() {
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk = Vec::with_capacity(1 << 20);
        chunk.resize(1 << 20, 1u8);
        chunks.push(black_box(chunk));
        if black_box(chunks.len()) == usize::MAX {
            break;
        }
    }
}

/// Recurses until the stack overflows; the frame holds data that the compiler must keep.
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 32]);
    if black_box(depth) == u64::MAX {
        return frame[0];
    }
    recurse(depth + 1).wrapping_add(frame[31])
}

#[cfg(test)]
mod tests {
    use weir_guest::testing::{Harness, TestRecord};

    use super::*;

    #[test]
    fn passes_values_through_and_counts_them() {
        let mut h = Harness::<Faulty>::new();
        h.open(r#"{"error_at": 3}"#).unwrap();
        let input = [TestRecord::unkeyed(&1u64, 0), TestRecord::unkeyed(&1u64, 1)];
        assert_eq!(h.process(&input).unwrap(), input);
        let saved = h.snapshot(false).unwrap();
        assert_eq!(saved.len(), 1);
        assert_eq!((saved[0].state.as_str(), saved[0].decode_value::<u64>()), ("seen", Some(2)));
    }

    #[test]
    fn errors_on_demand_and_on_bad_input() {
        let mut h = Harness::<Faulty>::new();
        h.open(r#"{"error_at": 3}"#).unwrap();
        let err = h.process(&[TestRecord::unkeyed(&3u64, 0)]).unwrap_err();
        assert_eq!(err, Error::other("refused record 3"));
        let err = h.process(&[TestRecord::unkeyed("x", 0)]).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)));
        assert!(matches!(Harness::<Faulty>::new().open(r#"{"nope": 1}"#), Err(Error::InvalidConfig(_))));
    }

    #[test]
    fn floods_on_demand() {
        let mut h = Harness::<Faulty>::new();
        h.open(r#"{"flood_at": 2, "flood_records": 1000}"#).unwrap();
        let out = h.process(&[TestRecord::unkeyed(&1u64, 0), TestRecord::unkeyed(&2u64, 1)]).unwrap();
        assert_eq!(out.len(), 1 + 1000 + 1);
    }

    #[test]
    #[should_panic(expected = "poison record 7")]
    fn panics_on_demand() {
        let mut h = Harness::<Faulty>::new();
        h.open(r#"{"panic_at": 7}"#).unwrap();
        let _ = h.process(&[TestRecord::unkeyed(&7u64, 0)]);
    }
}
