#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian machine: the rocksdb crate
# compiles RocksDB from C++ source and its bindgen step needs libclang.
set -euo pipefail
cd "$(dirname "$0")/.."
# bindgen wants libclang.so or libclang-N.so; libclang-cpp alone is not enough.
if ! ldconfig -p 2>/dev/null | grep -Eq 'libclang(-[0-9.]+)?\.so '; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq libclang-dev >/dev/null
fi
# The real-client test drives the npm package ali-ons (pure JavaScript).
if [ ! -d tests/node/node_modules/ali-ons ]; then
    if ! command -v npm >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq nodejs npm >/dev/null
    fi
    npm ci --prefix tests/node --no-audit --no-fund >/dev/null
fi
