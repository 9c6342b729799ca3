#!/usr/bin/env bash
# End-to-end checks of the C operators against the Rust ones, with a built `weir` binary
# ($WEIR, default: weir on PATH, else /tmp/weir-lang2/weir). Builds first (build.sh
# --with-test-fixtures, into $WEIR_BUILD_DIR). Prints "N passed, N failed".
#  1. word count (tokenizer builtin, count = C, parallelism 2): the sorted output equals the
#     Rust word count's (tokenizer parallelism 1, so that batch arrival order is fixed);
#  2. a checkpointed, paced run killed with SIGKILL mid-way and run again: final totals equal
#     the Rust ones, every word's totals strictly increase (none duplicated);
#  3. Nexmark q1: the sorted output equals the Rust q1's;
#  4. Nexmark q17 (source parallelism 1, 50,000 bids keyed by auction, hash edge, q17
#     parallelism 2): the sorted output equals the Rust q17's;
#  5. q17 checkpointed, paced, killed with SIGKILL mid-way and run again: every auction's
#     final row equals the Rust one, and its total_bids run 1..n exactly once (no duplicate,
#     no gap);
#  6. the three wrong-world components are refused by `weir run` with the expected message.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
weir="${WEIR:-$(command -v weir || echo /tmp/weir-lang2/weir)}"
[[ -x "$weir" ]] || { echo "check.sh: no weir binary (set WEIR)" >&2; exit 1; }
"$here/build.sh" --with-test-fixtures || exit 1
build="$(cd "${WEIR_BUILD_DIR:-$here/build}" && pwd)"
tmp="$(mktemp -d)"
pass=0 fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
ko() { echo "FAILED: $*"; fail=$((fail + 1)); }

job() { # src-job out-job module-node module out-path extra-python
    python3 - "$@" <<'PY'
import json, sys
src, dst, node, module, out, extra = sys.argv[1:7]
j = json.load(open(src))
for n in j['nodes']:
    if n['id'] == node: n['module'] = module
    if n.get('module') == 'builtin:tokenizer': n['parallelism'] = 1
    if n['kind'] == 'sink': n['config']['path'] = out
exec(extra)
json.dump(j, open(dst, 'w'))
PY
}
totals() { # out-dir mode(final|exact) ref-dir
    python3 - "$@" <<'PY'
import json, glob, sys, collections
def load(d):
    s = collections.defaultdict(list)
    for f in sorted(glob.glob(d + '/part-*')):
        for l in open(f):
            r = json.loads(l); s[r['key']].append(r['value'])
    return s
out, mode, ref = load(sys.argv[1]), sys.argv[2], load(sys.argv[3])
bad = [k for k in ref if not out.get(k) or out[k][-1] != ref[k][-1]
       or any(a >= b for a, b in zip(out[k], out[k][1:]))]
print(len(ref), 'words,', len(bad), 'wrong'); sys.exit(1 if bad or set(out) != set(ref) else 0)
PY
}

wc="$here/../wordcount/wordcount.job.json"
job "$wc" "$tmp/wc-rust.json" count builtin:wordcount "$tmp/wc-rust" ""
job "$wc" "$tmp/wc-c.json" count "$build/wordcount.wasm" "$tmp/wc-c" ""
"$weir" --data-dir "$tmp/d-rust" run "$tmp/wc-rust.json" > "$tmp/wc-rust.log" 2>&1
"$weir" --data-dir "$tmp/d-c" run "$tmp/wc-c.json" > "$tmp/wc-c.log" 2>&1
if [[ -n "$(cat "$tmp"/wc-c/part-* 2>/dev/null)" ]] && diff -q <(sort "$tmp"/wc-rust/part-*) <(sort "$tmp"/wc-c/part-*) >/dev/null; then
    ok "word count: $(cat "$tmp"/wc-c/part-* | wc -l) records, identical to the Rust word count"
else ko "word count differs from the Rust one (see $tmp)"; fi

job "$wc" "$tmp/crash.json" count "$build/wordcount.wasm" "$tmp/crash" \
    "j['name'] = 'wordcount-c-crash'; j['nodes'][0]['config']['records_per_second'] = 2500; j['settings'] = {'checkpoint': {'interval_ms': 300}}"
"$weir" --data-dir "$tmp/d-crash" run "$tmp/crash.json" > "$tmp/crash1.log" 2>&1 &
pid=$!
sleep 4.5
kill -9 "$pid"; wait "$pid" 2>/dev/null
"$weir" --data-dir "$tmp/d-crash" run "$tmp/crash.json" > "$tmp/crash2.log" 2>&1
if grep -q "restored from checkpoint" "$tmp/crash2.log" && totals "$tmp/crash" final "$tmp/wc-rust"; then
    ok "SIGKILL and rerun: $(grep -o 'restored from checkpoint [0-9]*' "$tmp/crash2.log"), final totals equal, none duplicated"
else ko "SIGKILL and rerun (see $tmp)"; fi

