"""Test fixture: the Python word count as it would have been written for the previous
contract, `weir:operator@0.1.0` (engine/test-guests/worlds/v0.1.0): `operator-info` has no
`migrates-from` and `restore` takes no state version. componentize-py builds it; Weir must
refuse it at upload because it exports `weir:operator/operator@0.1.0`, not `@0.2.0`.

It uses weirpy's MessagePack, batch and state helpers (they only need `types`, the same in
both versions) and implements the 0.1.0 interface itself. componentize-py constructs the
exported class once per exported function, so the state lives at module level.
"""

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

from weirpy import msgpack
from weirpy.records import BatchWriter, empty_batch, iter_records
from weirpy.state import KeyedState, StateError, States

COUNTS = KeyedState("counts")
STATES = States(COUNTS)
U64_MAX = (1 << 64) - 1


class Operator(exports.Operator):
    def describe(self):
        return types.OperatorInfo(name="wordcount-python-0.1.0", state_version=0)

    def open(self, context):
        pass

    def process(self, input, batch):
        out = BatchWriter()
        latest = {}
        try:
            for key, value, timestamp in iter_records(batch):
                increment = msgpack.unpackb(value)
                if not isinstance(increment, int) or isinstance(increment, bool) or increment < 0:
                    raise msgpack.MsgpackError("the increment is not an unsigned integer: %r" % (increment,))
                total = min(COUNTS.get(key, 0) + increment, U64_MAX)
                COUNTS.put(key, total)
                if key not in latest or timestamp > latest[key]:
                    latest[key] = timestamp
        except (msgpack.MsgpackError, ValueError) as e:
            raise Err(types.Error_InvalidInput(str(e)))
        for key, timestamp in latest.items():
            out.emit_raw(key, msgpack.pack_uint(COUNTS.get(key)), timestamp)
        return out.finish()

    def on_watermark(self, timestamp):
        return empty_batch()

    def on_timer(self, key, timestamp):
        return empty_batch()

    def snapshot(self, checkpoint_id, full):
        return STATES.snapshot(full)

    def restore(self, chunk):
        try:
            STATES.restore(chunk)
        except StateError as e:
            raise Err(types.Error_InvalidState(str(e)))
