#!/usr/bin/env bash
# End-to-end checks of the JavaScript operators against the Rust ones, with `weir run`.
# Usage: examples/js/test/e2e.sh [path/to/weir]   (default: $WEIR or `weir` on PATH)
# Builds the components first (build.sh). Writes everything under a temp dir (kept; printed).
#  1. word count, tokenizer parallelism 1, count parallelism 2: output identical (per word,
#     the sequence of totals, timestamps included);
#  2. word count, tokenizer and count parallelism 2: same final totals, no duplicated total
#     (batching differs between any two runs there, Rust against Rust too);
#  3. word count with checkpoints every second, killed with SIGKILL mid-way and rerun: same
#     final totals as the Rust run, no duplicated total;
#  4. Nexmark q1: output identical (sorted lines);
#  5. Nexmark q17 (source x1, 50 000 bids, q17 x2): output identical (sorted lines);
#  6. Nexmark q17 with checkpoints every second, killed with SIGKILL mid-way and rerun: same
#     final row for every auction as the Rust run, no duplicated row;
#  7. the three wrong-world components are refused, each with the expected message.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${WEIR_BUILD_DIR:-$here/build}
weir=${1:-${WEIR:-weir}}
command -v "$weir" >/dev/null 2>&1 || { echo "e2e.sh: no weir binary ($weir); pass its path" >&2; exit 1; }
"$here/build.sh" --with-test-fixtures
tmp=$(mktemp -d /tmp/weir-js-e2e.XXXXXX)
echo "e2e.sh: working in $tmp"
compare() { node "$here/test/compare.mjs" "$@"; }

wordcount_job() { # name module split-parallelism lines vocabulary interval
  local settings=""
  [ "$6" != none ] && settings="\"settings\": { \"checkpoint\": { \"interval_ms\": $6 } },"
  cat > "$tmp/$1.job.json" <<JOB
{
  "name": "$1", $settings
  "nodes": [
    { "id": "lines", "kind": "source", "connector": "generator",
      "config": { "mode": "words", "lines": $4, "words_per_line": 8, "vocabulary": $5, "seed": 7 } },
    { "id": "split", "kind": "operator", "module": "builtin:tokenizer", "parallelism": $3 },
    { "id": "count", "kind": "operator", "module": "$2", "parallelism": 2 },
    { "id": "out", "kind": "sink", "connector": "file", "config": { "path": "$tmp/$1-out" } }
  ],
  "edges": [
    { "from": "lines", "to": "split", "partitioning": "rebalance" },
    { "from": "split", "to": "count", "partitioning": "hash" },
    { "from": "count", "to": "out", "partitioning": "rebalance" }
  ]
}
JOB
}
run() { "$weir" --data-dir "$tmp/data" run "$tmp/$1.job.json" > "$tmp/$1.log" 2>&1; tail -1 "$tmp/$1.log"; }

js_wc="$build/wordcount.wasm"
echo "== 1. word count, tokenizer x1, count x2: identical output"
wordcount_job wc1-rust builtin:wordcount 1 20000 500 none
wordcount_job wc1-js "$js_wc" 1 20000 500 none
run wc1-rust; run wc1-js   # the first JS run also compiles the component (~30 s), cached in data/
compare "$tmp/wc1-rust-out" "$tmp/wc1-js-out" --per-key

echo "== 2. word count, tokenizer x2, count x2: same final totals"
wordcount_job wc2-rust builtin:wordcount 2 20000 500 none
wordcount_job wc2-js "$js_wc" 2 20000 500 none
run wc2-rust; run wc2-js
compare "$tmp/wc2-rust-out" "$tmp/wc2-js-out" --final

echo "== 3. word count killed (SIGKILL) mid-way and rerun"
wordcount_job wc3-rust builtin:wordcount 2 200000 5000 1000
wordcount_job wc3-js "$js_wc" 2 200000 5000 1000
run wc3-rust
timeout -s KILL "${KILL_AFTER:-12}" "$weir" --data-dir "$tmp/data" run "$tmp/wc3-js.job.json" > "$tmp/wc3-js-killed.log" 2>&1 || true
echo "killed after ${KILL_AFTER:-12} s: $(grep -c 'checkpoint completed' "$tmp/wc3-js-killed.log" || true) checkpoint log lines, $(ls "$tmp/wc3-js-out" 2>/dev/null | wc -l) committed part files"
run wc3-js
compare "$tmp/wc3-rust-out" "$tmp/wc3-js-out" --final

