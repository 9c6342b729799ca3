"""Host-side unit tests of operators/nexmark_q17.py (no wasm)."""

import unittest

from support import batch, decoded, fresh

from componentize_py_types import Err  # noqa: E402
from wit_world.imports import types  # noqa: E402

import nexmark_q17  # noqa: E402
from weirpy import msgpack  # noqa: E402
from weirpy.records import iter_records  # noqa: E402

U64_MAX = 2**64 - 1
FIELDS = ["auction", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
          "min_price", "max_price", "avg_price", "sum_price"]


def bid(auction, price, **extra):
    b = {"auction": auction, "bidder": 7, "price": price, "channel": "Google", "url": "https://x/y",
         "date_time": 1_000, "extra": ""}
    b.update(extra)
    return b


def bids(*pairs, ts=100):
    """A batch of bids keyed by their auction, as the nexmark source makes them."""
    return batch(*[(a, bid(a, p), ts + i) for i, (a, p) in enumerate(pairs)])


def stats_of(op, auction):
    return op.stats.get(msgpack.packb(auction))


def state_entries(delta):
    """`(state name, kind, key, value)` per entry of a state-delta, values decoded."""
    out, pos = [], 0
    for e in delta.entries:
        k = delta.data[pos:pos + e.key_len]
        v = delta.data[pos + e.key_len:pos + e.key_len + e.value_len]
        pos += e.key_len + e.value_len
        out.append((delta.names[e.state], e.kind, msgpack.unpackb(k), msgpack.unpackb(v) if v else None))
    return out


class Q17Test(unittest.TestCase):
    def test_one_output_per_bid_with_running_stats(self):
        op = fresh(nexmark_q17)
        out = op.process(0, bids((5, 100), (6, 20_000), (5, 300)))
        recs = list(iter_records(out))
        self.assertEqual([k for k, _, _ in recs], [msgpack.packb(5), msgpack.packb(6), msgpack.packb(5)])
        self.assertEqual([ts for _, _, ts in recs], [100, 101, 102])
        values = [v for _, v, _ in decoded(out)]
        self.assertEqual([list(v) for v in values], [FIELDS] * 3)  # field order
        self.assertEqual(values[0], dict(zip(FIELDS, [5, 1, 1, 0, 0, 100, 100, 100, 100])))
        self.assertEqual(values[1], dict(zip(FIELDS, [6, 1, 0, 1, 0, 20_000, 20_000, 20_000, 20_000])))
        self.assertEqual(values[2], dict(zip(FIELDS, [5, 2, 2, 0, 0, 100, 300, 200, 400])))

    def test_compact_fixmap_encoding(self):
        op = fresh(nexmark_q17)
        _, value, _ = next(iter_records(op.process(0, bids((1, 200)))))
        expected = b"\x89" + b"".join(msgpack.packb(f) + msgpack.packb(v) for f, v in
                                      zip(FIELDS, [1, 1, 1, 0, 0, 200, 200, 200, 200]))
        self.assertEqual(value, expected)
        self.assertIn(b"\xcc\xc8", value)  # 200 as uint8, like rmp

    def test_rank_boundaries(self):
        op = fresh(nexmark_q17)
        op.process(0, bids((1, 0), (1, 9_999), (1, 10_000), (1, 999_999), (1, 1_000_000), (1, U64_MAX)))
        self.assertEqual(stats_of(op, 1)[:4], (6, 2, 2, 2))
        self.assertEqual(stats_of(op, 1)[4:6], (0, U64_MAX))

    def test_sum_saturates_and_avg_divides_it(self):
        op = fresh(nexmark_q17)
        out = decoded(op.process(0, bids((3, U64_MAX - 1), (3, 5), (3, 1))))
        self.assertEqual([v["sum_price"] for _, v, _ in out], [U64_MAX - 1, U64_MAX, U64_MAX])
        self.assertEqual([v["avg_price"] for _, v, _ in out], [U64_MAX - 1, U64_MAX // 2, U64_MAX // 3])
        self.assertEqual(stats_of(op, 3), (3, 2, 0, 1, 1, U64_MAX - 1, U64_MAX))

    def test_state_layout_and_snapshot_delta_vs_full(self):
        op = fresh(nexmark_q17)
        op.process(0, bids((1, 10), (2, 20)))
        first = op.snapshot(1, False)
        self.assertEqual(first.names, ["stats"])
        put = types.ChangeKind.PUT
        self.assertEqual(state_entries(first), [
            ("stats", put, 1, [1, 1, 0, 0, 10, 10, 10]),
            ("stats", put, 2, [1, 1, 0, 0, 20, 20, 20]),
        ])
        # The value is a MessagePack array of 7 compact uints.
        self.assertEqual(first.data[1:], bytes([0x97, 1, 1, 0, 0, 10, 10, 10]) + b"\x02" + bytes([0x97, 1, 1, 0, 0, 20, 20, 20]))
        self.assertEqual(op.snapshot(2, False).entries, [])
        op.process(0, bids((2, 2_000_000)))
        self.assertEqual(state_entries(op.snapshot(3, False)),
                         [("stats", put, 2, [2, 1, 0, 1, 20, 2_000_000, 2_000_020])])
        full = state_entries(op.snapshot(4, True))
        self.assertEqual(sorted(e[2] for e in full), [1, 2])
        self.assertEqual(op.snapshot(5, False).entries, [])

    def test_restore_continues_the_stats(self):
        op = fresh(nexmark_q17)
        op.process(0, bids((9, 50), (9, 150)))
        first = op.snapshot(1, False)
        op.process(0, bids((9, 1)))
        second = op.snapshot(2, False)
        op2 = fresh(nexmark_q17)
        self.assertEqual(op2.describe().state_version, 0)
        op2.restore(0, first)
        op2.restore(0, second)
        self.assertEqual(op2.snapshot(3, False).entries, [])  # restored entries are held
        out = decoded(op2.process(0, bids((9, 10_000))))
        self.assertEqual(out[0][1], dict(zip(FIELDS, [9, 4, 3, 1, 0, 1, 10_000, 2_550, 10_201])))
        with self.assertRaises(Err) as e:
            fresh(nexmark_q17).restore(1, first)
        self.assertIsInstance(e.exception.value, types.Error_InvalidState)

    def test_corrupt_state_is_invalid_state(self):
        bad = types.StateDelta(names=["stats"], data=msgpack.packb(1) + msgpack.packb([1, 2, 3]), entries=[
            types.StateEntry(state=0, kind=types.ChangeKind.PUT, key_len=1, value_len=4)])
        with self.assertRaises(Err) as e:
            fresh(nexmark_q17).restore(0, bad)
        self.assertIsInstance(e.exception.value, types.Error_InvalidState)

    def test_bad_bids_are_invalid_input(self):
        for value in ["text", [1, 2, 3, 4, 5, 6, 7], {"auction": 1}, {"price": 1},
                      {"auction": -1, "price": 1}, {"auction": 1, "price": "9"},
                      {"auction": True, "price": 1}]:
            op = fresh(nexmark_q17)
            with self.assertRaises(Err) as e:
                op.process(0, batch((1, value, 0)))
            self.assertIsInstance(e.exception.value, types.Error_InvalidInput, value)
        op = fresh(nexmark_q17)
        with self.assertRaises(Err) as e:
            op.process(0, types.Batch(data=b"\x01\xc1", entries=[types.Entry(key_len=1, value_len=1, timestamp=0)]))
        self.assertIsInstance(e.exception.value, types.Error_InvalidInput)


if __name__ == "__main__":
    unittest.main()
