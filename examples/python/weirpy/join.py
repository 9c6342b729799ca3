"""Keyed two-input joins on event time — a regular join (optionally with a state TTL) and an
interval join: the Python twin of the Rust SDK's `weir_guest::join`, with the same
semantics, configuration and state layout.

`KeyedJoin` is a state (list it in `States(...)`). Input 0 is the left side, input 1 the
right (name them in the job spec: `"inputs": ["left", "right"]`). Per record key it buffers
each side's records; a record that arrives is paired with every buffered record of the
other side that it matches, then buffered itself, so every matching pair comes out exactly
once, when its second record arrives, whatever order the inputs interleave in.

Which pairs match is decided by event time alone, so a run restarted from a checkpoint pairs
exactly what an uninterrupted run pairs:
- regular join without a TTL: every left and right record of a key (the state grows);
- regular join with `ttl_ms`: a left and a right record at most `ttl_ms` apart;
- interval join: `left.ts + lower_ms <= right.ts <= left.ts + upper_ms`, each end inclusive
  unless `lower_exclusive` / `upper_exclusive`.

With a TTL or an interval, a buffered record is dropped once the watermark shows that no
record of the other side can match it any more (one timer per key, at its earliest such
time), and a record at or below its own input's watermark is late: dropped and counted in
the metric `late_records_dropped`, or sent unchanged on a side output, as `late` says. Emit
a pair with the later of its two timestamps.

    class Operator(OperatorBase):
        def __init__(self):
            super().__init__()
            self.join = KeyedJoin()
            self.states = States(self.join)

        def on_open(self, context, config):
            self.join.configure(config)               # a JoinSpec JSON object

        def process_record(self, key, value, timestamp, out, input):
            item = msgpack.unpackb(value)
            for left, left_ts, right, right_ts in self.join.process(input, key, value, timestamp, item):
                out.emit_raw(key, msgpack.packb([left, right]), max(left_ts, right_ts))

        def on_timer(self, key, timestamp, out):
            self.join.expire(key, timestamp)

The configuration (`JoinSpec`), as in Rust:
`{"join": {"kind": "interval", "lower_ms": -5000, "upper_ms": 5000, "upper_exclusive": true},
  "late": "drop"}` or `{"join": {"kind": "regular", "ttl_ms": 60000}, "late": {"side_output": "late"}}`.

State: one entry per key with buffered records, key = the record key bytes, value =
MessagePack `[[[ts, item], ...] left, [[ts, item], ...] right, timer]` (Rust's
`Buffers(Vec<(i64, L)>, Vec<(i64, R)>, i64)`; `timer` is the key's earliest expiry,
i64::MAX for none). Items must encode as MessagePack; after a restore a tuple comes back as
a list.
"""

from . import host
from .host import I64_MAX, I64_MIN
from .operator import InvalidConfig
from .state import KeyedState, StateError
from . import msgpack
from .window import _check_late, _config_object, _fields, _i64, _late, _late_config, sat

REGULAR, INTERVAL = "regular", "interval"


