#!/usr/bin/env bash
# Two broker binaries side by side under one load: the same rmq-bench
# produce run (4 producers x 16 async sends in flight, 1 KiB, one consumer,
# 8 queues, 25 s after a warm-up) against each binary in turn, A B A B, each
# on a fresh store with the default config, on 127.0.0.1 only. For checking
# that a change costs the request path nothing: build the old binary from
# its commit, copy it aside, then
#
#   scripts/bench-binaries.sh OLD_BINARY NEW_BINARY [OUT_DIR]
#
# Prints send rate, send latency and broker CPU per message for each run;
# the reports (text and JSON) and broker logs are kept in OUT_DIR
# (default target/bench-binaries). Compare within one run of this script.
# BENCH_DURATION (25s), BENCH_PORT, BENCH_NAMESRV_PORT and BENCH_METRICS_PORT
# change the run; they are not named RMQ_* because the broker takes every
# RMQ_<key> variable as a setting.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 2 ]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
OLD=$(realpath "$1")
NEW=$(realpath "$2")
OUT=${3:-target/bench-binaries}
PORT=${BENCH_PORT:-21911}
NAMESRV_PORT=${BENCH_NAMESRV_PORT:-29877}
METRICS_PORT=${BENCH_METRICS_PORT:-25557}
DURATION=${BENCH_DURATION:-25s}
mkdir -p "$OUT"
cargo build --release -q -p rmq-tools --bin rmq-bench
BENCH=target/release/rmq-bench

run() { # <name> <binary> <round>
    local store pid
    store=$(mktemp -d "${TMPDIR:-/tmp}/rmq-bench-binaries.XXXXXX")
    "$2" --set storePathRootDir="$store" --set listenPort="$PORT" \
        --set namesrvListenPort="$NAMESRV_PORT" --set metricsPort="$METRICS_PORT" \
        >"$OUT/$1-$3.broker.log" 2>&1 &
    pid=$!
    local up=""
    for _ in $(seq 1 150); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
            up=1
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if [ -z "$up" ]; then
        echo "$1 ($2) did not listen on 127.0.0.1:$PORT; its log:" >&2
        head -5 "$OUT/$1-$3.broker.log" >&2
        kill -TERM "$pid" 2>/dev/null || true
        rm -rf "$store"
        exit 1
    fi
    "$BENCH" produce --broker "127.0.0.1:$PORT" --metrics "127.0.0.1:$METRICS_PORT" \
        --producers 4 --mode async --inflight 16 --consumers 1 --warmup \
        --duration "$DURATION" --json "$OUT/$1-$3.json" >"$OUT/$1-$3.txt" 2>&1 || true
    kill -TERM "$pid"
    wait "$pid" || true
    rm -rf "$store"
    printf '%-4s round %s: %s | %s | %s\n' "$1" "$3" \
        "$(grep -m1 '^sent ' "$OUT/$1-$3.txt" | sed 's/ *(.*//; s/^sent *//')" \
        "$(grep -m1 '^send ' "$OUT/$1-$3.txt" | sed 's/^send *//; s/ *p99.9.*//')" \
        "$(grep -m1 '^broker ' "$OUT/$1-$3.txt" | sed 's/^broker *//; s/,.*//')"
}

for round in 1 2; do
    run old "$OLD" "$round"
    run new "$NEW" "$round"
done
