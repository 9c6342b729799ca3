"""Keyed event-time windows — tumbling, sliding (hopping) and session — evaluated
incrementally by an aggregate function: the Python twin of the Rust SDK's
`weir_guest::window`, with the same semantics, configuration and state layout.

`KeyedWindows` is a state (list it in `States(...)`): per record key, one accumulator per
open window, never the records. A window `[start, end)` fires once, when the watermark
reaches `end - 1 + allowed_lateness_ms` (its *fire time*): `on_timer` hands the timer to
`KeyedWindows.fire`, which returns the window's result and forgets it. Records behind the
watermark but before the fire time still count (allowed lateness); a record all of whose
windows fired is *late*: dropped and counted in the metric `late_records_dropped`, or sent
unchanged on a side output, as the spec's `late` says. A window fires once, with every record
that was on time for it: its result is final.

Timers: each key holds one host timer, at the earliest fire time of its open windows; a
fired timer re-registers at the next one. Timer keys are record keys, so windows and their
timers move together by key group when a savepoint restores at another parallelism.

Sessions: a record at `t` opens `[t, t + gap)`; windows of a key that overlap merge (their
accumulators with `merge`). A record at a session's end or later starts a new one.

    from weirpy.window import AggregateFunction, KeyedWindows

    class Count(AggregateFunction):
        def create(self): return 0
        def add(self, acc, item): return acc + 1
        def merge(self, acc, other): return acc + other

    class Operator(OperatorBase):
        def __init__(self):
            super().__init__()
            self.windows = KeyedWindows(Count())
            self.states = States(self.windows)

        def on_open(self, context, config):
            self.windows.configure(config)            # a WindowSpec JSON object

        def process_record(self, key, value, timestamp, out):
            self.windows.add(key, value, timestamp, None)

        def on_timer(self, key, timestamp, out):
            for window, count in self.windows.fire(key, timestamp):
                out.emit_raw(key, msgpack.packb([window.start, window.end, count]), window.max_timestamp)

The configuration (`WindowSpec`), as in Rust:
`{"window": {"kind": "sliding", "size_ms": 10000, "slide_ms": 2000},
  "allowed_lateness_ms": 1000, "late": {"side_output": "late"}}` — kinds `tumbling`
(`size_ms`, `offset_ms`), `sliding` (`size_ms`, `slide_ms`, `offset_ms`), `session`
(`gap_ms`); `late` is `"drop"` (the default) or `{"side_output": name}`.

State: one entry per key with open windows, key = the record key bytes, value = MessagePack
array of `[start, end, accumulator]` arrays, earliest first (Rust's `Vec<(i64, i64, Acc)>`).
Accumulators are kept as the aggregate function returns them and encoded with MessagePack
at a snapshot; after a restore a tuple comes back as a list.
"""

import json
from bisect import bisect_left
from collections import namedtuple

from . import host
from .host import I64_MAX, I64_MIN
from .operator import InvalidConfig
from .state import KeyedState, StateError
from . import msgpack

#: Most windows of a sliding assigner that one record may belong to (`size / slide`).
MAX_WINDOWS_PER_RECORD = 1000

TUMBLING, SLIDING, SESSION = "tumbling", "sliding", "session"

_U64 = (1 << 64) - 1


def sat(x):
    """`x` clamped to the i64 range (Rust's saturating arithmetic)."""
    return I64_MIN if x < I64_MIN else I64_MAX if x > I64_MAX else x


def _wrap(x):
    """`x` wrapped into the i64 range (Rust's wrapping arithmetic)."""
    return ((x - I64_MIN) & _U64) + I64_MIN


class Window(namedtuple("Window", "start end")):
    """A window of event time: `[start, end)`, in milliseconds."""

    __slots__ = ()

    @property
    def max_timestamp(self):
        """The last instant in the window, `end - 1`: the timestamp of its result."""
        return sat(self.end - 1)


# --- configuration --------------------------------------------------------------------------


