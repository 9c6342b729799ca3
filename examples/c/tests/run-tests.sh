#!/usr/bin/env bash
# Builds and runs the native unit tests of examples/c: the helpers of common/ (test_state.c),
# the q17 operator through its exports (test_q17.c, with common/defaults.c) and the dead
# letters of common/weir.c (test_dead_letter.c).
# Compiler: $CC if set, else the system cc with AddressSanitizer + UBSan when it has them,
# else zig cc (from $WEIR_TOOLS, default <repo>/target/tools) with UBSan only (Zig ships no
# ASan runtime). The q17 test needs the generated header: `weir-cbuild bindings`, with
# weir-cbuild obtained as build.sh does ($WEIR_CBUILD, else cargo builds the workspace binary
# into ${CARGO_TARGET_DIR:-<repo>/target}/debug). Prints "N passed, N failed".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
c="$here/.."
repo="$(cd "$here/../../.." && pwd)"
tools="${WEIR_TOOLS:-$repo/target/tools}"
if [[ -n "${WEIR_CBUILD:-}" ]]; then
    cbuild="$WEIR_CBUILD"
else
    command -v cargo >/dev/null || { echo "run-tests.sh: cargo is needed to build weir-cbuild (examples/c/cbuild)" >&2; exit 1; }
    cargo build --quiet --locked --manifest-path "$repo/Cargo.toml" -p weir-cbuild \
        || { echo "run-tests.sh: building weir-cbuild failed" >&2; exit 1; }
    cbuild="${CARGO_TARGET_DIR:-$repo/target}/debug/weir-cbuild"
fi
[[ -x "$cbuild" ]] || { echo "run-tests.sh: weir-cbuild not found (at '$cbuild')" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

probe() { printf 'int main(void){return 0;}\n' > "$out/probe.c"; "$@" "$out/probe.c" -o "$out/probe" >/dev/null 2>&1 && "$out/probe"; }
if [[ -n "${CC:-}" ]]; then
    cc=($CC); san=(-fsanitize=address,undefined)
    probe "${cc[@]}" "${san[@]}" || san=(-fsanitize=undefined)
elif command -v cc >/dev/null && probe cc -fsanitize=address,undefined; then
    cc=(cc); san=(-fsanitize=address,undefined)
else
    cc=("$tools/zig-venv/bin/python" -m ziglang cc); san=(-fsanitize=undefined)
fi
echo "compiler: ${cc[*]} ${san[*]}"
flags=(-std=c11 -O1 -g -Wall -Wextra -Wno-unused-parameter -fno-omit-frame-pointer -fno-sanitize-recover=all "${san[@]}")

"$cbuild" bindings "$repo/wit" operator-world "$out/gen" \
    || { echo "run-tests.sh: generating the C bindings failed" >&2; exit 1; }
sed -n '/^\/\/ Helper Functions$/,/^\/\/ Component Adapters$/p' "$out/gen/operator_world.c" > "$out/gen/generated_helpers.c"
[[ -s "$out/gen/generated_helpers.c" ]] || { echo "run-tests.sh: no helper functions in the generated bindings" >&2; exit 1; }

"${cc[@]}" "${flags[@]}" -I "$c/common" \
    "$here/test_state.c" "$c/common/keyed_state.c" "$c/common/msgpack.c" -o "$out/test_state"
"${cc[@]}" "${flags[@]}" -I "$c/common" -I "$out/gen" \
    "$here/test_q17.c" "$here/native_host.c" "$c/common/defaults.c" "$c/common/weir.c" \
    "$c/common/keyed_state.c" "$c/common/msgpack.c" -o "$out/test_q17"
"${cc[@]}" "${flags[@]}" -I "$c/common" -I "$out/gen" \
    "$here/test_dead_letter.c" "$here/native_host.c" "$c/common/weir.c" \
    "$c/common/keyed_state.c" "$c/common/msgpack.c" -o "$out/test_dead_letter"

status=0
state="$("$out/test_state")" || status=1
q17="$("$out/test_q17")" || status=1
dead="$("$out/test_dead_letter")" || status=1
echo "state: $state"
echo "$q17"
echo "$dead"
read -r p1 _ f1 _ <<<"$state"
read -r _ p2 _ f2 _ <<<"$q17"
read -r _ _ p3 _ f3 _ <<<"$dead"
echo "$((p1 + p2 + p3)) passed, $((f1 + f2 + f3)) failed"
exit $status
