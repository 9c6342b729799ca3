"""Shared set-up of the host-side unit tests: puts the WIT bindings, weirpy and operators/
on the Python path, and small batch helpers.

The bindings are `$WEIR_BUILD_DIR/bindings` (default examples/python/build/bindings), made
by build.sh. When they are missing, they are generated into a temporary directory with the
componentize-py of the running venv (or the one on PATH).
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WIT = os.path.join(ROOT, "..", "..", "wit")


def _bindings_dir():
    build = os.environ.get("WEIR_BUILD_DIR") or os.path.join(ROOT, "build")
    bindings = os.path.join(os.path.abspath(build), "bindings")
    if os.path.isdir(os.path.join(bindings, "wit_world")):
        return bindings
    cpy = os.path.join(os.path.dirname(sys.executable), "componentize-py")
    if not os.path.exists(cpy):
        cpy = shutil.which("componentize-py")
    if cpy is None:
        raise RuntimeError(
            "no WIT bindings in %s and no componentize-py to generate them: run build.sh, "
            "or run the tests with the python of $WEIR_TOOLS/py-venv" % bindings
        )
    tmp = tempfile.mkdtemp(prefix="weirpy-bindings-")
    atexit.register(shutil.rmtree, tmp, True)
    subprocess.run([cpy, "-q", "-d", WIT, "-w", "encoded-operator-world", "bindings", tmp], check=True)
    return tmp


if "wit_world" not in sys.modules:
    sys.path[:0] = [_bindings_dir(), ROOT, os.path.join(ROOT, "operators")]

from weirpy import msgpack  # noqa: E402
from weirpy.records import BatchWriter, iter_records  # noqa: E402


def batch(*records):
    """A batch of `(key, value, timestamp)` records, encoding key (None: no key) and value."""
    w = BatchWriter()
    for k, v, ts in records:
        w.emit(k, v, ts)
    return w.finish()


def decoded(b):
    """The records of a batch as `(decoded key or None, decoded value, timestamp)`."""
    return [(msgpack.unpackb(k) if k else None, msgpack.unpackb(v), ts) for k, v, ts in iter_records(b)]


def fresh(module):
    """A new instance of `module.Operator` (OperatorBase keeps one object per class)."""
    from weirpy.operator import OperatorBase
    OperatorBase._singletons.pop(module.Operator, None)
    return module.Operator()
