"""Operator state: `KeyedState` (a keyed map with change tracking), `ValueState` (one value
of the instance) and `States` (the registry that turns an operator's named states into
`state-delta`s and back). Any object with `name`, `snapshot(full)`, `restore(key, value)`
and `forget(key)` registers as a state (`weirpy.window.KeyedWindows` and
`weirpy.join.KeyedJoin` do).

Contract (the same as the Rust guest SDK's `KeyedState`):
- `snapshot(full=False)` hands over only what changed since the previous snapshot: a put for
  every key set since then (once, with its latest value) and a delete for every key the host
  holds (one an earlier snapshot or a restore handed over) that was removed since.
- `snapshot(full=True)` hands over every live entry (puts only) and resets the tracking.
- `restore` takes live entries (puts) before `open`; restored keys count as held by the host,
  so removing one later writes a delete.

Keys are the encoded (MessagePack) record key bytes, exactly as they arrive in a batch, so
that the host places each entry in the key group of its records. Values are kept decoded
and encoded only when a snapshot needs them.

Native values: in a component with the `encoded-batches` export, snapshots and restores go
as one pickled state document (wit/encoded.wit, `States.snapshot_document`): the host
encodes and decodes the values of every *native* state (a `KeyedState` or `ValueState`
without a custom `encode`/`decode`; `to_plain`/`from_plain` convert and check values on the
way) and passes the bytes of every other state through. The stored bytes are the same either
way. States with their own `snapshot_decoded(full)` / `restore_decoded(items)` and a true
`native` attribute take part too (`KeyedWindows`, `KeyedJoin`).

Host state: `HostKeyedState` and `HostMapState` (`weirpy.host_state`, re-exported here) keep
their entries on the host's disk instead (the `keyed-state` import), with the API and codec
arguments of `KeyedState`; `States` keeps them out of snapshots and restores.
"""

import io
import operator
import pickle

from wit_world.imports import types

from . import msgpack

# Section kinds of a state document (wit/encoded.wit).
PUT, DELETE, RAW = 0, 1, 2


class StateError(Exception):
    """Restored state cannot be read (maps to the `invalid-state` error)."""


_MISSING = object()


def _codec(name, encode, decode, to_plain, from_plain):
    """`(native, encode, decode)` of a state: native when it has no custom `encode`/`decode`
    (`to_plain(value)` / `from_plain(plain)` then convert between a value and what
    MessagePack carries, both ways, and may raise to refuse a restored value)."""
    custom = encode not in (None, msgpack.packb) or decode not in (None, msgpack.unpackb)
    if custom and (to_plain is not None or from_plain is not None):
        raise ValueError("state %r: give either encode/decode or to_plain/from_plain" % name)
    if custom:
        return False, encode or msgpack.packb, decode or msgpack.unpackb
    packb, unpackb = msgpack.packb, msgpack.unpackb
    encode = packb if to_plain is None else (lambda value: packb(to_plain(value)))
    decode = unpackb if from_plain is None else (lambda data: from_plain(unpackb(data)))
    return True, encode, decode


