"""Keyed state kept by the host (the `keyed-state` import, wit/host.wit), on disk rather than
in guest memory: `HostKeyedState` (one value per record key, the API of `KeyedState`) and
`HostMapState` (per record key, any number of fields with a value each, scanned in field
order). Re-exported by `weirpy.state`.

Switching a state from guest memory to the host is one line:

    self.counts = KeyedState("counts")          # in guest memory, snapshotted by the guest
    self.counts = HostKeyedState("counts")      # on the host's disk, checkpointed by the host

Both take the same codec arguments (`encode`/`decode`, or `to_plain`/`from_plain`) and store
the bytes `KeyedState` would hand over in a snapshot. Register them in `States(...)` like any
state: `States` keeps them out of `snapshot`, `snapshot-encoded` and `restore` (the host
checkpoints this state itself at every barrier and restores it before `open`) and brackets
every exported call with them:

- before a batch (the `process_batch` fast path, its plain fallback and `process_record`),
  one `multi-get` reads the values of the batch's record keys (empty keys aside) into a cache
  of the call; before `on_timer`, the timer's key;
- reads and writes during the call hit the cache (a key not read before costs one `get`);
- after the call, one `apply` hands the host every key changed in it (a removed key as a
  delete), and the cache is dropped: memory holds one batch's keys, never the state;
- a call that fails hands nothing over (the host state stays as before it).

So a batch costs two boundary crossings per state, whatever its size. Outside those calls (in
`on_open`, or for a state not registered in `States`) every read is a `get` and every write
goes to the host at once.

Keys are record keys (MessagePack bytes, as in a batch) and must belong to the instance's key
groups, as with a `hash` edge: the host fails the call (and the instance) for another
subtask's key. The prefetch reads every record key of a batch; an operator whose records
carry keys it does not keep state under (a `forward` edge, say) passes `prefetch=False`.

Values are decoded on the way in and encoded on the way out in Python (the host stores bytes),
so treat them as immutable, as with `KeyedState`: change one with `put` / `update`.
"""

import operator

from .state import StateError, _codec

try:  # Components of worlds without the import (the old-world test fixtures) have no such module.
    from wit_world.imports import keyed_state as _ks
except ImportError:
    _ks = None

__all__ = ["HostKeyedState", "HostMapState"]

#: The field of a plain keyed value.
FIELD = b""
#: Fields per `scan` call of `HostMapState.items`.
SCAN_PAGE = 256

_ABSENT = object()    # cached: the host holds no value
_MISSING = object()   # not cached
_first = operator.itemgetter(0)


def _imports():
    if _ks is None:
        raise RuntimeError("this component's world has no keyed-state import (weir:operator/keyed-state)")
    return _ks


def _key_bytes(key, what="key"):
    if key.__class__ is bytes:
        return key
    if isinstance(key, (bytearray, memoryview)):
        return bytes(key)
    raise TypeError("a host state %s must be bytes (the MessagePack record key), not %s" % (what, type(key).__name__))


class _HostState:
    """What the host states share: the name, the codec, the handle (opened at first use: the
    world's imports cannot be called in `__init__`)."""

    #: `States` keeps a state with this attribute out of snapshots and restores.
    host_state = True

    def __init__(self, name, encode, decode, to_plain, from_plain):
        if not isinstance(name, str) or not 1 <= len(name.encode()) <= 64:
            raise ValueError("a host state name is 1 to 64 bytes, got %r" % (name,))
        self.name = name
        _native, self._encode, self._decode = _codec(name, encode, decode, to_plain, from_plain)
        self._handle = None
        self._active = False    # inside an exported call bracketed by begin_call / end_call

    def _open(self):
        handle = self._handle
        if handle is None:
            handle = self._handle = _imports().open_state(self.name)
        return handle

    def _decode_value(self, data):
        try:
            return self._decode(data)
        except Exception as e:
            raise StateError("a value of host state %r does not decode: %s" % (self.name, e)) from None

    def __len__(self):
        raise TypeError("host state %r cannot count its keys: the host holds them" % self.name)

    def __bool__(self):
        return True


