#!/usr/bin/env bash
# The test command: every crate's unit tests, the integration suite, and the
# benches run once each as a smoke test; then the load tool runs briefly at a
# tiny size (a smoke run, not a benchmark). One profile (release) only, so
# RocksDB's C++ is compiled once.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo test --workspace --release --all-targets --no-fail-fast "$@"
if [ "$#" -eq 0 ]; then
    bench() { cargo run --release -q -p rmq-tools --bin rmq-bench -- "$@"; }
    bench reput --messages 5000 --queues 50
    bench ab --messages 2000 --producers 2 --mode async --queue-counts 4,40 \
        --rate-fraction 0.8 --plot target/ab-smoke.svg --json target/ab-smoke.json
    bench ab --live --messages 2000 --producers 2 --mode async --queue-counts 4
    bench store --queue-counts 1,100 --messages 5000
    bench routes --topics 3000 --largest 1000 --seconds 1 --churn-ms 200
fi
