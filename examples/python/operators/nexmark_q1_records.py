"""Nexmark query 1 on the per-record API (`process_record`, values decoded and encoded with
weirpy's pure-Python MessagePack): the same results as `nexmark_q1.py`, which uses the
batch API, kept to test that both agree and to measure the difference.

Nexmark query 1 (currency conversion) in Python, equivalent to examples/nexmark-q1 (Rust):
every bid with its price converted from dollars to euros (`price * 908 // 1000`, integer).

Input and output values are bids as MessagePack maps with named fields (auction, bidder,
price, channel, url, date_time, extra, in that order); records have no key. The output map
has the fields in that order (unknown input fields are dropped, as serde does) and encodes
compactly, as the Rust operator does.
"""

from weirpy import msgpack
from weirpy.operator import InvalidInput, OperatorBase

FIELDS = ("auction", "bidder", "price", "channel", "url", "date_time", "extra")
U64_FIELDS = ("auction", "bidder", "price", "date_time")


def dollars_to_euros(dollars):
    # Python integers do not overflow: exact for every u64, like the Rust u128 fallback.
    return dollars * 908 // 1000


class Operator(OperatorBase):
    NAME = "nexmark-q1-python-records"

    def process_record(self, key, value, timestamp, out):
        bid = msgpack.unpackb(value)
        if isinstance(bid, list) and len(bid) == len(FIELDS):
            # Rust's serde also accepts a struct encoded as an array; answer with named fields.
            bid = dict(zip(FIELDS, bid))
        if not isinstance(bid, dict):
            raise InvalidInput("a bid is not a MessagePack map: %r" % (bid,))
        try:
            out_bid = {field: bid[field] for field in FIELDS}
        except KeyError as e:
            raise InvalidInput("a bid has no field %s" % e) from None
        for field in FIELDS:
            v = out_bid[field]
            if field in U64_FIELDS:
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    raise InvalidInput("bid field %r is not an unsigned integer: %r" % (field, v))
            elif not isinstance(v, str):
                raise InvalidInput("bid field %r is not a string: %r" % (field, v))
        out_bid["price"] = dollars_to_euros(out_bid["price"])
        out.emit_raw(key, msgpack.packb(out_bid), timestamp)