class HostKeyedState(_HostState):
    """A map from encoded record keys (bytes) to values, kept by the host: the API of
    `KeyedState` (`get`, `put`, `update`, `remove`, `in`), except that it cannot list or
    count its keys (`items`, `len`). See the module docs for the per-call cache."""

    def __init__(self, name, encode=None, decode=None, *, to_plain=None, from_plain=None, prefetch=True):
        super().__init__(name, encode, decode, to_plain, from_plain)
        #: Read the batch's record keys before each batch (one multi-get).
        self.prefetch = prefetch
        self._cache = {}    # key -> value or _ABSENT, during a call
        self._dirty = {}    # keys changed during the call (a dict as an ordered set)

    # The KeyedState API -----------------------------------------------------------------

    def __contains__(self, key):
        return self.get(key, _MISSING) is not _MISSING

    def get(self, key, default=None):
        """The value of `key` (bytes), or `default`."""
        value = self._cache.get(key, _MISSING)
        if value is _MISSING:
            value = self._fetch(key)
        return default if value is _ABSENT else value

    def put(self, key, value):
        """Sets the value of `key` (bytes)."""
        if self._active:
            self._cache[key] = value
            self._dirty[key] = None
        else:
            key = _key_bytes(key)
            _imports().put(self._open(), key, FIELD, self._encode(value))

    def update(self, key, fn, default=None):
        """Sets `key` to `fn(current value, or default)` and returns the new value."""
        value = fn(self.get(key, default))
        self.put(key, value)
        return value

    def remove(self, key):
        """Removes `key`; returns its value (None if it had none)."""
        value = self.get(key, _MISSING)
        if self._active:
            self._cache[key] = _ABSENT
            self._dirty[key] = None
        elif value is not _MISSING:
            _imports().delete(self._open(), _key_bytes(key), FIELD)
        return None if value is _MISSING else value

    def items(self):
        raise TypeError("host state %r cannot list its keys: the host holds them" % self.name)

    def load(self, keys):
        """Reads the values of `keys` into the call's cache with one multi-get (keys already
        cached and empty keys skipped). Done for the batch's keys before each batch; call it
        for other keys an operator is about to read (outside a call it does nothing)."""
        if not self._active:
            return
        cache = self._cache
        todo = [k for k in dict.fromkeys(keys) if k and k not in cache]
        if not todo:
            return
        ks = _imports()
        lookup = ks.Lookup
        values = ks.multi_get(self._open(), [lookup(_key_bytes(k), FIELD) for k in todo])
        if len(values) != len(todo):
            raise StateError("the host answered %d lookups of host state %r with %d values" % (len(todo), self.name, len(values)))
        decode = self._decode_value
        for key, data in zip(todo, values):
            cache[key] = _ABSENT if data is None else decode(data)

    # The call bracket (States.begin_call / end_call) --------------------------------------

    def begin_call(self, keys):
        self._cache = {}
        self._dirty = {}
        self._active = True
        if self.prefetch:
            self.load(keys)

    def end_call(self, commit):
        """After a call: hands the changes over in one `apply` when `commit`, then drops the
        cache."""
        try:
            if commit and self._dirty:
                self._flush()
        finally:
            self._cache = {}
            self._dirty = {}
            self._active = False

    def _flush(self):
        cache, encode = self._cache, self._encode
        ks = _imports()
        change = ks.Change
        changes = []
        for key in self._dirty:
            value = cache[key]
            changes.append(change(_key_bytes(key), FIELD, None if value is _ABSENT else encode(value)))
        ks.apply(self._open(), changes)
        self._dirty = {}

    def _fetch(self, key):
        data = _imports().get(self._open(), _key_bytes(key), FIELD)
        value = _ABSENT if data is None else self._decode_value(data)
        if self._active:
            self._cache[key] = value
        return value


