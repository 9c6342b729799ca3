"""weirpy.join through operators/join_pairs.py on the simulated host, against the reference of
the Rust SDK's tests (guest-sdk/src/join/tests.rs): every matching pair of on-time records,
exactly once, on the same seeded streams."""

import unittest

import support  # noqa: F401  (puts the bindings on the path)

from componentize_py_types import Err
from wit_world.imports import types

import join_pairs
from weirpy import msgpack
from weirpy.host import I64_MAX, I64_MIN
from weirpy.join import JoinSpec
from weirpy.testing import Harness, record

from test_window import lcg


def run(spec, steps, restarts=()):
    """Runs ("r", input, key, ts, id) / ("w", input, ts) steps: the (key, left id, right id)
    of every pair emitted, sorted (duplicates would show); the late ids on the side output;
    the counter of late records dropped."""
    config = spec.to_config()
    h = Harness(join_pairs.Operator)
    h.open(config, inputs=2)
    restarts = set(restarts)
    pairs = []
    for i, step in enumerate(steps):
        if i in restarts:
            h = h.restart()
            h.open(config, inputs=2, restored=True)
        if step[0] == "r":
            _, input, key, ts, id = step
            out = h.process([record(key, id, ts)], input=input)
        else:
            out = h.input_watermark(step[1], step[2])
        for k, v, ts in out:
            p = msgpack.unpackb(v)
            assert ts == max(p["left_ts"], p["right_ts"]), (ts, p)
            pairs.append((msgpack.unpackb(k), p["left"], p["right"]))
    pairs.sort()
    late = [msgpack.unpackb(r[1]) for _, r in h.take_side_outputs()]
    return pairs, late, h.counter("late_records_dropped")


def reference(spec, steps):
    """Every pair of on-time records that matches; a record is late (when the join expires
    state) if it is at or below its own input's watermark when it arrives."""
    expires = spec.bounds() != (None, None)
    wm = [I64_MIN, I64_MIN]
    kept, late = [], []
    for step in steps:
        if step[0] == "r":
            _, input, key, ts, id = step
            if expires and ts <= wm[input]:
                late.append(id)
            else:
                kept.append((input, key, ts, id))
        else:
            wm[step[1]] = max(wm[step[1]], step[2])
    pairs = []
    for _, key, l_ts, l in (r for r in kept if r[0] == 0):
        for _, _, r_ts, r in (r for r in kept if r[0] == 1 and r[1] == key):
            if spec.matches(l_ts, r_ts):
                pairs.append((key, l, r))
    pairs.sort()
    return pairs, late


def stream(seed, n):
    nxt = lcg(seed * 31 + 7)
    steps, mx = [], [0, 0]
    for id in range(n):
        input = nxt() % 2
        mx[input] += nxt() % 5
        back = 40 if nxt() % 12 == 0 else nxt() % 10
        steps.append(("r", input, nxt() % 4, mx[input] - back, id))
        if nxt() % 4 == 0:
            steps.append(("w", input, mx[input] - 10))
    steps.append(("w", 0, I64_MAX))
    steps.append(("w", 1, I64_MAX))
    return steps


def specs():
    return [
        JoinSpec.regular(None),
        JoinSpec.regular(15),
        JoinSpec.interval(-10, 5),
        JoinSpec.interval(0, 20, lower_exclusive=True, upper_exclusive=True).late_to("late"),
    ]


def state_bytes(h):
    return sum(len(v or b"") for _, _, v in h.snapshot(True))


