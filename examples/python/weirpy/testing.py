"""Running an operator on the host, without wasm, for unit tests: the Python twin of the Rust
SDK's `weir_guest::testing::Harness`.

`SimulatedHost` stands in for the world's imports (timers, event time, side outputs,
keyed state, metrics, logging) by replacing the functions of the generated `wit_world.imports` modules;
`Harness` drives an `OperatorBase` subclass the way Weir does — open, batches per input,
watermarks and the timers they fire (in time order, then `on_watermark`), snapshots,
restores and restarts from a checkpoint.

    h = Harness(window_count.Operator)
    h.open({"window": {"kind": "tumbling", "size_ms": 10}})
    h.process([record(1, 7, 3)])
    fired = h.watermark(9)              # [(key bytes, value bytes, timestamp)]

Records are `(key bytes, value bytes, timestamp)` tuples; `record(key, value, ts)` encodes
key and value as MessagePack (key None: no key). Only for tests: it changes the imports of
the whole process.
"""

import collections
import json

from wit_world.imports import event_time, logging, metrics, side_output, timers, types

try:  # bindings of a WIT from before the keyed-state import
    from wit_world.imports import keyed_state
except ImportError:
    keyed_state = None

from . import msgpack
from .host import DEAD_LETTER_OUTPUT, I64_MIN
from .operator import OperatorBase
from .records import BatchWriter, iter_records


def record(key, value, timestamp):
    """A record with `key` and `value` encoded as MessagePack (key None: no key)."""
    return (b"" if key is None else msgpack.packb(key), msgpack.packb(value), timestamp)


def decoded(records):
    """`(key, value, timestamp)` with key (None when empty) and value decoded."""
    return [(msgpack.unpackb(k) if k else None, msgpack.unpackb(v), ts) for k, v, ts in records]


class SimulatedHost:
    """What the operator asked of the host, and the watermarks the harness set. `install`
    puts it in place of the imports."""

    def __init__(self):
        self.timers = set()             # (timestamp, key bytes)
        self.watermark = I64_MIN
        self.input_watermarks = []
        self.side_outputs = []          # (name, (key, value, timestamp))
        self.side_output_names = set()
        self.counters = {}
        self.logs = []                  # (level, message)
        self.keyed_state = SimulatedKeyedState()

    def install(self):
        timers.register = self._register
        timers.delete = self._delete
        event_time.current_watermark = lambda: self.watermark
        event_time.input_watermark = self._input_watermark
        side_output.emit = self._emit
        metrics.counter_add = self._counter_add
        logging.log = lambda level, message: self.logs.append((level, message))
        if keyed_state is not None:
            self.keyed_state.install()
        return self

    def _register(self, key, timestamp):
        if not isinstance(key, bytes) or timestamp.__class__ is not int:
            raise TypeError("timers.register(key: bytes, timestamp: int), got %r, %r" % (key, timestamp))
        self.timers.add((timestamp, key))

    def _delete(self, key, timestamp):
        self.timers.discard((timestamp, key))

    def _input_watermark(self, input):
        w = self.input_watermarks
        return w[input] if 0 <= input < len(w) else I64_MIN

    def _emit(self, name, key, value, timestamp):
        # As the host: a name of 1 to 64 bytes, at most 16 distinct names per instance.
        if not 1 <= len(name.encode()) <= 64:
            raise ValueError("side output name %r is not 1 to 64 bytes" % name)
        self.side_output_names.add(name)
        if len(self.side_output_names) > 16:
            raise ValueError("more than 16 side output names")
        if not isinstance(key, bytes) or not isinstance(value, bytes):
            raise TypeError("side_output.emit takes key and value bytes")
        self.side_outputs.append((name, (key, value, timestamp)))

    def _counter_add(self, name, delta):
        self.counters[name] = self.counters.get(name, 0) + delta


class HostStateError(BaseException):
    """A keyed-state request the host refuses. On Weir the import answers with nothing and
    the host fails the call when it returns, whatever the guest made of it (the instance is
    poisoned, recovery restores the last checkpoint). Here it is raised at once, as a
    `BaseException` so that `OperatorBase` does not turn it into the call's own error."""


