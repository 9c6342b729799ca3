"""weirpy: a small guest SDK for Weir operators written in Python (built with componentize-py).

Modules:
- `msgpack`:  a tiny pure-Python MessagePack encoder/decoder (nil, bool, int, float, str, bin,
  array, map), encoding the way the Rust SDK (rmp_serde) does: the most compact form of every
  integer and string length, maps with their keys in insertion order.
- `records`:  reading the flat input batch and writing the flat output batch.
- `state`:    `KeyedState`, a keyed map with change tracking (incremental and full snapshots,
  restore), `ValueState` (one value of the instance), and `States`, which turns registered
  states into a `state-delta` and back.
- `host`:     the host's services: event-time timers, watermarks (asked once per call), side
  outputs, metrics counters, logs.
- `operator`: `OperatorBase`, the exported `operator` interface on top of the above: subclass
  it, set `NAME` (and `STATE_VERSION`), override `process_record` (with an optional `input`
  argument), `on_timer` / `on_watermark`, `end_batch`, or `process`.
- `window`:   `KeyedWindows` (tumbling, sliding, session; allowed lateness; late records
  dropped or sent to a side output) with an `AggregateFunction`; `WindowSpec`.
- `join`:     `KeyedJoin` (regular join with an event-time TTL, interval join); `JoinSpec`.
- `testing`:  a simulated host and a `Harness` for unit tests on the host (not bundled into
  components by build.sh).
"""