def _config_object(config, what):
    if isinstance(config, (str, bytes)):
        try:
            config = json.loads(config)
        except ValueError as e:
            raise InvalidConfig("%s: the config is not JSON: %s" % (what, e)) from None
    if not isinstance(config, dict):
        raise InvalidConfig("%s: the config must be a JSON object, got %r" % (what, config))
    return config


def _fields(obj, what, required, optional):
    """The fields of a JSON object: every `required` one present, nothing unknown."""
    unknown = [k for k in obj if k not in required and k not in optional]
    if unknown:
        raise InvalidConfig("%s: unknown field %r (expected one of %s)"
                            % (what, unknown[0], ", ".join(required + optional)))
    for k in required:
        if k not in obj:
            raise InvalidConfig("%s: missing field %r" % (what, k))
    return obj


def _i64(obj, field, what, default=None):
    v = obj.get(field, default)
    if v.__class__ is not int or not I64_MIN <= v <= I64_MAX:
        raise InvalidConfig("%s: %s must be a 64-bit integer, got %r" % (what, field, v))
    return v


def _late(obj, what):
    """The `late` policy: None (drop) or a side output name."""
    late = obj.get("late", "drop")
    if late == "drop" or late == {"drop": None}:
        return None
    if isinstance(late, dict) and list(late) == ["side_output"] and isinstance(late["side_output"], str):
        return late["side_output"]
    raise InvalidConfig('%s: late must be "drop" or {"side_output": name}, got %r' % (what, late))


def _check_late(late, what):
    if late is not None and not 1 <= len(late.encode()) <= 64:
        raise InvalidConfig("%s: a side output name must be 1 to 64 bytes" % what)


def _late_config(late):
    return "drop" if late is None else {"side_output": late}


