#!/usr/bin/env bash
# Builds every C operator of examples/c into examples/c/build/<name>.wasm (WebAssembly
# components of the world weir:operator/operator-world), with Zig's C toolchain.
#
# Tools (installed on first use when missing, under $WEIR_TOOLS, default /work/tools):
#   - zig, from the PyPI package `ziglang`, in a venv $WEIR_TOOLS/zig-venv
#   - wit-bindgen (C bindings) and wasm-tools, from crates.io, in $WEIR_TOOLS/cargo/bin
#   - the WASI preview1 -> preview2 reactor adapter, from the crates.io crate
#     wasi-preview1-component-adapter-provider 48.x (the wasmtime 48 the host runs)
# Set ZIG, WIT_BINDGEN, WASM_TOOLS or WASI_ADAPTER to use tools found elsewhere.
# Idempotent: running it again rebuilds into the same place.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
wit="$(cd "$here/../../wit" && pwd)"
out="$here/build"
tools="${WEIR_TOOLS:-/work/tools}"

WIT_BINDGEN_VERSION=0.46.0
WASM_TOOLS_VERSION=1.240.0
ZIGLANG_VERSION=0.17.1
ADAPTER_VERSION=48.0.8

die() { echo "build.sh: $*" >&2; exit 1; }

# --- zig ---
if [[ -z "${ZIG:-}" ]]; then
    if [[ ! -x "$tools/zig-venv/bin/python" ]] || ! "$tools/zig-venv/bin/python" -m ziglang version >/dev/null 2>&1; then
        command -v python3 >/dev/null || die "python3 is needed to install zig (PyPI package ziglang)"
        echo "installing zig (PyPI ziglang) into $tools/zig-venv" >&2
        python3 -m venv "$tools/zig-venv" || die "cannot create a venv at $tools/zig-venv"
        "$tools/zig-venv/bin/pip" install -q "ziglang==$ZIGLANG_VERSION" || "$tools/zig-venv/bin/pip" install -q ziglang \
            || die "cannot install the PyPI package ziglang"
    fi
    zig=("$tools/zig-venv/bin/python" -m ziglang)
else
    zig=("$ZIG")
fi

# --- wit-bindgen and wasm-tools ---
find_tool() { # binary crate version
    local bin=$1 crate=$2 version=$3
    if [[ -x "$tools/cargo/bin/$bin" ]]; then echo "$tools/cargo/bin/$bin"; return; fi
    command -v cargo >/dev/null || die "$bin is missing and cargo is not installed to build it"
    echo "installing $crate $version into $tools/cargo (cargo install)" >&2
    cargo install --locked --quiet --root "$tools/cargo" "$crate@$version" >&2 || die "cargo install $crate@$version failed"
    echo "$tools/cargo/bin/$bin"
}
wit_bindgen="${WIT_BINDGEN:-$(find_tool wit-bindgen wit-bindgen-cli "$WIT_BINDGEN_VERSION")}"
[[ -x "$wit_bindgen" ]] || die "wit-bindgen not found (at '$wit_bindgen')"
wasm_tools="${WASM_TOOLS:-$(find_tool wasm-tools wasm-tools "$WASM_TOOLS_VERSION")}"
[[ -x "$wasm_tools" ]] || die "wasm-tools not found (at '$wasm_tools')"

# --- the WASI reactor adapter ---
find_adapter() {
    local f
    for f in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/wasi-preview1-component-adapter-provider-"$ADAPTER_VERSION"/artefacts/wasi_snapshot_preview1.reactor.wasm; do
        [[ -f "$f" ]] && { echo "$f"; return 0; }
    done
    return 1
}
if [[ -z "${WASI_ADAPTER:-}" ]]; then
    if ! WASI_ADAPTER="$(find_adapter)"; then
        echo "fetching wasi-preview1-component-adapter-provider $ADAPTER_VERSION (crates.io)" >&2
        tmp="$(mktemp -d)"
        mkdir -p "$tmp/src" && : > "$tmp/src/lib.rs"
        cat > "$tmp/Cargo.toml" <<TOML
[package]
name = "adapter-fetch"
version = "0.0.0"
edition = "2021"
[dependencies]
wasi-preview1-component-adapter-provider = "=$ADAPTER_VERSION"
TOML
        (cd "$tmp" && cargo fetch --quiet) || die "cannot fetch wasi-preview1-component-adapter-provider"
        rm -rf "$tmp"
        WASI_ADAPTER="$(find_adapter)" || die "the reactor adapter is not in the fetched crate"
    fi
fi

# --- bindings ---
mkdir -p "$out/gen" "$out/obj"
"$wit_bindgen" c "$wit" --world operator-world --out-dir "$out/gen" >/dev/null 2>&1 || die "wit-bindgen failed"

cflags=(--target=wasm32-wasi -mexec-model=reactor -std=c11 -O2 -s -Wall -Wextra -Werror
        -Wno-unused-parameter -I "$here/common" -I "$out/gen")
common=("$here"/common/*.c "$out/gen/operator_world.c" "$out/gen/operator_world_component_type.o")

build() { # name source...
    local name=$1; shift
    "${zig[@]}" cc "${cflags[@]}" "$@" "${common[@]}" -o "$out/obj/$name.core.wasm" \
        || die "compiling $name failed"
    "$wasm_tools" component new "$out/obj/$name.core.wasm" \
        --adapt "wasi_snapshot_preview1=$WASI_ADAPTER" -o "$out/$name.wasm" \
        || die "making the component $name failed"
    "$wasm_tools" validate --features component-model "$out/$name.wasm" || die "$name.wasm does not validate"
    echo "built $out/$name.wasm ($(wc -c < "$out/$name.wasm") bytes)"
}

build wordcount "$here/wordcount/wordcount.c"
build nexmark-q1 "$here/nexmark-q1/q1.c"
