"""`OperatorBase`: the exported `operator` interface, for Python operators.

Subclass it in the module you componentize and name the class `Operator` (that is the
class componentize-py exports):

    from weirpy.operator import OperatorBase

    class Operator(OperatorBase):
        NAME = "my-operator"

        def process_record(self, key, value, timestamp, out):
            out.emit_raw(key, value, timestamp)

Fast path: define `process_batch(self, records, out)` instead (see `weirpy.batches`): the
whole batch at once, values decoded natively, keys as bytes; append `(key, value, timestamp)`
tuples to the list `out`. With it the component asks the host for pickled batches, and an
operator's Python code runs only its own logic per record. Prefer it for anything that reads
values.

Per-record API: per batch the base class calls `process_record(key, value, timestamp, out)` for every record
(key and value are the raw MessagePack bytes; `out` is a `BatchWriter`), then
`end_batch(input, out)`, and returns what `out` collected. An operator with several inputs
defines `process_record(self, key, value, timestamp, out, input)` instead: with a sixth
parameter it also gets the index of the input the batch came from (0 for the first; the
job spec's `"inputs": ["left", "right"]` orders them). Override `process(input, batch)`
itself for full control.

Event time: `on_timer(self, key, timestamp, out)` runs for each timer that fires (register
them with `weirpy.host.register_timer`), `on_watermark(self, timestamp, out)` after the
timers of each new watermark; both emit through `out`, a `BatchWriter`. (The base class
keeps the exported `on-timer` / `on-watermark` functions and calls these hooks; an override
with the exported signatures, `on_timer(self, key, timestamp)` returning a batch, still
replaces them.)

Keyed state: create `KeyedState`s (or `ValueState`, `KeyedWindows`, `KeyedJoin`) in
`__init__` and list them in `self.states = States(...)`; snapshots and restores are then
handled here, as pickled state documents whose values the host encodes and decodes (see
`weirpy.state`), unless the class overrides `snapshot` or `restore` (then those run). Host
states (`HostKeyedState`, `HostMapState`) listed there are kept out of snapshots; every
exported call that runs operator code reads the batch's keys before it and hands the changes
over after it (`weirpy.host_state`).

Errors: raise `InvalidInput`, `InvalidConfig`, `InvalidState` or `OtherError` (or let a
`MsgpackError` / `StateError` escape); they become the matching WIT `error`. Any other
exception becomes `error::other` with its traceback, and is logged at level error, instead of
trapping the instance.
"""

import json
import sys
import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import logging, types

from . import batches, host
from .msgpack import MsgpackError
from .records import BatchWriter, empty_batch, iter_records
from .state import StateError, States


class OperatorError(Exception):
    """Base of the errors an operator raises on purpose."""

    wit = types.Error_Other


class InvalidInput(OperatorError):
    wit = types.Error_InvalidInput


class InvalidConfig(OperatorError):
    wit = types.Error_InvalidConfig


class InvalidState(OperatorError):
    wit = types.Error_InvalidState


class OtherError(OperatorError):
    wit = types.Error_Other


def _to_wit_error(exc):
    if isinstance(exc, OperatorError):
        return exc.wit(str(exc))
    if isinstance(exc, MsgpackError):
        return types.Error_InvalidInput("cannot decode MessagePack: %s" % exc)
    if isinstance(exc, StateError):
        return types.Error_InvalidState(str(exc))
    text = "".join(traceback.format_exception(exc)).rstrip()
    try:
        logging.log(logging.Level.ERROR, text)
    except Exception:
        pass
    return types.Error_Other("%s: %s" % (type(exc).__name__, exc))


def _guard(method):
    """Turns exceptions escaping an exported method into the WIT `error` (an `Err`), and
    starts each call afresh (`host.new_call`: watermarks are asked again)."""

    def wrapper(self, *args):
        host.new_call()
        try:
            return method(self, *args)
        except Err:
            raise
        except Exception as exc:
            raise Err(_to_wit_error(exc)) from None

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


def _fresh_call(method):
    """An exported method a subclass overrides: it still starts each call afresh."""

    def wrapper(self, *args):
        host.new_call()
        return method(self, *args)

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


_CO_VARARGS = 0x04


