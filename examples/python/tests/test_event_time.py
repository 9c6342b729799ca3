"""OperatorBase's event-time hooks, the input index, ValueState and the host wrappers
(weirpy.host), on the simulated host of weirpy.testing."""

import unittest

import support  # noqa: F401  (puts the bindings on the path)

from wit_world.imports import event_time, types

from weirpy import host, msgpack
from weirpy.host import I64_MIN
from weirpy.operator import OperatorBase
from weirpy.records import empty_batch
from weirpy.state import States, ValueState
from weirpy.testing import Harness, SimulatedHost, decoded, record


class Deadline(OperatorBase):
    """Emits each record's key when the watermark passes its timestamp + 10 (a timer per
    record), remembers the highest watermark seen in a ValueState, tags records by input."""

    NAME = "deadline"

    def __init__(self):
        super().__init__()
        self.highest = ValueState("highest")
        self.states = States(self.highest)

    def process_record(self, key, value, timestamp, out, input):
        out.emit_raw(key, msgpack.packb(["seen", input, host.current_watermark()]), timestamp)
        host.register_timer(key, timestamp + 10)

    def on_timer(self, key, timestamp, out):
        out.emit_raw(key, msgpack.packb(["due", host.current_watermark()]), timestamp)

    def on_watermark(self, timestamp, out):
        self.highest.set(timestamp)
        out.emit(None, ["watermark", timestamp], timestamp)


class Raw(OperatorBase):
    """Overrides the exported functions themselves (the older way): still works."""

    def process_record(self, key, value, timestamp, out):
        out.emit_raw(key, value, timestamp)

    def on_timer(self, key, timestamp):
        return empty_batch()

    def on_watermark(self, timestamp):
        host.current_watermark()
        w = support.batch((None, "raw", timestamp))
        return w


class HooksTest(unittest.TestCase):
    def test_timers_fire_through_the_hooks_then_on_watermark(self):
        h = Harness(Deadline)
        h.open("{}", inputs=2)
        self.assertEqual(decoded(h.process([record("a", 0, 5)], input=1)), [("a", ["seen", 1, I64_MIN], 5)])
        h.process([record("b", 0, 1)], input=0)
        self.assertEqual(h.timers(), [(11, msgpack.packb("b")), (15, msgpack.packb("a"))])
        self.assertEqual(decoded(h.watermark(12)), [("b", ["due", 12], 11), (None, ["watermark", 12], 12)])
        self.assertEqual(decoded(h.process([record("c", 0, 20)])), [("c", ["seen", 0, 12], 20)])
        # A restart keeps the host's timers and watermark; the value state comes back.
        h = h.restart()
        h.open("{}", inputs=2, restored=True)
        self.assertEqual(h.operator.highest.get(), 12)
        self.assertEqual(decoded(h.watermark(100)), [("a", ["due", 100], 15), ("c", ["due", 100], 30),
                                                     (None, ["watermark", 100], 100)])

    def test_the_exported_signatures_still_override(self):
        h = Harness(Raw)
        h.open()
        self.assertEqual(h.process([record(1, 2, 3)]), [record(1, 2, 3)])
        self.assertEqual(decoded(h.watermark(7)), [(None, "raw", 7)])
        self.assertEqual(h.fire_timer(b"", 7), [])

    def test_watermarks_are_asked_once_per_call(self):
        sim = SimulatedHost()
        h = Harness(Deadline, sim)
        h.open("{}", inputs=2)
        calls = []
        event_time.current_watermark = lambda: calls.append("c") or sim.watermark
        event_time.input_watermark = lambda i: calls.append(i) or sim._input_watermark(i)
        h.process([record(k, 0, 1) for k in range(50)])
        self.assertEqual(calls, ["c"])
        self.assertEqual(host.input_watermark(1), I64_MIN)
        self.assertEqual(host.input_watermark(1), I64_MIN)
        self.assertEqual(calls, ["c", 1])
        # The next call asks again: the watermark may have moved between calls.
        sim.watermark = 4
        out = h.process([record("x", 0, 9)])
        self.assertEqual(decoded(out), [("x", ["seen", 0, 4], 9)])
        self.assertEqual(calls, ["c", 1, "c"])


class ValueStateTest(unittest.TestCase):
    def test_tracks_set_change_and_removal(self):
        s = ValueState("s")
        self.assertEqual(s.snapshot(False), [])
        s.set(1)
        self.assertEqual(s.snapshot(False), [(b"", b"\x01")])
        self.assertEqual(s.snapshot(False), [])
        s.set(s.get() + 1)
        self.assertEqual(s.snapshot(False), [(b"", b"\x02")])
        self.assertEqual(s.clear(), 2)
        self.assertEqual(s.snapshot(False), [(b"", None)])
        # Set and cleared between two snapshots: the host never saw it.
        s.set(3)
        s.clear()
        self.assertEqual(s.snapshot(False), [])
        s.set(4)
        self.assertEqual(s.snapshot(True), [(b"", b"\x04")])
        self.assertEqual(s.snapshot(False), [])
        self.assertEqual(ValueState("e").snapshot(True), [])

    def test_restore(self):
        states = States(ValueState("v"))
        states.restore(types.StateDelta(names=["v"], data=b"\x05", entries=[
            types.StateEntry(state=0, kind=types.ChangeKind.PUT, key_len=0, value_len=1)]))
        v = states._by_name["v"]
        self.assertEqual(v.get(), 5)
        self.assertEqual(states.snapshot(False).entries, [])
        v.clear()
        self.assertEqual([e.kind for e in states.snapshot(False).entries], [types.ChangeKind.DELETE])
        from weirpy.state import StateError
        with self.assertRaises(StateError):
            v.restore(b"\x01", b"\x05")


if __name__ == "__main__":
    unittest.main()