class SimulatedKeyedState:
    """The host's keyed state (the `keyed-state` import) in memory, with the host's limits,
    counting the calls. It belongs to the host: it outlives instances (`Harness.restart`)."""

    MAX_NAME = 64
    MAX_STATES = 16
    MAX_KEY = 4096
    MAX_VALUE = 16 << 20

    def __init__(self):
        self.names = []                     # handle -> state name
        self.data = {}                      # name -> {key: {field: value}}
        #: Calls per function (`open_state`, `get`, `multi_get`, `put`, `delete`, `clear`,
        #: `apply`, `scan`).
        self.calls = collections.Counter()

    def install(self):
        for name in ("open_state", "get", "multi_get", "put", "delete", "clear", "apply", "scan"):
            setattr(keyed_state, name, getattr(self, "_" + name))
        return self

    def entries(self, name):
        """`{(key, field): value bytes}` of state `name`."""
        return {(k, f): v for k, fields in self.data.get(name, {}).items() for f, v in fields.items()}

    def values(self, name):
        """`{key: value bytes}` of the empty field (`HostKeyedState`'s values) of `name`."""
        return {k: fields[b""] for k, fields in self.data.get(name, {}).items() if b"" in fields}

    # The import's functions.

    def _state(self, handle):
        if handle.__class__ is not int or not 0 <= handle < len(self.names):
            raise HostStateError("no host state has handle %r" % (handle,))
        return self.data[self.names[handle]]

    def _check(self, what, b, limit):
        if b.__class__ is not bytes:
            raise HostStateError("a %s is list<u8> (bytes), got %s" % (what, type(b).__name__))
        if len(b) > limit:
            raise HostStateError("a %s of %d bytes is over the limit of %d" % (what, len(b), limit))

    def _open_state(self, name):
        self.calls["open_state"] += 1
        if not isinstance(name, str) or not 1 <= len(name.encode()) <= self.MAX_NAME:
            raise HostStateError("a host state name is 1 to 64 bytes, got %r" % (name,))
        if name in self.names:
            return self.names.index(name)
        if len(self.names) >= self.MAX_STATES:
            raise HostStateError("an instance opens at most %d host states" % self.MAX_STATES)
        self.names.append(name)
        self.data.setdefault(name, {})
        return len(self.names) - 1

    def _read(self, state, key, field):
        self._check("key", key, self.MAX_KEY)
        self._check("field", field, self.MAX_KEY)
        fields = state.get(key)
        return None if fields is None else fields.get(field)

    def _write(self, state, key, field, value):
        self._check("key", key, self.MAX_KEY)
        self._check("field", field, self.MAX_KEY)
        if value is None:
            fields = state.get(key)
            if fields is not None:
                fields.pop(field, None)
                if not fields:
                    del state[key]
        else:
            self._check("value", value, self.MAX_VALUE)
            state.setdefault(key, {})[field] = value

    def _get(self, handle, key, field):
        self.calls["get"] += 1
        return self._read(self._state(handle), key, field)

    def _multi_get(self, handle, lookups):
        self.calls["multi_get"] += 1
        state = self._state(handle)
        return [self._read(state, lookup.key, lookup.field) for lookup in lookups]

    def _put(self, handle, key, field, value):
        self.calls["put"] += 1
        if value is None:
            raise HostStateError("put takes a value")
        self._write(self._state(handle), key, field, value)

    def _delete(self, handle, key, field):
        self.calls["delete"] += 1
        self._write(self._state(handle), key, field, None)

    def _clear(self, handle, key):
        self.calls["clear"] += 1
        self._check("key", key, self.MAX_KEY)
        self._state(handle).pop(key, None)

    def _apply(self, handle, changes):
        self.calls["apply"] += 1
        state = self._state(handle)
        for change in changes:
            self._write(state, change.key, change.field, change.value)

    def _scan(self, handle, key, start, limit):
        self.calls["scan"] += 1
        self._check("key", key, self.MAX_KEY)
        if start is not None:
            self._check("field", start, self.MAX_KEY)
        fields = self._state(handle).get(key, {})
        out = []
        for field in sorted(fields):
            if start is not None and field < start:
                continue
            if len(out) >= limit:
                break
            out.append(keyed_state.FieldValue(field=field, value=fields[field]))
        return out


def _batch(records):
    w = BatchWriter()
    for k, v, ts in records:
        w.emit_raw(k, v, ts)
    return w.finish()