class JoinSpec:
    """Which left and right records of a key match, and the late-record policy (`late`:
    None to drop late records, else a side output name). Build one with `regular` or
    `interval`, or read the JSON configuration with `from_config`."""

    __slots__ = ("kind", "ttl_ms", "lower_ms", "upper_ms", "lower_exclusive", "upper_exclusive", "late")

    def __init__(self, kind, ttl_ms=None, lower_ms=None, upper_ms=None,
                 lower_exclusive=False, upper_exclusive=False, late=None):
        self.kind = kind
        self.ttl_ms = ttl_ms
        self.lower_ms = lower_ms
        self.upper_ms = upper_ms
        self.lower_exclusive = lower_exclusive
        self.upper_exclusive = upper_exclusive
        self.late = late

    @classmethod
    def regular(cls, ttl_ms=None):
        """A regular join; with `ttl_ms`, of records at most that far apart."""
        return cls(REGULAR, ttl_ms=ttl_ms)

    @classmethod
    def interval(cls, lower_ms, upper_ms, lower_exclusive=False, upper_exclusive=False):
        """An interval join: `lower_ms <= right.ts - left.ts <= upper_ms` (ends inclusive
        unless told otherwise)."""
        return cls(INTERVAL, lower_ms=lower_ms, upper_ms=upper_ms,
                   lower_exclusive=lower_exclusive, upper_exclusive=upper_exclusive)

    def late_to(self, name):
        """Sends late records on side output `name`; returns the spec."""
        self.late = name
        return self

    @classmethod
    def from_config(cls, config):
        """Reads (and validates) a spec from the operator's configuration: a parsed JSON
        object or JSON text. Raises `InvalidConfig` naming what is wrong."""
        what = "join"
        obj = _fields(_config_object(config, what), what, ["join"], ["late"])
        j = obj["join"]
        if not isinstance(j, dict) or "kind" not in j:
            raise InvalidConfig('join: "join" must be an object with a "kind", got %r' % (j,))
        kind = j["kind"]
        if kind == REGULAR:
            _fields(j, what, ["kind"], ["ttl_ms"])
            ttl = j.get("ttl_ms")
            spec = cls.regular(None if ttl is None else _i64(j, "ttl_ms", what))
        elif kind == INTERVAL:
            _fields(j, what, ["kind", "lower_ms", "upper_ms"], ["lower_exclusive", "upper_exclusive"])
            flags = []
            for f in ("lower_exclusive", "upper_exclusive"):
                v = j.get(f, False)
                if v.__class__ is not bool:
                    raise InvalidConfig("join: %s must be true or false, got %r" % (f, v))
                flags.append(v)
            spec = cls.interval(_i64(j, "lower_ms", what), _i64(j, "upper_ms", what), *flags)
        else:
            raise InvalidConfig("join: unknown kind %r (expected regular or interval)" % (kind,))
        spec.late = _late(obj, what)
        spec.validate()
        return spec

    def to_config(self):
        """The spec as its JSON configuration object."""
        if self.kind == REGULAR:
            j = {"kind": REGULAR, "ttl_ms": self.ttl_ms}
        else:
            j = {"kind": INTERVAL, "lower_ms": self.lower_ms, "upper_ms": self.upper_ms,
                 "lower_exclusive": self.lower_exclusive, "upper_exclusive": self.upper_exclusive}
        return {"join": j, "late": _late_config(self.late)}

    def bounds(self):
        """The inclusive range `(lo, hi)` of `right.ts - left.ts` that matches; None for no
        bound."""
        if self.kind == REGULAR:
            ttl = self.ttl_ms
            return (None, None) if ttl is None else (sat(-ttl), ttl)
        return (sat(self.lower_ms + (1 if self.lower_exclusive else 0)),
                sat(self.upper_ms - (1 if self.upper_exclusive else 0)))

    def expires(self):
        """Whether buffered records expire (a TTL or an interval): then late records exist."""
        return self.bounds() != (None, None)

    def validate(self):
        """Checks that the bounds leave something to match (`InvalidConfig` if not)."""
        if self.kind not in (REGULAR, INTERVAL):
            raise InvalidConfig("join: unknown kind %r" % (self.kind,))
        if self.kind == REGULAR and self.ttl_ms is not None and self.ttl_ms < 0:
            raise InvalidConfig("join: ttl_ms must not be negative, got %d" % self.ttl_ms)
        lo, hi = self.bounds()
        if lo is not None and hi is not None and lo > hi:
            raise InvalidConfig("join: the bounds match nothing (right.ts \u2212 left.ts from %d to %d)" % (lo, hi))
        _check_late(self.late, "join")

    def matches(self, l_ts, r_ts):
        """Whether a left record at `l_ts` and a right record at `r_ts` match."""
        d = r_ts - l_ts
        lo, hi = self.bounds()
        return (lo is None or d >= lo) and (hi is None or d <= hi)

    def __eq__(self, other):
        return isinstance(other, JoinSpec) and self.to_config() == other.to_config()

    def __repr__(self):
        return "JoinSpec(%r)" % (self.to_config(),)


def _check_buffers(b):
    """Checks a decoded entry (`from_plain` of the state)."""
    if not (isinstance(b, list) and len(b) == 3 and isinstance(b[0], list) and isinstance(b[1], list)
            and b[2].__class__ is int
            and all(isinstance(e, list) and len(e) == 2 and e[0].__class__ is int for e in b[0])
            and all(isinstance(e, list) and len(e) == 2 and e[0].__class__ is int for e in b[1])):
        raise StateError("not [[[ts, item], ...], [[ts, item], ...], timer]: %r" % (b,))
    return b