class KeyedState:
    """A map from encoded record keys (bytes) to values, with change tracking.

    `encode(value) -> bytes` and `decode(bytes) -> value` default to MessagePack. Values must
    be treated as immutable: change one by setting it again (`put`, `update`), which marks
    the key as changed. Prefer `from_plain` (check or convert a decoded value, e.g. a list to
    a tuple) and `to_plain` to a custom `encode`/`decode`: the host then encodes and decodes
    the values natively (see the module docs).
    """

    def __init__(self, name, encode=None, decode=None, *, to_plain=None, from_plain=None):
        self.name = name
        self.native, self._encode, self._decode = _codec(name, encode, decode, to_plain, from_plain)
        self._to_plain = to_plain
        self._from_plain = from_plain
        self._map = {}          # key bytes -> value
        self._dirty = {}        # keys set since the last snapshot (a dict as an ordered set)
        self._held = set()      # keys the host holds a value for
        self._deleted = set()   # held keys removed since the last snapshot

    def __len__(self):
        return len(self._map)

    def __contains__(self, key):
        return key in self._map

    def get(self, key, default=None):
        """The value of `key` (bytes), or `default`. Reading changes nothing."""
        return self._map.get(key, default)

    def put(self, key, value):
        """Sets the value of `key` (bytes) and marks it as changed."""
        self._map[key] = value
        self._dirty[key] = None
        if self._deleted:
            self._deleted.discard(key)

    def update(self, key, fn, default=None):
        """Sets `key` to `fn(current value, or default)` and returns the new value."""
        value = fn(self._map.get(key, default))
        self.put(key, value)
        return value

    def remove(self, key):
        """Removes `key`; returns its value (None if it had none)."""
        value = self._map.pop(key, _MISSING)
        if value is _MISSING:
            return None
        self._dirty.pop(key, None)
        if key in self._held:
            self._deleted.add(key)
        return value

    def forget(self, key):
        """Drops `key` without recording a delete (a restored delete: the host no longer
        holds it)."""
        self._map.pop(key, None)
        self._dirty.pop(key, None)
        self._held.discard(key)

    def items(self):
        """The live `(key bytes, value)` pairs, in no particular order."""
        return self._map.items()

    def snapshot(self, full):
        """The changes since the last snapshot (or every live entry when `full`), as a list
        of `(key, encoded value)` puts and `(key, None)` deletes."""
        encode = self._encode
        if full:
            changes = [(k, encode(v)) for k, v in self._map.items()]
            self._held = set(self._map)
        else:
            changes = [(k, None) for k in sorted(self._deleted)]
            self._held.difference_update(self._deleted)
            for k in self._dirty:
                changes.append((k, encode(self._map[k])))
            self._held.update(self._dirty)
        self._dirty = {}
        self._deleted = set()
        return changes

    def restore(self, key, value):
        """Applies one restored live entry (`value` is encoded bytes)."""
        try:
            decoded = self._decode(value)
        except Exception as e:
            raise StateError("the value of a key of state %r does not decode: %s" % (self.name, e)) from None
        self._map[key] = decoded
        self._held.add(key)

    def snapshot_decoded(self, full):
        """`snapshot` with the values not encoded (`to_plain` applied): sections
        `(DELETE, [key, ...])` and `(PUT, [(key, value), ...])` of a state document."""
        to_plain = self._to_plain
        sections = []
        if full:
            if to_plain is None:
                puts = list(self._map.items())
            else:
                puts = [(k, to_plain(v)) for k, v in self._map.items()]
            self._held = set(self._map)
        else:
            if self._deleted:
                sections.append((DELETE, sorted(self._deleted)))
                self._held.difference_update(self._deleted)
            m = self._map
            if to_plain is None:
                puts = [(k, m[k]) for k in self._dirty]
            else:
                puts = [(k, to_plain(m[k])) for k in self._dirty]
            self._held.update(self._dirty)
        if puts:
            sections.append((PUT, puts))
        self._dirty = {}
        self._deleted = set()
        return sections

    def restore_decoded(self, items):
        """`restore` of `(key, decoded value)` pairs (`from_plain` applied)."""
        from_plain = self._from_plain
        if from_plain is None:
            self._map.update(items)
        else:
            m = self._map
            for key, value in items:
                try:
                    m[key] = from_plain(value)
                except Exception as e:
                    raise StateError("the value of a key of state %r does not decode: %s" % (self.name, e)) from None
        self._held.update(map(_first, items))


_first = operator.itemgetter(0)


