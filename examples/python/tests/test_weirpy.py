"""Host-side unit tests of weirpy and the operators (no wasm); see support.py for the
bindings they need.

    $WEIR_TOOLS/py-venv/bin/python -m unittest discover -s examples/python/tests
"""

import unittest

from support import batch, decoded

from componentize_py_types import Err  # noqa: E402
from wit_world.imports import types  # noqa: E402

from weirpy import msgpack  # noqa: E402
from weirpy.records import iter_records  # noqa: E402
from weirpy.state import KeyedState, States  # noqa: E402


class MsgpackTest(unittest.TestCase):
    def test_compact_encodings_like_rmp(self):
        self.assertEqual(msgpack.packb(1), b"\x01")
        self.assertEqual(msgpack.packb(200), b"\xcc\xc8")
        self.assertEqual(msgpack.packb(70000), b"\xce\x00\x01\x11\x70")
        self.assertEqual(msgpack.packb(-1), b"\xff")
        self.assertEqual(msgpack.packb(-200), b"\xd1\xff\x38")
        self.assertEqual(msgpack.packb("w1"), b"\xa2w1")
        self.assertEqual(msgpack.packb("x" * 40)[:2], b"\xd9\x28")
        self.assertEqual(msgpack.packb({"a": [True, None]}), b"\x81\xa1a\x92\xc3\xc0")

    def test_round_trip(self):
        for v in [0, 127, 128, 2**64 - 1, -(2**63), "", "é" * 300, b"\x00" * 70000,
                  [1, [2, {"k": False}]], {"x" * 20: list(range(20))}, 1.5]:
            self.assertEqual(msgpack.unpackb(msgpack.packb(v)), v)

    def test_errors(self):
        for bad in [b"", b"\xa3ab", b"\xc1", b"\x01\x02"]:
            with self.assertRaises(msgpack.MsgpackError):
                msgpack.unpackb(bad)


def key(w):
    return msgpack.packb(w)


class KeyedStateTest(unittest.TestCase):
    def test_incremental_and_full(self):
        s = KeyedState("s")
        s.put(key("a"), 1)
        s.put(key("b"), 2)
        self.assertEqual(s.snapshot(False), [(key("a"), b"\x01"), (key("b"), b"\x02")])
        self.assertEqual(s.snapshot(False), [])
        s.update(key("a"), lambda v: v + 10)
        s.put(key("c"), 3)
        s.put(key("c"), 6)
        self.assertEqual(s.snapshot(False), [(key("a"), b"\x0b"), (key("c"), b"\x06")])
        s.remove(key("a"))
        s.put(key("fleeting"), 1)
        s.remove(key("fleeting"))
        self.assertEqual(s.snapshot(False), [(key("a"), None)])
        s.put(key("d"), 4)
        self.assertEqual(sorted(s.snapshot(True)), sorted([(key("b"), b"\x02"), (key("c"), b"\x06"), (key("d"), b"\x04")]))
        self.assertEqual(s.snapshot(False), [])

    def test_removed_then_put_again_is_a_put(self):
        s = KeyedState("s")
        s.put(key("k"), 1)
        s.snapshot(False)
        s.remove(key("k"))
        s.put(key("k"), 5)
        self.assertEqual(s.snapshot(False), [(key("k"), b"\x05")])
        s.remove(key("k"))
        self.assertEqual(s.snapshot(False), [(key("k"), None)])

    def test_restored_keys_count_as_held(self):
        states = States(KeyedState("counts"))
        states.restore(types.StateDelta(names=["counts"], data=key("x") + b"\x07", entries=[
            types.StateEntry(state=0, kind=types.ChangeKind.PUT, key_len=2, value_len=1)]))
        s = states._by_name["counts"]
        self.assertEqual(s.get(key("x")), 7)
        self.assertEqual(states.snapshot(False).entries, [])
        s.remove(key("x"))
        delta = states.snapshot(False)
        self.assertEqual(delta.names, ["counts"])
        self.assertEqual([e.kind for e in delta.entries], [types.ChangeKind.DELETE])


