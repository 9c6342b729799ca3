"""weirpy: a small guest SDK for Weir operators written in Python (built with componentize-py).

Modules:
- `msgpack`:  a tiny pure-Python MessagePack encoder/decoder (nil, bool, int, float, str, bin,
  array, map), encoding the way the Rust SDK (rmp_serde) does: the most compact form of every
  integer and string length, maps with their keys in insertion order.
- `records`:  reading the flat input batch and writing the flat output batch.
- `state`:    `KeyedState`, a keyed map with change tracking (incremental and full snapshots,
  restore), and `States`, which turns registered states into a `state-delta` and back.
- `operator`: `OperatorBase`, the exported `operator` interface on top of the above: subclass
  it, set `NAME` (and `STATE_VERSION`), override `process_record` / `end_batch` or `process`.
"""
