//! Keyed event-time windows: tumbling, sliding (hopping) and session windows, evaluated
//! incrementally by an [`AggregateFunction`].
//!
//! [`KeyedWindows`] is a state (register it with `#[state]`): per record key, one
//! accumulator per open window, never the records. A window `[start, end)` fires once, when
//! the watermark reaches `end - 1 + allowed_lateness_ms` (its *fire time*): the operator's
//! [`Operator::on_timer`](crate::Operator::on_timer) hands the timer to [`KeyedWindows::fire`],
//! which emits the window's result and forgets it. Records that arrive after the watermark
//! passed `end - 1` but before the fire time still count (allowed lateness); records for a
//! window that already fired are *late*: dropped and counted in the metric
//! `late_records_dropped`, or sent unchanged on a side output, as [`LateRecords`] says.
//!
//! Unlike Flink, a window with allowed lateness does not fire early at its end and again
//! for each late record: it fires once, with every record that was on time for it, so its
//! result is final and a downstream operator never sees updates.
//!
//! Timers: each key holds one host timer, at the earliest fire time of its open windows; a
//! fired timer re-registers at the next one. Timer keys are record keys, so windows and
//! their timers move together by key group when a savepoint restores at another parallelism.
//!
//! ```
//! use weir_guest::window::{AggregateFunction, KeyedWindows, WindowSpec};
//! use weir_guest::{Context, Operator, Output, Record, Result, States};
//!
//! #[derive(Default)]
//! struct Count;
//!
//! impl AggregateFunction for Count {
//!     type Input = ();
//!     type Acc = u64;
//!     type Output = u64;
//!     fn create(&self) -> u64 { 0 }
//!     fn add(&self, acc: &mut u64, _: &()) { *acc += 1 }
//!     fn merge(&self, acc: &mut u64, other: u64) { *acc += other }
//!     fn result(&self, acc: u64) -> u64 { acc }
//! }
//!
//! #[derive(Default, States)]
//! struct Counts {
//!     #[state]
//!     windows: KeyedWindows<Count>,
//! }
//!
//! impl Operator for Counts {
//!     fn open(&mut self, context: &Context) -> Result<()> {
//!         self.windows.configure(context.config::<WindowSpec>()?)
//!     }
//!     fn process(&mut self, record: Record<'_>, _out: &mut Output) -> Result<()> {
//!         self.windows.add(&record, &())
//!     }
//!     fn on_timer(&mut self, key: &[u8], timestamp: i64, out: &mut Output) -> Result<()> {
//!         self.windows.fire(key, timestamp, |window, count| {
//!             out.emit_with_key_bytes(key, &(window.start, window.end, count), window.max_timestamp())
//!         })
//!     }
//! }
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::operator_state::{DeltaWriter, KeyedState, RawKey, StateStore};
use crate::{Error, Record, Result, event_time, metrics, side_output, timers};

/// A window of event time: `[start, end)`, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Window {
    /// First instant in the window.
    pub start: i64,
    /// First instant after the window.
    pub end: i64,
}

impl Window {
    /// The last instant in the window, `end - 1`: the timestamp of its result.
    pub fn max_timestamp(&self) -> i64 {
        self.end.saturating_sub(1)
    }
}

/// How records are assigned to windows, by their event time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Windows {
    /// Back-to-back windows of `size_ms`: `[k·size + offset, (k+1)·size + offset)`.
    Tumbling {
        /// Window length.
        size_ms: i64,
        /// Shift of the window starts from the epoch (0 by default).
        #[serde(default)]
        offset_ms: i64,
    },
    /// Windows of `size_ms` starting every `slide_ms` (at `k·slide + offset`); a record
    /// belongs to every window that contains it.
    Sliding {
        /// Window length.
        size_ms: i64,
        /// Distance between window starts.
        slide_ms: i64,
        /// Shift of the window starts from the epoch (0 by default).
        #[serde(default)]
        offset_ms: i64,
    },
    /// Per key, records closer than `gap_ms` share a window: a record at `t` opens
    /// `[t, t + gap)`, and windows that overlap merge, their accumulators merged with
    /// [`AggregateFunction::merge`]. A session `[s, e)` ends `gap` after its last record; a
    /// record at `e` or later starts a new one. (Flink also merges windows that only touch:
    /// whether a record at exactly `e` joins then depends on whether the watermark `e - 1`
    /// fired the session before it arrived, which differs from run to run.)
    Session {
        /// Inactivity that closes a session.
        gap_ms: i64,
    },
}

