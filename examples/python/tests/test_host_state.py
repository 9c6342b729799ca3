"""Host state (`weirpy.host_state`: `HostKeyedState`, `HostMapState`) on the simulated host
of weirpy.testing: the same results as `KeyedState` with one line changed, one multi-get and
one apply per batch on every path, nothing in the guest's snapshots, the same bytes stored,
failed calls handing nothing over, fields scanned page by page; and the example operator
`counter_host` (the Rust test guest `counter`'s contract)."""

import contextlib
import io
import pickle
import random
import unittest

import support  # noqa: F401  (puts the bindings on the path)

from componentize_py_types import Err  # noqa: E402
from wit_world.imports import types  # noqa: E402

import counter_host  # noqa: E402
from weirpy import host, msgpack  # noqa: E402
from weirpy.operator import InvalidInput, OperatorBase  # noqa: E402
from weirpy.state import HostKeyedState, HostMapState, KeyedState, States, StateError  # noqa: E402
from weirpy.testing import Harness, HostStateError, decoded, record  # noqa: E402


def k(n):
    return msgpack.packb(n)


# The same operator twice, the state's class the only difference (the one-line switch).

class _Totals(OperatorBase):
    """Sums the values per key on the per-record API, emits the running total; a value of
    -1 fails the batch (after the state of its earlier records changed); a timer per key at
    its value removes the key and emits its total."""

    STATE = KeyedState

    def __init__(self):
        super().__init__()
        self.totals = self.STATE("totals")
        self.states = States(self.totals)

    def process_record(self, key, value, timestamp, out):
        v = msgpack.unpackb(value)
        if v == -1:
            raise InvalidInput("minus one")
        total = self.totals.update(key, lambda t: t + v, default=0)
        host.register_timer(key, 1000 + total)
        out.emit_raw(key, msgpack.packb(total), timestamp)

    def on_timer(self, key, timestamp, out):
        total = self.totals.remove(key)
        out.emit_raw(key, msgpack.packb(["gone", total, key in self.totals]), timestamp)


class GuestTotals(_Totals):
    STATE = KeyedState


class HostTotals(_Totals):
    STATE = HostKeyedState


class _BatchTotals(OperatorBase):
    """`_Totals` on the batch API (both of its paths)."""

    STATE = KeyedState

    def __init__(self):
        super().__init__()
        self.totals = self.STATE("totals")
        self.states = States(self.totals)

    def process_batch(self, records, out):
        get, put = self.totals.get, self.totals.put
        for key, value, timestamp in records:
            if value == -1:
                raise InvalidInput("minus one")
            total = get(key, 0) + value
            put(key, total)
            out.append((key, total, timestamp))


class GuestBatchTotals(_BatchTotals):
    STATE = KeyedState


class HostBatchTotals(_BatchTotals):
    STATE = HostKeyedState


def random_batches(seed, batches=20, keys=12):
    rng = random.Random(seed)
    return [
        [record(rng.randrange(keys), rng.randrange(100), rng.randrange(1000)) for _ in range(rng.randrange(0, 30))]
        for _ in range(batches)
    ]


