#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine: what the build
# needs (scripts/setup-build.sh), then a real Prometheus, Node with the
# ali-ons package, the two Java suites on the stock client and tools, and
# Apache RocketMQ's 4.9.7 jars. The run command (scripts/run.sh) needs none
# of these and runs only setup-build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-build.sh
# The metrics test runs a real Prometheus and promtool (Debian's package;
# its service is not started).
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
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
# The Java-client and mqadmin tests drive the stock rocketmq-client and
# rocketmq-tools from tests/java, built twice from the same sources: 4.9.8
# into target/ and 5.3.3 into target-5/ (Maven's cache ~/.m2 is outside the
# repo; both folders are ignored). Built when missing or older than a source.
build_java_suite() { # <rocketmq version> <compat source dir> <out dir>
    local main="tests/java/$3/classes/rmqcheck/ClientSuite.class"
    if [ -d "tests/java/$3/dependency" ] && [ -f "$main" ] &&
        [ -z "$(find tests/java/pom.xml tests/java/src -newer "$main" 2>/dev/null | head -1)" ]; then
        return
    fi
    if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
    fi
    mvn -q -B -f tests/java/pom.xml -Drocketmq.version="$1" -Drmqcheck.compat="$2" \
        -Drmqcheck.out="$3" package dependency:copy-dependencies \
        -DoutputDirectory="$3/dependency" -DskipTests
    touch "$main"
}
build_java_suite 4.9.8 v4 target
build_java_suite 5.3.3 v5 target-5
# Apache RocketMQ's own 4.9.7 broker and NameServer (jars only, from Maven
# Central through tools/apache/pom.xml): the test that drives it with
# rmq-admin and rmq-bench (tests/tests/it/apache_broker.rs).
if [ ! -f tests/java/target-apache/lib/.complete ]; then
    mvn -q -B -f tools/apache/pom.xml -Drocketmq.version=4.9.7 \
        dependency:copy-dependencies -DoutputDirectory="$PWD/tests/java/target-apache/lib"
    touch tests/java/target-apache/lib/.complete
fi
