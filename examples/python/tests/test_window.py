"""weirpy.window through operators/window_count.py on the simulated host, against the reference
simulations of the Rust SDK's tests (guest-sdk/src/window/tests.rs): the same seeded streams
(same LCG), the same references, the same checks."""

import unittest

import support  # noqa: F401  (puts the bindings on the path)

from componentize_py_types import Err
from wit_world.imports import types

import window_count
from weirpy import msgpack
from weirpy.host import I64_MAX, I64_MIN
from weirpy.testing import Harness, record
from weirpy.window import Window, WindowSpec

U64 = (1 << 64) - 1


def lcg(state):
    """The Rust tests' generator: a 64-bit LCG, the top 31 bits."""
    state &= U64

    def nxt():
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) & U64
        return state >> 33
    return nxt


def fired_of(r):
    v = msgpack.unpackb(r[1])
    return (v["start"], v["end"], v["count"], v["sum"])


def run(tc, spec, steps, restarts=()):
    """Runs `steps` ("r", key, ts, id) / ("w", ts) through the operator, restarting from a
    checkpoint before the steps listed in `restarts`: what it emitted as (key, (start, end,
    count, sum)) in order, the late ids sent to the side output `late`, and the counter of
    late records dropped."""
    config = spec.to_config()
    h = Harness(window_count.Operator)
    h.open(config)
    out, late = [], []
    restarts = set(restarts)
    for i, step in enumerate(steps):
        if i in restarts:
            late += [msgpack.unpackb(r[1]) for _, r in h.take_side_outputs()]
            h = h.restart()
            h.open(config, restored=True)
        before = h.current_watermark()
        if step[0] == "r":
            _, key, ts, id = step
            emitted = h.process([record(key, id, ts)])
        else:
            emitted = h.watermark(step[1])
        for r in emitted:
            f = fired_of(r)
            tc.assertEqual(r[2], f[1] - 1, "a result carries its window's last instant")
            # It fires at the first watermark that reaches its fire time.
            tc.assertTrue(before < spec.fire_time((f[0], f[1])) <= h.current_watermark(), (before, f, step))
            out.append((msgpack.unpackb(r[0]), f))
    for name, r in h.take_side_outputs():
        tc.assertEqual(name, "late")
        late.append(msgpack.unpackb(r[1]))
    return out, late, h.counter("late_records_dropped")


def reference(spec, steps):
    """The documented semantics, computed directly: per (key, window) the records that
    arrived while the watermark was below the window's fire time; a window fires at the first
    watermark at or past its fire time, in (fire time, key bytes, start) order; a record
    every window of which had fired is late. Not for sessions."""
    open_ = {}
    wm, out, late = I64_MIN, [], []
    for step in steps:
        if step[0] == "r":
            _, key, ts, id = step
            placed = False
            for w in spec.assign(ts):
                if spec.fire_time(w) > wm:
                    c, s = open_.get((key, w), (0, 0))
                    open_[(key, w)] = (c + 1, s + id)
                    placed = True
            if not placed:
                late.append(id)
        elif step[1] > wm:
            wm = step[1]
            due = [k for k in open_ if spec.fire_time(k[1]) <= wm]
            due.sort(key=lambda k: (spec.fire_time(k[1]), msgpack.packb(k[0]), k[1].start))
            for k in due:
                c, s = open_.pop(k)
                out.append((k[0], (k[1].start, k[1].end, c, s)))
    return out, late


def stream(seed, n, keys, disorder):
    """A seeded stream: records of `keys` keys with timestamps up to `disorder` behind the
    running maximum (some much further, to be late), watermarks trailing the maximum."""
    nxt = lcg(seed)
    steps, mx = [], 0
    for id in range(n):
        mx += nxt() % 7
        back = disorder * 3 if nxt() % 10 == 0 else nxt() % (disorder + 1)
        steps.append(("r", nxt() % keys, mx - back, id))
        if nxt() % 5 == 0:
            steps.append(("w", mx - disorder))
    steps.append(("w", I64_MAX))
    return steps


