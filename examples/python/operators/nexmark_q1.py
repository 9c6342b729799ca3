"""Nexmark query 1 (currency conversion) in Python, equivalent to examples/nexmark-q1 (Rust):
every bid with its price converted from dollars to euros (`price * 908 // 1000`, integer).

Input and output values are bids as MessagePack maps with named fields (auction, bidder,
price, channel, url, date_time, extra, in that order); records have no key. The output map
has the fields in that order (unknown input fields are dropped, as serde does) and encodes
compactly, as the Rust operator does.

Written on the batch API (`process_batch`, see `weirpy.batches`): the host hands over the
batch as one pickle with every bid already decoded, so the loop below is all the Python that
runs per record. `nexmark_q1_records.py` is the same query on the per-record API.
"""

from weirpy.operator import InvalidInput, OperatorBase

FIELDS = ("auction", "bidder", "price", "channel", "url", "date_time", "extra")
U64_FIELDS = ("auction", "bidder", "price", "date_time")


def dollars_to_euros(dollars):
    # Python integers do not overflow: exact for every u64, like the Rust u128 fallback.
    return dollars * 908 // 1000


def _field_error(bid):
    """The error for a bid whose fields are missing or of the wrong type (the slow path)."""
    missing = [f for f in FIELDS if f not in bid]
    if missing:
        return InvalidInput("a bid has no field '%s'" % missing[0])
    for field in FIELDS:
        v = bid[field]
        if field in U64_FIELDS:
            if v.__class__ is not int or v < 0:
                return InvalidInput("bid field %r is not an unsigned integer: %r" % (field, v))
        elif v.__class__ is not str:
            return InvalidInput("bid field %r is not a string: %r" % (field, v))
    return InvalidInput("a bid does not fit: %r" % (bid,))


class Operator(OperatorBase):
    NAME = "nexmark-q1-python"

    def process_batch(self, records, out):
        append = out.append
        for record in records:
            bid = record[1]
            # The usual bid: exactly the seven fields, in order, of the right types (checked
            # by C loops: `type(True) is bool`, so bools fail), the integers unsigned. Convert
            # it in place and emit the input record itself.
            if bid.__class__ is dict and [*bid] == FIELD_LIST and (*map(type, bid.values()),) == TYPES:
                price = bid["price"]
                if min(bid["auction"], bid["bidder"], price, bid["date_time"]) >= 0:
                    bid["price"] = price * 908 // 1000  # dollars_to_euros, inlined
                    append(record)
                    continue
            # Anything else: other field orders, unknown fields, arrays, errors.
            key, bid, timestamp = record
            if bid.__class__ is list and len(bid) == 7:
                # Rust's serde also accepts a struct encoded as an array; answer with named
                # fields.
                bid = dict(zip(FIELDS, bid))
            elif bid.__class__ is not dict:
                raise InvalidInput("a bid is not a MessagePack map: %r" % (bid,))
            append((key, _converted(bid), timestamp))


TYPES = (int, int, int, str, str, int, str)
FIELD_LIST = list(FIELDS)


def _check(bid):
    """Raises `InvalidInput` unless the four u64 fields are unsigned ints and the three
    others strings (`type(True) is not int`, so bools fail too)."""
    get = bid.get
    auction, bidder, price, date_time = get("auction"), get("bidder"), get("price"), get("date_time")
    if not (
        auction.__class__ is int and bidder.__class__ is int and price.__class__ is int
        and date_time.__class__ is int and auction >= 0 and bidder >= 0 and price >= 0
        and date_time >= 0 and get("channel").__class__ is str and get("url").__class__ is str
        and get("extra").__class__ is str
    ):
        raise _field_error(bid)


def _converted(bid):
    """A new bid of the seven fields in order, price converted (unknown fields dropped)."""
    _check(bid)
    return {
        "auction": bid["auction"],
        "bidder": bid["bidder"],
        "price": bid["price"] * 908 // 1000,
        "channel": bid["channel"],
        "url": bid["url"],
        "date_time": bid["date_time"],
        "extra": bid["extra"],
    }
