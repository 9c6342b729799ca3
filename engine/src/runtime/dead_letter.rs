//! Records taken out of the stream (`on_error: drop | skip | dead_letter`, issue 41): what a
//! subtask does with them ([`DeadLetters`]: counted per node and reason, held to the job's
//! `max_dead_letters_per_minute`, sent as dead letters on the `dead-letter` side output,
//! which the dead-letter sink commits with the checkpoints like any sink's input),
//! how an operator takes out a record that breaks it ([`OperatorGuard`]), and what the job
//! keeps across its attempts ([`DeadLetterBook`]).
//!
//! A record that breaks an operator is identified by the checkpoint its state was restored
//! from, its input port, the hash of its content (key, value, event time) and which record of
//! that content on that input since the checkpoint it is (the occurrence). Replayed from the
//! same checkpoint, the same records arrive on the same input, so that identity survives a
//! replay however the upstream channels interleave. docs/design.md §6 says more.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::channel::Closed;
use crate::connectors::{Origin, Rejected};
use crate::guest::GuestError;
use crate::plan::OnError;
use crate::record::Batch;

/// The window `max_dead_letters_per_minute` counts over.
const MINUTE: Duration = Duration::from_secs(60);

/// Why records could not be taken out.
#[derive(Debug, thiserror::Error)]
pub enum TakeOutError {
    /// More than the job's `max_dead_letters_per_minute` in the last minute.
    #[error("{count} records taken out within a minute, more than {limit}")]
    Limit {
        /// Records taken out in the last minute.
        count: u64,
        /// The limit.
        limit: u64,
        /// The last one's error.
        last: String,
        /// The records could not be read (a source), rather than processed (an operator).
        unreadable: bool,
    },
    /// The dead-letter channel closed (a consequence of another failure).
    #[error(transparent)]
    Closed(#[from] Closed),
}

/// What one job keeps about the records it took out, across its attempts: counts for its
/// metrics, and the operators' poison records with the subtasks to replay record by record.
#[derive(Debug, Default)]
pub struct DeadLetterBook {
    counts: Mutex<BTreeMap<(String, String, &'static str), u64>>,
    poison: Mutex<PoisonBook>,
}

/// Operators' records found to break them, and the subtasks whose next attempt replays its
/// input record by record to find one.
#[derive(Debug, Default)]
struct PoisonBook {
    careful: BTreeSet<(String, u32)>,
    known: Vec<Poison>,
    /// When each operator took out or suspected a record, for the per-minute limit.
    recent: HashMap<String, VecDeque<Instant>>,
}

/// A record that broke an operator subtask, found by a replay from `record`'s checkpoint.
#[derive(Debug, Clone)]
pub(crate) struct Poison {
    node: String,
    subtask: u32,
    hash: u64,
    record: Rejected,
}

impl DeadLetterBook {
    /// Counts `n` records of `node` taken out for `reason` (`action`: `dead_letter`, `drop`
    /// or `skip`).
    fn count(&self, node: &str, reason: &str, action: &'static str, n: u64) {
        if let Ok(mut counts) = self.counts.lock() {
            *counts.entry((node.to_string(), reason.to_string(), action)).or_default() += n;
        }
    }

