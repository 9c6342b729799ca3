#!/usr/bin/env bash
# Builds the Python operators of this directory into WebAssembly components with
# componentize-py.
#
#   examples/python/build.sh [--tools-only] [--with-test-fixtures] [COMPONENT...]
#
#   --tools-only          install the missing tools and exit
#   --with-test-fixtures  also build the components Weir must refuse, into
#                         $WEIR_BUILD_DIR/wrong-worlds/{v0.1.0,incomplete,foreign-import}.wasm,
#                         and the hostile suite's operators, $WEIR_BUILD_DIR/hostile/pickle-bomb.wasm
#   COMPONENT...          build only these components (e.g. window-count join-pairs);
#                         default: every one
#
# Environment:
#   WEIR_TOOLS      tools dir (default <repo>/target/tools); componentize-py goes into the
#                   venv $WEIR_TOOLS/py-venv, created when missing
#   WEIR_BUILD_DIR  output dir (default examples/python/build): wordcount.wasm,
#                   nexmark-q1.wasm, nexmark-q17.wasm, window-count.wasm, join-pairs.wasm,
#                   nexmark-q1-records.wasm (q1 on the per-record API), counter-host.wasm
#                   (a keyed counter on host state) and bindings/ (the Python bindings of the
#                   WIT world, for the unit tests)
#   PYTHON          the interpreter that creates the venv (default python3.11, else python3;
#                   3.10 or newer)
#
# Installs only what is missing (componentize-py pinned to 0.25.1), rebuilds every component
# each run (idempotent) and prints one line per component. Works from any current directory.
set -euo pipefail

die() {
    echo "build.sh (python): error: $*" >&2
    exit 1
}

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
WIT="$REPO/wit"
WORLDS="$REPO/engine/test-guests/worlds"
COMPONENTIZE_PY_VERSION="0.25.1"
# module in operators/ -> component name
OPERATORS=(wordcount:wordcount nexmark_q1:nexmark-q1 nexmark_q17:nexmark-q17
           window_count:window-count join_pairs:join-pairs
           nexmark_q1_records:nexmark-q1-records counter_host:counter-host)
# The operators' world: the operator interface plus the encoded-batches fast path.
WORLD=encoded-operator-world
# wrong-world fixtures: tests/wrong-worlds/<world>/<module>.py against $WORLDS/<world>
FIXTURES=(v0.1.0:wordcount_v0_1_0 incomplete:passthrough foreign-import:passthrough)
HOSTILE=(pickle_bomb)

TOOLS_ONLY=0
WITH_FIXTURES=0
ONLY=()
for arg in "$@"; do
    case "$arg" in
        --tools-only) TOOLS_ONLY=1 ;;
        --with-test-fixtures) WITH_FIXTURES=1 ;;
        -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown argument '$arg' (usage: build.sh [--tools-only] [--with-test-fixtures] [COMPONENT...])" ;;
        *)
            known=0
            for pair in "${OPERATORS[@]}"; do
                [ "${pair##*:}" = "$arg" ] && known=1
            done
            [ "$known" = 1 ] || die "unknown component '$arg' (one of: ${OPERATORS[*]##*:})"
            ONLY+=("$arg")
            ;;
    esac
done

