"""`OperatorBase`: the exported `operator` interface, for Python operators.

Subclass it in the module you componentize and name the class `Operator` (that is the
class componentize-py exports):

    from weirpy.operator import OperatorBase

    class Operator(OperatorBase):
        NAME = "my-operator"

        def process_record(self, key, value, timestamp, out):
            out.emit_raw(key, value, timestamp)

Per batch the base class calls `process_record(key, value, timestamp, out)` for every record
(key and value are the raw MessagePack bytes; `out` is a `BatchWriter`), then
`end_batch(input, out)`, and returns what `out` collected. Override `process(input, batch)`
itself for full control. Keyed state: create `KeyedState`s in `__init__` and list them in
`self.states = States(...)`; snapshots and restores are then handled here.

Errors: raise `InvalidInput`, `InvalidConfig`, `InvalidState` or `OtherError` (or let a
`MsgpackError` / `StateError` escape); they become the matching WIT `error`. Any other
exception becomes `error::other` with its traceback, and is logged at level error, instead of
trapping the instance.
"""

import json
import traceback

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import logging, types

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
    """Turns exceptions escaping an exported method into the WIT `error` (an `Err`)."""

    def wrapper(self, *args):
        try:
            return method(self, *args)
        except Err:
            raise
        except Exception as exc:
            raise Err(_to_wit_error(exc)) from None

    wrapper.__name__ = method.__name__
    wrapper.__doc__ = method.__doc__
    return wrapper


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

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
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
        """Handles one input record (raw key and value bytes)."""
        raise NotImplementedError("override process_record or process")

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
        out = BatchWriter()
        handle = self.process_record
        for key, value, timestamp in iter_records(batch):
            handle(key, value, timestamp, out)
        self.end_batch(input, out)
        return out.finish()

    @_guard
    def on_watermark(self, timestamp):
        return empty_batch()

    @_guard
    def on_timer(self, key, timestamp):
        return empty_batch()

    @_guard
    def snapshot(self, checkpoint_id, full):
        return self.states.snapshot(full)

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
