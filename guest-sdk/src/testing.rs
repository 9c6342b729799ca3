//! Running an operator natively, in its crate's unit tests (`cargo test`).
//!
//! A [`Harness`] drives an [`Operator`] the way the host does — process, watermarks and the
//! timers they fire, snapshot and restore — with records given as plain byte vectors. Host
//! services are simulated per thread: use one harness per test.
//!
//! ```
//! use weir_guest::testing::{Harness, TestRecord};
//! # use weir_guest::{Operator, Output, Record, Result, States};
//! # #[derive(Default, States)]
//! # struct Double;
//! # impl Operator for Double {
//! #     fn process(&mut self, r: Record<'_>, out: &mut Output) -> Result<()> {
//! #         out.emit_value(&(r.value::<u64>()? * 2), r.timestamp())
//! #     }
//! # }
//! let mut harness = Harness::<Double>::new();
//! harness.open("{}").unwrap();
//! let out = harness.process(&[TestRecord::unkeyed(&21u64, 5)]).unwrap();
//! assert_eq!(out[0].decode_value::<u64>(), 42);
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use weir_flat::{Reader, Writer};

use crate::__bindings::weir::operator::types::{Batch, ChangeKind, StateDelta, StateEntry};
use crate::__private::Instance;
use crate::host::native;
use crate::logging::Level;
use crate::{Context, Operator, Result, to_msgpack};

/// A record as plain bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRecord {
    /// The encoded key; empty for no key.
    pub key: Vec<u8>,
    /// The encoded value.
    pub value: Vec<u8>,
    /// Event time in milliseconds.
    pub timestamp: i64,
}

impl TestRecord {
    /// A record with `key` and `value` encoded as MessagePack.
    ///
    /// # Panics
    /// If either does not encode.
    pub fn keyed<K: Serialize + ?Sized, V: Serialize + ?Sized>(key: &K, value: &V, timestamp: i64) -> Self {
        Self {
            key: to_msgpack(key).expect("key encodes"),
            value: to_msgpack(value).expect("value encodes"),
            timestamp,
        }
    }

    /// A record without a key, with `value` encoded as MessagePack.
    ///
    /// # Panics
    /// If the value does not encode.
    pub fn unkeyed<V: Serialize + ?Sized>(value: &V, timestamp: i64) -> Self {
        Self { key: Vec::new(), value: to_msgpack(value).expect("value encodes"), timestamp }
    }

    /// The key decoded from MessagePack.
    ///
    /// # Panics
    /// If it does not decode as `K`.
    pub fn decode_key<'a, K: Deserialize<'a>>(&'a self) -> K {
        rmp_serde::from_slice(&self.key).expect("the key decodes")
    }

    /// The value decoded from MessagePack.
    ///
    /// # Panics
    /// If it does not decode as `V`.
    pub fn decode_value<'a, V: Deserialize<'a>>(&'a self) -> V {
        rmp_serde::from_slice(&self.value).expect("the value decodes")
    }
}

/// One entry of a snapshot or a restore chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChange {
    /// The state's registered name.
    pub state: String,
    /// The encoded key; empty for a [`ValueState`](crate::ValueState).
    pub key: Vec<u8>,
    /// The encoded value of a put; `None` for a delete.
    pub value: Option<Vec<u8>>,
}

impl StateChange {
    /// The value of a put decoded from MessagePack; `None` for a delete.
    ///
    /// # Panics
    /// If the value does not decode as `V`.
    pub fn decode_value<V: DeserializeOwned>(&self) -> Option<V> {
        self.value.as_ref().map(|v| rmp_serde::from_slice(v).expect("the state value decodes"))
    }
}

/// Drives one operator instance natively. See the [module docs](self).
pub struct Harness<T> {
    instance: Instance<T>,
    /// Number of inputs (from the context it opened with).
    inputs: u32,
    /// Snapshots taken, the id of the last.
    checkpoints: u64,
}

impl<T: Operator + Default> Default for Harness<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Operator + Default> Harness<T> {
    /// A fresh instance, with the simulated host of this thread reset.
    pub fn new() -> Self {
        native::with(|host| *host = native::NativeHost::default());
        Self { instance: Instance::default(), inputs: 1, checkpoints: 0 }
    }

    /// The instance after a failure and a restore from a checkpoint taken now: a fresh
    /// instance restored from a full snapshot of this one, with the host's timers and
    /// watermarks kept (the host checkpoints those). Open it before use, as the host does.
    ///
    /// # Errors
    /// If the snapshot or the restore fails.
    pub fn restart(mut self) -> Result<Self> {
        let saved = self.snapshot(true)?;
        drop(self.instance);
        let mut next =
            Self { instance: Instance::default(), inputs: self.inputs, checkpoints: self.checkpoints };
        next.restore(&saved)?;
        Ok(next)
    }

