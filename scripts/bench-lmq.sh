#!/usr/bin/env bash
# Light message queues A/B: `rmq-bench lmq --spawn BACKEND --restart` for
# each cell, one broker at a time, each on a fresh store, on 127.0.0.1:
#
#   file    x 10,000 and 100,000 LMQs
#   rocksdb x 10,000, 100,000 and 1,000,000 LMQs
#
# 100,000 messages x fan-out 10 (1,000,000 LMQ units) per cell, 16 producers
# with one synchronous send each, 256 B bodies, 1,000 LMQs pulled back and
# compared exactly, then SIGTERM and a restart on the same store. Writes
# OUT_DIR/lmq.md (the markdown table), and per cell its JSON report, its
# output, and, when a cell is still running after BENCH_LMQ_PERF_AFTER, a
# perf profile of its broker (OUT_DIR/CELL.perf.txt).
#
#   scripts/bench-lmq.sh [OUT_DIR]        (default target/bench-lmq)
#
# BENCH_LMQ_CELLS (e.g. "file:10000 rocksdb:10000"), BENCH_LMQ_MESSAGES
# (100000), BENCH_LMQ_FAN_OUT (10), BENCH_LMQ_CELL_TIMEOUT (20m),
# BENCH_LMQ_PERF_AFTER (300, seconds; 0: never), BENCH_LMQ_PORT (20911)
# and BENCH_LMQ_METRICS_PORT (20957) change the run; they are not named
# RMQ_* because the broker takes every RMQ_<key> variable as a setting.
# Refuses to start with less than 20 GB free where the stores go.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h | --help)
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
OUT=${1:-target/bench-lmq}
CELLS=${BENCH_LMQ_CELLS:-"file:10000 rocksdb:10000 file:100000 rocksdb:100000 rocksdb:1000000"}
MESSAGES=${BENCH_LMQ_MESSAGES:-100000}
FAN_OUT=${BENCH_LMQ_FAN_OUT:-10}
CELL_TIMEOUT=${BENCH_LMQ_CELL_TIMEOUT:-20m}
PERF_AFTER=${BENCH_LMQ_PERF_AFTER:-300}
PORT=${BENCH_LMQ_PORT:-20911}
METRICS_PORT=${BENCH_LMQ_METRICS_PORT:-20957}
MIN_FREE_KIB=$((20 * 1024 * 1024))

mkdir -p "$OUT/stores"
free_kib=$(df -Pk "$OUT/stores" | awk 'NR == 2 { print $4 }')
if [ "$free_kib" -lt "$MIN_FREE_KIB" ]; then
    echo "only $((free_kib / 1024 / 1024)) GB free under $OUT/stores; the A/B needs 20 GB" >&2
    exit 1
fi
for port in "$PORT" "$METRICS_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "127.0.0.1:$port is in use; set BENCH_LMQ_PORT / BENCH_LMQ_METRICS_PORT" >&2
        exit 1
    fi
done
cargo build --release -q -p rmq-broker --bin rmq-broker
cargo build --release -q -p rmq-tools --bin rmq-bench
BENCH=target/release/rmq-bench

# The broker of a cell: the rmq-broker child of the rmq-bench child of the
# `timeout` process $1, if there is one now.
broker_of() {
    local bench
    bench=$(pgrep -P "$1" -x rmq-bench | head -1 || true)
    [ -n "$bench" ] || return 0
    pgrep -P "$bench" -x rmq-broker | head -1 || true
}

# Profiles the broker of rmq-bench $1 once if it still runs after
# PERF_AFTER seconds.
perf_watch() { # <timeout pid> <cell>
    local waited=0
    while [ "$waited" -lt "$PERF_AFTER" ]; do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 1
        waited=$((waited + 1))
    done
    local broker
    broker=$(broker_of "$1")
    [ -n "$broker" ] || return 0
    echo "   $2 still running after ${PERF_AFTER}s: profiling broker $broker for 10 s" >&2
    perf record -q -e cpu-clock -g -p "$broker" -o "$OUT/$2.perf.data" -- sleep 10 >/dev/null 2>&1 || return 0
    perf report -i "$OUT/$2.perf.data" --no-children --percent-limit 2 --stdio 2>/dev/null |
        head -60 >"$OUT/$2.perf.txt" || true
}

jsons=()
failed=()
for cell in $CELLS; do
    backend=${cell%%:*}
    lmqs=${cell##*:}
    name="$backend-$lmqs"
    extra=()
    if [ "$backend" = file ]; then
        # The file backend refuses LMQ sends and pulls past 20,000 LMQ queues.
        extra=(--broker-set maxLmqConsumeQueueNum=2000000)
    fi
    store="$OUT/stores/$name"
    rm -rf "$store"
    mkdir -p "$store"
    echo "== $name: $MESSAGES messages x $FAN_OUT over $lmqs LMQs (at most $CELL_TIMEOUT)"
    timeout --signal=TERM "$CELL_TIMEOUT" "$BENCH" lmq --spawn "$backend" --restart \
        --messages "$MESSAGES" --fan-out "$FAN_OUT" --lmqs "$lmqs" \
        --listen-port "$PORT" --metrics "127.0.0.1:$METRICS_PORT" \
        --dir "$store" --json "$OUT/$name.json" "${extra[@]}" \
        >"$OUT/$name.txt" 2>&1 &
    bench=$!
    watcher=""
    if [ "$PERF_AFTER" -gt 0 ]; then
        perf_watch "$bench" "$name" &
        watcher=$!
    fi
    # Kept while it runs: a bench stopped by the timeout leaves its broker.
    broker=""
    while kill -0 "$bench" 2>/dev/null; do
        now=$(broker_of "$bench")
        [ -z "$now" ] || broker=$now
        sleep 1
    done
    rc=0
    wait "$bench" || rc=$?
    if [ -n "$watcher" ]; then
        kill "$watcher" 2>/dev/null || true
        wait "$watcher" 2>/dev/null || true
    fi
    if [ -n "$broker" ] && kill -0 "$broker" 2>/dev/null; then
        kill -TERM "$broker" 2>/dev/null || true
        sleep 5
        kill -KILL "$broker" 2>/dev/null || true
    fi
    tail -n 16 "$OUT/$name.txt"
    if [ "$rc" -eq 0 ] && [ -f "$OUT/$name.json" ]; then
        jsons+=("$OUT/$name.json")
    elif [ -f "$OUT/$name.json" ]; then
        # The report was written; the sample check failed (the table says so).
        jsons+=("$OUT/$name.json")
        failed+=("$name (exit $rc)")
    else
        failed+=("$name (exit $rc$([ "$rc" -eq 124 ] && echo ": timed out after $CELL_TIMEOUT"))")
    fi
    rm -rf "$store"
done

{
    echo "LMQ A/B, $(date -u +%Y-%m-%d), $MESSAGES messages x fan-out $FAN_OUT, 16 producers, 256 B bodies, 1,000 sampled LMQs"
    echo
    if [ "${#jsons[@]}" -gt 0 ]; then
        "$BENCH" lmq-table "${jsons[@]}"
    fi
    for f in ${failed[@]+"${failed[@]}"}; do
        echo
        echo "- $f: see $OUT/${f%% *}.txt and $OUT/${f%% *}.perf.txt"
    done
} >"$OUT/lmq.md"
echo
cat "$OUT/lmq.md"