class KeyedJoin:
    """A keyed two-input join: a state named `name` (see the module docs). Call
    `configure` in `on_open`, `process` per record, `expire` in `on_timer`."""

    def __init__(self, name="join"):
        self.name = name
        self.spec = None
        self._lo = self._hi = None
        # key bytes -> [left [[ts, item], ...], right [[ts, item], ...], earliest expiry]
        self._buffers = KeyedState(name, from_plain=_check_buffers)

    def configure(self, spec):
        """Sets what matches and the late policy: a `JoinSpec`, or its JSON configuration
        (object or text). Raises `InvalidConfig` when it does not validate."""
        if not isinstance(spec, JoinSpec):
            spec = JoinSpec.from_config(spec)
        else:
            spec.validate()
        self.spec = spec
        self._lo, self._hi = spec.bounds()

    def _configured(self):
        spec = self.spec
        if spec is None:
            raise RuntimeError("KeyedJoin used before configure() (call it in on_open)")
        return spec

    def process(self, input, key, value, timestamp, item):
        """Joins the record (`key` and `value` bytes, `timestamp`) of input `input` (0: left,
        else right), whose decoded value is `item`: returns `(left, left_ts, right, right_ts)`
        for every buffered record of the other side that it matches, then buffers it. A late
        record is handled as the spec says instead (and nothing is returned)."""
        spec = self._configured()
        if spec.expires() and timestamp <= host.input_watermark(input):
            if spec.late is None:
                host.counter_add("late_records_dropped", 1)
            else:
                host.emit_side_output(spec.late, key, value, timestamp)
            return []
        if input == 0:
            return self.add_left(key, timestamp, item)
        return self.add_right(key, timestamp, item)

    def add_left(self, key, timestamp, item):
        """Joins a left record (key bytes `key`, at `timestamp`) without the late check."""
        self._configured()
        lo, hi = self._lo, self._hi
        ts = timestamp
        buffers = self._buffers.get(key)
        if buffers is None:
            buffers = [[], [], I64_MAX]
        pairs = [(item, ts, r, r_ts) for r_ts, r in buffers[1]
                 if (lo is None or r_ts - ts >= lo) and (hi is None or r_ts - ts <= hi)]
        buffers[0].append([ts, item])
        # It can meet no right record above `ts + hi` (a later one is above the watermark).
        self._schedule(key, buffers, None if hi is None else sat(ts + hi))
        return pairs

    def add_right(self, key, timestamp, item):
        """Joins a right record (key bytes `key`, at `timestamp`) without the late check."""
        self._configured()
        lo, hi = self._lo, self._hi
        ts = timestamp
        buffers = self._buffers.get(key)
        if buffers is None:
            buffers = [[], [], I64_MAX]
        pairs = [(l, l_ts, item, ts) for l_ts, l in buffers[0]
                 if (lo is None or ts - l_ts >= lo) and (hi is None or ts - l_ts <= hi)]
        buffers[1].append([ts, item])
        # It can meet no left record above `ts - lo`.
        self._schedule(key, buffers, None if lo is None else sat(ts - lo))
        return pairs

    def _schedule(self, key, buffers, expiry):
        """Stores the key's buffers, keeping one timer per key at its earliest expiry."""
        if expiry is not None and expiry < buffers[2]:
            buffers[2] = expiry
            host.register_timer(key, expiry)
        self._buffers.put(key, buffers)

    def expire(self, key, timestamp):
        """Handles the timer of `key` at `timestamp`: drops the key's records that can no
        longer match and moves the timer to the next expiry. Other timers change nothing."""
        self._configured()
        buffers = self._buffers.get(key)
        if buffers is None or buffers[2] > timestamp:
            return
        lo, hi = self._lo, self._hi
        left = [(I64_MAX if hi is None else sat(e[0] + hi), e) for e in buffers[0]]
        right = [(I64_MAX if lo is None else sat(e[0] - lo), e) for e in buffers[1]]
        left = [(x, e) for x, e in left if x > timestamp]
        right = [(x, e) for x, e in right if x > timestamp]
        if not left and not right:
            self._buffers.remove(key)
            return
        nxt = min(x for x, _ in left + right)
        self._buffers.put(key, [[e for _, e in left], [e for _, e in right], nxt])
        if nxt < I64_MAX:
            host.register_timer(key, nxt)

    def keys(self):
        """Number of keys with buffered records."""
        return len(self._buffers)

    def buffered(self):
        """Number of buffered records, `(left, right)`, over all keys."""
        left = right = 0
        for _, b in self._buffers.items():
            left += len(b[0])
            right += len(b[1])
        return left, right

    # The state protocol (see weirpy.state.States).

    def snapshot(self, full):
        return self._buffers.snapshot(full)

    def restore(self, key, value):
        self._buffers.restore(key, value)

    @property
    def native(self):
        return self._buffers.native

    def snapshot_decoded(self, full):
        return self._buffers.snapshot_decoded(full)

    def restore_decoded(self, items):
        self._buffers.restore_decoded(items)

    def forget(self, key):
        self._buffers.forget(key)