def specs():
    return [
        WindowSpec.tumbling(20),
        WindowSpec.tumbling(15, 4).allowed_lateness(10),
        WindowSpec.sliding(30, 10).late_to("late"),
        WindowSpec.sliding(25, 10, -3).allowed_lateness(7).late_to("late"),
    ]


class WindowTest(unittest.TestCase):
    def test_tumbling_and_sliding_windows_match_the_reference_in_and_out_of_order(self):
        late_per_spec = [0] * len(specs())
        for seed in range(20):
            for s, spec in enumerate(specs()):
                msg = "seed %d, %r" % (seed, spec)
                steps = stream(seed, 300, 5, 12)
                want, want_late = reference(spec, steps)
                got, late, dropped = run(self, spec, steps)
                self.assertEqual(got, want, msg)
                if spec.late is None:
                    self.assertEqual(dropped, len(want_late), msg)
                    self.assertEqual(late, [], msg)
                else:
                    self.assertEqual(late, want_late, msg)
                    self.assertEqual(dropped, 0, msg)
                late_per_spec[s] += len(want_late)
                # Every on-time record counted once per window it belongs to.
                records = sum(1 for st in steps if st[0] == "r")
                per_record = 2 if spec.kind == "sliding" else 1
                counted = sum(f[2] for _, f in got)
                self.assertGreaterEqual(counted, (records - len(want_late)) * per_record, msg)
        self.assertTrue(all(n > 0 for n in late_per_spec), "every spec saw late records: %r" % late_per_spec)

    def test_a_restart_from_a_checkpoint_changes_nothing(self):
        for seed in range(10):
            for spec in specs():
                steps = stream(seed, 200, 4, 12)
                plain = run(self, spec, steps)
                restarts = [i for i in range(len(steps)) if (i + seed) % 37 == 0]
                self.assertTrue(restarts)
                self.assertEqual(run(self, spec, steps, restarts), plain, "seed %d, %r" % (seed, spec))

    def test_a_window_fires_once_at_its_end_plus_lateness_and_late_records_go_to_the_side_output(self):
        spec = WindowSpec.tumbling(10).allowed_lateness(5).late_to("late")
        h = Harness(window_count.Operator)
        h.open(spec.to_config())
        h.process([record(1, 1, 3), record(1, 2, 9)])
        self.assertEqual(len(h.timers()), 1, "one timer per key")
        self.assertEqual(h.watermark(9), [], "the end passed, the lateness not")
        # Behind the watermark but within the lateness: counted.
        h.process([record(1, 4, 2)])
        fired = h.watermark(14)
        self.assertEqual([fired_of(r) for r in fired], [(0, 10, 3, 7)])
        self.assertEqual(fired[0][2], 9)
        self.assertEqual(fired[0][0], msgpack.packb(1), "the key bytes unchanged")
        # The window fired: a record for it is late, unchanged on the side output.
        h.process([record(1, 8, 5)])
        self.assertEqual(h.watermark(100), [], "fires exactly once")
        self.assertEqual(h.take_side_outputs(), [("late", record(1, 8, 5))])
        self.assertEqual(h.operator.windows.keys(), 0, "fired windows are forgotten")
        self.assertEqual(h.timers(), [])

    def test_session_windows_merge_when_a_record_bridges_them(self):
        h = Harness(window_count.Operator)
        h.open(WindowSpec.session(10).to_config())

        def r(id, ts):
            return record(7, id, ts)
        h.process([r(1, 0), r(2, 25), r(4, 12)])
        key = msgpack.packb(7)

        def windows():
            return h.operator.windows.windows_of(key)
        self.assertEqual(windows(), [Window(0, 10), Window(12, 22), Window(25, 35)])
        # [9, 19) overlaps [0, 10) and [12, 22): they become [0, 22); [25, 35) stays apart...
        # until 21 joins [0, 22) and [25, 35) through [21, 31).
        h.process([r(8, 9)])
        self.assertEqual(windows(), [Window(0, 22), Window(25, 35)])
        # A record at a session's end starts a new one: [10, 20) only touches [0, 10).
        h.process([record(8, 0, 0), record(8, 0, 10)])
        self.assertEqual(h.operator.windows.windows_of(msgpack.packb(8)), [Window(0, 10), Window(10, 20)])

        def decode(fired):
            return [(msgpack.unpackb(f[0]), fired_of(f)) for f in fired]
        self.assertEqual(decode(h.watermark(20)), [(8, (0, 10, 1, 0)), (8, (10, 20, 1, 0))])
        h.process([r(16, 21)])
        self.assertEqual(windows(), [Window(0, 35)])
        self.assertEqual(decode(h.watermark(34)), [(7, (0, 35, 5, 31))])
        # A record whose session would have fired is late.
        h.process([r(32, 20)])
        self.assertEqual(h.counter("late_records_dropped"), 1)
        self.assertEqual(h.timers(), [])
        # A session that opens before the key's earliest one fires at its own time.
        h.process([r(1, 100), r(2, 60)])
        self.assertEqual(decode(h.watermark(69)), [(7, (60, 70, 1, 2))])
        self.assertEqual(h.timers(), [(109, key)])

    def test_session_windows_match_the_reference_with_restarts(self):
        """Sessions computed directly: per key, the sorted on-time timestamps grouped where
        the next is less than `gap` after the previous session's end; no record is late here
        (watermarks trail far enough)."""
        gap = 10
        spec = WindowSpec.session(gap)
        for seed in range(20):
            # Sparse keys so sessions both form and close; watermarks well behind the records.
            nxt = lcg(seed + 99)
            steps, mx = [], 0
            for id in range(250):
                mx += nxt() % 4
                ts = mx - nxt() % 8
                steps.append(("r", nxt() % 6, ts, id))
                if nxt() % 6 == 0:
                    steps.append(("w", mx - 8))
            steps.append(("w", I64_MAX))
            by_key = {}
            for st in steps:
                if st[0] == "r":
                    by_key.setdefault(st[1], []).append((st[2], st[3]))
            want = []
            for key, records in by_key.items():
                session = None
                for ts, id in sorted(records):
                    if session is not None and ts < session[1]:
                        start, end, n, total = session
                        session = (start, max(end, ts + gap), n + 1, total + id)
                    else:
                        if session is not None:
                            want.append((key, session))
                        session = (ts, ts + gap, 1, id)
                want.append((key, session))
            want.sort()
            restarts = [i for i in range(len(steps)) if (i + seed) % 29 == 0]
            for rs in ([], restarts):
                got, late, dropped = run(self, spec, steps, rs)
                self.assertEqual((len(late), dropped), (0, 0), "seed %d" % seed)
                self.assertEqual(sorted(got), want, "seed %d, restarts %r" % (seed, rs))

    def test_specs_are_validated_and_read_from_json(self):
        spec = WindowSpec.from_config(
            '{"window": {"kind": "sliding", "size_ms": 10000, "slide_ms": 2000},'
            ' "allowed_lateness_ms": 1000, "late": {"side_output": "late"}}')
        self.assertEqual(spec, WindowSpec.sliding(10_000, 2_000).allowed_lateness(1000).late_to("late"))
        self.assertEqual(WindowSpec.from_config(spec.to_config()), spec)
        self.assertEqual(WindowSpec.from_config({"window": {"kind": "tumbling", "size_ms": 5}, "late": "drop"}),
                         WindowSpec.tumbling(5))

        def bad(config):
            with self.assertRaises(Exception) as e:
                WindowSpec.from_config(config)
            return str(e.exception)
        self.assertIn("size_ms must be positive", bad('{"window": {"kind": "tumbling", "size_ms": 0}}'))
        self.assertIn("1000 windows", bad('{"window": {"kind": "sliding", "size_ms": 100000, "slide_ms": 1}}'))
        self.assertIn("gap_ms", bad('{"window": {"kind": "session", "gap_ms": -1}}'))
        self.assertIn("lateness", bad('{"window": {"kind": "tumbling", "size_ms": 5}, "allowed_lateness_ms": -1}'))
        self.assertIn("latenes", bad('{"window": {"kind": "tumbling", "size_ms": 5}, "latenes": 1}'))
        self.assertIn("offset_ms", bad('{"window": {"kind": "tumbling", "size_ms": 5, "offset_ms": 5}}'))
        self.assertIn("unknown field", bad('{"window": {"kind": "session", "gap_ms": 5, "size_ms": 1}}'))
        self.assertIn("64-bit integer", bad('{"window": {"kind": "tumbling", "size_ms": 5.5}}'))
        self.assertIn("side output", bad('{"window": {"kind": "tumbling", "size_ms": 5}, "late": {"side_output": ""}}'))
        self.assertIn("late must be", bad('{"window": {"kind": "tumbling", "size_ms": 5}, "late": "keep"}'))
        # In the operator: open fails with invalid-config.
        h = Harness(window_count.Operator)
        with self.assertRaises(Err) as e:
            h.open('{"window": {"kind": "hopping", "size_ms": 5}}')
        self.assertIsInstance(e.exception.value, types.Error_InvalidConfig)

    def test_assignment_handles_negative_times_and_offsets(self):
        self.assertEqual(WindowSpec.tumbling(10).assign(-1), [Window(-10, 0)])
        self.assertEqual(WindowSpec.sliding(10, 4, 1).assign(9), [Window(1, 11), Window(5, 15), Window(9, 19)])
        self.assertEqual(len(WindowSpec.tumbling(10).assign(I64_MIN)), 1)
        w = WindowSpec.sliding(10, 3).assign(I64_MAX)
        self.assertTrue(1 <= len(w) <= 4)
        self.assertTrue(all(I64_MIN <= x <= I64_MAX for win in w for x in win))


