"""Flat batches: reading the records of an input batch and building an output batch.

A batch is one byte buffer (`data`) with the key and value bytes of every record back to
back, plus one entry per record (`key_len`, `value_len`, `timestamp`). Keys and values are
MessagePack by convention; an empty key means the record has no key.
"""

from wit_world.imports import types

from . import msgpack


def iter_records(batch):
    """Yields `(key: bytes, value: bytes, timestamp: int)` for every record of `batch`."""
    data = batch.data
    if len(batch.entries) and sum(e.key_len + e.value_len for e in batch.entries) != len(data):
        raise ValueError("batch entries do not add up to the length of its data")
    pos = 0
    for e in batch.entries:
        k_end = pos + e.key_len
        v_end = k_end + e.value_len
        yield data[pos:k_end], data[k_end:v_end], e.timestamp
        pos = v_end


def empty_batch():
    """A batch with no records (emits nothing)."""
    return types.Batch(data=b"", entries=[])


class BatchWriter:
    """Collects output records and turns them into one flat batch."""

    __slots__ = ("_data", "_entries")

    def __init__(self):
        self._data = bytearray()
        self._entries = []

    def __len__(self):
        return len(self._entries)

    def emit_raw(self, key, value, timestamp):
        """Appends a record whose key and value are already encoded (bytes; key may be b"")."""
        self._data += key
        self._data += value
        self._entries.append(types.Entry(key_len=len(key), value_len=len(value), timestamp=timestamp))

    def emit(self, key, value, timestamp):
        """Appends a record, encoding `key` and `value` as MessagePack. `key=None` emits a
        record without a key (empty key bytes)."""
        self.emit_raw(b"" if key is None else msgpack.packb(key), msgpack.packb(value), timestamp)

    def finish(self):
        """The batch of every record emitted so far (the writer is emptied)."""
        batch = types.Batch(data=bytes(self._data), entries=self._entries)
        self._data = bytearray()
        self._entries = []
        return batch