    /// Records taken out since the job started: (node, reason, action) → count.
    pub fn counts(&self) -> BTreeMap<(String, String, &'static str), u64> {
        self.counts.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// An operator subtask failed on a batch: its next attempt replays record by record.
    /// Counts against the node's limit; `Err` (the count) when over it.
    pub(crate) fn suspect(&self, node: &str, subtask: u32, limit: u64) -> Result<(), u64> {
        let mut book = self.poison.lock().map_err(|_| 0u64)?;
        book.careful.insert((node.to_string(), subtask));
        book.charge(node, limit)
    }

    /// A replay found the record that broke an operator subtask: the next attempts from the
    /// same checkpoint take it out. Ends that subtask's record-by-record replay.
    pub(crate) fn found(
        &self,
        node: &str,
        subtask: u32,
        hash: u64,
        record: Rejected,
        limit: u64,
    ) -> Result<(), u64> {
        let mut book = self.poison.lock().map_err(|_| 0u64)?;
        book.careful.remove(&(node.to_string(), subtask));
        book.known.push(Poison { node: node.to_string(), subtask, hash, record });
        book.charge(node, limit)
    }

    /// Forgets the poison records of checkpoints older than `checkpoint` (the one restored
    /// next): records before it are never replayed again.
    pub(crate) fn restoring(&self, checkpoint: u64) {
        if let Ok(mut book) = self.poison.lock() {
            book.known.retain(|p| poison_checkpoint(&p.record) >= checkpoint);
        }
    }

    /// What subtask `subtask` of `node`, restored from `checkpoint`, takes out, and whether it
    /// replays record by record.
    fn for_subtask(&self, node: &str, subtask: u32, checkpoint: u64) -> (Vec<Poison>, bool) {
        let Ok(book) = self.poison.lock() else { return (Vec::new(), false) };
        let known = book
            .known
            .iter()
            .filter(|p| p.node == node && p.subtask == subtask && poison_checkpoint(&p.record) == checkpoint)
            .cloned()
            .collect();
        (known, book.careful.contains(&(node.to_string(), subtask)))
    }
}

impl PoisonBook {
    fn charge(&mut self, node: &str, limit: u64) -> Result<(), u64> {
        let now = Instant::now();
        let recent = self.recent.entry(node.to_string()).or_default();
        recent.push_back(now);
        while recent.front().is_some_and(|t| now.duration_since(*t) > MINUTE) {
            recent.pop_front();
        }
        let count = recent.len() as u64;
        if count > limit { Err(count) } else { Ok(()) }
    }
}

fn poison_checkpoint(record: &Rejected) -> u64 {
    match record.origin {
        Origin::Operator { checkpoint, .. } => checkpoint,
        _ => 0,
    }
}

/// What one subtask does with the records it takes out: counts them (per node and reason,
/// and within the last minute against the limit) and, by its node's policy, sends them to
/// the dead letters or just drops them.
#[derive(Debug)]
pub(crate) struct DeadLetters {
    job: String,
    node: String,
    subtask: u32,
    policy: OnError,
    limit: u64,
    /// The job has a dead-letter destination (without one, dead letters are dropped).
    destination: bool,
    recent: VecDeque<(Instant, u64)>,
    in_minute: u64,
    book: Option<Arc<DeadLetterBook>>,
}

impl DeadLetters {
    /// The dead letters of subtask `subtask` of `node` in job `job`, with the node's policy
    /// and the job's per-minute limit; `book` counts them for the job's metrics.
    pub(crate) fn new(
        job: &str,
        node: &str,
        subtask: u32,
        policy: OnError,
        limit: u64,
        book: Option<Arc<DeadLetterBook>>,
    ) -> Self {
        DeadLetters {
            job: job.to_string(),
            node: node.to_string(),
            subtask,
            policy,
            limit,
            destination: true,
            recent: VecDeque::new(),
            in_minute: 0,
            book,
        }
    }

    /// The job has no dead-letter destination: what would go there is dropped (and
    /// counted as dropped).
    pub(crate) fn without_destination(mut self) -> Self {
        self.destination = false;
        self
    }

    /// The node's policy.
    pub(crate) fn policy(&self) -> OnError {
        self.policy
    }

    /// Takes `rejected` out of the stream: counted and held to the limit. Returns the dead
    /// letters to route (policy `dead_letter`, or sent by the guest itself).
    pub(crate) fn take_out(&mut self, rejected: Vec<Rejected>) -> Result<Batch, TakeOutError> {
        let Some(last) = rejected.last() else { return Ok(Batch::empty()) };
        let last = last.error.clone();
        let unreadable =
            !rejected.iter().any(|r| matches!(r.origin, Origin::Operator { .. } | Origin::Guest));
        self.charge(rejected.len() as u64, last, unreadable)?;
        let now = crate::clock::unix_ms();
        let mut batch = Batch::empty();
        for r in &rejected {
            let to_dead_letters =
                self.destination && (self.policy == OnError::DeadLetter || r.origin == Origin::Guest);
            let action = match (to_dead_letters, self.policy) {
                (true, _) => "dead_letter",
                (false, OnError::Skip) => "skip",
                (false, _) => "drop",
            };
            if let Some(book) = &self.book {
                // A guest's own reasons are its strings: one label for them all.
                let reason = if r.origin == Origin::Guest { "guest" } else { r.reason.as_str() };
                book.count(&self.node, reason, action, 1);
            }
            if to_dead_letters {
                let value = r.encode(&self.job, &self.node, self.subtask, now);
                batch.push(&[], &value, r.timestamp.unwrap_or(now as i64));
            }
        }
        Ok(batch)
    }

