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

from operator import itemgetter

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
            # The usual bid: exactly the seven fields, in any order (a JSON file source sorts
            # them), read by name with one C call, of the right types (`__class__ is int`:
            # bools fail), the integers unsigned. Emit a new map in the Rust struct's order.
            # Every test is written out: a call per record (a helper, `map`) costs more here.
            if bid.__class__ is dict and len(bid) == 7:
                try:
                    auction, bidder, price, channel, url, date_time, extra = by_name(bid)
                except KeyError:
                    auction = None
                if (auction.__class__ is int and bidder.__class__ is int and price.__class__ is int
                        and date_time.__class__ is int and channel.__class__ is str
                        and url.__class__ is str and extra.__class__ is str and auction >= 0
                        and bidder >= 0 and price >= 0 and date_time >= 0):
                    append((record[0], {
                        "auction": auction, "bidder": bidder, "price": price * 908 // 1000,
                        "channel": channel, "url": url, "date_time": date_time, "extra": extra,
                    }, record[2]))
                    continue
            # Anything else: unknown fields, arrays, errors.
            key, bid, timestamp = record
            if bid.__class__ is list and len(bid) == 7:
                # Rust's serde also accepts a struct encoded as an array; answer with named
                # fields.
                bid = dict(zip(FIELDS, bid))
            elif bid.__class__ is not dict:
                raise InvalidInput("a bid is not a MessagePack map: %r" % (bid,))
            append((key, _converted(bid), timestamp))


by_name = itemgetter(*FIELDS)


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
