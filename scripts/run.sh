#!/usr/bin/env bash
# The run command: a broker with its embedded NameServer (127.0.0.1:9876),
# listening on 127.0.0.1:10911, storing under ./store, default config.
# Extra arguments go to rmq-broker (e.g. --set consumeQueueStore=rocksdb).
# It installs only what the build needs (libclang for RocksDB's bindings);
# the test set-up (scripts/setup.sh) is not run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-build.sh
exec cargo run --release -p rmq-broker --bin rmq-broker -- "$@"