    fn charge(&mut self, n: u64, last: String, unreadable: bool) -> Result<(), TakeOutError> {
        let now = Instant::now();
        while let Some((t, k)) = self.recent.front().copied()
            && now.duration_since(t) > MINUTE
        {
            self.recent.pop_front();
            self.in_minute -= k;
        }
        self.recent.push_back((now, n));
        self.in_minute += n;
        if self.in_minute > self.limit {
            return Err(TakeOutError::Limit { count: self.in_minute, limit: self.limit, last, unreadable });
        }
        Ok(())
    }

    /// The records a guest sent to the dead letters itself (the SDKs' `dead_letter`): each a
    /// MessagePack array `[reason, key, value]` on the dead-letter side output.
    pub(crate) fn from_guest(batch: &Batch) -> Vec<Rejected> {
        batch
            .iter()
            .map(|r| {
                let (reason, key, value) = guest_dead_letter(r.value).unwrap_or_else(|| {
                    ("unreadable_dead_letter".to_string(), r.key.to_vec(), r.value.to_vec())
                });
                Rejected {
                    error: format!("the operator sent the record to the dead letters: {reason}"),
                    reason,
                    origin: Origin::Guest,
                    key,
                    value,
                    timestamp: Some(r.timestamp),
                }
            })
            .collect()
    }
}

/// `[reason, key, value]` (key and value binary or string).
fn guest_dead_letter(bytes: &[u8]) -> Option<(String, Vec<u8>, Vec<u8>)> {
    let v = rmpv::decode::read_value(&mut &bytes[..]).ok()?;
    let a = v.as_array()?;
    let bytes_of = |v: &rmpv::Value| match v {
        rmpv::Value::Binary(b) => Some(b.clone()),
        rmpv::Value::String(s) => Some(s.as_bytes().to_vec()),
        rmpv::Value::Nil => Some(Vec::new()),
        _ => None,
    };
    match a.as_slice() {
        [reason, key, value] => {
            let reason: String = reason.as_str()?.chars().take(256).collect();
            Some((reason, bytes_of(key)?, bytes_of(value)?))
        }
        _ => None,
    }
}

/// Most distinct (input, content) pairs a guard counts since its checkpoint (about 40 MiB).
const MAX_SEEN: usize = 1 << 20;

/// An operator subtask's guard against records that break it (`on_error: skip |
/// dead_letter`): it takes out the poison records a replay found, replays record by record
/// when the job suspects one, and turns a guest failure into the error that makes the job
/// find or take out the record.
#[derive(Debug)]
pub(crate) struct OperatorGuard {
    /// The checkpoint the subtask restored (0: none).
    checkpoint: u64,
    known: Vec<Poison>,
    careful: bool,
    /// (input, content hash) → records of that content seen since the checkpoint: all of
    /// them when careful, else those of known poison records.
    seen: HashMap<(u32, u64), u32>,
}

impl OperatorGuard {
    /// The guard of subtask `subtask` of `node` restored from `checkpoint`.
    pub(crate) fn new(book: Option<&DeadLetterBook>, node: &str, subtask: u32, checkpoint: u64) -> Self {
        let (known, careful) = book.map(|b| b.for_subtask(node, subtask, checkpoint)).unwrap_or_default();
        OperatorGuard { checkpoint, known, careful, seen: HashMap::new() }
    }