q1="$here/../nexmark-q1/q1.job.json"
job "$q1" "$tmp/q1-rust.json" q1 builtin:nexmark-q1 "$tmp/q1-rust" ""
job "$q1" "$tmp/q1-c.json" q1 "$build/nexmark-q1.wasm" "$tmp/q1-c" ""
"$weir" --data-dir "$tmp/d-q1r" run "$tmp/q1-rust.json" > "$tmp/q1-rust.log" 2>&1
"$weir" --data-dir "$tmp/d-q1c" run "$tmp/q1-c.json" > "$tmp/q1-c.log" 2>&1
if [[ -n "$(cat "$tmp"/q1-c/part-* 2>/dev/null)" ]] && diff -q <(sort "$tmp"/q1-rust/part-*) <(sort "$tmp"/q1-c/part-*) >/dev/null; then
    ok "Nexmark q1: $(cat "$tmp"/q1-c/part-* | wc -l) records, identical to the Rust q1"
else ko "Nexmark q1 differs from the Rust one (see $tmp)"; fi

q17="$here/nexmark-q17/q17.job.json"
job "$q17" "$tmp/q17-rust.json" q17 builtin:nexmark-q17 "$tmp/q17-rust" ""
job "$q17" "$tmp/q17-c.json" q17 "$build/nexmark-q17.wasm" "$tmp/q17-c" ""
"$weir" --data-dir "$tmp/d-q17r" run "$tmp/q17-rust.json" > "$tmp/q17-rust.log" 2>&1
"$weir" --data-dir "$tmp/d-q17c" run "$tmp/q17-c.json" > "$tmp/q17-c.log" 2>&1
if [[ -n "$(cat "$tmp"/q17-c/part-* 2>/dev/null)" ]] && diff -q <(sort "$tmp"/q17-rust/part-*) <(sort "$tmp"/q17-c/part-*) >/dev/null; then
    ok "Nexmark q17: $(cat "$tmp"/q17-c/part-* | wc -l) records, identical to the Rust q17"
else ko "Nexmark q17 differs from the Rust one (see $tmp)"; fi

job "$q17" "$tmp/q17-crash.json" q17 "$build/nexmark-q17.wasm" "$tmp/q17-crash" \
    "j['name'] = 'q17-c-crash'; j['nodes'][0]['config']['records_per_second'] = 5000; j['settings'] = {'checkpoint': {'interval_ms': 300}}"
"$weir" --data-dir "$tmp/d-q17crash" run "$tmp/q17-crash.json" > "$tmp/q17-crash1.log" 2>&1 &
pid=$!
sleep 4.5
kill -9 "$pid"; wait "$pid" 2>/dev/null
"$weir" --data-dir "$tmp/d-q17crash" run "$tmp/q17-crash.json" > "$tmp/q17-crash2.log" 2>&1
auctions() { # out-dir ref-dir
    python3 - "$@" <<'PY'
import json, glob, sys, collections
def load(d):
    s = collections.defaultdict(list)
    for f in sorted(glob.glob(d + '/part-*')):
        for l in open(f):
            r = json.loads(l); s[json.dumps(r['key'])].append(r['value'])
    return s
out, ref = load(sys.argv[1]), load(sys.argv[2])
final = lambda rows: max(rows, key=lambda v: v['total_bids'])
bad = [k for k in ref if k not in out or final(out[k]) != final(ref[k])
       or sorted(v['total_bids'] for v in out[k]) != list(range(1, len(out[k]) + 1))]
print(len(ref), 'auctions,', sum(map(len, out.values())), 'rows,', len(bad), 'wrong')
sys.exit(1 if bad or set(out) != set(ref) else 0)
PY
}
if grep -q "restored from checkpoint" "$tmp/q17-crash2.log" && auctions "$tmp/q17-crash" "$tmp/q17-rust"; then
    ok "q17 SIGKILL and rerun: $(grep -o 'restored from checkpoint [0-9]*' "$tmp/q17-crash2.log"), final rows equal, totals 1..n once each"
else ko "q17 SIGKILL and rerun (see $tmp)"; fi

declare -A expect=(
    [v0.1.0]='does not export `weir:operator/operator@0.2.0`'
    [incomplete]='snapshot'
    [foreign-import]='imports `weir:operator/cache@0.2.0`, which Weir does not provide'
)
for name in v0.1.0 incomplete foreign-import; do
    cat > "$tmp/wrong-$name.json" <<JSON
{ "name": "wrong-$name",
  "nodes": [
    { "id": "bids", "kind": "source", "connector": "nexmark", "parallelism": 1, "config": { "event_type": "bid", "count": 10 } },
    { "id": "op", "kind": "operator", "module": "$build/wrong-worlds/$name.wasm", "parallelism": 1 },
    { "id": "out", "kind": "sink", "connector": "blackhole" } ],
  "edges": [ { "from": "bids", "to": "op", "partitioning": "forward" }, { "from": "op", "to": "out", "partitioning": "forward" } ] }
JSON
    if "$weir" --data-dir "$tmp/d-wrong-$name" run "$tmp/wrong-$name.json" > "$tmp/wrong-$name.log" 2>&1; then
        ko "wrong world $name: weir run accepted it"
    elif grep -qF -- "${expect[$name]}" "$tmp/wrong-$name.log"; then
        ok "wrong world $name refused: $(grep -F -- "${expect[$name]}" "$tmp/wrong-$name.log" | head -1)"
    else ko "wrong world $name: refused without the expected message: $(tail -1 "$tmp/wrong-$name.log")"; fi
done

[[ $fail == 0 ]] && rm -rf "$tmp"
echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