class WordCountTest(unittest.TestCase):
    def fresh(self):
        import wordcount
        from weirpy.operator import OperatorBase
        OperatorBase._singletons.pop(wordcount.Operator, None)
        op = wordcount.Operator()
        self.assertIs(op, wordcount.Operator())  # one object per class (see OperatorBase)
        return op

    def test_totals_per_distinct_word_in_first_seen_order(self):
        op = self.fresh()
        out = op.process(0, batch(("b", 1, 5), ("a", 1, 3), ("b", 2, 4)))
        self.assertEqual(decoded(out), [("b", 3, 5), ("a", 1, 3)])
        self.assertEqual(decoded(op.process(0, batch(("a", 1, 9)))), [("a", 2, 9)])
        self.assertEqual(op.process(0, batch()).entries, [])

    def test_snapshot_restore(self):
        op = self.fresh()
        op.process(0, batch(("x", 4, 0), ("y", 1, 0)))
        first = op.snapshot(1, False)
        op.process(0, batch(("x", 1, 0)))
        second = op.snapshot(2, False)
        self.assertEqual(len(second.entries), 1)
        op2 = self.fresh()
        op2.restore(0, first)
        op2.restore(0, second)
        self.assertEqual(decoded(op2.process(0, batch(("x", 1, 0)))), [("x", 6, 0)])
        with self.assertRaises(Err) as e:
            op2.restore(3, first)
        self.assertIsInstance(e.exception.value, types.Error_InvalidState)

    def test_bad_input_is_invalid_input(self):
        op = self.fresh()
        with self.assertRaises(Err) as e:
            op.process(0, batch(("a", "text", 0)))
        self.assertIsInstance(e.exception.value, types.Error_InvalidInput)


class Q1Test(unittest.TestCase):
    def test_price_conversion_and_field_order(self):
        import nexmark_q1
        bid = {"auction": 1, "bidder": 2, "price": 1000, "channel": "web", "url": "u", "date_time": 3, "extra": ""}
        out = nexmark_q1.Operator().process(0, batch((None, bid, 42)))
        self.assertEqual(list(iter_records(out)), [(b"", msgpack.packb(dict(bid, price=908)), 42)])
        self.assertEqual(nexmark_q1.dollars_to_euros(2**64 - 1), 16_749_643_618_928_272_866)


def _random_bids(seed, n):
    import random
    rng = random.Random(seed)
    bids = []
    for i in range(n):
        bid = {
            "auction": rng.randrange(1000, 1 << 64 if i % 17 == 0 else 2000),
            "bidder": rng.randrange(0, 1 << 40),
            "price": rng.choice([0, 1, 999, 10_000, (1 << 64) - 1, rng.randrange(0, 1 << 32)]),
            "channel": rng.choice(["web", "app", "ünïcode", ""]),
            "url": "https://x/" + "y" * rng.randrange(0, 300),
            "date_time": rng.randrange(0, 1 << 45),
            "extra": "",
        }
        if i % 5 == 0:
            bid["unknown"] = [1, {"a": None}]
        elif i % 3 == 1:
            bid = dict(sorted(bid.items()))   # the order a JSON file source gives
        bids.append(bid)
    return bids