class HostKeyedStateTest(unittest.TestCase):
    def test_the_one_line_switch_gives_the_same_output_and_bytes(self):
        for guest_cls, host_cls in ((GuestTotals, HostTotals), (GuestBatchTotals, HostBatchTotals)):
            guest, on_host = Harness(guest_cls), Harness(host_cls)
            guest.open()
            on_host.open()
            for i, b in enumerate(random_batches(7)):
                self.assertEqual(on_host.process(b), guest.process(b), (host_cls.__name__, i))
            # The host holds exactly the entries (and bytes) of the guest's full snapshot.
            snapshot = {key: value for name, key, value in guest.snapshot(True)}
            self.assertEqual(on_host.host.keyed_state.values("totals"), snapshot)
            self.assertEqual(len(snapshot), 12)

    def test_one_multi_get_and_one_apply_per_batch_on_every_path(self):
        for cls, path in ((HostTotals, "record"), (HostBatchTotals, "plain"), (HostBatchTotals, "pickle")):
            h = Harness(cls)
            h.open()
            calls = h.host.keyed_state.calls
            for b in random_batches(3, batches=5):
                before = dict(calls)
                if path == "pickle":
                    doc = pickle.dumps([(key, msgpack.unpackb(v), ts) for key, v, ts in b], 5)
                    h.operator.process_encoded(0, doc)
                else:
                    h.process(b)
                made = {name: n - before.get(name, 0) for name, n in calls.items() if n != before.get(name, 0)}
                made.pop("open_state", None)
                self.assertEqual(made, {"multi_get": 1, "apply": 1} if b else {}, (cls.__name__, path))
            self.assertEqual(calls["open_state"], 1)

    def test_duplicate_and_empty_keys_are_read_once(self):
        h = Harness(HostBatchTotals)
        h.open()
        lookups = []
        ks = h.host.keyed_state
        real = ks._multi_get

        def spy(handle, items):
            lookups.append([item.key for item in items])
            return real(handle, items)

        from wit_world.imports import keyed_state
        keyed_state.multi_get = spy
        h.process([record(1, 1, 0), record(None, 5, 0), record(1, 2, 0), record(2, 3, 0)])
        self.assertEqual(lookups, [[k(1), k(2)]])
        self.assertEqual(ks.values("totals"), {k(1): k(3), k(2): k(3), b"": k(5)})

    def test_host_states_are_not_in_snapshots_or_restores(self):
        h = Harness(HostTotals)
        h.open()
        h.process([record(1, 5, 0), record(2, 6, 0)])
        self.assertEqual(h.snapshot(True), [])
        self.assertEqual(h.snapshot(False), [])
        names, doc = h.operator.states.snapshot_document(True)
        self.assertEqual((names, pickle.loads(doc)), ([], []))
        self.assertIsNone(h.operator.plan_restore(0, ["totals"]))
        with self.assertRaises(Err) as e:
            Harness(HostTotals, h.host).restore([("totals", k(1), k(5))])
        self.assertIsInstance(e.exception.value, types.Error_InvalidState)
        # After a restart the instance reads the host's state: nothing was handed over.
        nxt = h.restart()
        nxt.open(restored=True)
        self.assertEqual(decoded(nxt.process([record(1, 1, 0)])), [(1, 6, 0)])

    def test_host_states_beside_guest_states(self):
        class Both(OperatorBase):
            def __init__(self):
                super().__init__()
                self.guest = KeyedState("guest")
                self.disk = HostKeyedState("disk")
                self.states = States(self.guest, self.disk)

            def process_record(self, key, value, timestamp, out):
                self.guest.put(key, 1)
                self.disk.put(key, 2)

        h = Harness(Both)
        h.open()
        h.process([record("a", 0, 0)])
        self.assertEqual(h.snapshot(True), [("guest", k("a"), k(1))])
        self.assertEqual(h.host.keyed_state.values("disk"), {k("a"): k(2)})
        with self.assertRaises(ValueError):
            States(KeyedState("x"), HostKeyedState("x"))

    def test_a_failed_call_hands_nothing_over(self):
        for cls in (HostTotals, HostBatchTotals):
            h = Harness(cls)
            h.open()
            h.process([record(1, 5, 0)])
            calls = dict(h.host.keyed_state.calls)
            with self.assertRaises(Err) as e:
                h.process([record(1, 1, 0), record(2, 1, 0), record(3, -1, 0)])
            self.assertIsInstance(e.exception.value, types.Error_InvalidInput)
            self.assertEqual(h.host.keyed_state.calls["apply"], calls["apply"])
            self.assertEqual(h.host.keyed_state.values("totals"), {k(1): k(5)})
            # The next call starts afresh (no stale cache).
            self.assertEqual(decoded(h.process([record(1, 1, 0)])), [(1, 6, 0)])

    def test_timers_and_removes(self):
        h = Harness(HostTotals)
        h.open()
        h.process([record(1, 5, 0), record(2, 7, 0)])
        calls = h.host.keyed_state.calls
        before = calls["multi_get"], calls["apply"], calls["get"]
        fired = decoded(h.watermark(1005))
        self.assertEqual(fired, [(1, ["gone", 5, False], 1005)])
        # The timer's key was read with the call's multi-get; the removal went as one apply.
        self.assertEqual((calls["multi_get"], calls["apply"], calls["get"]), (before[0] + 1, before[1] + 1, before[2]))
        self.assertEqual(h.host.keyed_state.values("totals"), {k(2): k(7)})

    def test_outside_a_call_reads_and_writes_go_to_the_host(self):
        class Seeded(OperatorBase):
            def __init__(self):
                super().__init__()
                self.totals = HostKeyedState("totals")
                self.states = States(self.totals)

            def on_open(self, context, config):
                if k("seed") not in self.totals:
                    self.totals.put(k("seed"), 41)
                self.totals.remove(k("gone"))

            def process_record(self, key, value, timestamp, out):
                out.emit(None, self.totals.update(k("seed"), lambda v: v + 1), timestamp)

        h = Harness(Seeded)
        h.host.keyed_state._apply(h.host.keyed_state._open_state("totals"), [_change(k("gone"), b"", k(1))])
        h.open()
        self.assertEqual(h.host.keyed_state.values("totals"), {k("seed"): k(41)})
        self.assertEqual(h.host.keyed_state.calls["put"], 1)
        self.assertEqual(h.host.keyed_state.calls["delete"], 1)
        self.assertEqual(decoded(h.process([record(None, 0, 3)])), [(None, 42, 3)])

    def test_codec_options_as_keyed_state(self):
        class Pair(tuple):
            pass

        cases = [
            dict(from_plain=lambda v: tuple(v)),
            dict(to_plain=lambda v: list(v), from_plain=lambda v: Pair(v)),
            dict(encode=lambda v: b"!" + msgpack.packb(v), decode=lambda b: tuple(msgpack.unpackb(b[1:]))),
        ]
        for options in cases:
            guest, on_host = KeyedState("s", **options), HostKeyedState("s", **options)

            class Op(OperatorBase):
                def __init__(self):
                    super().__init__()
                    self.s = on_host
                    self.states = States(on_host)

                def process_record(self, key, value, timestamp, out):
                    old = self.s.get(key, (0, 0))
                    assert isinstance(old, tuple), old
                    self.s.put(key, (old[0] + 1, msgpack.unpackb(value)))

            h = Harness(Op)
            h.open()
            for i in range(3):
                h.process([record("a", i, 0), record("b", i * 10, 0)])
                for key, v in ((k("a"), i), (k("b"), i * 10)):
                    guest.put(key, (i + 1, v))
            self.assertEqual(h.host.keyed_state.values("s"), dict(guest.snapshot(True)), options)

    def test_a_value_that_does_not_decode_is_invalid_state(self):
        h = Harness(HostBatchTotals)
        ks = h.host.keyed_state
        ks._apply(ks._open_state("totals"), [_change(k(1), b"", b"\xc1")])
        h.open()
        with self.assertRaises(Err) as e:
            h.process([record(1, 1, 0)])
        self.assertIsInstance(e.exception.value, types.Error_InvalidState)
        self.assertIn("totals", e.exception.value.value)

    def test_keys_must_be_bytes_and_within_the_limits(self):
        class Op(OperatorBase):
            def __init__(self):
                super().__init__()
                self.s = HostKeyedState("s", prefetch=False)
                self.states = States(self.s)

            def process_record(self, key, value, timestamp, out):
                self.s.put(msgpack.unpackb(value), 1)

        h = Harness(Op)
        h.open()
        with self.assertRaises(Err) as e:
            h.process([record(None, "text", 0)])
        self.assertIn("must be bytes", e.exception.value.value)
        with self.assertRaises(HostStateError):
            h.process([record(None, b"k" * 5000, 0)])
        with self.assertRaises(ValueError):
            HostKeyedState("")
        with self.assertRaises(ValueError):
            HostKeyedState("n" * 65)
        with self.assertRaises(TypeError):
            HostKeyedState("s").items()

    def test_prefetch_off(self):
        h = Harness(HostBatchTotals)
        h.operator.totals.prefetch = False
        h.open()
        h.process([record(1, 1, 0), record(2, 1, 0), record(1, 1, 0)])
        calls = h.host.keyed_state.calls
        self.assertEqual((calls["multi_get"], calls["get"], calls["apply"]), (0, 2, 1))


