"""A keyed running counter whose state the host keeps on disk (`HostKeyedState`): the Python
twin of the Rust test guest engine/test-guests/counter, for host-state tests.

Input: records whose value is an unsigned id, or an array of unsigned ints whose first
element is the id. Keyed state "counts", per record key, holds `{"count": n}` (with
`"pad": "x" * pad` when the config asks for padding): the bytes the Rust counter stores. With
`reset_at: n` a key whose count reaches `n` is removed (its entry deleted). Each record is
emitted with value `[id, count]` (the count after this record, before any reset) and key
`id % out_keys` (u64) when `out_keys` is set, else the input key.

Config (JSON, every field optional): `out_keys`, `reset_at`, `pad`, and, as the Rust counter's:
- `poison_every: n`: the record of id `n·k − 1` breaks the operator after it was counted
  (its count put in the state), as `poison` says: `"panic"` (default; an unexpected
  exception, `RuntimeError("counter: poison record {id}")`, which weirpy returns as an
  `other` error rather than trapping), `"error"` (`InvalidInput("counter: refused record
  {id}")`) or `"alloc"` (allocates 1 MiB blocks without bound, past the memory limit: the
  instance traps);
- `dead_letter_every: n`: the record of id `n·k − 1` is counted and then sent to the dead
  letters by the operator itself (`weirpy.host.dead_letter`, reason `counter: record {id}
  sent away`), not emitted;
- `log_levels: true` (a bool, default false): each record, once counted, logs `record {id} at
  {level}` at every level, trace, debug, info, warn, error (`weirpy.host.log`), prints
  `record {id} on stdout` (`print`, flushed at once, so that the line reaches the host in
  order with the log lines) and adds 1 to its metrics counter `records_logged`
  (`weirpy.host.counter_add`).

The state is a `HostKeyedState`: the host checkpoints it, so the guest's snapshots are empty.
Replace it with `KeyedState("counts")` and the operator keeps the same state in guest memory
instead; nothing else changes.
"""

from weirpy import host, msgpack
from weirpy.operator import InvalidConfig, InvalidInput, OperatorBase
from weirpy.state import HostKeyedState, States

U64_MAX = (1 << 64) - 1
CONFIG_FIELDS = {"out_keys", "reset_at", "pad", "poison_every", "poison", "dead_letter_every", "log_levels"}
POISONS = ("panic", "error", "alloc")
#: `log_levels`: the levels a record is logged at, in order, with their names.
LOG_LEVELS = ((host.Level.TRACE, "trace"), (host.Level.DEBUG, "debug"), (host.Level.INFO, "info"),
              (host.Level.WARN, "warn"), (host.Level.ERROR, "error"))


def _is_u64(v):
    return v.__class__ is int and 0 <= v <= U64_MAX


def read_id(value):
    """The id of an input value: a u64, or the first of an array of u64s."""
    if value.__class__ is int and 0 <= value <= U64_MAX:
        return value
    if value.__class__ is list:
        if not value:
            raise InvalidInput("empty tuple")
        if all(_is_u64(v) for v in value):
            return value[0]
    raise InvalidInput("not an unsigned id or an array of them: %r" % (value,))


class Operator(OperatorBase):
    NAME = "counter"

    def __init__(self):
        super().__init__()
        self.counts = HostKeyedState("counts")
        self.states = States(self.counts)

    def on_open(self, context, config):
        if not isinstance(config, dict):
            raise InvalidConfig("the config is a JSON object")
        unknown = set(config) - CONFIG_FIELDS
        if unknown:
            raise InvalidConfig("unknown config fields: %s" % ", ".join(sorted(unknown)))
        out_keys, reset_at, pad = config.get("out_keys"), config.get("reset_at"), config.get("pad", 0)
        for name, v in (("out_keys", out_keys), ("reset_at", reset_at)):
            if v is not None and not _is_u64(v):
                raise InvalidConfig("%s is an unsigned integer" % name)
        if out_keys == 0:
            raise InvalidConfig("out_keys must be at least 1")
        if not _is_u64(pad):
            raise InvalidConfig("pad is an unsigned integer")
        self.out_keys, self.reset_at, self.pad = out_keys, reset_at, "x" * pad
        poison_every, dead_letter_every = config.get("poison_every"), config.get("dead_letter_every")
        for name, v in (("poison_every", poison_every), ("dead_letter_every", dead_letter_every)):
            if v is not None and not (_is_u64(v) and v >= 1):
                raise InvalidConfig("%s is an integer of at least 1" % name)
        poison = config.get("poison", "panic")
        if poison not in POISONS:
            raise InvalidConfig("poison is one of %s, not %r" % (", ".join(POISONS), poison))
        self.poison_every, self.poison, self.dead_letter_every = poison_every, poison, dead_letter_every
        log_levels = config.get("log_levels", False)
        if log_levels.__class__ is not bool:
            raise InvalidConfig("log_levels is a boolean, not %r" % (log_levels,))
        self.log_levels = log_levels

    def process_batch(self, records, out):
        counts = self.counts
        get, put, remove, append = counts.get, counts.put, counts.remove, out.append
        out_keys, reset_at, pad = self.out_keys, self.reset_at, self.pad
        poison_every, dead_letter_every, log_levels = self.poison_every, self.dead_letter_every, self.log_levels
        for key, value, timestamp in records:
            id = read_id(value)
            entry = get(key)
            count = 1 if entry is None else entry["count"] + 1
            if count == reset_at:
                remove(key)
            else:
                put(key, {"count": count, "pad": pad} if pad else {"count": count})
            if log_levels:
                self.log_record(id)
            if poison_every is not None and id % poison_every == poison_every - 1:
                self.break_on(id)
            if dead_letter_every is not None and id % dead_letter_every == dead_letter_every - 1:
                # The value arrived decoded: re-encoded, it is the bytes that came (weirpy
                # writes the compact forms, as the Rust SDK does).
                host.dead_letter(key, msgpack.packb(value), timestamp, "counter: record %d sent away" % id)
                continue
            append((key if out_keys is None else msgpack.packb(id % out_keys), [id, count], timestamp))

    def log_record(self, id):
        """`log_levels`: record `id` at every level, on stdout and in `records_logged`."""
        for level, name in LOG_LEVELS:
            host.log(level, "record %d at %s" % (id, name))
        print("record %d on stdout" % id, flush=True)
        host.counter_add("records_logged", 1)

    def break_on(self, id):
        """Record `id` is a poison record: fail as `poison` says (after it was counted)."""
        if self.poison == "error":
            raise InvalidInput("counter: refused record %d" % id)
        if self.poison == "alloc":
            hoard = []
            while True:
                hoard.append(bytearray(1 << 20))
        raise RuntimeError("counter: poison record %d" % id)