echo "== 4. Nexmark q1: identical output"
for v in rust js; do
  mod=builtin:nexmark-q1; [ $v = js ] && mod="$build/nexmark-q1.wasm"
  cat > "$tmp/q1-$v.job.json" <<JOB
{
  "name": "q1-$v",
  "nodes": [
    { "id": "bids", "kind": "source", "connector": "nexmark", "parallelism": 2,
      "config": { "event_type": "bid", "count": 100000 } },
    { "id": "q1", "kind": "operator", "module": "$mod", "parallelism": 2 },
    { "id": "out", "kind": "sink", "connector": "file", "config": { "path": "$tmp/q1-$v-out" } }
  ],
  "edges": [
    { "from": "bids", "to": "q1", "partitioning": "forward" },
    { "from": "q1", "to": "out", "partitioning": "rebalance" }
  ]
}
JOB
  run q1-$v
done
compare "$tmp/q1-rust-out" "$tmp/q1-js-out"

q17_job() { # name module bids interval records-per-second
  local settings="" pace=""
  [ "$4" != none ] && settings="\"settings\": { \"checkpoint\": { \"interval_ms\": $4 } },"
  [ "$5" != none ] && pace=", \"records_per_second\": $5"
  cat > "$tmp/$1.job.json" <<JOB
{
  "name": "$1", $settings
  "nodes": [
    { "id": "bids", "kind": "source", "connector": "nexmark", "parallelism": 1,
      "config": { "event_type": "bid", "count": $3, "key": "auction"$pace } },
    { "id": "q17", "kind": "operator", "module": "$2", "parallelism": 2 },
    { "id": "out", "kind": "sink", "connector": "file", "config": { "path": "$tmp/$1-out" } }
  ],
  "edges": [
    { "from": "bids", "to": "q17", "partitioning": "hash" },
    { "from": "q17", "to": "out", "partitioning": "rebalance" }
  ]
}
JOB
}
js_q17="$build/nexmark-q17.wasm"
echo "== 5. Nexmark q17: identical output"
q17_job q17-rust builtin:nexmark-q17 50000 none none
q17_job q17-js "$js_q17" 50000 none none
run q17-rust; run q17-js
compare "$tmp/q17-rust-out" "$tmp/q17-js-out"

echo "== 6. Nexmark q17 killed (SIGKILL) mid-way and rerun"
q17_job q17k-rust builtin:nexmark-q17 200000 1000 none
q17_job q17k-js "$js_q17" 200000 1000 20000
run q17k-rust
timeout -s KILL "${KILL_AFTER_Q17:-6}" "$weir" --data-dir "$tmp/data" run "$tmp/q17k-js.job.json" > "$tmp/q17k-js-killed.log" 2>&1 || true
echo "killed after ${KILL_AFTER_Q17:-6} s: $(ls "$tmp/q17k-js-out" 2>/dev/null | wc -l) committed part files, $(cat "$tmp"/q17k-js-out/part-* 2>/dev/null | wc -l) records"
run q17k-js
compare "$tmp/q17k-rust-out" "$tmp/q17k-js-out" --final-by=total_bids

echo "== 7. wrong worlds are refused"
refused() { # fixture expected-text
  cat > "$tmp/ww-$1.job.json" <<JOB
{
  "name": "ww-$1",
  "nodes": [
    { "id": "lines", "kind": "source", "connector": "generator", "config": { "mode": "words", "lines": 10 } },
    { "id": "op", "kind": "operator", "module": "$build/wrong-worlds/$1.wasm" },
    { "id": "out", "kind": "sink", "connector": "blackhole" }
  ],
  "edges": [
    { "from": "lines", "to": "op", "partitioning": "rebalance" },
    { "from": "op", "to": "out", "partitioning": "rebalance" }
  ]
}
JOB
  if "$weir" --data-dir "$tmp/data" run "$tmp/ww-$1.job.json" > "$tmp/ww-$1.log" 2>&1; then
    echo "$1: weir ran it (expected a refusal)"; return 1
  fi
  grep -F -- "$2" "$tmp/ww-$1.log" >/dev/null || { echo "$1: refused, but without \"$2\":"; cat "$tmp/ww-$1.log"; return 1; }
  echo "$1: refused: $(grep -F -- "$2" "$tmp/ww-$1.log" | head -1)"
}
refused v0.1.0 'does not export `weir:operator/operator@0.2.0`'
refused incomplete 'snapshot'
refused foreign-import 'imports `weir:operator/cache@0.2.0`, which Weir does not provide'
echo "e2e.sh: all checks passed"