class WindowSpec:
    """A window assigner with its allowed lateness and late-record policy (`late`: None to
    drop late records, else the name of the side output they go to). Build one with
    `tumbling`, `sliding` or `session`, or read the JSON configuration with `from_config`."""

    __slots__ = ("kind", "size_ms", "slide_ms", "offset_ms", "gap_ms", "allowed_lateness_ms", "late")

    def __init__(self, kind, size_ms=None, slide_ms=None, offset_ms=0, gap_ms=None,
                 allowed_lateness_ms=0, late=None):
        self.kind = kind
        self.size_ms = size_ms
        self.slide_ms = slide_ms
        self.offset_ms = offset_ms
        self.gap_ms = gap_ms
        self.allowed_lateness_ms = allowed_lateness_ms
        self.late = late

    @classmethod
    def tumbling(cls, size_ms, offset_ms=0):
        """Back-to-back windows `[k·size + offset, (k+1)·size + offset)`."""
        return cls(TUMBLING, size_ms=size_ms, offset_ms=offset_ms)

    @classmethod
    def sliding(cls, size_ms, slide_ms, offset_ms=0):
        """Windows of `size_ms` starting every `slide_ms` (at `k·slide + offset`)."""
        return cls(SLIDING, size_ms=size_ms, slide_ms=slide_ms, offset_ms=offset_ms)

    @classmethod
    def session(cls, gap_ms):
        """Per key, records closer than `gap_ms` share a window."""
        return cls(SESSION, gap_ms=gap_ms)

    def allowed_lateness(self, ms):
        """Sets the allowed lateness; returns the spec."""
        self.allowed_lateness_ms = ms
        return self

    def late_to(self, name):
        """Sends late records on side output `name`; returns the spec."""
        self.late = name
        return self

    @classmethod
    def from_config(cls, config):
        """Reads (and validates) a spec from the operator's configuration: a parsed JSON
        object or JSON text. Raises `InvalidConfig` naming what is wrong."""
        what = "window"
        obj = _fields(_config_object(config, what), what, ["window"], ["allowed_lateness_ms", "late"])
        w = obj["window"]
        if not isinstance(w, dict) or "kind" not in w:
            raise InvalidConfig('window: "window" must be an object with a "kind", got %r' % (w,))
        kind = w["kind"]
        if kind == TUMBLING:
            _fields(w, what, ["kind", "size_ms"], ["offset_ms"])
            spec = cls.tumbling(_i64(w, "size_ms", what), _i64(w, "offset_ms", what, 0))
        elif kind == SLIDING:
            _fields(w, what, ["kind", "size_ms", "slide_ms"], ["offset_ms"])
            spec = cls.sliding(_i64(w, "size_ms", what), _i64(w, "slide_ms", what), _i64(w, "offset_ms", what, 0))
        elif kind == SESSION:
            _fields(w, what, ["kind", "gap_ms"], [])
            spec = cls.session(_i64(w, "gap_ms", what))
        else:
            raise InvalidConfig("window: unknown kind %r (expected tumbling, sliding or session)" % (kind,))
        spec.allowed_lateness_ms = _i64(obj, "allowed_lateness_ms", what, 0)
        spec.late = _late(obj, what)
        spec.validate()
        return spec

    def to_config(self):
        """The spec as its JSON configuration object."""
        if self.kind == TUMBLING:
            w = {"kind": TUMBLING, "size_ms": self.size_ms, "offset_ms": self.offset_ms}
        elif self.kind == SLIDING:
            w = {"kind": SLIDING, "size_ms": self.size_ms, "slide_ms": self.slide_ms, "offset_ms": self.offset_ms}
        else:
            w = {"kind": SESSION, "gap_ms": self.gap_ms}
        return {"window": w, "allowed_lateness_ms": self.allowed_lateness_ms, "late": _late_config(self.late)}

    def validate(self):
        """Checks sizes, slides, offsets, gaps and lateness (`InvalidConfig` if wrong)."""
        def bad(m):
            raise InvalidConfig("window: " + m)
        if self.kind == TUMBLING:
            size, offset = self.size_ms, self.offset_ms
            if size <= 0:
                bad("size_ms must be positive, got %d" % size)
            if abs(offset) >= size:
                bad("offset_ms (%d) must be smaller than size_ms (%d)" % (offset, size))
        elif self.kind == SLIDING:
            size, slide, offset = self.size_ms, self.slide_ms, self.offset_ms
            if size <= 0 or slide <= 0:
                bad("size_ms and slide_ms must be positive, got %d and %d" % (size, slide))
            if (size - 1) // slide + 1 > MAX_WINDOWS_PER_RECORD:
                bad("size_ms / slide_ms (%d / %d) puts a record in more than %d windows"
                    % (size, slide, MAX_WINDOWS_PER_RECORD))
            if abs(offset) >= slide:
                bad("offset_ms (%d) must be smaller than slide_ms (%d)" % (offset, slide))
        elif self.kind == SESSION:
            if self.gap_ms <= 0:
                bad("gap_ms must be positive, got %d" % self.gap_ms)
        else:
            bad("unknown kind %r" % (self.kind,))
        if self.allowed_lateness_ms < 0:
            bad("allowed_lateness_ms must not be negative, got %d" % self.allowed_lateness_ms)
        _check_late(self.late, "window")

    def fire_time(self, window):
        """When `window` (a `Window` or `(start, end)`) fires: `end - 1 + allowed_lateness_ms`."""
        return sat(sat(window[1] - 1) + self.allowed_lateness_ms)

    def assign(self, timestamp):
        """The windows a record at `timestamp` belongs to, earliest start first (one new
        `[t, t + gap)` window for sessions, before merging)."""
        kind = self.kind
        if kind == TUMBLING:
            size = self.size_ms
            start = sat(timestamp - _wrap(timestamp - self.offset_ms) % size)
            return [Window(start, sat(start + size))]
        if kind == SLIDING:
            size, slide = self.size_ms, self.slide_ms
            start = sat(timestamp - _wrap(timestamp - self.offset_ms) % slide)
            floor = sat(timestamp - size)
            out = []
            while start > floor:
                out.append(Window(start, sat(start + size)))
                start -= slide
                if start < I64_MIN:
                    break
            out.reverse()
            return out
        return [Window(timestamp, sat(timestamp + self.gap_ms))]

    def __eq__(self, other):
        return isinstance(other, WindowSpec) and self.to_config() == other.to_config()

    def __repr__(self):
        return "WindowSpec(%r)" % (self.to_config(),)