class Harness:
    """Drives one instance of `operator_class` (an `OperatorBase` subclass) on a simulated
    host. See the module docs."""

    def __init__(self, operator_class, host=None):
        self.host = (host or SimulatedHost()).install()
        self.operator_class = operator_class
        OperatorBase._singletons.pop(operator_class, None)
        #: The operator object, to inspect its states.
        self.operator = operator_class()
        self.inputs = 1

    def open(self, config="{}", inputs=1, restored=False):
        """Opens the instance with `config` (JSON text, or an object to serialize) and
        `inputs` inputs."""
        if not isinstance(config, str):
            config = json.dumps(config)
        self.inputs = max(inputs, 1)
        w = self.host.input_watermarks
        w.extend([I64_MIN] * (self.inputs - len(w)))
        self.operator.open(types.Context(
            operator_id="op", config=config, subtask_index=0, parallelism=1, max_parallelism=128,
            key_group_start=0, key_group_end=128, inputs=self.inputs, restored=restored))

    def process(self, records, input=0):
        """Processes `records` as one batch on input `input`; returns what it emitted."""
        return list(iter_records(self.operator.process(input, _batch(records))))

    def watermark(self, timestamp):
        """Advances the watermark of every input to `timestamp`: fires the due timers in
        time order, then calls `on_watermark`. Returns everything emitted on the main output.
        A watermark at or below the current one does nothing."""
        w = self.host.input_watermarks
        w.extend([I64_MIN] * (self.inputs - len(w)))
        for i, v in enumerate(w):
            w[i] = max(v, timestamp)
        return self._advance(timestamp)

    def input_watermark(self, input, timestamp):
        """Advances the watermark of input `input` alone; the instance's watermark (the
        smallest over its inputs) advances with it when it moves, firing timers as
        `watermark` does."""
        w = self.host.input_watermarks
        w.extend([I64_MIN] * (max(self.inputs, input + 1) - len(w)))
        w[input] = max(w[input], timestamp)
        return self._advance(min(w))

    def _advance(self, timestamp):
        host = self.host
        if timestamp <= host.watermark:
            return []
        host.watermark = timestamp
        emitted = []
        while host.timers:
            due = min(host.timers)
            if due[0] > timestamp:
                break
            host.timers.discard(due)
            emitted += iter_records(self.operator.on_timer(due[1], due[0]))
        emitted += iter_records(self.operator.on_watermark(timestamp))
        return emitted

    def current_watermark(self):
        return self.host.watermark

    def fire_timer(self, key, timestamp):
        """Fires the timer of `key` at `timestamp` directly."""
        self.host.timers.discard((timestamp, key))
        return list(iter_records(self.operator.on_timer(key, timestamp)))

    def timers(self):
        """The registered timers as `(timestamp, key bytes)`, in time order."""
        return sorted(self.host.timers)

    def take_side_outputs(self):
        """Takes the records emitted on side outputs so far: `(name, (key, value, ts))`."""
        out, self.host.side_outputs = self.host.side_outputs, []
        return out

    def take_dead_letters(self):
        """Takes the records the operator sent to the dead letters so far (`weirpy.host.
        dead_letter`: side output `dead-letter`), decoded as the host reads them: `(reason,
        key bytes, value bytes, ts)`. The other side outputs stay for `take_side_outputs`."""
        letters, rest = [], []
        for name, (key, value, ts) in self.host.side_outputs:
            if name != DEAD_LETTER_OUTPUT:
                rest.append((name, (key, value, ts)))
                continue
            if key != b"":
                raise AssertionError("a dead letter has the key %r (the host wants none)" % key)
            fields = msgpack.unpackb(value)
            if not (isinstance(fields, list) and len(fields) == 3 and isinstance(fields[0], str)
                    and isinstance(fields[1], bytes) and isinstance(fields[2], bytes)):
                raise AssertionError("a dead letter is not [reason, key bin, value bin]: %r" % (fields,))
            letters.append((fields[0], fields[1], fields[2], ts))
        self.host.side_outputs = rest
        return letters

    def counter(self, name):
        """The value of metrics counter `name` (0 if never added to)."""
        return self.host.counters.get(name, 0)

    def snapshot(self, full):
        """A snapshot as `(state name, key bytes, value bytes or None for a delete)`."""
        delta = self.operator.snapshot(0, full)
        out, pos = [], 0
        for e in delta.entries:
            k_end = pos + e.key_len
            v_end = k_end + e.value_len
            value = None if e.kind == types.ChangeKind.DELETE else delta.data[k_end:v_end]
            out.append((delta.names[e.state], delta.data[pos:k_end], value))
            pos = v_end
        return out

    def restore(self, changes, state_version=None):
        """Restores `(state name, key, value)` puts (call before `open`)."""
        names, data, entries = [], bytearray(), []
        for name, key, value in changes:
            if name not in names:
                names.append(name)
            data += key + value
            entries.append(types.StateEntry(state=names.index(name), kind=types.ChangeKind.PUT,
                                            key_len=len(key), value_len=len(value)))
        version = self.operator_class.STATE_VERSION if state_version is None else state_version
        self.operator.restore(version, types.StateDelta(names=names, data=bytes(data), entries=entries))

    def restart(self):
        """The instance after a failure and a restore from a checkpoint taken now: a fresh
        instance restored from a full snapshot of this one, on the same host (timers,
        watermarks and counters are the host's). Open it before use, as the host does."""
        saved = self.snapshot(True)
        nxt = Harness(self.operator_class, self.host)
        nxt.inputs = self.inputs
        nxt.restore(saved)
        return nxt
