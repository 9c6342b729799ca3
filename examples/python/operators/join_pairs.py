"""A keyed two-input join in Python, built on `weirpy.join`: pairs the ids of left and right
records with the same key. The same contract as the Rust example `examples/join` (so one job
gives the same output with either module).

Inputs: 0 = left, 1 = right (`"inputs": ["left", "right"]` in the job spec). Config: a
JoinSpec JSON object, e.g. `{"join": {"kind": "interval", "lower_ms": -10, "upper_ms": 10}}`
or `{"join": {"kind": "regular", "ttl_ms": 60000}, "late": {"side_output": "late"}}`.

Values: MessagePack unsigned ints (ids); anything else fails the batch with `invalid-input`.

Output, once per matching pair, when its second record arrives: key = the records' key bytes
unchanged, value = MessagePack map `{"left": u64, "right": u64, "left_ts": i64, "right_ts": i64}`
(in that order), timestamp = the later of the two. Late records (joins whose state expires)
go where `late` says.

State: `join` (see weirpy.join): the layout of the Rust operator's state.
"""

from weirpy import msgpack
from weirpy.join import KeyedJoin
from weirpy.operator import InvalidInput, OperatorBase
from weirpy.state import States

U64_MAX = (1 << 64) - 1


def read_id(value):
    """The id a record's value holds (a MessagePack unsigned int)."""
    if len(value) == 1 and value[0] < 0x80:
        return value[0]
    id = msgpack.unpackb(value)
    if id.__class__ is not int or not 0 <= id <= U64_MAX:
        raise InvalidInput("the value is not an unsigned integer id: %r" % (id,))
    return id


class Operator(OperatorBase):
    NAME = "join_pairs"
    STATE_VERSION = 0

    def __init__(self):
        super().__init__()
        self.join = KeyedJoin(name="join")
        self.states = States(self.join)

    def on_open(self, context, config):
        self.join.configure(config)

    def process_record(self, key, value, timestamp, out, input):
        pairs = self.join.process(input, key, value, timestamp, read_id(value))
        for left, left_ts, right, right_ts in pairs:
            out.emit_raw(key, msgpack.packb({"left": left, "right": right, "left_ts": left_ts, "right_ts": right_ts}),
                         left_ts if left_ts > right_ts else right_ts)

    def on_timer(self, key, timestamp, out):
        self.join.expire(key, timestamp)
