#!/usr/bin/env bash
# The test command: every crate's unit tests, the integration suite, and the
# benches run once each as a smoke test. One profile (release) only, so
# RocksDB's C++ is compiled once.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo test --workspace --release --all-targets --no-fail-fast "$@"