class WindowCountContractTest(unittest.TestCase):
    """The operator's bytes: what an engine test compares with the Rust example's."""

    def test_describe(self):
        info = Harness(window_count.Operator).operator.describe()
        self.assertEqual((info.name, info.state_version, info.migrates_from), ("window_count", 0, []))

    def test_output_and_state_bytes(self):
        h = Harness(window_count.Operator)
        h.open({"window": {"kind": "tumbling", "size_ms": 1000}})
        h.process([record("k", 300, 1500), record("k", 2, 1999)])
        # State: [[start, end, [count, sum]]] under the record key, as rmp_serde encodes
        # Rust's Vec<(i64, i64, (u64, u64))>.
        self.assertEqual(h.snapshot(False), [("windows", b"\xa1k", b"\x91\x93\xcd\x03\xe8\xcd\x07\xd0\x92\x02\xcd\x01\x2e")])
        h = h.restart()
        h.open({"window": {"kind": "tumbling", "size_ms": 1000}}, restored=True)
        h.process([record("k", 1, 1001)])
        out = h.watermark(1999)
        self.assertEqual(out, [(b"\xa1k", b"\x84\xa5start\xcd\x03\xe8\xa3end\xcd\x07\xd0\xa5count\x03\xa3sum\xcd\x01\x2f", 1999)])

    def test_bad_values_are_invalid_input(self):
        h = Harness(window_count.Operator)
        h.open({"window": {"kind": "tumbling", "size_ms": 10}})
        for value in ["text", -1, 1.5, True, None]:
            with self.assertRaises(Err) as e:
                h.process([record(1, value, 0)])
            self.assertIsInstance(e.exception.value, types.Error_InvalidInput, value)
        with self.assertRaises(Err) as e:
            h.process([(b"\x01", b"\xcd\x01", 0)])
        self.assertIsInstance(e.exception.value, types.Error_InvalidInput)
        # The largest id is fine and the sum wraps at 2^64.
        h.process([record(1, U64, 0), record(1, 2, 1)])
        self.assertEqual([fired_of(r) for r in h.watermark(9)], [(0, 10, 2, 1)])


if __name__ == "__main__":
    unittest.main()