def _change(key, field, value):
    from wit_world.imports import keyed_state
    return keyed_state.Change(key=key, field=field, value=value)


class Tags(OperatorBase):
    """Per key, a set of tags as fields (the value: how often each was seen); a record
    `["drop", tag]` deletes a tag, `["clear"]` every tag of its key, `["list"]` emits the
    tags in order (read while the batch's earlier changes are pending)."""

    def __init__(self):
        super().__init__()
        self.tags = HostMapState("tags", page=2)
        self.states = States(self.tags)

    def process_batch(self, records, out):
        tags = self.tags
        for key, value, timestamp in records:
            op = value[0]
            if op == "add":
                field = value[1].encode()
                tags.put(key, field, tags.get(key, field, 0) + 1)
            elif op == "drop":
                tags.delete(key, value[1].encode())
            elif op == "clear":
                tags.clear(key)
            elif op == "list":
                out.append((key, [[f.decode(), n] for f, n in tags.items(key)], timestamp))
            elif op == "from":
                out.append((key, [f.decode() for f in tags.fields(key, value[1].encode())], timestamp))


class HostMapStateTest(unittest.TestCase):
    def test_fields_scan_in_byte_order_page_by_page(self):
        h = Harness(Tags)
        h.open()
        words = ["pear", "apple", "fig", "kiwi", "date", "apple", "lime"]
        out = decoded(h.process([record(1, ["add", w], 0) for w in words] + [record(1, ["list"], 1)]))
        expected = [[w, 2 if w == "apple" else 1] for w in sorted(set(words))]
        self.assertEqual(out, [(1, expected, 1)])
        ks = h.host.keyed_state
        self.assertEqual(ks.calls["scan"], 4)          # 6 fields, 2 a page: 3 full pages + 1 empty
        self.assertEqual(len(ks.entries("tags")), 6)
        out = decoded(h.process([record(1, ["drop", "fig"], 0), record(2, ["add", "x"], 0),
                                 record(1, ["from", "d"], 1), record(2, ["list"], 1)]))
        self.assertEqual(out, [(1, ["date", "kiwi", "lime", "pear"], 1), (2, [["x", 1]], 1)])
        out = decoded(h.process([record(1, ["add", "zz"], 0), record(1, ["clear"], 0), record(1, ["add", "b"], 0),
                                 record(1, ["list"], 1)]))
        self.assertEqual(out, [(1, [["b", 1]], 1)])
        self.assertEqual(ks.entries("tags"), {(k(1), b"b"): k(1), (k(2), b"x"): k(1)})

    def test_changes_wait_for_the_end_of_the_call(self):
        h = Harness(Tags)
        h.open()
        ks = h.host.keyed_state
        h.process([record(1, ["add", "a"], 0), record(1, ["add", "a"], 0), record(1, ["add", "b"], 0)])
        self.assertEqual(ks.calls["apply"], 1)
        self.assertEqual(ks.calls["get"], 2)           # a (then cached), b
        self.assertEqual(ks.entries("tags"), {(k(1), b"a"): k(2), (k(1), b"b"): k(1)})
        with self.assertRaises(Err):
            h.process([record(1, ["add", "c"], 0), record(1, 5, 0)])
        self.assertNotIn((k(1), b"c"), ks.entries("tags"))