    /// The operator, to inspect its fields.
    pub fn operator(&mut self) -> &mut T {
        self.instance.operator()
    }

    /// Opens the instance with configuration `config` (JSON text).
    pub fn open(&mut self, config: &str) -> Result<()> {
        self.open_with(&Context::with_config(config))
    }

    /// Opens the instance with `context` (its `inputs` is how many inputs the harness feeds).
    pub fn open_with(&mut self, context: &Context) -> Result<()> {
        self.inputs = context.inputs.max(1);
        native::with(|host| host.input_watermarks.resize(self.inputs as usize, i64::MIN));
        self.instance.open(context)
    }

    /// Processes `records` as one batch on input 0.
    pub fn process(&mut self, records: &[TestRecord]) -> Result<Vec<TestRecord>> {
        self.process_input(0, records)
    }

    /// Processes `records` as one batch on input `input`.
    pub fn process_input(&mut self, input: u32, records: &[TestRecord]) -> Result<Vec<TestRecord>> {
        let out = self.instance.process(input, &batch_of(records))?;
        Ok(records_of(&out))
    }

    /// Advances the watermark of every input to `timestamp`: fires every due timer in time
    /// order (as the host does), then calls `on_watermark`. Returns everything emitted on the
    /// main output. A watermark at or below the current one does nothing.
    pub fn watermark(&mut self, timestamp: i64) -> Result<Vec<TestRecord>> {
        native::with(|host| {
            let n = host.input_watermarks.len().max(self.inputs as usize);
            host.input_watermarks.resize(n, i64::MIN);
            for w in &mut host.input_watermarks {
                *w = (*w).max(timestamp);
            }
        });
        self.advance(timestamp)
    }

    /// Advances the watermark of input `input` alone to `timestamp`; the instance's watermark
    /// (the smallest over its inputs) advances with it when it moves, and fires timers as
    /// [`Harness::watermark`] does. Returns everything emitted on the main output.
    pub fn input_watermark(&mut self, input: u32, timestamp: i64) -> Result<Vec<TestRecord>> {
        let combined = native::with(|host| {
            let n = host.input_watermarks.len().max(self.inputs as usize).max(input as usize + 1);
            host.input_watermarks.resize(n, i64::MIN);
            let w = &mut host.input_watermarks[input as usize];
            *w = (*w).max(timestamp);
            host.input_watermarks.iter().copied().min().unwrap_or(i64::MIN)
        });
        self.advance(combined)
    }

    /// The instance's watermark moves to `timestamp` (if above the current one).
    fn advance(&mut self, timestamp: i64) -> Result<Vec<TestRecord>> {
        if native::with(|host| timestamp <= host.watermark) {
            return Ok(Vec::new());
        }
        native::with(|host| host.watermark = timestamp);
        let mut emitted = Vec::new();
        while let Some((at, key)) = native::with(|host| {
            let due = host.timers.first().filter(|(at, _)| *at <= timestamp).cloned();
            if let Some(due) = &due {
                host.timers.remove(due);
            }
            due
        }) {
            emitted.extend(records_of(&self.instance.on_timer(&key, at)?));
        }
        emitted.extend(records_of(&self.instance.on_watermark(timestamp)?));
        Ok(emitted)
    }

    /// The instance's current watermark, as [`crate::event_time::current_watermark`] reports it.
    pub fn current_watermark(&self) -> i64 {
        native::with(|host| host.watermark)
    }

    /// Takes the records emitted on side outputs so far, with their output's name.
    pub fn take_side_outputs(&mut self) -> Vec<(String, TestRecord)> {
        native::with(|host| std::mem::take(&mut host.side_outputs))
            .into_iter()
            .map(|(name, key, value, timestamp)| (name, TestRecord { key, value, timestamp }))
            .collect()
    }

    /// Fires the timer of the encoded key `key` at `timestamp` directly.
    pub fn fire_timer(&mut self, key: &[u8], timestamp: i64) -> Result<Vec<TestRecord>> {
        native::with(|host| host.timers.remove(&(timestamp, key.to_vec())));
        Ok(records_of(&self.instance.on_timer(key, timestamp)?))
    }

    /// The registered timers, as (time, encoded key), in time order.
    pub fn timers(&self) -> Vec<(i64, Vec<u8>)> {
        native::with(|host| host.timers.iter().cloned().collect())
    }

    /// The value of metrics counter `name` (0 if never added to).
    pub fn counter(&self, name: &str) -> u64 {
        native::with(|host| host.counters.get(name).copied().unwrap_or(0))
    }

    /// The lines logged so far.
    pub fn logs(&self) -> Vec<(Level, String)> {
        native::with(|host| host.logs.clone())
    }

