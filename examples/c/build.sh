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
#   - wit-bindgen-cli 0.46.0 (feature c) and wasm-tools 1.240.0 (features component,validate):
#     cargo install --locked --root $WEIR_TOOLS/cargo
#   - the WASI preview1 reactor adapter of wasmtime 48 (crates.io crate
#     wasi-preview1-component-adapter-provider 48.0.8), copied to $WEIR_TOOLS/wasi-adapter/48.0.8/
# ZIG, WIT_BINDGEN, WASM_TOOLS, WASI_ADAPTER point to tools found elsewhere instead.
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

WIT_BINDGEN_VERSION=0.46.0
WASM_TOOLS_VERSION=1.240.0
ZIGLANG_VERSION=0.17.1
ADAPTER_VERSION=48.0.8

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

# --- wit-bindgen and wasm-tools ---
cargo_tool() { # binary crate version features
    local bin=$1 crate=$2 version=$3 features=$4 path="$tools/cargo/bin/$1"
    if [[ -x "$path" ]] && "$path" --version 2>/dev/null | grep -qF " $version"; then echo "$path"; return; fi
    command -v cargo >/dev/null || die "$bin $version is missing and cargo is not installed to build it"
    echo "installing $crate $version into $tools/cargo (cargo install; several minutes)" >&2
    local target
    target="$(mktemp -d "${TMPDIR:-/tmp}/weir-c-cargo-XXXXXX")"
    CARGO_TARGET_DIR="$target" cargo install --locked --quiet --force --root "$tools/cargo" \
        --no-default-features --features "$features" "$crate@$version" >&2 \
        || { rm -rf "$target"; die "cargo install $crate@$version failed"; }
    rm -rf "$target"
    echo "$path"
}
wit_bindgen="${WIT_BINDGEN:-$(cargo_tool wit-bindgen wit-bindgen-cli "$WIT_BINDGEN_VERSION" c)}"
[[ -x "$wit_bindgen" ]] || die "wit-bindgen not found (at '$wit_bindgen')"
wasm_tools="${WASM_TOOLS:-$(cargo_tool wasm-tools wasm-tools "$WASM_TOOLS_VERSION" component,validate)}"
[[ -x "$wasm_tools" ]] || die "wasm-tools not found (at '$wasm_tools')"

# --- the WASI reactor adapter ---
if [[ -z "${WASI_ADAPTER:-}" ]]; then
    WASI_ADAPTER="$tools/wasi-adapter/$ADAPTER_VERSION/wasi_snapshot_preview1.reactor.wasm"
    if [[ ! -f "$WASI_ADAPTER" ]]; then
        find_adapter() {
            local f
            for f in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/wasi-preview1-component-adapter-provider-"$ADAPTER_VERSION"/artefacts/wasi_snapshot_preview1.reactor.wasm; do
                [[ -f "$f" ]] && { echo "$f"; return 0; }
            done
            return 1
        }
        if ! found="$(find_adapter)"; then
            command -v cargo >/dev/null || die "the WASI reactor adapter is missing and cargo is not installed to fetch it"
            echo "fetching wasi-preview1-component-adapter-provider $ADAPTER_VERSION (crates.io)" >&2
            tmp="$(mktemp -d)"
            mkdir -p "$tmp/src" && : > "$tmp/src/lib.rs"
            printf '[package]\nname = "adapter-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nwasi-preview1-component-adapter-provider = "=%s"\n' \
                "$ADAPTER_VERSION" > "$tmp/Cargo.toml"
            (cd "$tmp" && cargo fetch --quiet) || { rm -rf "$tmp"; die "cannot fetch wasi-preview1-component-adapter-provider $ADAPTER_VERSION"; }
            rm -rf "$tmp"
            found="$(find_adapter)" || die "the reactor adapter is not in the fetched crate"
        fi
        mkdir -p "$(dirname "$WASI_ADAPTER")"
        cp "$found" "$WASI_ADAPTER.tmp" && mv "$WASI_ADAPTER.tmp" "$WASI_ADAPTER" || die "cannot copy the adapter to $WASI_ADAPTER"
    fi
fi
[[ -f "$WASI_ADAPTER" ]] || die "the WASI reactor adapter is not at '$WASI_ADAPTER'"

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
    local log
    log="$("$wit_bindgen" c "$1" --world operator-world --out-dir "$2" 2>&1)" \
        || { echo "$log" >&2; die "wit-bindgen c $1 failed"; }
}

# component <output.wasm> <gen-dir> <source>...: compiles and wraps one component.
component() {
    local wasm=$1 gen=$2 core
    shift 2
    core="$out/obj/$(basename "$(dirname "$wasm")")-$(basename "$wasm" .wasm).core.wasm"
    mkdir -p "$out/obj" "$(dirname "$wasm")"
    "${zig[@]}" cc "${cflags[@]}" -I "$gen" "$@" "$gen/operator_world.c" "$gen/operator_world_component_type.o" \
        -o "$core" || die "compiling $(basename "$wasm") failed"
    "$wasm_tools" component new "$core" --adapt "wasi_snapshot_preview1=$WASI_ADAPTER" -o "$wasm.tmp" \
        || die "making the component $(basename "$wasm") failed"
    "$wasm_tools" validate --features component-model "$wasm.tmp" || die "$(basename "$wasm") does not validate"
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
    for name in v0.1.0 incomplete foreign-import; do
        src="$here/tests/wrong-worlds/$name"
        # common/defaults.c only where the operator interface is 0.2.0's (its signatures).
        helpers=("$here/common/weir.c" "$here/common/keyed_state.c" "$here/common/msgpack.c")
        [[ $name == foreign-import ]] && helpers+=("$here/common/defaults.c")
        bindings "$worlds/$name" "$out/gen/wrong-worlds/$name"
        component "$out/wrong-worlds/$name.wasm" "$out/gen/wrong-worlds/$name" "$src"/*.c "${helpers[@]}"
    done
fi
