#!/usr/bin/env bash
# Builds every JavaScript operator of this directory into build/<name>.wasm (WebAssembly
# components of the world weir:operator/operator-world, built by componentize-js).
# Idempotent: installs the tools (npm ci, from package-lock.json) when they are missing.
# Usage: examples/js/build.sh [operator-name...]   (names: wordcount nexmark-q1; default all)
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "build.sh: node and npm are needed (Node 20 or newer); install Node.js first" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "build.sh: Node $(node --version) is too old; componentize-js needs Node 18 or newer" >&2
  exit 1
fi
if [ ! -d node_modules/@bytecodealliance/componentize-js ]; then
  echo "build.sh: installing componentize-js and jco (npm ci)..." >&2
  npm ci --no-audit --no-fund >&2
fi
node build.mjs "$@"