/// What happens to a record that arrives after every window it belongs to fired.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LateRecords {
    /// Dropped, and counted in the metric `late_records_dropped`.
    #[default]
    Drop,
    /// Emitted unchanged on the side output of this name (JSON `{"side_output": "late"}`);
    /// a job routes it with an edge whose `output` is the name.
    SideOutput(String),
}

/// A window assigner with its allowed lateness and late-record policy, as operators take it
/// from their configuration:
/// `{"window": {"kind": "sliding", "size_ms": 10000, "slide_ms": 2000},
///   "allowed_lateness_ms": 1000, "late": {"side_output": "late"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    /// How records are assigned to windows.
    pub window: Windows,
    /// How long after its end a window still takes records; it fires then (0 by default).
    #[serde(default)]
    pub allowed_lateness_ms: i64,
    /// What happens to late records (dropped by default).
    #[serde(default)]
    pub late: LateRecords,
}

/// Most windows of a sliding assigner that one record may belong to (`size / slide`).
pub const MAX_WINDOWS_PER_RECORD: i64 = 1000;

impl WindowSpec {
    /// A spec with `window`, no allowed lateness, late records dropped.
    pub fn new(window: Windows) -> Self {
        Self { window, allowed_lateness_ms: 0, late: LateRecords::Drop }
    }

    /// Sets the allowed lateness.
    pub fn allowed_lateness(mut self, ms: i64) -> Self {
        self.allowed_lateness_ms = ms;
        self
    }

    /// Sends late records on side output `name`.
    pub fn late_to(mut self, name: &str) -> Self {
        self.late = LateRecords::SideOutput(name.to_owned());
        self
    }

    /// Checks sizes, slides, offsets, gaps and lateness.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid_config(format!("window: {m}")));
        match self.window {
            Windows::Tumbling { size_ms, offset_ms } => {
                if size_ms <= 0 {
                    return bad(format!("size_ms must be positive, got {size_ms}"));
                }
                if offset_ms.unsigned_abs() >= size_ms.unsigned_abs() {
                    return bad(format!("offset_ms ({offset_ms}) must be smaller than size_ms ({size_ms})"));
                }
            }
            Windows::Sliding { size_ms, slide_ms, offset_ms } => {
                if size_ms <= 0 || slide_ms <= 0 {
                    return bad(format!(
                        "size_ms and slide_ms must be positive, got {size_ms} and {slide_ms}"
                    ));
                }
                if (size_ms - 1) / slide_ms + 1 > MAX_WINDOWS_PER_RECORD {
                    return bad(format!(
                        "size_ms / slide_ms ({size_ms} / {slide_ms}) puts a record in more than \
                         {MAX_WINDOWS_PER_RECORD} windows"
                    ));
                }
                if offset_ms.unsigned_abs() >= slide_ms.unsigned_abs() {
                    return bad(format!(
                        "offset_ms ({offset_ms}) must be smaller than slide_ms ({slide_ms})"
                    ));
                }
            }
            Windows::Session { gap_ms } => {
                if gap_ms <= 0 {
                    return bad(format!("gap_ms must be positive, got {gap_ms}"));
                }
            }
        }
        if self.allowed_lateness_ms < 0 {
            return bad(format!(
                "allowed_lateness_ms must not be negative, got {}",
                self.allowed_lateness_ms
            ));
        }
        if let LateRecords::SideOutput(name) = &self.late
            && (name.is_empty() || name.len() > 64)
        {
            return bad("a side output name must be 1 to 64 bytes".to_owned());
        }
        Ok(())
    }

    /// When window `w` fires: `end - 1 + allowed_lateness_ms`.
    pub fn fire_time(&self, w: Window) -> i64 {
        w.max_timestamp().saturating_add(self.allowed_lateness_ms)
    }

    /// The windows a record at `timestamp` belongs to, earliest start first (one new
    /// `[t, t + gap)` window for sessions, before merging).
    pub fn assign(&self, timestamp: i64, into: &mut Vec<Window>) {
        into.clear();
        match self.window {
            Windows::Tumbling { size_ms, offset_ms } => {
                let start = timestamp.saturating_sub(timestamp.wrapping_sub(offset_ms).rem_euclid(size_ms));
                into.push(Window { start, end: start.saturating_add(size_ms) });
            }
            Windows::Sliding { size_ms, slide_ms, offset_ms } => {
                let last = timestamp.saturating_sub(timestamp.wrapping_sub(offset_ms).rem_euclid(slide_ms));
                let mut start = last;
                while start > timestamp.saturating_sub(size_ms) {
                    into.push(Window { start, end: start.saturating_add(size_ms) });
                    match start.checked_sub(slide_ms) {
                        Some(s) => start = s,
                        None => break,
                    }
                }
                into.reverse();
            }
            Windows::Session { gap_ms } => {
                into.push(Window { start: timestamp, end: timestamp.saturating_add(gap_ms) });
            }
        }
    }
}