def _positional(fn):
    """How many positional parameters a plain function takes (self included); 99 when it
    takes `*args`, 0 for anything else (a callable object)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return 0
    return 99 if code.co_flags & _CO_VARARGS else code.co_argcount


# Exported functions a subclass may override with their exported signature.
_EXPORTS = ("open", "process", "snapshot", "restore")


class OperatorBase(exports.Operator):
    #: Name of the operator (logs and UI).
    NAME = "python-operator"
    #: State schema version (see `operator-info.state-version`).
    STATE_VERSION = 0
    #: Older versions whose state `migrate` can convert.
    MIGRATES_FROM = ()

    # componentize-py constructs the exported class once per exported *function* (while
    # pre-initializing the component at build time) and calls each function on its own
    # object. An operator needs one object: `__new__` hands out a single instance per class,
    # and every `__init__` runs only once on it (see `__init_subclass__`). Do not call the
    # world's imports (logging, ...) from `__init__`: they are trapping stubs at build time.
    _singletons = {}

    def __new__(cls):
        instance = OperatorBase._singletons.get(cls)
        if instance is None:
            instance = super().__new__(cls)
            instance.__dict__["_weir_initialized"] = set()
            OperatorBase._singletons[cls] = instance
        return instance

    # Hooks found by `_weir_hooks` (None: the subclass has none).
    _weir_timer_hook = None
    _weir_watermark_hook = None
    # `process_record` takes the input index as its sixth argument.
    _weir_record_input = False
    # The class defines `process_batch`; it takes the input index as its fourth argument.
    _weir_batch = False
    _weir_batch_input = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._weir_hooks()
        _export_encoded_batches(cls.__module__)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        def __init__(self, *args, **kw):
            done = self.__dict__["_weir_initialized"]
            if cls not in done:
                done.add(cls)
                init(self, *args, **kw)

        __init__.__doc__ = init.__doc__
        cls.__init__ = __init__

    @classmethod
    def _weir_hooks(cls):
        """Sorts out what a subclass defines: `on_timer(self, key, timestamp, out)` and
        `on_watermark(self, timestamp, out)` become the hooks the exported functions call
        (the exported ones stay in place); overrides of exported functions start each call
        afresh; `process_record` with a sixth parameter gets the input index."""
        d = cls.__dict__
        for name, hook, arity in (("on_timer", "_weir_timer_hook", 4), ("on_watermark", "_weir_watermark_hook", 3)):
            fn = d.get(name)
            if fn is None:
                continue
            if _positional(fn) == arity:
                setattr(cls, hook, fn)
                setattr(cls, name, getattr(OperatorBase, name))
            else:
                setattr(cls, name, _fresh_call(fn))
        for name in _EXPORTS:
            fn = d.get(name)
            if fn is not None:
                setattr(cls, name, _fresh_call(fn))
        fn = d.get("process_record")
        if fn is not None:
            cls._weir_record_input = _positional(fn) >= 6
        fn = d.get("process_batch")
        if fn is not None:
            cls._weir_batch = True
            cls._weir_batch_input = _positional(fn) >= 4

    def __init__(self):
        done = self.__dict__["_weir_initialized"]
        if OperatorBase in done:
            return
        done.add(OperatorBase)
        self.states = States()
        self.context = None
        self.config = {}

    # Hooks for subclasses -------------------------------------------------------------

    def on_open(self, context, config):
        """Called by `open` with the context and the parsed JSON config."""

    def process_record(self, key, value, timestamp, out):
        """Handles one input record (raw key and value bytes). Define it with a sixth
        parameter, `process_record(self, key, value, timestamp, out, input)`, to also get
        the index of the input the record came from."""
        raise NotImplementedError("override process_record or process")

    # on_timer(self, key, timestamp, out): a timer registered for `key` (bytes) at
    # `timestamp` fired. on_watermark(self, timestamp, out): the watermark advanced to
    # `timestamp`, after its timers fired. Define either in a subclass (see the module docs).

    def end_batch(self, input, out):
        """Called after the last record of every batch."""

    def migrate(self, from_version, chunk):
        """Restores a chunk written by state version `from_version` (in MIGRATES_FROM)."""
        raise InvalidState("no migration from state schema version %d" % from_version)

    # The exported interface -----------------------------------------------------------

    def describe(self):
        return types.OperatorInfo(
            name=self.NAME, state_version=self.STATE_VERSION, migrates_from=list(self.MIGRATES_FROM)
        )

    @_guard
    def open(self, context):
        self.context = context
        try:
            self.config = json.loads(context.config or "{}")
        except ValueError as e:
            raise InvalidConfig("the config is not JSON: %s" % e) from None
        self.on_open(context, self.config)

    @_guard
    def process(self, input, batch):
        if self._weir_batch:
            out = []
            self._run_batch(input, batches.decode_batch(batch), out)
            return batches.encode_records(out)
        out = BatchWriter()
        handle = self.process_record
        records = iter_records(batch)
        with _HostCall(self, records) as call:
            records = call.records
            if self._weir_record_input:
                for key, value, timestamp in records:
                    handle(key, value, timestamp, out, input)
            else:
                for key, value, timestamp in records:
                    handle(key, value, timestamp, out)
            self.end_batch(input, out)
        return out.finish()

    @_guard
    def process_encoded(self, input, data):
        """`encoded-batches.process-encoded`: a pickled batch in, a pickled batch out."""
        out = []
        self._run_batch(input, batches.loads(data), out)
        return batches.dumps(out)

    def _run_batch(self, input, records, out):
        with _HostCall(self, records):
            if self._weir_batch_input:
                self.process_batch(records, out, input)
            else:
                self.process_batch(records, out)

    @_guard
    def on_watermark(self, timestamp):
        hook = self._weir_watermark_hook
        if hook is None:
            return empty_batch()
        out = BatchWriter()
        with _HostCall(self, ()):
            hook(timestamp, out)
        return out.finish()

    @_guard
    def on_timer(self, key, timestamp):
        hook = self._weir_timer_hook
        if hook is None:
            return empty_batch()
        out = BatchWriter()
        with _HostCall(self, ((key,),)):
            hook(key, timestamp, out)
        return out.finish()

    @_guard
    def snapshot(self, checkpoint_id, full):
        return self.states.snapshot(full)

    def _state_documents(self, export):
        """Whether `export` (`snapshot` or `restore`) may go as a state document: the class
        keeps the base class's and its states are a `States`."""
        return getattr(type(self), export) is getattr(OperatorBase, export) and isinstance(self.states, States)

    @_guard
    def snapshot_encoded(self, checkpoint_id, full):
        """`encoded-batches.snapshot-encoded`: `snapshot` as a pickled state document."""
        if not self._state_documents("snapshot"):
            return None
        names, doc = self.states.snapshot_document(full)
        return batches.EncodedDelta(format=batches.BatchFormat.PICKLE, names=names, doc=doc)

    def plan_restore(self, state_version, names):
        """`encoded-batches.plan-restore`: pickled documents for this operator's own state
        version, native states' values decoded."""
        try:
            if state_version != self.STATE_VERSION or not self._state_documents("restore"):
                return None
            forms = self.states.plan_restore(names)
        except Exception:  # no error to return: the plain restore will report it
            return None
        if forms is None:
            return None
        decoded, raw = batches.ValueForm.DECODED, batches.ValueForm.RAW
        return batches.RestorePlan(format=batches.BatchFormat.PICKLE, forms=[decoded if f else raw for f in forms])

    @_guard
    def restore_encoded(self, state_version, names, doc):
        """`encoded-batches.restore-encoded`: a chunk as a pickled state document."""
        if state_version != self.STATE_VERSION:
            raise InvalidState("state version %d was not planned for a restore document" % state_version)
        self.states.restore_document(names, doc)

    @_guard
    def restore(self, state_version, chunk):
        if state_version == self.STATE_VERSION:
            self.states.restore(chunk)
        elif state_version in self.MIGRATES_FROM:
            self.migrate(state_version, chunk)
        else:
            raise InvalidState(
                "state schema version %d cannot be restored by this operator (version %d, migrates from %s)"
                % (state_version, self.STATE_VERSION, list(self.MIGRATES_FROM))
            )


