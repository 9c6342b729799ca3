"""Running an operator on the host, without wasm, for unit tests: the Python twin of the Rust
SDK's `weir_guest::testing::Harness`.

`SimulatedHost` stands in for the world's imports (timers, event time, side outputs,
metrics, logging) by replacing the functions of the generated `wit_world.imports` modules;
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

import json

from wit_world.imports import event_time, logging, metrics, side_output, timers, types

from . import msgpack
from .host import I64_MIN
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

    def install(self):
        timers.register = self._register
        timers.delete = self._delete
        event_time.current_watermark = lambda: self.watermark
        event_time.input_watermark = self._input_watermark
        side_output.emit = self._emit
        metrics.counter_add = self._counter_add
        logging.log = lambda level, message: self.logs.append((level, message))
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
