"""Keyed event-time windows in Python, built on `weirpy.window`: counts the records of each
key and window and sums their ids. The same contract as the Rust example `examples/window`
(so one job gives the same output with either module).

Config: a WindowSpec JSON object, e.g.
`{"window": {"kind": "sliding", "size_ms": 10000, "slide_ms": 2000},
  "allowed_lateness_ms": 500, "late": {"side_output": "late"}}`.

Input: records of any key; value = a MessagePack unsigned int (an id, as the `generator`
source's sequence emits). Anything else fails the batch with `invalid-input`.

Output, once per key and window, when the watermark reaches the window's end minus one plus
the allowed lateness: key = the records' key bytes unchanged, value = MessagePack map
`{"start": i64, "end": i64, "count": u64, "sum": u64}` (in that order; the sum wraps at
2^64), timestamp = end - 1. Late records go where `late` says (dropped and counted in the
metric `late_records_dropped` by default).

State: `windows` (see weirpy.window), accumulators `[count, sum]`: the layout of the Rust
operator's state.
"""

from weirpy import msgpack
from weirpy.operator import InvalidInput, OperatorBase
from weirpy.state import States
from weirpy.window import AggregateFunction, KeyedWindows

U64_MAX = (1 << 64) - 1


class CountSum(AggregateFunction):
    """Count and sum of ids: the accumulator is `(count, sum)`."""

    def create(self):
        return (0, 0)

    def add(self, acc, id):
        return (acc[0] + 1, (acc[1] + id) & U64_MAX)

    def merge(self, acc, other):
        return (acc[0] + other[0], (acc[1] + other[1]) & U64_MAX)


def read_id(value):
    """The id a record's value holds (a MessagePack unsigned int)."""
    if len(value) == 1 and value[0] < 0x80:
        return value[0]
    id = msgpack.unpackb(value)
    if id.__class__ is not int or not 0 <= id <= U64_MAX:
        raise InvalidInput("the value is not an unsigned integer id: %r" % (id,))
    return id


class Operator(OperatorBase):
    NAME = "window_count"
    STATE_VERSION = 0

    def __init__(self):
        super().__init__()
        self.windows = KeyedWindows(CountSum(), name="windows")
        self.states = States(self.windows)

    def on_open(self, context, config):
        self.windows.configure(config)

    def process_record(self, key, value, timestamp, out):
        self.windows.add(key, value, timestamp, read_id(value))

    def on_timer(self, key, timestamp, out):
        for w, (count, total) in self.windows.fire(key, timestamp):
            out.emit_raw(key, msgpack.packb({"start": w.start, "end": w.end, "count": count, "sum": total}),
                         w.max_timestamp)
