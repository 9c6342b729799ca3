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
//! - `panic_after_snapshots`: panic at the first record after this many snapshots, unless
//!   the instance was restored from a checkpoint (a guest trap that recovery must survive).

use serde::{Deserialize, Serialize};
use weir_guest::{
    Context, Error, KeyedState, Operator, Output, RawKey, Record, Result, StateRegistry, States,
};

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    out_keys: Option<u64>,
    reset_at: Option<u64>,
    pad: usize,
    panic_after_snapshots: Option<u64>,
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
}

// Written by hand rather than derived: it also counts the calls (one per snapshot after
// `open`), for `panic_after_snapshots`.
impl States for Counter {
    fn states<'a>(&'a mut self, registry: &mut StateRegistry<'a>) {
        self.snapshots += 1;
        registry.register("counts", &mut self.counts);
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
        let entry = self.counts.get_or_insert_with_raw(key, || Count { count: 0, pad: "x".repeat(pad) });
        entry.count += 1;
        let count = entry.count;
        if self.config.reset_at == Some(count) {
            self.counts.remove_raw(key);
        }
        match self.config.out_keys {
            Some(k) => out.emit(&(id % k), &[id, count], record.timestamp()),
            None => out.emit_with_key_bytes(record.key_bytes(), &[id, count], record.timestamp()),
        }
    }
}

weir_guest::export_operator!(Counter, name = "counter");