    /// Takes a snapshot: the changes since the last one, or every live entry when `full`.
    /// Taken in parts of [`PART_BYTES`](crate::PART_BYTES), as Weir's host takes it, and
    /// joined.
    pub fn snapshot(&mut self, full: bool) -> Result<Vec<StateChange>> {
        Ok(self.snapshot_parts(full, crate::PART_BYTES)?.concat())
    }

    /// Takes a snapshot in parts of about `part_bytes` of keys and values (16 bytes per
    /// entry counted too) and returns the parts: every part but the last holds at least one
    /// entry and ends at the first entry that reaches `part_bytes`.
    pub fn snapshot_parts(&mut self, full: bool, part_bytes: usize) -> Result<Vec<Vec<StateChange>>> {
        self.checkpoints += 1;
        let mut parts = Vec::new();
        loop {
            let (delta, last) = self.instance.snapshot_part(self.checkpoints, full, part_bytes)?;
            parts.push(changes_of(&delta));
            if last {
                return Ok(parts);
            }
        }
    }

    /// Takes a snapshot in one call (`operator.snapshot`, which a host without
    /// `chunked-snapshot` calls): the same changes as [`Harness::snapshot`].
    pub fn snapshot_whole(&mut self, full: bool) -> Result<Vec<StateChange>> {
        self.checkpoints += 1;
        Ok(changes_of(&self.instance.snapshot(full)?))
    }

    /// Restores one chunk of saved entries written by this operator's own state schema
    /// version, [`Operator::STATE_VERSION`] (call before [`Harness::open`]).
    pub fn restore(&mut self, changes: &[StateChange]) -> Result<()> {
        self.restore_version(T::STATE_VERSION, changes)
    }

    /// Restores one chunk of saved entries written by an operator of state schema version
    /// `state_version`, as the host does (call before [`Harness::open`]): the operator's
    /// own version restores them as they are, a version in [`Operator::MIGRATES_FROM`]
    /// migrates them with [`Operator::migrate`], any other fails with
    /// [`Error::InvalidState`](crate::Error::InvalidState).
    pub fn restore_version(&mut self, state_version: u32, changes: &[StateChange]) -> Result<()> {
        self.instance.restore(state_version, &delta_of(changes))
    }
}

/// Encodes `records` as a flat batch.
pub(crate) fn batch_of(records: &[TestRecord]) -> Batch {
    let mut batch = Batch { data: Vec::new(), entries: Vec::with_capacity(records.len()) };
    let mut writer = Writer::new(&mut batch.data, &mut batch.entries);
    for r in records {
        writer.push(&r.key, &r.value, r.timestamp);
    }
    batch
}

/// Splits a flat batch into records.
///
/// # Panics
/// If the batch's entries do not match its data.
pub(crate) fn records_of(batch: &Batch) -> Vec<TestRecord> {
    if let Err(e) = weir_flat::validate(&batch.data, &batch.entries) {
        panic!("the output batch is not flat: {e}");
    }
    Reader::new(&batch.data, &batch.entries)
        .map(|read| {
            let (key, value, entry) = read.expect("validated");
            TestRecord { key: key.to_vec(), value: value.to_vec(), timestamp: entry.timestamp }
        })
        .collect()
}

/// Splits a state delta into changes.
///
/// # Panics
/// If the delta's entries do not match its data or names.
pub(crate) fn changes_of(delta: &StateDelta) -> Vec<StateChange> {
    if let Err(e) = weir_flat::validate(&delta.data, &delta.entries) {
        panic!("the state delta is not flat: {e}");
    }
    Reader::new(&delta.data, &delta.entries)
        .map(|read| {
            let (key, value, entry) = read.expect("validated");
            StateChange {
                state: delta.names[entry.state as usize].clone(),
                key: key.to_vec(),
                value: match entry.kind {
                    ChangeKind::Put => Some(value.to_vec()),
                    ChangeKind::Delete => None,
                },
            }
        })
        .collect()
}

/// Encodes changes as a state delta, naming each state once.
pub(crate) fn delta_of(changes: &[StateChange]) -> StateDelta {
    let mut delta = StateDelta { names: Vec::new(), data: Vec::new(), entries: Vec::new() };
    for c in changes {
        let state = match delta.names.iter().position(|n| *n == c.state) {
            Some(i) => i,
            None => {
                delta.names.push(c.state.clone());
                delta.names.len() - 1
            }
        };
        delta.data.extend_from_slice(&c.key);
        let value = c.value.as_deref().unwrap_or_default();
        delta.data.extend_from_slice(value);
        delta.entries.push(StateEntry {
            state: state as u32,
            kind: if c.value.is_some() { ChangeKind::Put } else { ChangeKind::Delete },
            key_len: c.key.len() as u32,
            value_len: value.len() as u32,
        });
    }
    delta
}
