"""Whole batches of decoded records: the fast path of Python operators.

An operator that defines `process_batch(self, records, out)` gets every input batch as one
list of `(key, value, timestamp)` tuples and appends the records it emits to the list `out`
as `(key, value, timestamp)` tuples (a fourth parameter, `process_batch(self, records, out,
input)`, also gets the input index). Keys stay encoded: the record's MessagePack key bytes
(`b""` for none), exactly as they arrive, which is what `KeyedState` is keyed by; encode a
new key with `msgpack.packb`. Values are decoded: None, bool, int, float, str, bytes, list
and dict (and tuple or bytearray in output).

The same `process_batch` runs on two paths, which give the same result:
- fast: the component exports `encoded-batches` (`wit/encoded.wit`) and asks for pickle. The
  host turns the whole batch into one pickle, `pickle.loads` (CPython's C accelerator) builds
  the list, `out` is pickled back in one call, and the host encodes the values as MessagePack.
  No record is decoded or encoded in Python and no `entry` crosses per record.
- plain: a batch the pickle form cannot carry exactly (a value that is not one well-formed
  MessagePack value, an ext type, invalid UTF-8, deep nesting) arrives through
  `operator.process`: every value is decoded with `weirpy.msgpack`, which raises the error an
  operator reports for it, and the output is encoded with it.
"""

import io
import pickle

from . import msgpack
from .records import BatchWriter, iter_records

try:  # Components of the plain operator world (old builds, test fixtures) have no such export.
    from wit_world.exports.encoded_batches import BatchFormat, EncodedDelta, RestorePlan, ValueForm
except ImportError:
    BatchFormat = EncodedDelta = RestorePlan = ValueForm = None

__all__ = ["BatchFormat", "decode_batch", "dumps", "encode_records", "loads"]

loads = pickle.loads


def dumps(records):
    """The pickle of `records` for the host: protocol 5, without the memo (fast mode: each
    object is written where it occurs; a cyclic value fails)."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, 5)
    pickler.fast = True
    pickler.dump(records)
    return buf.getvalue()


def decode_batch(batch):
    """The records of a flat batch as `(key bytes, decoded value, timestamp)`: the plain
    path's `records`."""
    unpackb = msgpack.unpackb
    return [(key, unpackb(value), ts) for key, value, ts in iter_records(batch)]


def encode_records(records):
    """A flat batch of `(key bytes, value, timestamp)` records, values encoded as
    MessagePack: the plain path's output."""
    out = BatchWriter()
    emit_raw, packb = out.emit_raw, msgpack.packb
    for i, (key, value, ts) in enumerate(records):
        if key.__class__ is not bytes and key.__class__ is not bytearray:
            raise TypeError("output record %d: the key is a %s, not the MessagePack key bytes" % (i, type(key).__name__))
        if ts.__class__ is not int:
            raise TypeError("output record %d: the timestamp is a %s, not an int" % (i, type(ts).__name__))
        emit_raw(key, packb(value), ts)
    return out.finish()