/// An incremental aggregation: one accumulator per key and window, updated per record.
pub trait AggregateFunction {
    /// What [`KeyedWindows::add`] takes per record.
    type Input: ?Sized;
    /// The accumulator, kept in state (MessagePack).
    type Acc: Serialize + DeserializeOwned;
    /// A window's result.
    type Output;
    /// A new, empty accumulator.
    fn create(&self) -> Self::Acc;
    /// Adds one input to an accumulator.
    fn add(&self, acc: &mut Self::Acc, input: &Self::Input);
    /// Merges `other` into `acc` (session windows that came together).
    fn merge(&self, acc: &mut Self::Acc, other: Self::Acc);
    /// The result of a window that fires.
    fn result(&self, acc: Self::Acc) -> Self::Output;
}

/// One open window of a key: `(start, end, accumulator)`, kept sorted by start (and end).
type Pane<A> = (i64, i64, A);

/// Keyed windows with an [`AggregateFunction`]: a state. See the [module docs](self).
pub struct KeyedWindows<A: AggregateFunction> {
    agg: A,
    spec: Option<WindowSpec>,
    panes: KeyedState<RawKey, Vec<Pane<A::Acc>>>,
    scratch: Vec<Window>,
}

impl<A: AggregateFunction + Default> Default for KeyedWindows<A> {
    #[track_caller]
    fn default() -> Self {
        Self { agg: A::default(), spec: None, panes: KeyedState::default(), scratch: Vec::new() }
    }
}

impl<A: AggregateFunction> std::fmt::Debug for KeyedWindows<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedWindows").field("spec", &self.spec).field("keys", &self.panes.len()).finish()
    }
}

/// What [`KeyedWindows::add_raw`] did with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Added to at least one open window.
    Added,
    /// Every window it belongs to already fired.
    Late,
}

impl<A: AggregateFunction> KeyedWindows<A> {
    /// Windows aggregated by `agg` (use `Default` when the function has no parameters).
    #[track_caller]
    pub fn with_function(agg: A) -> Self {
        Self { agg, spec: None, panes: KeyedState::default(), scratch: Vec::new() }
    }