class _HostCall:
    """Brackets one exported call for the operator's host states (`States.host`): before
    it, they read the values of the records' keys (one multi-get each); after it, they hand
    their changes over (one apply each), or drop them when the call raised. `records` holds
    the call's records (`(key, ...)` tuples, an iterable), materialized as a list when there
    are host states."""

    __slots__ = ("states", "records")

    def __init__(self, operator, records):
        states = operator.states
        if isinstance(states, States) and states.host:
            records = records if isinstance(records, (list, tuple)) else list(records)
            states.begin_call(map(_first, records))
            self.states = states
        else:
            self.states = None
        self.records = records

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.states is not None:
            self.states.end_call(exc_type is None)
        return False


def _first(record):
    return record[0]


class _EncodedBatches:
    """The `encoded-batches` export of a module whose `Operator` derives from `OperatorBase`:
    asks for pickled batches when the operator defines `process_batch`, and takes snapshots
    and restores as pickled state documents."""

    _weir_module = None

    def _operator(self):
        return getattr(sys.modules[self._weir_module], "Operator")()

    def wanted_format(self):
        return batches.BatchFormat.PICKLE if self._operator()._weir_batch else None

    def process_encoded(self, input, data):
        return self._operator().process_encoded(input, data)

    def snapshot_encoded(self, checkpoint_id, full):
        return self._operator().snapshot_encoded(checkpoint_id, full)

    def plan_restore(self, state_version, names):
        return self._operator().plan_restore(state_version, names)

    def restore_encoded(self, state_version, names, doc):
        return self._operator().restore_encoded(state_version, names, doc)


def _export_encoded_batches(module_name):
    """componentize-py exports a module's class `EncodedBatches` as the `encoded-batches`
    interface: give every operator module one (unless it defines its own, or the world has no
    such export)."""
    module = sys.modules.get(module_name)
    if batches.BatchFormat is None or module is None or hasattr(module, "EncodedBatches"):
        return
    module.EncodedBatches = type("EncodedBatches", (_EncodedBatches,), {"_weir_module": module_name})
