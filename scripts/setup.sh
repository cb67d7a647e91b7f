#!/usr/bin/env bash
# Installs what the build needs on a fresh Debian machine: the rocksdb crate
# compiles RocksDB from C++ source and its bindgen step needs libclang.
set -euo pipefail
if ! ldconfig -p 2>/dev/null | grep -q 'libclang'; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq libclang-dev >/dev/null
fi
