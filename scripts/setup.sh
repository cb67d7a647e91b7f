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
# The Java-client test drives the stock rocketmq-client 4.9.8 from
# tests/java (Maven; its cache ~/.m2 is outside the repo, target/ is ignored).
# Built when missing or older than a source.
JAVA_MAIN=tests/java/target/classes/rmqcheck/ClientSuite.class
if [ ! -d tests/java/target/dependency ] || [ ! -f "$JAVA_MAIN" ] ||
    [ -n "$(find tests/java/pom.xml tests/java/src -newer "$JAVA_MAIN" 2>/dev/null | head -1)" ]; then
    if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
    fi
    mvn -q -B -f tests/java/pom.xml package dependency:copy-dependencies \
        -DoutputDirectory=target/dependency -DskipTests
    touch "$JAVA_MAIN"
fi