    /// Nothing to take out and no replay: batches go to the guest as they are.
    pub(crate) fn idle(&self) -> bool {
        !self.careful && self.known.is_empty()
    }

    /// Replaying record by record.
    pub(crate) fn careful(&self) -> bool {
        self.careful
    }

    /// `batch` without the known poison records of input `input`, which are returned.
    pub(crate) fn filter(&mut self, input: u32, batch: Batch) -> (Batch, Vec<Rejected>) {
        if self.known.is_empty() {
            return (batch, Vec::new());
        }
        let mut kept = Batch::with_capacity(batch.len(), batch.byte_len());
        let mut out = Vec::new();
        for r in batch.iter() {
            let hash = content_hash(r.key, r.value, r.timestamp);
            let known = self.known.iter().any(|p| p.hash == hash);
            if !known && !self.careful {
                kept.push(r.key, r.value, r.timestamp);
                continue;
            }
            let occurrence = self.bump(input, hash);
            // Each known record comes once: taken out, it is forgotten, and once none is left
            // (and the subtask is not replaying one by one) batches go straight to the guest.
            match self.known.iter().position(|p| p.hash == hash && origin_is(&p.record, input, occurrence)) {
                Some(i) => out.push(self.known.swap_remove(i).record),
                None => kept.push(r.key, r.value, r.timestamp),
            }
        }
        (kept, out)
    }

    /// Counts a record of content `hash` on `input`; returns which of that content it is.
    /// Past [`MAX_SEEN`] contents (a replay of a very long stretch since the checkpoint) the
    /// subtask stops replaying one by one, so the host's memory stays bounded: the record
    /// is then suspected again, and each suspicion counts against the job's limit.
    fn bump(&mut self, input: u32, hash: u64) -> u32 {
        if self.seen.len() >= MAX_SEEN && !self.seen.contains_key(&(input, hash)) {
            if self.careful {
                tracing::warn!(
                    checkpoint = self.checkpoint,
                    "a record-by-record replay passed {MAX_SEEN} records; giving it up"
                );
                self.careful = false;
            }
            return 0;
        }
        let n = self.seen.entry((input, hash)).or_default();
        *n += 1;
        *n
    }

    /// Counts a record replayed one by one that is not taken out (careful only; `filter`
    /// counted it already when there are known records).
    pub(crate) fn count(&mut self, input: u32, key: &[u8], value: &[u8], timestamp: i64) {
        if self.careful && self.known.is_empty() {
            self.bump(input, content_hash(key, value, timestamp));
        }
    }

