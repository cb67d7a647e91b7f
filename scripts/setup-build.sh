#!/usr/bin/env bash
# Installs what building and running the broker needs on a fresh Debian
# machine, and nothing else: the rocksdb crate compiles RocksDB from C++
# source, and its bindgen step needs libclang. The test set-up
# (scripts/setup.sh) runs this first.
set -euo pipefail
# bindgen wants libclang.so or libclang-N.so; libclang-cpp alone is not enough.
if ! ldconfig -p 2>/dev/null | grep -Eq 'libclang(-[0-9.]+)?\.so '; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq libclang-dev >/dev/null
fi
