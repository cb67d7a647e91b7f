#!/usr/bin/env bash
# The test command: every crate's unit tests, the integration suite, and the
# benches run once each as a smoke test; then the load tool runs briefly at a
# tiny size (a smoke run, not a benchmark). One profile (release) only, so
# RocksDB's C++ is compiled once.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The whole output is kept in target/test-output.log; on failure each
# panic's message is repeated at the end, where a CI log that keeps only
# its head and tail still shows why.
mkdir -p target
log=target/test-output.log
if ! cargo test --workspace --release --all-targets --no-fail-fast "$@" 2>&1 | tee "$log"; then
    echo "=== why the failing tests failed (whole output: $log) ==="
    awk '/panicked at/ { show = 1; n = 0 }
         /^stack backtrace:|^note: run with/ { show = 0 }
         show && n++ < 25 { print }' "$log" | tail -n 200
    exit 1
fi
if [ "$#" -eq 0 ]; then
    bench() { cargo run --release -q -p rmq-tools --bin rmq-bench -- "$@"; }
    bench reput --messages 5000 --queues 50
    bench ab --messages 2000 --producers 2 --mode async --queue-counts 4,40 \
        --rate-fraction 0.8 --plot target/ab-smoke.svg --json target/ab-smoke.json
    bench ab --live --messages 2000 --producers 2 --mode async --queue-counts 4
    bench store --queue-counts 1,100 --messages 5000
    bench routes --topics 3000 --largest 1000 --seconds 1 --churn-ms 200
    cargo build --release -q -p rmq-broker --bin rmq-broker
    bench soak --duration 24s --restart-every 8s --flip-every 6s --calibrate 3s \
        --sample-every 1s --settle 3s --drain 60s --loss-only \
        --broker-set mappedFileSizeCommitLog=67108864 --json target/soak-smoke.json
fi
