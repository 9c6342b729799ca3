#!/usr/bin/env bash
# Builds and runs the native unit tests of the C helpers (with zig cc, or $CC).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tools="${WEIR_TOOLS:-/work/tools}"
cc=(${CC:-"$tools/zig-venv/bin/python" -m ziglang cc})
out="$(mktemp -d)"
"${cc[@]}" -std=c11 -O1 -g -Wall -Wextra -fsanitize=undefined -I "$here/../common" \
    "$here/test_state.c" "$here/../common/keyed_state.c" "$here/../common/msgpack.c" -o "$out/test_state"
"$out/test_state"
rm -rf "$out"