class ValueState:
    """One value of the operator instance, not tied to a record key: operator state. Its
    checkpoint entry has an empty key, so the host keeps it with the subtask (a savepoint
    restored at a lower parallelism drops the values of the subtasks that go away unless
    the job allows non-restored state). Holds nothing (None) until set.

    `encode`/`decode` default to MessagePack. Treat the value as immutable: change it with
    `set`, which marks it as changed.
    """

    def __init__(self, name, encode=None, decode=None, *, to_plain=None, from_plain=None):
        self.name = name
        self.native, self._encode, self._decode = _codec(name, encode, decode, to_plain, from_plain)
        self._to_plain = to_plain
        self._from_plain = from_plain
        self._value = None
        self._dirty = False   # changed since the last snapshot
        self._held = False    # the host holds a value (from a snapshot or a restore)

    def get(self, default=None):
        """The value, or `default` when it is not set."""
        return default if self._value is None else self._value

    def set(self, value):
        """Sets the value (None clears it) and marks it as changed."""
        self._value = value
        self._dirty = True

    def clear(self):
        """Removes the value; returns it (None if it had none)."""
        value = self._value
        self.set(None)
        return value

    def is_set(self):
        return self._value is not None

    def snapshot(self, full):
        """A put of the value when it changed (or always when `full`), a delete when it was
        cleared and the host holds one; else nothing."""
        return [(key, None if value is None else self._encode(value)) for key, value in self._changes(full)]

    def _changes(self, full):
        """`[(b"", value)]` to put, `[(b"", None)]` to delete, or `[]`; resets the tracking."""
        changes = []
        if full or self._dirty:
            if self._value is not None:
                changes.append((b"", self._value))
            elif self._held and not full:
                changes.append((b"", None))
            self._held = self._value is not None
            self._dirty = False
        return changes

    def restore(self, key, value):
        if key:
            raise StateError("an entry of value state %r has a key (is it keyed state?)" % self.name)
        try:
            self._value = self._decode(value)
        except Exception as e:
            raise StateError("the value of state %r does not decode: %s" % (self.name, e)) from None
        self._held = True
        self._dirty = False

    def forget(self, key):
        self._value = None
        self._held = False
        self._dirty = False

    def snapshot_decoded(self, full):
        """`snapshot` as state-document sections, the value not encoded."""
        return [
            (DELETE, [key]) if value is None else (PUT, [(key, value if self._to_plain is None else self._to_plain(value))])
            for key, value in self._changes(full)
        ]

    def restore_decoded(self, items):
        for key, value in items:
            if key:
                raise StateError("an entry of value state %r has a key (is it keyed state?)" % self.name)
            if self._from_plain is not None:
                try:
                    value = self._from_plain(value)
                except Exception as e:
                    raise StateError("the value of state %r does not decode: %s" % (self.name, e)) from None
            self._value = value
            self._held = True
            self._dirty = False