# --- aggregation ----------------------------------------------------------------------------


class AggregateFunction:
    """An incremental aggregation: one accumulator per key and window, updated per record.
    Accumulators must encode as MessagePack (ints, floats, strings, lists, tuples, dicts);
    `add` and `merge` return the new accumulator (they may change and return the old one)."""

    def create(self):
        """A new, empty accumulator."""
        raise NotImplementedError

    def add(self, acc, item):
        """`acc` with one more input `item`."""
        raise NotImplementedError

    def merge(self, acc, other):
        """`acc` merged with `other` (session windows that came together)."""
        raise NotImplementedError

    def result(self, acc):
        """The result of a window that fires (the accumulator itself by default)."""
        return acc


def _check_panes(panes):
    """Checks a decoded entry (`from_plain` of the state)."""
    if not isinstance(panes, list) or not panes or not all(
            isinstance(p, list) and len(p) == 3 and p[0].__class__ is int and p[1].__class__ is int
            for p in panes):
        raise StateError("not a non-empty array of [start, end, accumulator] arrays: %r" % (panes,))
    return panes


class KeyedWindows:
    """Keyed windows with an aggregate function: a state named `name` (see the module docs).
    Call `configure` in `on_open`, `add` per record, `fire` in `on_timer`."""

    def __init__(self, function, name="windows"):
        self.name = name
        self.function = function
        self.spec = None
        # key bytes -> [[start, end, acc], ...], sorted by (start, end), never empty.
        self._panes = KeyedState(name, from_plain=_check_panes)

    def configure(self, spec):
        """Sets the assigner, lateness and late policy: a `WindowSpec`, or its JSON
        configuration (object or text). Raises `InvalidConfig` when it does not validate."""
        if not isinstance(spec, WindowSpec):
            spec = WindowSpec.from_config(spec)
        else:
            spec.validate()
        self.spec = spec

    def _configured(self):
        spec = self.spec
        if spec is None:
            raise RuntimeError("KeyedWindows used before configure() (call it in on_open)")
        return spec

    def add(self, key, value, timestamp, item):
        """Adds the record (`key` and `value` bytes, `timestamp`) with aggregate input `item`
        to its windows; True when it was on time. A late record is dropped and counted, or
        emitted unchanged (key, value, timestamp) on the side output, as the spec says."""
        if self.add_raw(key, timestamp, item):
            return True
        late = self.spec.late
        if late is None:
            host.counter_add("late_records_dropped", 1)
        else:
            host.emit_side_output(late, key, value, timestamp)
        return False

    def add_raw(self, key, timestamp, item):
        """Adds `item` at `timestamp` to the windows of key `key` (bytes); False when it is
        late (then nothing changed, and the caller decides what to do with it)."""
        spec = self._configured()
        watermark = host.current_watermark()
        windows = spec.assign(timestamp)
        if spec.kind == SESSION:
            return self._add_session(key, item, watermark, windows[0])
        lateness = spec.allowed_lateness_ms
        # Windows already fired are skipped; all of them: the record is late.
        for first, w in enumerate(windows):
            if sat(sat(w.end - 1) + lateness) > watermark:
                break
        else:
            return False
        agg = self.function
        panes = self._panes.get(key)
        new_key = panes is None
        if new_key:
            panes = []
            front = None
        else:
            front = (panes[0][0], panes[0][1])
        for w in windows[first:]:
            i = bisect_left(panes, [w.start, w.end])
            if i < len(panes) and panes[i][0] == w.start and panes[i][1] == w.end:
                p = panes[i]
                p[2] = agg.add(p[2], item)
            else:
                panes.insert(i, [w.start, w.end, agg.add(agg.create(), item)])
        self._panes.put(key, panes)
        # One timer per key, at its earliest fire time: a new earliest window needs one.
        p = panes[0]
        if new_key or (p[0], p[1]) != front:
            host.register_timer(key, sat(sat(p[1] - 1) + lateness))
        return True

    def _add_session(self, key, item, watermark, fresh):
        spec = self.spec
        panes = self._panes.get(key)
        start, end = fresh
        # A key's windows are sorted and apart (overlapping ones merged), so those that
        # overlap the record's window are one run.
        if panes is None:
            first = last = 0
        else:
            n = len(panes)
            first = 0
            while first < n and not (panes[first][0] < fresh.end and panes[first][1] > fresh.start):
                first += 1
            if first == n:
                first = 0
                while first < n and panes[first][0] < fresh.start:
                    first += 1
            last = first
            while last < n and panes[last][0] < fresh.end and panes[last][1] > fresh.start:
                start = min(start, panes[last][0])
                end = max(end, panes[last][1])
                last += 1
        # Open windows have not fired, so only a record that merges with none can be late.
        fire = spec.fire_time((start, end))
        if fire <= watermark:
            return False
        agg = self.function
        acc = agg.add(agg.create(), item)
        if panes is None:
            panes = []
        front_fire = spec.fire_time(panes[0]) if panes else None
        absorbed = panes[first:last]
        if absorbed:
            total = absorbed[0][2]
            for p in absorbed[1:]:
                total = agg.merge(total, p[2])
            acc = agg.merge(total, acc)
            del panes[first:last]
        panes.insert(first, [start, end, acc])
        self._panes.put(key, panes)
        # The key's timer stays where it is when the earliest fire time only moved later (a
        # timer that finds nothing due moves itself on); an earlier one needs a timer.
        if front_fire is None or fire < front_fire:
            host.register_timer(key, fire)
        return True

    def fire(self, key, timestamp):
        """Handles the timer of `key` at `timestamp`: every window of the key whose fire time
        is at or before it fires, earliest first, and is forgotten; returns them as
        `(Window, result)` pairs. The key's timer moves to its next window. A timer that is
        not the windows' own finds nothing due and changes nothing."""
        spec = self._configured()
        panes = self._panes.get(key)
        if panes is None:
            return []
        fire_time = spec.fire_time
        due = 0
        for p in panes:
            if fire_time(p) > timestamp:
                break
            due += 1
        if due == 0:
            # A timer left at an older fire time (a session grew): move it on.
            host.register_timer(key, fire_time(panes[0]))
            return []
        fired = panes[:due]
        del panes[:due]
        if panes:
            self._panes.put(key, panes)
            host.register_timer(key, fire_time(panes[0]))
        else:
            self._panes.remove(key)
        result = self.function.result
        return [(Window(p[0], p[1]), result(p[2])) for p in fired]

    def keys(self):
        """Number of keys with open windows."""
        return len(self._panes)

    def windows_of(self, key):
        """The open windows of key `key` (bytes), earliest first."""
        return [Window(p[0], p[1]) for p in self._panes.get(key, ())]

    def open_windows(self):
        """Number of open windows over all keys."""
        return sum(len(panes) for _, panes in self._panes.items())

    # The state protocol (see weirpy.state.States).

    def snapshot(self, full):
        return self._panes.snapshot(full)

    def restore(self, key, value):
        self._panes.restore(key, value)

    @property
    def native(self):
        return self._panes.native

    def snapshot_decoded(self, full):
        return self._panes.snapshot_decoded(full)

    def restore_decoded(self, items):
        self._panes.restore_decoded(items)

    def forget(self, key):
        self._panes.forget(key)
