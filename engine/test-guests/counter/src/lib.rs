//! A test component for checkpoints and recovery: a keyed running counter.
//!
//! Input: records whose value is a u64 id, or an array whose first element is the id. The
//! keyed state "counts" holds, per record key, how many records of that key were seen; with
//! `reset_at: n` a key whose count reaches `n` is deleted (so snapshots carry deletes). Each
//! record is emitted with value `[id, count]` (the count after this record, before any reset)
//! and key `id % out_keys` (u64) when `out_keys` is set, else the input key.
//!
//! Being order-independent per key, the multiset of `(key, count)` outputs and the final
//! state are the same in every run over the same input, whatever the interleaving.
//!
//! Config (JSON, every field optional):
//! - `out_keys`: re-key the output by `id % out_keys`;
//! - `reset_at`: delete a key's state when its count reaches this;
//! - `pad`: store this many extra bytes with each count (state-size benchmarks);
//! - `fill`: at `open`, unless restored, create this many keys of the instance's key groups
//!   with count 0 (and `pad`), without input: a large guest-memory state at once. The keys
//!   are the u64 ids from 0 on whose key group the instance owns;
//! - `backend`: `"guest"` (default) keeps the counts in guest memory (`KeyedState`, state
//!   "counts"), `"host"` on the host's local disk (`HostKeyedState`, host state
//!   "host_counts"): the same operator with its state on either backend. (With `"host"`, the
//!   SDK also calls `states` around every batch, so `panic_after_snapshots` counts those.)
//! - `poison_every: n`: the record of id `n·k − 1` breaks the operator after it was counted,
//!   as `poison` says: `"panic"` (default), `"error"` (returns an error) or `"alloc"`
//!   (allocates without bound, past the memory limit);
//! - `dead_letter_every: n`: the record of id `n·k − 1` is counted and then sent to the dead
//!   letters by the operator itself (the SDK's `dead_letter::send`), not emitted;
//! - `log_levels: true`: each record logs `record {id} at {level}` at every level, trace to
//!   error, prints `record {id} on stdout` and adds 1 to its counter `records_logged`;
//! - `log_flood: n`: each record also logs `n` lines of 1 KiB (odd ones at info, even ones
//!   on stdout), and `counter_flood: n` adds 1 to `n` counters `flood_0`, … (a guest that
//!   logs and names counters without bound);
//! - `panic_after_snapshots`: panic at the first record after this many snapshots, unless
//!   the instance was restored from a checkpoint (a guest trap that recovery must survive).
//!   It counts `states` calls, one per part of a snapshot in parts (one part holds ~4 MiB).

use serde::{Deserialize, Serialize};
use weir_guest::{
    Context, Error, HostKeyedState, KeyedState, Operator, Output, RawKey, Record, Result, StateRegistry,
    States,
};

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    out_keys: Option<u64>,
    reset_at: Option<u64>,
    pad: usize,
    panic_after_snapshots: Option<u64>,
    backend: Backend,
    fill: u64,
    poison_every: Option<u64>,
    poison: Poison,
    dead_letter_every: Option<u64>,
    log_levels: bool,
    log_flood: usize,
    counter_flood: usize,
}