class CounterHostTest(unittest.TestCase):
    """The Python counter on host state against the Rust counter's contract."""

    def run_counter(self, config, batches, fast=True):
        h = Harness(counter_host.Operator)
        h.open(config)
        out = []
        for b in batches:
            if fast:
                doc = pickle.dumps([(key, msgpack.unpackb(v), ts) for key, v, ts in b], 5)
                out += [(msgpack.unpackb(key) if key else None, v, ts) for key, v, ts in pickle.loads(h.operator.process_encoded(0, doc))]
            else:
                out += decoded(h.process(b))
        return h, out

    def test_counts_per_key_and_the_rust_state_layout(self):
        rng = random.Random(17)
        batches = [[record(rng.randrange(5), rng.choice([i, [i, 9]]), i) for i in range(n, n + 40)] for n in range(0, 400, 40)]
        for fast in (True, False):
            h, out = self.run_counter({}, batches, fast)
            expected, counts = [], {}
            for b in batches:
                for key, value, ts in b:
                    v = msgpack.unpackb(value)
                    i = v if isinstance(v, int) else v[0]
                    counts[key] = counts.get(key, 0) + 1
                    expected.append((msgpack.unpackb(key), [i, counts[key]], ts))
            self.assertEqual(out, expected)
            # {"count": n}: what rmp_serde writes for the Rust counter's `Count` without pad.
            self.assertEqual(h.host.keyed_state.values("counts"), {key: b"\x81\xa5count" + msgpack.pack_uint(n) for key, n in counts.items()})
            self.assertEqual(h.snapshot(True), [])

    def test_reset_out_keys_and_pad(self):
        batch = [record(7, i, i) for i in range(5)]
        h, out = self.run_counter({"reset_at": 3, "out_keys": 2, "pad": 2}, [batch])
        self.assertEqual(out, [(0, [0, 1], 0), (1, [1, 2], 1), (0, [2, 3], 2), (1, [3, 1], 3), (0, [4, 2], 4)])
        self.assertEqual(h.host.keyed_state.values("counts"), {k(7): msgpack.packb({"count": 2, "pad": "xx"})})

    def test_bad_input_and_config(self):
        for bad in ("text", [], [-1], -1, True, [1, "x"]):
            h = Harness(counter_host.Operator)
            h.open()
            with self.assertRaises(Err) as e:
                h.process([record(1, bad, 0)])
            self.assertIsInstance(e.exception.value, types.Error_InvalidInput, bad)
        for config in ({"out_keys": 0}, {"pad": -1}, {"nope": 1}, {"reset_at": "x"}, {"poison_every": 0},
                       {"poison": "boom"}, {"dead_letter_every": "2"}, {"dead_letter_every": 0},
                       {"log_levels": 1}, {"log_levels": "true"}, {"log_levels": None}, {"log_level": True}):
            h = Harness(counter_host.Operator)
            with self.assertRaises(Err) as e:
                h.open(config)
            self.assertIsInstance(e.exception.value, types.Error_InvalidConfig, config)

    def test_poison_records_fail_after_being_counted_and_the_state_rolls_back(self):
        for poison, error, message in (("panic", types.Error_Other, "RuntimeError: counter: poison record 5"),
                                       ("error", types.Error_InvalidInput, "counter: refused record 5")):
            for fast in (True, False):
                h = Harness(counter_host.Operator)
                h.open({"poison_every": 3, "poison": poison})
                counted = []
                # `put` runs before the failure: a spy on the state sees the poison record counted.
                put = h.operator.counts.put
                h.operator.counts.put = lambda key, value: (counted.append(value["count"]), put(key, value))
                self.assertEqual(decoded(h.process([record(1, i, i) for i in (0, 1)])), [(1, [0, 1], 0), (1, [1, 2], 1)])
                with self.assertRaises(Err) as e:
                    if fast:
                        h.operator.process_encoded(0, pickle.dumps([(k(1), i, i) for i in (3, 5, 6)], 5))
                    else:
                        h.process([record(1, i, i) for i in (3, 5, 6)])
                self.assertIsInstance(e.exception.value, error, (poison, fast))
                self.assertEqual(e.exception.value.value, message)
                self.assertEqual(counted, [1, 2, 3, 4], "record 5 was counted before it failed")
                # The failed call handed nothing over: the host still holds the count before it.
                self.assertEqual(h.host.keyed_state.values("counts"), {k(1): msgpack.packb({"count": 2})})

    def test_alloc_poison_allocates_without_bound(self):
        h = Harness(counter_host.Operator)
        h.open({"poison_every": 1, "poison": "alloc"})
        blocks = []

        class Full(Exception):
            pass

        def bytearray_(n):   # stands in for the memory limit: the 64th MiB is refused
            if len(blocks) == 64:
                raise Full()
            blocks.append(n)
            return b""

        counter_host.bytearray = bytearray_
        try:
            with self.assertRaises(Err) as e:
                h.process([record(1, 0, 0)])
        finally:
            del counter_host.bytearray
        self.assertEqual(blocks, [1 << 20] * 64)
        self.assertIn("Full", e.exception.value.value)

    def test_dead_letter_every_sends_the_record_away_after_counting_it(self):
        for fast in (True, False):
            batch = [record(i % 2, i if i % 3 else [i, 7], 100 + i) for i in range(8)]
            h, out = self.run_counter({"dead_letter_every": 4}, [batch], fast)
            self.assertEqual([v[0] for _, v, _ in out], [0, 1, 2, 4, 5, 6])
            self.assertEqual(h.take_dead_letters(), [
                ("counter: record 3 sent away", k(1), msgpack.packb([3, 7]), 103),
                ("counter: record 7 sent away", k(1), msgpack.packb(7), 107),
            ])
            # Counted all the same: key 1 saw 1, 3, 5 and 7.
            self.assertEqual(h.host.keyed_state.values("counts"), {k(0): msgpack.packb({"count": 4}), k(1): msgpack.packb({"count": 4})})

    @staticmethod
    def logged(ids):
        """What `log_levels` writes for records `ids`: the log lines, as `(level, message)` in
        order, and the stdout text."""
        lines = [(level, "record %d at %s" % (i, name)) for i in ids for level, name in (
            (host.Level.TRACE, "trace"), (host.Level.DEBUG, "debug"), (host.Level.INFO, "info"),
            (host.Level.WARN, "warn"), (host.Level.ERROR, "error"))]
        return lines, "".join("record %d on stdout\n" % i for i in ids)

    def test_log_levels_logs_every_level_prints_and_counts(self):
        batches = [[record(i % 3, i if i % 2 else [i, 4], 10 + i) for i in range(n, n + 4)] for n in (0, 4)]
        for fast in (True, False):
            _, plain = self.run_counter({}, batches, fast)
            for config in ({}, {"log_levels": False}, {"log_levels": True}):
                stdout = io.StringIO()
                with contextlib.redirect_stdout(stdout):
                    h, out = self.run_counter(config, batches, fast)
                self.assertEqual(out, plain, (config, fast))       # the output does not change
                ids = list(range(8)) if config.get("log_levels") else []
                lines, text = self.logged(ids)
                self.assertEqual(h.host.logs, lines, (config, fast))
                self.assertEqual(stdout.getvalue(), text, (config, fast))
                self.assertEqual(h.counter("records_logged"), len(ids), (config, fast))
                self.assertEqual(h.host.counters, {"records_logged": 8} if ids else {})

    def test_log_levels_with_dead_letters_and_poison(self):
        # As in Rust: a record is logged once counted, before it is sent away or breaks.
        for fast in (True, False):
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout):
                h, out = self.run_counter({"log_levels": True, "dead_letter_every": 2}, [[record(1, i, i) for i in range(4)]], fast)
            self.assertEqual([v[0] for _, v, _ in out], [0, 2])
            self.assertEqual(len(h.take_dead_letters()), 2)
            self.assertEqual((h.host.logs, stdout.getvalue()), self.logged(range(4)))
            self.assertEqual(h.counter("records_logged"), 4)
        h = Harness(counter_host.Operator)
        h.open({"log_levels": True, "poison_every": 3, "poison": "error"})
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout), self.assertRaises(Err) as e:
            h.process([record(1, i, i) for i in range(5)])
        self.assertEqual(e.exception.value.value, "counter: refused record 2")
        self.assertEqual((h.host.logs, stdout.getvalue()), self.logged(range(3)))
        self.assertEqual(h.counter("records_logged"), 3)

    def test_restart_keeps_counting(self):
        h = Harness(counter_host.Operator)
        h.open()
        h.process([record(1, 1, 0), record(1, 1, 0)])
        nxt = h.restart()
        nxt.open(restored=True)
        self.assertEqual(decoded(nxt.process([record(1, 1, 0)])), [(1, [1, 3], 0)])


if __name__ == "__main__":
    unittest.main()