class States:
    """The named states of an operator, in registration order (their index in the
    `names` of a snapshot's `state-delta`).

    States kept by the host (`HostKeyedState`, `HostMapState`: a true `host_state`
    attribute) register here too but never take part in snapshots or restores (the host
    checkpoints them itself): `begin_call(keys)` and `end_call(commit)` bracket every
    exported call with them instead (`OperatorBase` does)."""

    def __init__(self, *states):
        names = [s.name for s in states]
        if len(set(names)) != len(names):
            raise ValueError("duplicate state names: %r" % names)
        self._states = [s for s in states if not getattr(s, "host_state", False)]
        self._by_name = {s.name: s for s in self._states}
        #: The states kept by the host.
        self.host = [s for s in states if getattr(s, "host_state", False)]

    def begin_call(self, keys=()):
        """Before an exported call: the host states read the values of `keys` (the record
        keys of a batch, a timer's key) in one multi-get each."""
        keys = list(keys)
        try:
            for state in self.host:
                state.begin_call(keys)
        except BaseException:
            for state in self.host:
                state.end_call(False)
            raise

    def end_call(self, commit):
        """After an exported call: the host states hand their changes over in one apply each
        when `commit` (the call succeeded), else drop them."""
        error = None
        for state in self.host:
            try:
                state.end_call(commit and error is None)
            except Exception as e:
                error = error or e
        if error is not None:
            raise error

    def snapshot(self, full):
        """A `state-delta` with the changes of every state (see `KeyedState.snapshot`)."""
        data = bytearray()
        entries = []
        put, delete = types.ChangeKind.PUT, types.ChangeKind.DELETE
        for index, state in enumerate(self._states):
            for key, value in state.snapshot(full):
                data += key
                if value is None:
                    entries.append(types.StateEntry(state=index, kind=delete, key_len=len(key), value_len=0))
                else:
                    data += value
                    entries.append(types.StateEntry(state=index, kind=put, key_len=len(key), value_len=len(value)))
        return types.StateDelta(names=[s.name for s in self._states], data=bytes(data), entries=entries)

    def restore(self, chunk):
        """Routes every entry of a restored chunk to its state by name."""
        data = chunk.data
        pos = 0
        for i, e in enumerate(chunk.entries):
            if e.state >= len(chunk.names):
                raise StateError("restore entry %d names state index %d of %d" % (i, e.state, len(chunk.names)))
            name = chunk.names[e.state]
            state = self._by_name.get(name)
            if state is None:
                raise StateError("restore entry %d belongs to unknown state %r" % (i, name))
            k_end = pos + e.key_len
            v_end = k_end + e.value_len
            if v_end > len(data):
                raise StateError("restore entry %d runs past the end of the chunk data" % i)
            if e.kind == types.ChangeKind.DELETE:
                state.forget(data[pos:k_end])
            else:
                state.restore(data[pos:k_end], data[k_end:v_end])
            pos = v_end
        if pos != len(data):
            raise StateError("restore chunk entries do not add up to the length of its data")

    # State documents (wit/encoded.wit): the fast path of snapshots and restores.

    def snapshot_document(self, full):
        """`snapshot` as `(names, pickled state document)`: the same entries, in the same
        order; native states hand over their values decoded, the others their bytes."""
        sections = []
        for index, state in enumerate(self._states):
            if getattr(state, "native", False):
                sections.extend((index, kind, items) for kind, items in state.snapshot_decoded(full))
            else:
                _raw_sections(index, state.snapshot(full), sections)
        try:
            doc = _dumps_plain(sections)
        except _NotPlain:
            # A value of another type than the document carries (a subclass such as a
            # namedtuple or an IntEnum): encode the decoded puts here, as `snapshot` does.
            packb = msgpack.packb
            sections = [
                (index, RAW, [(k, packb(v)) for k, v in items]) if kind == PUT else (index, kind, items)
                for index, kind, items in sections
            ]
            doc = _dumps_plain(sections)
        return [s.name for s in self._states], doc

    def plan_restore(self, names):
        """For each of `names`, whether its values should arrive decoded (native states) or
        as bytes; None when a name is unknown (the plain restore then reports it)."""
        forms = []
        for name in names:
            state = self._by_name.get(name)
            if state is None:
                return None
            forms.append(bool(getattr(state, "native", False)))
        return forms

    def restore_document(self, names, doc):
        """`restore` of a pickled state document whose sections were planned by
        `plan_restore(names)`."""
        try:
            sections = pickle.loads(doc)
        except Exception as e:
            raise StateError("the restore document does not unpickle: %s" % e) from None
        for index, kind, items in sections:
            if not 0 <= index < len(names):
                raise StateError("a restore section names state index %d of %d" % (index, len(names)))
            state = self._by_name.get(names[index])
            if state is None:
                raise StateError("a restore section belongs to unknown state %r" % names[index])
            if kind == PUT:
                state.restore_decoded(items)
            elif kind == RAW:
                for key, value in items:
                    state.restore(key, value)
            else:
                for key in items:
                    state.forget(key)


def _raw_sections(index, changes, sections):
    """Appends `(key, bytes)` puts and `(key, None)` deletes as runs of RAW and DELETE
    sections of state `index`."""
    run = None
    for key, value in changes:
        kind = DELETE if value is None else RAW
        if kind != run:
            run, items = kind, []
            sections.append((index, kind, items))
        if value is None:
            items.append(key)
        else:
            items.append((key, value if value.__class__ is bytes else bytes(value)))


class _NotPlain(Exception):
    """A value is not of a type the pickled document carries as a plain value."""


class _PlainPickler(pickle.Pickler):
    # The C pickler handles None, bool, int, float, str, bytes, bytearray, list, tuple, dict
    # (exact types) itself; anything else reaches here.
    def reducer_override(self, obj):
        raise _NotPlain(type(obj).__name__)


def _dumps_plain(obj):
    """Protocol 5 pickle without memo of plain values only (else `_NotPlain`)."""
    buf = io.BytesIO()
    pickler = _PlainPickler(buf, 5)
    pickler.fast = True
    pickler.dump(obj)
    return buf.getvalue()


# Keyed state kept by the host (imported last: it builds on `_codec` and `StateError`).
from .host_state import HostKeyedState, HostMapState  # noqa: E402,F401