class BatchApiTest(unittest.TestCase):
    """`process_batch` against `process_record`, and the pickle path against the plain one
    (the host's transcoding emulated with pickle and weirpy.msgpack)."""

    def test_q1_batch_and_record_apis_agree_on_both_paths(self):
        import pickle

        import nexmark_q1
        import nexmark_q1_records
        from weirpy import batches

        seed = 2020
        records = [(b"" if i % 3 else msgpack.packb(i), bid, 1000 + i) for i, bid in enumerate(_random_bids(seed, 300))]
        plain_in = batch(*[(None if not k else msgpack.unpackb(k), v, ts) for k, v, ts in records])
        by_record = list(iter_records(nexmark_q1_records.Operator().process(0, plain_in)))
        by_batch = list(iter_records(nexmark_q1.Operator().process(0, plain_in)))
        self.assertEqual(by_batch, by_record, "seed %d" % seed)
        doc = pickle.dumps([(k, v, ts) for k, v, ts in records], protocol=5)
        out = pickle.loads(nexmark_q1.Operator().process_encoded(0, doc))
        self.assertEqual([(k, msgpack.packb(v), ts) for k, v, ts in out], by_record, "seed %d" % seed)
        self.assertEqual(len(by_record), 300)
        self.assertIs(nexmark_q1.EncodedBatches().wanted_format(), batches.BatchFormat.PICKLE)
        self.assertIsNone(nexmark_q1_records.EncodedBatches().wanted_format())

    def test_bad_bids_fail_both_apis_alike(self):
        import nexmark_q1
        import nexmark_q1_records

        good = _random_bids(7, 1)[0]
        for bad in ({**good, "price": -1}, {**good, "url": 5}, {**good, "bidder": True}, "text",
                    {k: v for k, v in good.items() if k != "extra"}):
            for module in (nexmark_q1, nexmark_q1_records):
                with self.assertRaises(Err) as e:
                    module.Operator().process(0, batch((None, bad, 0)))
                self.assertIsInstance(e.exception.value, types.Error_InvalidInput, (module.__name__, bad))

    def test_array_map_keys_decode_as_tuples(self):
        data = b"\x81\x92\x01\x91\x02\xa1x"   # {[1, [2]]: "x"}
        self.assertEqual(msgpack.unpackb(data), {(1, (2,)): "x"})
        self.assertEqual(msgpack.packb(msgpack.unpackb(data)), data)


class DeadLetterTest(unittest.TestCase):
    """`weirpy.host.dead_letter`: side output `dead-letter`, empty key, `[reason, key bin,
    value bin]`, byte for byte as the Rust SDK's `dead_letter::send_raw` writes it."""

    def test_the_record_goes_out_as_the_host_reads_it(self):
        from weirpy import host
        from weirpy.operator import OperatorBase
        from weirpy.testing import Harness, record

        class Refuser(OperatorBase):
            def process_record(self, key, value, timestamp, out):
                if msgpack.unpackb(value) % 2:
                    host.dead_letter(key, value, timestamp, "odd value")
                else:
                    out.emit_raw(key, value, timestamp)

        h = Harness(Refuser)
        h.open()
        out = h.process([record("a", 1, 10), record("b", 2, 11), record(None, 3, 12)])
        self.assertEqual(out, [record("b", 2, 11)])
        # The raw side output, byte for byte: fixarray 3, fixstr reason, bin8 key, bin8 value.
        raw = [so for so in h.host.side_outputs if so[0] == host.DEAD_LETTER_OUTPUT]
        self.assertEqual(raw[0], ("dead-letter", (b"", b"\x93\xa9odd value\xc4\x02\xa1a\xc4\x01\x01", 10)))
        self.assertEqual(h.take_dead_letters(), [("odd value", b"\xa1a", b"\x01", 10), ("odd value", b"", b"\x03", 12)])
        self.assertEqual(h.take_side_outputs(), [])

    def test_lengths_and_bytes_like(self):
        from weirpy import host
        from weirpy.testing import SimulatedHost

        sim = SimulatedHost().install()
        big, reason = bytes(range(256)) * 200, "r" * 40   # bin16 value (51 200 bytes), str8 reason
        host.dead_letter(bytearray(b"k"), memoryview(big), -5, reason)
        name, (key, value, ts) = sim.side_outputs[-1]
        self.assertEqual((name, key, ts), ("dead-letter", b"", -5))
        self.assertEqual(value, b"\x93\xd9\x28" + reason.encode() + b"\xc4\x01k\xc5\xc8\x00" + big)
        self.assertEqual(msgpack.unpackb(value), [reason, b"k", big])
        for bad in ((1, b""), (b"", "text")):
            with self.assertRaises(TypeError):
                host.dead_letter(bad[0], bad[1], 0, "r")


if __name__ == "__main__":
    unittest.main()