class HostMapState(_HostState):
    """Per record key (bytes), any number of fields (bytes) with a value each, kept by the
    host; `items(key)` scans a key's fields in byte order, page by page. Changes are kept
    during a call and handed over in one `apply` after it, like `HostKeyedState`'s (before a
    `clear` or a scan, those made so far); reads are cached for the call. Nothing is
    prefetched: the fields a batch reads are the operator's to know (`load(pairs)` reads many
    in one call). A call that fails after a `clear` or a scan has handed over the changes
    made before them (recovery restores the last checkpoint, as for any failed call)."""

    def __init__(self, name, encode=None, decode=None, *, to_plain=None, from_plain=None, page=SCAN_PAGE):
        super().__init__(name, encode, decode, to_plain, from_plain)
        if not 1 <= page < 1 << 32:
            raise ValueError("a scan page is 1 to 2^32-1 fields")
        self.page = page
        self._cache = {}    # (key, field) -> value or _ABSENT, during a call
        self._dirty = {}    # (key, field) changed during the call

    def get(self, key, field, default=None):
        """The value of `field` of `key`, or `default`."""
        value = self._cache.get((key, field), _MISSING)
        if value is _MISSING:
            data = _imports().get(self._open(), _key_bytes(key), _key_bytes(field, "field"))
            value = _ABSENT if data is None else self._decode_value(data)
            if self._active:
                self._cache[(key, field)] = value
        return default if value is _ABSENT else value

    def contains(self, key, field):
        return self.get(key, field, _MISSING) is not _MISSING

    def put(self, key, field, value):
        """Sets `field` of `key` to `value`."""
        if self._active:
            self._cache[(key, field)] = value
            self._dirty[(key, field)] = None
        else:
            _imports().put(self._open(), _key_bytes(key), _key_bytes(field, "field"), self._encode(value))

    def delete(self, key, field):
        """Deletes `field` of `key`, if present."""
        if self._active:
            self._cache[(key, field)] = _ABSENT
            self._dirty[(key, field)] = None
        else:
            _imports().delete(self._open(), _key_bytes(key), _key_bytes(field, "field"))

    def clear(self, key):
        """Deletes every field of `key`."""
        key = _key_bytes(key)
        if self._active:
            self.flush()
            for pair in [p for p in self._cache if p[0] == key]:
                del self._cache[pair]
        _imports().clear(self._open(), key)

    def items(self, key, start=None):
        """Yields the `(field, value)` pairs of `key` in field byte order, from `start` on
        (inclusive), one `scan` of `page` fields at a time (each after handing over the changes
        made so far, so it sees them)."""
        key = _key_bytes(key)
        if start is not None:
            start = _key_bytes(start, "field")
        page, decode = self.page, self._decode_value
        while True:
            self.flush()
            answer = _imports().scan(self._open(), key, start, page)
            # An empty answer is the end: the host may cut a page short (its byte cap).
            if not answer:
                return
            for fv in answer:
                yield fv.field, decode(fv.value)
            start = answer[-1].field + b"\x00"

    def fields(self, key, start=None):
        """The fields of `key` in byte order (see `items`)."""
        return map(_first, self.items(key, start))

    def load(self, pairs):
        """Reads the values of `(key, field)` pairs into the call's cache with one multi-get
        (outside a call it does nothing)."""
        if not self._active:
            return
        cache = self._cache
        todo = [p for p in dict.fromkeys(pairs) if p not in cache]
        if not todo:
            return
        ks = _imports()
        lookup = ks.Lookup
        values = ks.multi_get(self._open(), [lookup(_key_bytes(k), _key_bytes(f, "field")) for k, f in todo])
        if len(values) != len(todo):
            raise StateError("the host answered %d lookups of host state %r with %d values" % (len(todo), self.name, len(values)))
        decode = self._decode_value
        for pair, data in zip(todo, values):
            cache[pair] = _ABSENT if data is None else decode(data)

    def flush(self):
        """Hands the changes made so far in this call to the host (one `apply`)."""
        if not self._dirty:
            return
        cache, encode = self._cache, self._encode
        ks = _imports()
        change = ks.Change
        changes = []
        for pair in self._dirty:
            key, field = pair
            value = cache[pair]
            changes.append(change(_key_bytes(key), _key_bytes(field, "field"), None if value is _ABSENT else encode(value)))
        ks.apply(self._open(), changes)
        self._dirty = {}

    def begin_call(self, keys):
        self._cache = {}
        self._dirty = {}
        self._active = True

    def end_call(self, commit):
        try:
            if commit:
                self.flush()
        finally:
            self._cache = {}
            self._dirty = {}
            self._active = False
