"""The host's services, wrapped: event-time timers, watermarks, side outputs, dead letters,
metrics, logs.

Every function reaches the import through its module at call time (`_timers.register`, ...),
so `weirpy.testing` can put a simulated host in place of the imports on a machine without
wasm. Like the world's imports themselves, none may be called at import time or in
`__init__` (they are trapping stubs while componentize-py pre-initializes the component).

Watermarks cannot change during one call of the operator: `current_watermark` and
`input_watermark` ask the host once per call (`OperatorBase` starts every exported call
with `new_call()`), so asking per record costs no host call.
"""

from wit_world.imports import event_time as _event_time
from wit_world.imports import logging as _logging
from wit_world.imports import metrics as _metrics
from wit_world.imports import side_output as _side_output
from wit_world.imports import timers as _timers

from . import msgpack as _msgpack

#: The side output the host reads dead letters from (`dead_letter`).
DEAD_LETTER_OUTPUT = "dead-letter"

_BYTES = (bytes, bytearray, memoryview)

I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1

#: Log levels for `log`.
Level = _logging.Level

_current = None     # the combined watermark of this call, once asked
_inputs = {}        # input index -> its watermark in this call, once asked


def new_call():
    """Forgets the watermarks of the previous call (called as each exported call begins)."""
    global _current
    _current = None
    if _inputs:
        _inputs.clear()


def register_timer(key, timestamp):
    """Registers an event-time timer for `key` (record key bytes; b"" for none) at
    `timestamp`; it fires (`on_timer(key, timestamp, out)`) once the watermark reaches it.
    Registering the same key and time twice keeps one timer."""
    _timers.register(key, timestamp)


def delete_timer(key, timestamp):
    """Deletes the timer of `key` at `timestamp`, if one is registered."""
    _timers.delete(key, timestamp)


def current_watermark():
    """The instance's input watermark: the smallest over its inputs. Every timer at or
    before it has fired, or fires in this round of `on_timer` calls. `I64_MIN` before the
    first watermark; after a restore from a checkpoint, the watermark of that checkpoint from
    `on_open` on. A record at or below it is late."""
    global _current
    w = _current
    if w is None:
        w = _current = _event_time.current_watermark()
    return w


def input_watermark(input):
    """The watermark of input `input` alone; `I64_MIN` for an input the operator lacks."""
    w = _inputs.get(input)
    if w is None:
        w = _inputs[input] = _event_time.input_watermark(input)
    return w


def emit_side_output(name, key, value, timestamp):
    """Emits a record of encoded `key` and `value` bytes on the side output `name` (a job
    routes it with an edge whose `output` is `name`; the host drops and counts records on a
    name no edge carries). Names are 1 to 64 bytes, at most 16 per instance."""
    _side_output.emit(name, key, value, timestamp)


def dead_letter(key, value, timestamp, reason):
    """Sends a record the operator will not process to the job's dead-letter destination
    (the spec's `dead_letter`), with `reason` (a str; the host keeps its first 256
    characters). `key` and `value` are the record's encoded bytes as it came (`b""` for no
    key; on the batch API, where values arrive decoded, `msgpack.packb(value)`), `timestamp`
    its event time. The host keeps it with the job, node and subtask and the time, and counts
    it against the job's `max_dead_letters_per_minute`. A job without a destination drops it
    as a side-output record no edge carries (metric `side_output_dropped`), outside that
    limit.

    On the wire: side output `dead-letter`, empty key, value the MessagePack array
    `[reason, key, value]` with key and value as bin, as the Rust SDK's
    `weir_guest::dead_letter::send_raw` writes it."""
    if not isinstance(key, _BYTES) or not isinstance(value, _BYTES):
        raise TypeError("dead_letter takes the key and value bytes, got %s and %s"
                        % (type(key).__name__, type(value).__name__))
    out = bytearray(b"\x93")
    _msgpack.pack_into(str(reason), out)
    _msgpack.pack_into(key, out)     # bytes-like: written as bin
    _msgpack.pack_into(value, out)
    _side_output.emit(DEAD_LETTER_OUTPUT, b"", bytes(out), timestamp)


def counter_add(name, delta=1):
    """Adds `delta` to the metrics counter `name` of this instance."""
    _metrics.counter_add(name, delta)


def log(level, message):
    """Writes one log line at `level` (`Level.INFO`, ...)."""
    _logging.log(level, message)
