#!/usr/bin/env bash
# Builds every Python operator of this directory into build/<name>.wasm with componentize-py.
#
#   examples/python/build.sh            # build all
#   PY_VENV=/path/to/venv build.sh      # use another venv (default /work/tools/py-venv)
#
# Installs componentize-py (pinned) into the venv when it is missing. Idempotent: rebuilds
# every component each run (a build takes a few seconds) and regenerates build/bindings
# (the Python bindings of the WIT world, used by the unit tests).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WIT="$HERE/../../wit"
OUT="$HERE/build"
PY_VENV="${PY_VENV:-/work/tools/py-venv}"
PYTHON="${PYTHON:-python3.11}"
COMPONENTIZE_PY_VERSION="0.25.1"
# module in operators/ -> component name
OPERATORS=(wordcount:wordcount nexmark_q1:nexmark-q1)

CPY="$PY_VENV/bin/componentize-py"
if [ ! -x "$CPY" ]; then
    echo "componentize-py not found in $PY_VENV: installing componentize-py==$COMPONENTIZE_PY_VERSION" >&2
    if ! command -v "$PYTHON" >/dev/null; then
        echo "error: $PYTHON is needed to create the venv $PY_VENV (set PYTHON=...)" >&2
        exit 1
    fi
    if [ ! -x "$PY_VENV/bin/pip" ]; then
        "$PYTHON" -m venv "$PY_VENV"
    fi
    if ! "$PY_VENV/bin/pip" install -q "componentize-py==$COMPONENTIZE_PY_VERSION"; then
        echo "error: cannot install componentize-py into $PY_VENV" >&2
        exit 1
    fi
fi

mkdir -p "$OUT"
rm -rf "$OUT/bindings"
"$CPY" -q -d "$WIT" -w operator-world bindings "$OUT/bindings"

for pair in "${OPERATORS[@]}"; do
    module="${pair%%:*}"
    name="${pair##*:}"
    # Run from an empty directory so that only weirpy and operators/ end up in the component
    # (componentize-py also adds the current directory to the Python path).
    (cd "$OUT" && env -u VIRTUAL_ENV "$CPY" -q -d "$WIT" -w operator-world componentize "$module" \
        -p "$HERE/operators" -p "$HERE" -o "$OUT/$name.wasm.tmp")
    mv "$OUT/$name.wasm.tmp" "$OUT/$name.wasm"
    echo "built $OUT/$name.wasm ($(stat -c %s "$OUT/$name.wasm") bytes)"
done