class JoinTest(unittest.TestCase):
    def test_every_matching_pair_exactly_once_against_the_reference_with_restarts(self):
        for seed in range(20):
            for spec in specs():
                steps = stream(seed, 300)
                want, want_late = reference(spec, steps)
                self.assertTrue(want)
                restarts = [i for i in range(len(steps)) if (i + seed) % 41 == 0]
                for rs in ([], restarts):
                    msg = "seed %d, %r, restarts %r" % (seed, spec, rs)
                    got, late, dropped = run(spec, steps, rs)
                    self.assertEqual(got, want, msg)
                    if spec.late is None:
                        self.assertEqual(dropped, len(want_late), msg)
                    else:
                        self.assertEqual(late, want_late, msg)
                        self.assertEqual(dropped, 0, msg)

    def test_state_expires_with_the_ttl_and_timers_follow(self):
        h = Harness(join_pairs.Operator)
        h.open(JoinSpec.regular(10).to_config(), inputs=2)
        for i in range(100):
            h.process([record(i % 10, i, i)], input=i % 2)
        self.assertEqual(h.operator.join.buffered(), (50, 50))
        self.assertEqual(len(h.timers()), 10, "one timer per key")
        before = state_bytes(h)
        # Up to watermark 60: records at or below 50 can match nothing any more.
        h.watermark(60)
        self.assertEqual(sum(h.operator.join.buffered()), 49, "records 51..=99 remain")
        after = state_bytes(h)
        self.assertLess(after * 10, before * 6, "state bytes %d -> %d" % (before, after))
        h.watermark(I64_MAX)
        self.assertEqual(h.operator.join.keys(), 0)
        self.assertEqual(h.timers(), [])
        # Deletes reach the host's copy.
        changes = h.snapshot(False)
        self.assertTrue(changes)
        self.assertTrue(all(v is None for _, _, v in changes))

    def test_interval_bounds_are_inclusive_unless_told_otherwise(self):
        def pairs(lower_exclusive, upper_exclusive):
            h = Harness(join_pairs.Operator)
            h.open(JoinSpec.interval(-5, 5, lower_exclusive, upper_exclusive).to_config(), inputs=2)
            h.process([record(1, 100, 100)], input=0)
            out = h.process([record(1, t, t) for t in (94, 95, 100, 105, 106)], input=1)
            return [msgpack.unpackb(v)["right"] for _, v, _ in out]
        self.assertEqual(pairs(False, False), [95, 100, 105])
        self.assertEqual(pairs(True, False), [100, 105])
        self.assertEqual(pairs(False, True), [95, 100])
        self.assertEqual(pairs(True, True), [100])

    def test_specs_read_from_json_and_validate(self):
        self.assertEqual(JoinSpec.from_config('{"join": {"kind": "interval", "lower_ms": -5000, "upper_ms": 5000}}'),
                         JoinSpec.interval(-5000, 5000))
        self.assertEqual(JoinSpec.from_config('{"join": {"kind": "regular"}, "late": {"side_output": "x"}}'),
                         JoinSpec.regular(None).late_to("x"))
        for spec in specs():
            self.assertEqual(JoinSpec.from_config(spec.to_config()), spec)

        def bad(config):
            with self.assertRaises(Exception) as e:
                JoinSpec.from_config(config)
            return str(e.exception)
        self.assertIn("match nothing",
                      bad('{"join": {"kind": "interval", "lower_ms": 5, "upper_ms": 5, "upper_exclusive": true}}'))
        self.assertIn("ttl_ms", bad('{"join": {"kind": "regular", "ttl_ms": -1}}'))
        self.assertIn("missing field", bad('{"join": {"kind": "interval", "lower_ms": 5}}'))
        self.assertIn("unknown field", bad('{"join": {"kind": "regular"}, "ttl_ms": 5}'))
        self.assertIn("true or false", bad('{"join": {"kind": "interval", "lower_ms": 0, "upper_ms": 1, "lower_exclusive": 1}}'))
        # A regular join without a TTL keeps everything: late records still pair.
        h = Harness(join_pairs.Operator)
        h.open(JoinSpec.regular(None).to_config(), inputs=2)
        h.process([record(1, 1, 0)], input=0)
        h.watermark(1000)
        out = h.process([record(1, 2, 5)], input=1)
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0][0], msgpack.packb(1))
        # In the operator: open fails with invalid-config.
        with self.assertRaises(Err) as e:
            Harness(join_pairs.Operator).open('{"join": {"kind": "outer"}}', inputs=2)
        self.assertIsInstance(e.exception.value, types.Error_InvalidConfig)


class JoinPairsContractTest(unittest.TestCase):
    """The operator's bytes: what an engine test compares with the Rust example's."""

    def test_describe(self):
        info = Harness(join_pairs.Operator).operator.describe()
        self.assertEqual((info.name, info.state_version, info.migrates_from), ("join_pairs", 0, []))

    def test_output_and_state_bytes(self):
        h = Harness(join_pairs.Operator)
        h.open({"join": {"kind": "interval", "lower_ms": 0, "upper_ms": 5}}, inputs=2)
        h.process([record(1, 10, 100)], input=0)
        out = h.process([record(1, 20, 103), record(1, 21, 106)], input=1)
        self.assertEqual(out, [(b"\x01", b"\x84\xa4left\x0a\xa5right\x14\xa7left_ts\x64\xa8right_ts\x67", 103)])
        # State: [[[ts, id], ...], [[ts, id], ...], timer] under the record key, as rmp_serde
        # encodes Rust's Buffers(Vec<(i64, u64)>, Vec<(i64, u64)>, i64).
        self.assertEqual(h.snapshot(False), [("join", b"\x01", b"\x93\x91\x92\x64\x0a\x92\x92\x67\x14\x92\x6a\x15\x67")])
        self.assertEqual(h.timers(), [(103, b"\x01"), (105, b"\x01")])

    def test_late_records_by_their_own_input_watermark(self):
        h = Harness(join_pairs.Operator)
        h.open(JoinSpec.regular(100).late_to("late").to_config(), inputs=2)
        h.input_watermark(0, 50)
        # Right's watermark is still at the start: a right record at 10 is on time, a left
        # one at 50 late.
        h.process([record(1, 7, 10)], input=1)
        h.process([record(1, 8, 50), record(1, 9, 51)], input=0)
        self.assertEqual(h.take_side_outputs(), [("late", record(1, 8, 50))])
        self.assertEqual(h.operator.join.buffered(), (1, 1))


if __name__ == "__main__":
    unittest.main()
