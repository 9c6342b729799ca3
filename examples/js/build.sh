#!/usr/bin/env bash
# Builds the JavaScript operators into WebAssembly components of the world
# weir:operator/operator-world (componentize-js).
#
# Usage: examples/js/build.sh [--tools-only] [--with-test-fixtures]
#   --tools-only          install the tools if missing (npm ci from package-lock.json into
#                         examples/js/node_modules) and exit
#   --with-test-fixtures  also build the components Weir must refuse, into
#                         $WEIR_BUILD_DIR/wrong-worlds/{v0.1.0,incomplete,foreign-import}.wasm
# Environment:
#   WEIR_BUILD_DIR  output directory (default examples/js/build): wordcount.wasm,
#                   nexmark-q1.wasm, nexmark-q17.wasm
#   WEIR_TOOLS      the shared tools dir (default <repo>/target/tools); JavaScript installs
#                   nothing there: its tools are npm packages, kept in examples/js/node_modules
# Idempotent; works from any directory; prints one line per built component.
set -euo pipefail

usage() { sed -n '5,14p' "$0" | sed 's/^# \{0,1\}//' >&2; }
tools_only=0
fixtures=0
for arg in "$@"; do
  case "$arg" in
    --tools-only) tools_only=1 ;;
    --with-test-fixtures) fixtures=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument: $arg" >&2; usage; exit 2 ;;
  esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build_dir=${WEIR_BUILD_DIR:-$here/build}
case "$build_dir" in /*) ;; *) build_dir="$PWD/$build_dir" ;; esac
cd "$here"

fail() { echo "build.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
  || fail "node and npm are needed (Node.js 20 or newer); install Node.js first"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || fail "Node $(node --version) is too old; componentize-js needs Node 18 or newer"

# The tools: devDependencies pinned by package-lock.json (componentize-js, jco,
# preview2-shim). npm ci again when node_modules is missing or older than the lock file.
if [ ! -f node_modules/@bytecodealliance/componentize-js/package.json ] \
   || [ ! -f node_modules/.package-lock.json ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "build.sh: installing componentize-js and jco (npm ci into $here/node_modules)..." >&2
  npm ci --no-audit --no-fund >&2 || fail "npm ci failed (is the npm registry reachable?)"
fi
[ "$tools_only" = 1 ] && exit 0

args=(--out "$build_dir")
[ "$fixtures" = 1 ] && args+=(--with-test-fixtures)
node build.mjs "${args[@]}" || fail "building the components failed"
