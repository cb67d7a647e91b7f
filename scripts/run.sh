#!/usr/bin/env bash
# The run command: a broker with its embedded NameServer (127.0.0.1:9876),
# listening on 127.0.0.1:10911, storing under ./store, default config.
# Extra arguments go to rmq-broker (e.g. --set consumeQueueStore=rocksdb).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec cargo run --release -p rmq-broker --bin rmq-broker -- "$@"