/// How a poison record breaks the operator (after it counted the record: its state must
/// be rolled back).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Poison {
    #[default]
    Panic,
    Error,
    Alloc,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Backend {
    #[default]
    Guest,
    Host,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Count {
    count: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pad: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Input {
    Id(u64),
    Tuple(Vec<u64>),
}

/// The counter operator.
#[derive(Default)]
pub struct Counter {
    config: Config,
    restored: bool,
    snapshots: u64,
    counts: KeyedState<RawKey, Count>,
    host_counts: HostKeyedState<RawKey, Count>,
}

// Written by hand rather than derived: it also counts the calls (one per snapshot after
// `open`), for `panic_after_snapshots`.
impl States for Counter {
    fn states<'a>(&'a mut self, registry: &mut StateRegistry<'a>) {
        self.snapshots += 1;
        registry.register("counts", &mut self.counts).register("host_counts", &mut self.host_counts);
    }
}

impl Operator for Counter {
    fn open(&mut self, context: &Context) -> Result<()> {
        self.config = context.config()?;
        if self.config.out_keys == Some(0) {
            return Err(Error::invalid_config("out_keys must be at least 1"));
        }
        self.restored = context.restored;
        // `states` ran for every restore chunk; count only snapshots taken from now on.
        self.snapshots = 0;
        if !self.restored {
            self.fill(context);
        }
        Ok(())
    }

    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        if let Some(n) = self.config.panic_after_snapshots
            && !self.restored
            && self.snapshots >= n
        {
            panic!("counter: injected panic after {} snapshots", self.snapshots);
        }
        let id = match record.value::<Input>()? {
            Input::Id(id) => id,
            Input::Tuple(v) => *v.first().ok_or_else(|| Error::invalid_input("empty tuple"))?,
        };
        let key = record.key_bytes();
        let pad = self.config.pad;
        let new = || Count { count: 0, pad: "x".repeat(pad) };
        let count = match self.config.backend {
            Backend::Guest => {
                let entry = self.counts.get_or_insert_with_raw(key, new);
                entry.count += 1;
                let count = entry.count;
                if self.config.reset_at == Some(count) {
                    self.counts.remove_raw(key);
                }
                count
            }
            Backend::Host => {
                let entry = self.host_counts.get_or_insert_with_raw(key, new);
                entry.count += 1;
                let count = entry.count;
                if self.config.reset_at == Some(count) {
                    self.host_counts.remove_raw(key);
                }
                count
            }
        };
        if self.config.log_levels {
            weir_guest::trace!("record {id} at trace");
            weir_guest::debug!("record {id} at debug");
            weir_guest::info!("record {id} at info");
            weir_guest::warn!("record {id} at warn");
            weir_guest::error!("record {id} at error");
            println!("record {id} on stdout");
            weir_guest::metrics::counter_add("records_logged", 1);
        }
        for i in 0..self.config.log_flood {
            let line = format!("flood {id}.{i} {}", "x".repeat(1000));
            if i % 2 == 1 {
                weir_guest::info!("{line}");
            } else {
                println!("{line}");
            }
        }
        for i in 0..self.config.counter_flood {
            weir_guest::metrics::counter_add(&format!("flood_{i}"), 1);
        }
        if let Some(every) = self.config.poison_every
            && id % every == every - 1
        {
            match self.config.poison {
                Poison::Panic => panic!("counter: poison record {id}"),
                Poison::Error => return Err(Error::other(format!("counter: refused record {id}"))),
                Poison::Alloc => {
                    let mut hoard: Vec<Vec<u8>> = Vec::new();
                    loop {
                        hoard.push(vec![1u8; 1 << 20]);
                        std::hint::black_box(&hoard);
                    }
                }
            }
        }
        if let Some(every) = self.config.dead_letter_every
            && id % every == every - 1
        {
            weir_guest::dead_letter::send(&record, &format!("counter: record {id} sent away"));
            return Ok(());
        }
        match self.config.out_keys {
            Some(k) => out.emit(&(id % k), &[id, count], record.timestamp()),
            None => out.emit_with_key_bytes(record.key_bytes(), &[id, count], record.timestamp()),
        }
    }
}

impl Counter {
    /// Creates `fill` keys with count 0: the u64 ids from 0 on that fall in the instance's
    /// key groups (the host's `key_group`: XXH3-64 of the key bytes modulo the key groups).
    fn fill(&mut self, context: &Context) {
        let owned = context.key_group_start..context.key_group_end;
        let groups = u64::from(context.max_parallelism.max(1));
        let (mut made, mut id) = (0, 0u64);
        while made < self.config.fill {
            let key = weir_guest::to_msgpack(&id).expect("a u64 encodes");
            id += 1;
            if !owned.contains(&((xxhash_rust::xxh3::xxh3_64(&key) % groups) as u32)) {
                continue;
            }
            self.counts.insert_raw(&key, Count { count: 0, pad: "x".repeat(self.config.pad) });
            made += 1;
        }
    }
}

weir_guest::export_operator!(Counter, name = "counter");
