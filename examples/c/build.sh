#!/usr/bin/env bash
# Builds the C operators of examples/c into WebAssembly components of the world
# weir:operator/operator-world@0.2.0, with Zig's C toolchain.
#
#   examples/c/build.sh [--tools-only] [--with-test-fixtures]
#
# Components: $WEIR_BUILD_DIR/{wordcount,nexmark-q1,nexmark-q17}.wasm
#   (WEIR_BUILD_DIR defaults to examples/c/build). Generated bindings and objects go to
#   $WEIR_BUILD_DIR/gen and $WEIR_BUILD_DIR/obj.
# --with-test-fixtures: also $WEIR_BUILD_DIR/wrong-worlds/{v0.1.0,incomplete,foreign-import}.wasm,
#   built from tests/wrong-worlds/<name>/ against engine/test-guests/worlds/<name>/: valid
#   components that Weir's upload check must refuse.
# --tools-only: install the missing tools and exit.
#
# Tools, installed when missing (pinned versions) under $WEIR_TOOLS (default <repo>/target/tools):
#   - zig: PyPI ziglang 0.17.1 in the venv $WEIR_TOOLS/zig-venv
#   - weir-cbuild (examples/c/cbuild, a workspace binary: cargo builds it into the target dir):
#     wit-bindgen 0.63's C bindings, and the component wrapper with wasmtime 48's WASI
#     preview1 reactor adapter, on the wit-component the workspace already locks
# ZIG and WEIR_CBUILD point to tools found elsewhere instead.
# Idempotent; works from any directory; prints one line per built component.
set -euo pipefail

die() { echo "build.sh: error: $*" >&2; exit 1; }

tools_only=0 fixtures=0
for arg in "$@"; do
    case "$arg" in
        --tools-only) tools_only=1 ;;
        --with-test-fixtures) fixtures=1 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$arg' (usage: build.sh [--tools-only] [--with-test-fixtures])" ;;
    esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tools="${WEIR_TOOLS:-$repo/target/tools}"
mkdir -p "$tools" || die "cannot create the tools directory $tools"
tools="$(cd "$tools" && pwd)"

ZIGLANG_VERSION=0.17.1

# --- zig ---
if [[ -n "${ZIG:-}" ]]; then
    zig=("$ZIG")
else
    venv="$tools/zig-venv"
    if [[ "$("$venv/bin/python" -m ziglang version 2>/dev/null)" != "$ZIGLANG_VERSION" ]]; then
        command -v python3 >/dev/null || die "python3 is needed to install zig (PyPI package ziglang)"
        echo "installing zig (PyPI ziglang $ZIGLANG_VERSION) into $venv" >&2
        [[ -x "$venv/bin/pip" ]] || python3 -m venv "$venv" || die "cannot create a venv at $venv"
        "$venv/bin/pip" install -q "ziglang==$ZIGLANG_VERSION" || die "cannot install ziglang==$ZIGLANG_VERSION from PyPI"
    fi
    zig=("$venv/bin/python" -m ziglang)
fi

# --- weir-cbuild: wit-bindgen's C bindings and the component wrapper (examples/c/cbuild) ---
if [[ -n "${WEIR_CBUILD:-}" ]]; then
    cbuild="$WEIR_CBUILD"
else
    command -v cargo >/dev/null || die "cargo is needed to build weir-cbuild (examples/c/cbuild)"
    cargo build --quiet --locked --manifest-path "$repo/Cargo.toml" -p weir-cbuild \
        || die "building weir-cbuild failed"
    cbuild="${CARGO_TARGET_DIR:-$repo/target}/debug/weir-cbuild"
fi
[[ -x "$cbuild" ]] || die "weir-cbuild not found (at '$cbuild')"

[[ $tools_only == 1 ]] && exit 0

# --- build ---
out="${WEIR_BUILD_DIR:-$here/build}"
mkdir -p "$out" || die "cannot create the build directory $out"
out="$(cd "$out" && pwd)"

cflags=(--target=wasm32-wasi -mexec-model=reactor -std=c11 -O2 -s -Wall -Wextra -Werror
        -Wno-unused-parameter -I "$here/common")

# bindings <wit-dir> <gen-dir>: generates the C bindings of the world operator-world.
bindings() {
    rm -rf "$2" && mkdir -p "$2"
    "$cbuild" bindings "$1" operator-world "$2" || die "generating the C bindings of $1 failed"
}

# component <output.wasm> <gen-dir> <source>...: compiles and wraps one component.
component() {
    local wasm=$1 gen=$2 core
    shift 2
    core="$out/obj/$(basename "$(dirname "$wasm")")-$(basename "$wasm" .wasm).core.wasm"
    mkdir -p "$out/obj" "$(dirname "$wasm")"
    "${zig[@]}" cc "${cflags[@]}" -I "$gen" "$@" "$gen/operator_world.c" "$gen/operator_world_component_type.o" \
        -o "$core" || die "compiling $(basename "$wasm") failed"
    "$cbuild" component "$core" "$wasm.tmp" || die "making the component $(basename "$wasm") failed"
    mv "$wasm.tmp" "$wasm"
    echo "built $wasm ($(wc -c < "$wasm") bytes)"
}

common=("$here/common/defaults.c" "$here/common/weir.c" "$here/common/keyed_state.c" "$here/common/msgpack.c")
bindings "$repo/wit" "$out/gen/operator-world"
component "$out/wordcount.wasm" "$out/gen/operator-world" "$here/wordcount/wordcount.c" "${common[@]}"
component "$out/nexmark-q1.wasm" "$out/gen/operator-world" "$here/nexmark-q1/q1.c" "${common[@]}"
component "$out/nexmark-q17.wasm" "$out/gen/operator-world" "$here/nexmark-q17/q17.c" "${common[@]}"

if [[ $fixtures == 1 ]]; then
    worlds="$repo/engine/test-guests/worlds"
    [[ -d "$worlds" ]] || die "the test worlds are not at $worlds"
    # Their worlds have no side-output import: common/weir.c leaves out the dead letters.
    cflags+=(-DWEIR_NO_SIDE_OUTPUT)
    for name in v0.1.0 incomplete foreign-import; do
        src="$here/tests/wrong-worlds/$name"
        # common/defaults.c only where the operator interface is 0.2.0's (its signatures).
        helpers=("$here/common/weir.c" "$here/common/keyed_state.c" "$here/common/msgpack.c")
        [[ $name == foreign-import ]] && helpers+=("$here/common/defaults.c")
        bindings "$worlds/$name" "$out/gen/wrong-worlds/$name"
        component "$out/wrong-worlds/$name.wasm" "$out/gen/wrong-worlds/$name" "$src"/*.c "${helpers[@]}"
    done
fi
