#!/usr/bin/env bash
# Kafka → Nexmark q1 (dollars to euros) → Kafka, exactly once, with `weir run`.
#
#   bash examples/kafka/run.sh                          # starts a Tansu broker on 127.0.0.1:19092
#   KAFKA_BOOTSTRAP=host:9092 bash examples/kafka/run.sh  # your broker (topics `bids` and
#                                                         # `bids-eur` must exist, or be auto-created)
#
# Three jobs, each a `weir run` of a job file in this directory:
#   produce.job.json  bids.jsonl → topic `bids` (JSON values, keyed by auction)
#   q1.job.json       topic `bids` → builtin:nexmark-q1 → topic `bids-eur` (exactly_once)
#   read.job.json     topic `bids-eur` → out/ (a file sink: JSON lines)
# WEIR=/path/to/weir uses that binary instead of `cargo run`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
broker_pid=
cleanup() {
    if [ -n "$broker_pid" ]; then kill "$broker_pid" 2>/dev/null || true; wait "$broker_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${WEIR:-}" ]; then
    (cd "$repo" && cargo build -q -p weir --bin weir)
    WEIR="$repo/target/debug/weir"
fi

bootstrap=${KAFKA_BOOTSTRAP:-}
if [ -z "$bootstrap" ]; then
    tansu=${WEIR_TANSU:-$HOME/.cache/weir/tansu/0.6.0-libsql/bin/tansu}
    if [ ! -x "$tansu" ]; then
        echo "no Kafka broker: set KAFKA_BOOTSTRAP=host:port, or install Tansu with \`bash .ci/run tansu\` (docs/kafka-testing.md)" >&2
        exit 1
    fi
    bootstrap=127.0.0.1:19092
    "$tansu" broker --listener-url "tcp://$bootstrap" --advertised-listener-url "tcp://$bootstrap" \
        --storage-engine memory://tansu/ >"$work/tansu.log" 2>&1 &
    broker_pid=$!
    for _ in $(seq 300); do
        grep -q "ready in" "$work/tansu.log" && break
        kill -0 "$broker_pid" 2>/dev/null || { cat "$work/tansu.log" >&2; exit 1; }
        sleep 0.1
    done
    grep -q "ready in" "$work/tansu.log" || { echo "Tansu did not start in 30 s" >&2; exit 1; }
    for topic in bids bids-eur; do
        "$tansu" topic create "$topic" --partitions 2 --broker "tcp://$bootstrap" >/dev/null
    done
    echo "Tansu broker on $bootstrap, topics bids and bids-eur (2 partitions each)"
fi

# The job files name 127.0.0.1:19092; point copies of them at the broker.
for job in produce q1 read; do
    sed "s/127.0.0.1:19092/$bootstrap/" "$here/$job.job.json" >"$work/$job.job.json"
done
cp "$here/bids.jsonl" "$work/"
cd "$work"
export RUST_LOG=${RUST_LOG:-warn}
"$WEIR" run produce.job.json --data-dir weir-data
"$WEIR" run q1.job.json --data-dir weir-data
"$WEIR" run read.job.json --data-dir weir-data
echo "--- topic bids-eur (prices in euro cents: price * 908 / 1000):"
cat out/*.jsonl
