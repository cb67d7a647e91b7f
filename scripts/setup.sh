#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine: what the build
# needs (scripts/setup-build.sh), then a real Prometheus, Node with the
# ali-ons and rocketmq-client-nodejs packages, the two Java suites on the
# stock client and tools, and Apache RocketMQ's 4.9.7 jars. The run command
# (scripts/run.sh) needs none of these and runs only setup-build.sh.
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
# The real-client test drives the npm package ali-ons (pure JavaScript);
# the Node gRPC test drives rocketmq-client-nodejs (RocketMQ 5.x gRPC)
# through Apache's proxy (tests/tests/it/proxy_node.rs).
install_node_suite() { # <folder under tests> <package it pins>
    [ -d "tests/$1/node_modules/$2" ] && return
    if ! command -v npm >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq nodejs npm >/dev/null
    fi
    npm ci --prefix "tests/$1" --no-audit --no-fund >/dev/null
}
install_node_suite node ali-ons
install_node_suite node5 rocketmq-client-nodejs
# The Python 5.x gRPC test (tests/tests/it/grpc_python.rs) runs
# tests/python5/grpc_check.py with rocketmq-python-client in a venv outside
# the repo; the test skips only when there is no python3 at all.
py5_venv="${RMQ_PY5_VENV:-$HOME/.cache/rmq-py5/venv}"
if command -v python3 >/dev/null 2>&1; then
    if [ ! -f "$py5_venv/.complete" ] || [ tests/python5/requirements.txt -nt "$py5_venv/.complete" ]; then
        if ! python3 -m venv "$py5_venv" >/dev/null 2>&1; then
            SUDO=""
            [ "$(id -u)" -ne 0 ] && SUDO="sudo"
            $SUDO apt-get update -qq
            $SUDO apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv "$py5_venv"
        fi
        "$py5_venv/bin/pip" install -q --disable-pip-version-check -r tests/python5/requirements.txt
        touch "$py5_venv/.complete"
    fi
fi
# The Go 5.x gRPC test (tests/tests/it/grpc_go.rs) runs tests/go5 built to
# tests/go5/target/grpc_check (ignored; modules in Go's own cache); the
# test skips only when there is no go at all.
if command -v go >/dev/null 2>&1; then
    (cd tests/go5 && go build -o target/grpc_check .)
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
# The gRPC client suite (tests/java/grpc: rocketmq-client-java 5.0.7 and a
# 4.9.8 remoting consumer) and Apache's rocketmq-proxy 5.3.3 jars, into the
# cache folder outside the repo: the tests that put the proxy in front of
# this broker (tests/tests/it/proxy_grpc.rs, tests/src/grpc_proxy.rs).
grpc_main=tests/java/grpc/target/classes/rmqgrpc/GrpcSuite.class
if [ ! -d tests/java/grpc/target/dependency ] || [ ! -f "$grpc_main" ] ||
    [ -n "$(find tests/java/grpc/pom.xml tests/java/grpc/src -newer "$grpc_main" 2>/dev/null | head -1)" ]; then
    mvn -q -B -f tests/java/grpc/pom.xml package dependency:copy-dependencies \
        -DoutputDirectory="$PWD/tests/java/grpc/target/dependency" -DskipTests
    touch "$grpc_main"
fi
proxy_lib="${RMQ_APACHE_CACHE:-$HOME/.cache/rmq-apache}/proxy-5.3.3/lib"
if [ ! -f "$proxy_lib/.complete" ]; then
    mkdir -p "$proxy_lib"
    mvn -q -B -f tools/apache/pom.xml -Drocketmq.proxy.version=5.3.3 \
        dependency:copy-dependencies -DoutputDirectory="$proxy_lib"
    touch "$proxy_lib/.complete"
fi
# Apache RocketMQ 5.3.3's broker, NameServer and controller (jars only): the
# controller-mode interop tests (tests/tests/it/controller_interop.rs).
lib_533="${RMQ_APACHE_CACHE:-$HOME/.cache/rmq-apache}/5.3.3/lib"
if [ ! -f "$lib_533/.complete" ]; then
    mkdir -p "$lib_533"
    mvn -q -B -f tools/apache/pom.xml -Drocketmq.version=5.3.3 \
        dependency:copy-dependencies -DoutputDirectory="$lib_533"
    touch "$lib_533/.complete"
fi
# Apache RocketMQ's own 4.9.7 broker and NameServer (jars only, from Maven
# Central through tools/apache/pom.xml): the test that drives it with
# rmq-admin and rmq-bench (tests/tests/it/apache_broker.rs).
if [ ! -f tests/java/target-apache/lib/.complete ]; then
    mvn -q -B -f tools/apache/pom.xml -Drocketmq.version=4.9.7 \
        dependency:copy-dependencies -DoutputDirectory="$PWD/tests/java/target-apache/lib"
    touch tests/java/target-apache/lib/.complete
fi