abspath() {
    case "$1" in
        /*) echo "$1" ;;
        *) echo "$PWD/$1" ;;
    esac
}
TOOLS="$(abspath "${WEIR_TOOLS:-$REPO/target/tools}")"
OUT="$(abspath "${WEIR_BUILD_DIR:-$HERE/build}")"
VENV="$TOOLS/py-venv"
CPY="$VENV/bin/componentize-py"

# --- tools -------------------------------------------------------------------------------
installed_version() {
    [ -x "$CPY" ] && "$CPY" --version 2>/dev/null | awk '{print $2}'
}
if [ "$(installed_version || true)" != "$COMPONENTIZE_PY_VERSION" ]; then
    if [ ! -x "$VENV/bin/python" ]; then
        if [ -n "${PYTHON:-}" ]; then
            PY="$PYTHON"
        elif command -v python3.11 >/dev/null 2>&1; then
            PY=python3.11
        else
            PY=python3
        fi
        command -v "$PY" >/dev/null 2>&1 || die "$PY is needed to create the venv $VENV (set PYTHON=...)"
        "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
            || die "$PY is older than 3.10 (set PYTHON=... to a newer one)"
        echo "creating the venv $VENV with $PY" >&2
        mkdir -p "$TOOLS"
        "$PY" -m venv "$VENV" || die "cannot create the venv $VENV (on Debian: apt-get install python3-venv)"
    fi
    echo "installing componentize-py==$COMPONENTIZE_PY_VERSION into $VENV" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "componentize-py==$COMPONENTIZE_PY_VERSION" \
        || die "cannot install componentize-py==$COMPONENTIZE_PY_VERSION into $VENV"
    [ "$(installed_version || true)" = "$COMPONENTIZE_PY_VERSION" ] \
        || die "componentize-py $COMPONENTIZE_PY_VERSION is not runnable from $CPY after installing it"
fi
if [ "$TOOLS_ONLY" = 1 ]; then
    exit 0
fi

# --- build -------------------------------------------------------------------------------
mkdir -p "$OUT" || die "cannot create the output dir $OUT"
# componentize-py bundles every directory on its Python path and adds the current directory
# to it: build from an empty directory, with a staged source dir holding only weirpy and the
# operator modules (not build/, tests/ or the job files).
STAGE="$(mktemp -d "${TMPDIR:-/tmp}/weir-py-build.XXXXXX")" || die "cannot create a temporary dir"
trap 'rm -rf "$STAGE"' EXIT
mkdir "$STAGE/empty" "$STAGE/src"
cp -r "$HERE/weirpy" "$STAGE/src/weirpy"
cp "$HERE"/operators/*.py "$STAGE/src/"
rm "$STAGE/src/weirpy/testing.py"   # the simulated host of the unit tests
find "$STAGE/src" -name __pycache__ -prune -exec rm -rf {} +

rm -rf "$OUT/bindings"
"$CPY" -q -d "$WIT" -w "$WORLD" bindings "$OUT/bindings" \
    || die "componentize-py could not generate the bindings of $WIT"

# componentize <wit dir> <world> <module> <python path> <output .wasm>
componentize() {
    local wit="$1" world="$2" module="$3" path="$4" wasm="$5"
    rm -f "$wasm.tmp"
    if ! (cd "$STAGE/empty" && env -u VIRTUAL_ENV "$CPY" -q -d "$wit" -w "$world" \
            componentize "$module" -p "$path" -o "$wasm.tmp"); then
        rm -f "$wasm.tmp"
        die "componentize-py failed to build $wasm from $module.py"
    fi
    mv "$wasm.tmp" "$wasm"
    echo "built $wasm ($(stat -c %s "$wasm") bytes)"
}

for pair in "${OPERATORS[@]}"; do
    name="${pair##*:}"
    if [ "${#ONLY[@]}" -gt 0 ] && [[ " ${ONLY[*]} " != *" $name "* ]]; then
        continue
    fi
    componentize "$WIT" "$WORLD" "${pair%%:*}" "$STAGE/src" "$OUT/$name.wasm"
done

if [ "$WITH_FIXTURES" = 1 ]; then
    # Hostile operators of the contract's own world (the hostile-tenant suite's).
    mkdir -p "$OUT/hostile"
    for module in "${HOSTILE[@]}"; do
        src="$STAGE/hostile-$module"
        mkdir "$src"
        cp -r "$STAGE/src/weirpy" "$src/weirpy"
        cp "$HERE/tests/hostile/$module.py" "$src/" || die "missing fixture source tests/hostile/$module.py"
        componentize "$WIT" "$WORLD" "$module" "$src" "$OUT/hostile/${module//_/-}.wasm"
    done
    mkdir -p "$OUT/wrong-worlds"
    for pair in "${FIXTURES[@]}"; do
        world="${pair%%:*}"
        module="${pair##*:}"
        [ -d "$WORLDS/$world" ] || die "missing WIT dir $WORLDS/$world"
        src="$STAGE/fixture-$world"
        mkdir "$src"
        cp -r "$HERE/weirpy" "$src/weirpy"
        cp "$HERE/tests/wrong-worlds/$world/$module.py" "$src/" || die "missing fixture source tests/wrong-worlds/$world/$module.py"
        find "$src" -name __pycache__ -prune -exec rm -rf {} +
        componentize "$WORLDS/$world" operator-world "$module" "$src" "$OUT/wrong-worlds/$world.wasm"
    done
fi