    /// Sets the assigner, lateness and late policy (in `open`; state restored before it is
    /// kept). Fails with [`Error::InvalidConfig`] when `spec` does not validate.
    pub fn configure(&mut self, spec: WindowSpec) -> Result<()> {
        spec.validate()?;
        self.spec = Some(spec);
        Ok(())
    }

    /// The spec [`KeyedWindows::configure`] set.
    pub fn spec(&self) -> Option<&WindowSpec> {
        self.spec.as_ref()
    }

    /// The aggregate function.
    pub fn function(&self) -> &A {
        &self.agg
    }

    fn configured(&self) -> Result<&WindowSpec> {
        self.spec
            .as_ref()
            .ok_or_else(|| Error::other("KeyedWindows used before configure() (call it in open)"))
    }

    /// Adds `record` (its key and timestamp) with `input` to its windows. A late record is
    /// dropped and counted, or emitted unchanged on the side output, as the spec says.
    pub fn add(&mut self, record: &Record<'_>, input: &A::Input) -> Result<()> {
        if self.add_raw(record.key_bytes(), record.timestamp(), input)? == Placement::Late {
            match &self.configured()?.late {
                LateRecords::Drop => metrics::counter_add("late_records_dropped", 1),
                LateRecords::SideOutput(name) => {
                    side_output::emit_raw(name, record.key_bytes(), record.value_bytes(), record.timestamp());
                }
            }
        }
        Ok(())
    }

    /// Adds `input` at `timestamp` to the windows of the encoded key `key`; says whether it
    /// was late (then nothing changed, and the caller decides what to do with it).
    pub fn add_raw(&mut self, key: &[u8], timestamp: i64, input: &A::Input) -> Result<Placement> {
        let spec = self.spec.as_ref().ok_or_else(|| Error::other("KeyedWindows used before configure()"))?;
        let watermark = event_time::current_watermark();
        spec.assign(timestamp, &mut self.scratch);
        if let Windows::Session { .. } = spec.window {
            return Ok(self.add_session(key, input, watermark));
        }
        let lateness = spec.allowed_lateness_ms;
        let fire = |w: &Window| w.max_timestamp().saturating_add(lateness);
        // Windows already fired are skipped; all of them: the record is late.
        let Some(first) = self.scratch.iter().position(|w| fire(w) > watermark) else {
            return Ok(Placement::Late);
        };
        let agg = &self.agg;
        let mut registered = false;
        let panes = self.panes.get_or_insert_with_raw(key, || {
            registered = true;
            Vec::new()
        });
        let front = panes.first().map(|p| (p.0, p.1));
        for w in &self.scratch[first..] {
            match panes.binary_search_by(|p| (p.0, p.1).cmp(&(w.start, w.end))) {
                Ok(i) => agg.add(&mut panes[i].2, input),
                Err(i) => {
                    let mut acc = agg.create();
                    agg.add(&mut acc, input);
                    panes.insert(i, (w.start, w.end, acc));
                }
            }
        }
        // One timer per key, at its earliest fire time: a new earliest window needs one.
        let new_front = panes.first().map(|p| (p.0, p.1));
        if registered || new_front != front {
            let (start, end) = new_front.expect("a window was added");
            timers::register_raw(key, fire(&Window { start, end }));
        }
        Ok(Placement::Added)
    }

