"""Nexmark query 17 (auction statistics, per auction) in Python, equivalent to
examples/nexmark-q17 (Rust).

Input: bids keyed by their auction id (key = MessagePack uint, value = the bid as a
MessagePack map with named fields; only `auction` and `price` are read, other fields are
ignored). A value that is not a map with unsigned `auction` and `price` fails the batch with
`invalid-input`.

State: keyed state "stats", key = the record key bytes, value = MessagePack array of 7 uints
[total_bids, rank1_bids, rank2_bids, rank3_bids, min_price, max_price, sum_price];
state version 0 (the same layout in every language).

Output: for every input record, one record with the input key bytes and timestamp and a map
(fields in this order) auction, total_bids, rank1_bids, rank2_bids, rank3_bids, min_price,
max_price, avg_price (sum_price // total_bids), sum_price. Ranks: rank1 price < 10_000,
rank2 10_000 <= price < 1_000_000, rank3 price >= 1_000_000. sum_price saturates at 2**64-1.
"""

from weirpy.operator import InvalidInput, OperatorBase
from weirpy.state import KeyedState, States

U64_MAX = (1 << 64) - 1
RANK2_FROM = 10_000
RANK3_FROM = 1_000_000


def _is_u64(v):
    return v.__class__ is int and 0 <= v <= U64_MAX


def stats_from_plain(stats):
    """Checks a saved stats entry (decoded: a list); returns the 7-tuple. A tuple is saved as
    the MessagePack array of 7 uints, so the state needs no `to_plain`."""
    if not isinstance(stats, list) or len(stats) != 7 or not all(_is_u64(v) for v in stats):
        raise ValueError("not an array of 7 unsigned integers: %r" % (stats,))
    return tuple(stats)


def update_stats(stats, price):
    """The stats (a tuple, or None for a new auction) after one more bid at `price`."""
    if stats is None:
        total, r1, r2, r3, low, high, total_price = 0, 0, 0, 0, price, price, 0
    else:
        total, r1, r2, r3, low, high, total_price = stats
    if price < RANK2_FROM:
        r1 += 1
    elif price < RANK3_FROM:
        r2 += 1
    else:
        r3 += 1
    total_price += price
    if total_price > U64_MAX:
        total_price = U64_MAX
    return (
        total + 1, r1, r2, r3,
        price if price < low else low,
        price if price > high else high,
        total_price,
    )


class Operator(OperatorBase):
    NAME = "nexmark-q17-python"
    STATE_VERSION = 0

    def __init__(self):
        super().__init__()
        self.stats = KeyedState("stats", from_plain=stats_from_plain)
        self.states = States(self.stats)

    def process_batch(self, records, out):
        # The batch API (weirpy.batches): bids arrive decoded, the output maps are encoded by
        # the host. Only the statistics run in Python per record.
        stats = self.stats
        get, put, append = stats.get, stats.put, out.append
        for key, bid, timestamp in records:
            if bid.__class__ is not dict:
                raise InvalidInput("a bid is not a MessagePack map: %r" % (bid,))
            auction = bid.get("auction")
            price = bid.get("price")
            if not _is_u64(auction):
                raise InvalidInput("bid field 'auction' is missing or not an unsigned integer: %r" % (auction,))
            if not _is_u64(price):
                raise InvalidInput("bid field 'price' is missing or not an unsigned integer: %r" % (price,))
            s = update_stats(get(key), price)
            put(key, s)
            total, r1, r2, r3, low, high, total_price = s
            append((key, {
                "auction": auction,
                "total_bids": total,
                "rank1_bids": r1,
                "rank2_bids": r2,
                "rank3_bids": r3,
                "min_price": low,
                "max_price": high,
                "avg_price": total_price // total,
                "sum_price": total_price,
            }, timestamp))