    /// The guest failed on the single record `(key, value, timestamp)` of input `input`,
    /// replayed one by one with `error`: the record is found. Returns its content hash and
    /// the record with its identity.
    pub(crate) fn found(
        &self,
        input: u32,
        key: &[u8],
        value: &[u8],
        timestamp: i64,
        error: &GuestError,
    ) -> (u64, Rejected) {
        let hash = content_hash(key, value, timestamp);
        let occurrence = self.seen.get(&(input, hash)).copied().unwrap_or(1);
        let record = Rejected {
            reason: guest_reason(error).into(),
            error: error.to_string(),
            origin: Origin::Operator { input, checkpoint: self.checkpoint, occurrence },
            key: key.to_vec(),
            value: value.to_vec(),
            timestamp: Some(timestamp),
        };
        (hash, record)
    }
}

fn origin_is(record: &Rejected, input: u32, occurrence: u32) -> bool {
    matches!(record.origin, Origin::Operator { input: i, occurrence: o, .. } if i == input && o == occurrence)
}

/// A guest failure that a record can cause (an error it returned, a trap, a limit), as
/// opposed to the host's (its keyed state, the instance pool).
pub(crate) fn record_can_cause(error: &GuestError) -> bool {
    matches!(
        error,
        GuestError::Trap { .. }
            | GuestError::CpuLimit { .. }
            | GuestError::WallLimit { .. }
            | GuestError::MemoryLimit { .. }
            | GuestError::OutputLimit { .. }
            | GuestError::SideOutputLimit { .. }
            | GuestError::TimerLimit { .. }
            | GuestError::Operator { .. }
    )
}

fn guest_reason(error: &GuestError) -> &'static str {
    match error {
        GuestError::Operator { .. } => "guest_error",
        GuestError::Trap { .. } => "guest_trap",
        _ => "guest_limit",
    }
}

/// The hash that identifies a record's content across replays.
pub(crate) fn content_hash(key: &[u8], value: &[u8], timestamp: i64) -> u64 {
    use xxhash_rust::xxh3::Xxh3;
    let mut h = Xxh3::new();
    h.update(&(key.len() as u64).to_le_bytes());
    h.update(key);
    h.update(value);
    h.update(&timestamp.to_le_bytes());
    h.digest()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(values: &[&str]) -> Batch {
        let mut b = Batch::empty();
        for v in values {
            b.push(b"k", v.as_bytes(), 1);
        }
        b
    }

    #[test]
    fn a_known_poison_record_is_taken_out_by_content_and_occurrence() {
        let book = DeadLetterBook::default();
        // The second "bad" on input 0 since checkpoint 3 broke subtask 1 of `op`.
        let mut guard = OperatorGuard::new(Some(&book), "op", 1, 3);
        guard.careful = true;
        let (kept, out) = guard.filter(0, batch(&["a", "bad"]));
        assert_eq!((kept.len(), out.len()), (2, 0));
        let (hash, record) = guard.found(
            0,
            b"k",
            b"bad",
            1,
            &GuestError::Operator {
                operator: "op".into(),
                subtask: 1,
                call: crate::guest::Call::Process,
                error: crate::guest::OperatorError::Other("no".into()),
            },
        );
        assert_eq!(record.origin, Origin::Operator { input: 0, checkpoint: 3, occurrence: 1 });
        book.found("op", 1, hash, record, 10).unwrap();
        // Replayed from checkpoint 3: the first "bad" (in any batch) is taken out, the
        // second is not; other subtasks and checkpoints take out nothing.
        let mut guard = OperatorGuard::new(Some(&book), "op", 1, 3);
        assert!(!guard.careful());
        let (kept, out) = guard.filter(0, batch(&["x", "bad", "bad"]));
        assert_eq!((kept.len(), out.len()), (2, 1));
        // Taken out once, it is forgotten: later batches are not looked at.
        assert!(guard.idle());
        assert!(OperatorGuard::new(Some(&book), "op", 0, 3).idle());
        assert!(OperatorGuard::new(Some(&book), "op", 1, 4).idle());
        book.restoring(4);
        assert!(OperatorGuard::new(Some(&book), "op", 1, 3).idle());
    }

    #[test]
    fn the_limit_counts_over_a_minute() {
        let mut d = DeadLetters::new("j", "n", 0, OnError::Drop, 3, None);
        let r = |n: usize| {
            (0..n)
                .map(|_| Rejected {
                    reason: "bad_json".into(),
                    error: "x".into(),
                    origin: Origin::File { path: "f".into(), line: 1 },
                    key: vec![],
                    value: vec![],
                    timestamp: None,
                })
                .collect::<Vec<_>>()
        };
        d.take_out(r(2)).unwrap();
        d.take_out(r(1)).unwrap();
        let e = d.take_out(r(1)).unwrap_err();
        assert!(e.to_string().contains("4 records taken out within a minute, more than 3"), "{e}");
    }

    #[test]
    fn a_guest_dead_letter_keeps_its_reason_and_record() {
        let mut value = Vec::new();
        rmp::encode::write_array_len(&mut value, 3).unwrap();
        rmp::encode::write_str(&mut value, "negative price").unwrap();
        rmp::encode::write_bin(&mut value, b"key").unwrap();
        rmp::encode::write_bin(&mut value, b"val").unwrap();
        let mut b = Batch::empty();
        b.push(&[], &value, 9);
        let r = DeadLetters::from_guest(&b);
        assert_eq!(r[0].reason, "negative price");
        assert_eq!((r[0].key.as_slice(), r[0].value.as_slice()), (&b"key"[..], &b"val"[..]));
        assert_eq!(r[0].timestamp, Some(9));
    }
}