    fn add_session(&mut self, key: &[u8], input: &A::Input, watermark: i64) -> Placement {
        let spec = self.spec.as_ref().expect("configured");
        let fresh = self.scratch[0];
        // A key's windows are sorted and apart (overlapping ones merged), so those that
        // overlap the record's window are one run.
        let touching = |p: &Pane<A::Acc>| p.0 < fresh.end && p.1 > fresh.start;
        let (range, merged) = match self.panes.get_raw(key) {
            None => (0..0, fresh),
            Some(panes) => {
                let first = panes
                    .iter()
                    .position(touching)
                    .unwrap_or_else(|| panes.partition_point(|p| p.0 < fresh.start));
                let last = first + panes[first..].iter().take_while(|p| touching(p)).count();
                let merged = panes[first..last]
                    .iter()
                    .fold(fresh, |w, p| Window { start: w.start.min(p.0), end: w.end.max(p.1) });
                (first..last, merged)
            }
        };
        // Open windows have not fired, so only a record that merges with none can be late.
        let fire = spec.fire_time(merged);
        if fire <= watermark {
            return Placement::Late;
        }
        let agg = &self.agg;
        let mut acc = agg.create();
        agg.add(&mut acc, input);
        let panes = self.panes.get_or_insert_with_raw(key, Vec::new);
        let front_fire = panes.first().map(|p| spec.fire_time(Window { start: p.0, end: p.1 }));
        let mut absorbed = panes.drain(range.clone());
        let total = match absorbed.next() {
            Some((_, _, mut total)) => {
                for p in absorbed {
                    agg.merge(&mut total, p.2);
                }
                agg.merge(&mut total, acc);
                total
            }
            None => {
                drop(absorbed);
                acc
            }
        };
        panes.insert(range.start, (merged.start, merged.end, total));
        // The key's timer stays where it is when the earliest fire time only moved later (a
        // timer that finds nothing due moves itself on); an earlier one needs a timer.
        if front_fire.is_none_or(|f| fire < f) {
            timers::register_raw(key, fire);
        }
        Placement::Added
    }

    /// Handles the timer of `key` at `timestamp`: every window of the key whose fire time is
    /// at or before it fires, earliest first — `emit(window, result)` — and is forgotten;
    /// the key's timer moves to its next window. A timer that is not the windows' own finds
    /// nothing due and changes nothing.
    pub fn fire(
        &mut self,
        key: &[u8],
        timestamp: i64,
        mut emit: impl FnMut(Window, A::Output) -> Result<()>,
    ) -> Result<()> {
        let spec = self.configured()?;
        let lateness = spec.allowed_lateness_ms;
        let fire =
            |p: &Pane<A::Acc>| Window { start: p.0, end: p.1 }.max_timestamp().saturating_add(lateness);
        let Some(panes) = self.panes.get_raw(key) else { return Ok(()) };
        let due = panes.iter().take_while(|p| fire(p) <= timestamp).count();
        if due == 0 {
            // A timer left at an older fire time (a session grew): move it on.
            if let Some(first) = panes.first() {
                timers::register_raw(key, fire(first));
            }
            return Ok(());
        }
        let panes = self.panes.get_mut_raw(key).expect("present");
        let fired: Vec<Pane<A::Acc>> = panes.drain(..due).collect();
        let next = panes.first().map(fire);
        if panes.is_empty() {
            self.panes.remove_raw(key);
        }
        if let Some(next) = next {
            timers::register_raw(key, next);
        }
        for (start, end, acc) in fired {
            emit(Window { start, end }, self.agg.result(acc))?;
        }
        Ok(())
    }

    /// Number of keys with open windows.
    pub fn keys(&self) -> usize {
        self.panes.len()
    }

    /// The open windows of the encoded key `key`, earliest first.
    pub fn windows_of(&self, key: &[u8]) -> Vec<Window> {
        self.panes
            .get_raw(key)
            .map_or_else(Vec::new, |panes| panes.iter().map(|p| Window { start: p.0, end: p.1 }).collect())
    }

    /// Number of open windows over all keys.
    pub fn open_windows(&self) -> usize {
        self.panes.iter_raw().map(|(_, panes)| panes.len()).sum()
    }
}

impl<A: AggregateFunction> StateStore for KeyedWindows<A> {
    fn snapshot(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<()> {
        self.panes.snapshot(full, delta)
    }

    fn snapshot_part(&mut self, full: bool, delta: &mut DeltaWriter<'_>) -> Result<bool> {
        self.panes.snapshot_part(full, delta)
    }

    fn restore(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        self.panes.restore(key, value)
    }
}

#[cfg(test)]
mod tests;
