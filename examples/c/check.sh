#!/usr/bin/env bash
# End-to-end checks of the C operators against the Rust ones, with a built `weir` binary
# ($WEIR, default: weir on PATH). Builds first. Prints "N passed, N failed".
#  1. word count (tokenizer builtin, count = C, parallelism 2): the sorted output equals the
#     Rust word count's (tokenizer parallelism 1, so that batch arrival order is fixed);
#  2. a checkpointed, paced run killed with SIGKILL mid-way and run again: final totals equal
#     the Rust ones, every word's totals strictly increase (none duplicated);
#  3. Nexmark q1: the sorted output equals the Rust q1's.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
weir="${WEIR:-$(command -v weir || echo /tmp/weir-lang/weir)}"
[[ -x "$weir" ]] || { echo "check.sh: no weir binary (set WEIR)" >&2; exit 1; }
"$here/build.sh" || exit 1
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
job "$wc" "$tmp/wc-c.json" count "$here/build/wordcount.wasm" "$tmp/wc-c" ""
"$weir" --data-dir "$tmp/d-rust" run "$tmp/wc-rust.json" > "$tmp/wc-rust.log" 2>&1
"$weir" --data-dir "$tmp/d-c" run "$tmp/wc-c.json" > "$tmp/wc-c.log" 2>&1
if [[ -n "$(cat "$tmp"/wc-c/part-* 2>/dev/null)" ]] && diff -q <(sort "$tmp"/wc-rust/part-*) <(sort "$tmp"/wc-c/part-*) >/dev/null; then
    ok "word count: $(cat "$tmp"/wc-c/part-* | wc -l) records, identical to the Rust word count"
else ko "word count differs from the Rust one (see $tmp)"; fi

job "$wc" "$tmp/crash.json" count "$here/build/wordcount.wasm" "$tmp/crash" \
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
job "$q1" "$tmp/q1-c.json" q1 "$here/build/nexmark-q1.wasm" "$tmp/q1-c" ""
"$weir" --data-dir "$tmp/d-q1r" run "$tmp/q1-rust.json" > "$tmp/q1-rust.log" 2>&1
"$weir" --data-dir "$tmp/d-q1c" run "$tmp/q1-c.json" > "$tmp/q1-c.log" 2>&1
if [[ -n "$(cat "$tmp"/q1-c/part-* 2>/dev/null)" ]] && diff -q <(sort "$tmp"/q1-rust/part-*) <(sort "$tmp"/q1-c/part-*) >/dev/null; then
    ok "Nexmark q1: $(cat "$tmp"/q1-c/part-* | wc -l) records, identical to the Rust q1"
else ko "Nexmark q1 differs from the Rust one (see $tmp)"; fi

[[ $fail == 0 ]] && rm -rf "$tmp"
echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
