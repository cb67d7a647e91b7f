#!/usr/bin/env bash
# Automatic failover side by side: this broker against Apache RocketMQ 5.3.3,
# the same set-up and the same stock Java client. A program, not a test: it
# prints one table for a person to read (and writes it to --out).
#
#   scripts/failover-vs-apache.sh [--targets apache-5.3.3,ours-file,ours-rocksdb]
#                                 [--rounds N] [--poll-ms MS] [--out DIR] [--dir DIR]
#
# Each target, one at a time, on fresh folders under --dir:
#   - a NameServer with the controller embedded, from one namesrv.conf as
#     Apache documents it (listenPort, kvConfigPath, configStorePath,
#     enableControllerInNamesrv=true, one DLedger replica): Apache's
#     NamesrvStartup -c, or `rmq-broker --namesrv-only -c` with the same file;
#   - two brokers of one set (brokerName failover-a) in controller mode, each
#     from its broker.conf, the same keys for both implementations:
#     enableControllerMode, allAckInSyncStateSet, SYNC_FLUSH, 64 MiB CommitLog
#     files, brokerHeartbeatInterval 1 s, Java's other defaults
#     (controllerHeartBeatTimeoutMills 10 s); Apache's JVMs get 1 GiB heaps;
#   - the Java client suite's `killloop` scenario (tests/java, the stock
#     rocketmq-client 5.3.3, remoting), sending synchronously without pause,
#     pollNameServerInterval --poll-ms (default 30000, the client's default).
# Then --rounds times (default 5): wait for 100 more acknowledged sends and
# for both brokers in the SyncStateSet (mqadmin getSyncStateSet against the
# controller), wait a random 0..--poll-ms more (so the kill falls anywhere
# in the client's route-poll period), SIGKILL the master, wait for the controller to name the other
# (the election, seen through mqadmin: a second or so coarse), restart the
# dead broker on its store. After the last round the scenario checks every
# acknowledged message is read at its offset and no offset was acknowledged
# twice, and prints per kill the send outage (the longest pause between two
# SEND_OKs from the last one before the kill to the last one before the
# next kill) and the route time (kill until the NameServer's route names
# the new master, read every 100 ms; the outage adds the client's wait for
# its next route poll).
#
# Needs: target/release/rmq-broker (cargo build --release -p rmq-broker),
# tests/java/target-5 (scripts/setup.sh builds it) and Apache RocketMQ
# 5.3.3's jars in ~/.cache/rmq-apache/5.3.3/lib (scripts/setup.sh fetches
# them). Ports: NameServer $NS_PORT, controller $CTL_PORT, brokers
# $A_PORT and $B_PORT (each with port-2 and port+1).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGETS=apache-5.3.3,ours-file,ours-rocksdb
ROUNDS=5
POLL_MS=30000
OUT=""
BASE_DIR=${TMPDIR:-/tmp}
NS_PORT=${NS_PORT:-19876}
CTL_PORT=${CTL_PORT:-19878}
A_PORT=${A_PORT:-20911}
B_PORT=${B_PORT:-21911}
SET=failover-a
STEP=100
STAGE_S=120
APACHE_LIB=${RMQ_APACHE_CACHE:-$HOME/.cache/rmq-apache}/5.3.3/lib
SUITE=$ROOT/tests/java/target-5
BROKER_BIN=$ROOT/target/release/rmq-broker
JVM_OPENS=(--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED)

while [ $# -gt 0 ]; do
    case "$1" in
        --targets) TARGETS=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --poll-ms) POLL_MS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --dir) BASE_DIR=$2; shift 2 ;;
        *) echo "unknown argument $1 (see the head of $0)" >&2; exit 64 ;;
    esac
done

die() { echo "failover-vs-apache: $*" >&2; exit 1; }
[ -x "$BROKER_BIN" ] || die "$BROKER_BIN missing: cargo build --release -p rmq-broker"
[ -f "$SUITE/classes/rmqcheck/ClientSuite.class" ] || die "$SUITE missing: scripts/setup.sh builds it"
[ -f "$APACHE_LIB/.complete" ] || die "$APACHE_LIB missing: scripts/setup.sh fetches it"

now_ms() { date +%s%3N; }

LOGBACK='<configuration><appender name="F" class="ch.qos.logback.core.FileAppender"><file>${user.home}/logs/rmq.log</file><encoder><pattern>%d %-5level %logger{0} - %msg%n</pattern></encoder></appender><root level="INFO"><appender-ref ref="F"/></root></configuration>'

# java_home <dir>: a ROCKETMQ_HOME with the logback files Apache's mains ask for.
java_home() {
    mkdir -p "$1/conf"
    for n in broker namesrv controller tools; do echo "$LOGBACK" >"$1/conf/logback_$n.xml"; done
}

# mqadmin <home> <args...>
mqadmin() {
    local home=$1; shift
    ROCKETMQ_HOME=$home java -Xmx256m -XX:TieredStopAtLevel=1 -Duser.home="$home" \
        -cp "$SUITE/classes:$SUITE/dependency/*" org.apache.rocketmq.tools.command.MQAdminStartup \
        "$@" -n "127.0.0.1:$NS_PORT" 2>/dev/null || true
}

# sss <home>: "<master addr> <in-sync count>" as the controller says.
sss() {
    mqadmin "$1" getSyncStateSet -a "127.0.0.1:$CTL_PORT" -b "$SET" |
        awk '/^#MasterAddr/ {a=$2} /^#SyncStateSetNums/ {n=$2} END {print a, n}'
}

# wait_until <what> <command...>: polls for STAGE_S seconds.
wait_until() {
    local what=$1; shift
    local deadline=$(($(date +%s) + STAGE_S))
    until "$@"; do
        [ "$(date +%s)" -lt "$deadline" ] || die "$what did not happen within ${STAGE_S}s (logs: $WORK)"
        sleep 0.2
    done
}

start_ns() { # <target>
    local home=$WORK/ns
    java_home "$home"
    cat >"$home/namesrv.conf" <<EOF
listenPort=$NS_PORT
bindAddress=127.0.0.1
kvConfigPath=$home/kvConfig.json
configStorePath=$home/namesrv.properties
enableControllerInNamesrv=true
controllerDLegerGroup=group1
controllerDLegerPeers=n0-127.0.0.1:$CTL_PORT
controllerDLegerSelfId=n0
controllerStorePath=$home/controller
EOF
    if [ "$1" = apache-5.3.3 ]; then
        (cd "$home" && ROCKETMQ_HOME=$home exec java -Xms1g -Xmx1g "${JVM_OPENS[@]}" -Duser.home="$home" \
            -cp "$APACHE_LIB/*" org.apache.rocketmq.namesrv.NamesrvStartup -c namesrv.conf \
            >"$home/out" 2>&1) &
        NS_PID=$!
        wait_until "Apache's NameServer and controller" grep -q "ControllerManager boot success" "$home/out"
    else
        (cd "$home" && exec "$BROKER_BIN" --namesrv-only -c namesrv.conf >"$home/out" 2>&1) &
        NS_PID=$!
        wait_until "our NameServer and controller" grep -q "rmq controller" "$home/out"
    fi
}

write_broker_conf() { # <name> <port> <backend>
    local home=$WORK/$1
    java_home "$home"
    cat >"$home/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=$SET
brokerId=-1
brokerRole=SLAVE
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
bindAddress=127.0.0.1
listenPort=$2
namesrvAddr=127.0.0.1:$NS_PORT
storePathRootDir=$home/store
storePathCommitLog=$home/store/commitlog
mappedFileSizeCommitLog=67108864
flushDiskType=SYNC_FLUSH
enableControllerMode=true
controllerAddr=127.0.0.1:$CTL_PORT
allAckInSyncStateSet=true
brokerHeartbeatInterval=1000
EOF
    if [ "$3" = rocksdb ]; then echo "consumeQueueStore=rocksdb" >>"$home/broker.conf"; fi
    if [ "$3" != apache ]; then
        echo "metricsPort=-1" >>"$home/broker.conf"
        echo "grpcServerPort=-1" >>"$home/broker.conf"
        echo "namesrvListenPort=-1" >>"$home/broker.conf"
    fi
}

declare -A PIDS
start_broker() { # <name> <port> <target>
    local home=$WORK/$1 log
    log=$home/out-$(now_ms)
    if [ "$3" = apache-5.3.3 ]; then
        (cd "$home" && ROCKETMQ_HOME=$home exec java -Xms1g -Xmx1g "${JVM_OPENS[@]}" -Duser.home="$home" \
            -cp "$APACHE_LIB/*" org.apache.rocketmq.broker.BrokerStartup -c broker.conf >"$log" 2>&1) &
        PIDS[$2]=$!
        wait_until "Apache broker $1" grep -q "boot success" "$log"
    else
        (cd "$home" && exec "$BROKER_BIN" -c broker.conf >"$log" 2>&1) &
        PIDS[$2]=$!
        wait_until "our broker $1" grep -q "listening on" "$log"
    fi
}

acked() { cat "$WORK/java/acked" 2>/dev/null || echo 0; }
acked_at_least() { [ "$(acked)" -ge "$1" ]; }
healthy() { local s; s=$(sss "$WORK/admin"); [ "${s#* }" = 2 ] && MASTER=${s% *}; }
moved() { local s; s=$(sss "$WORK/admin"); [ -n "${s% *}" ] && [ "${s% *}" != "$1" ] && [ "${s% *}" != null ]; }
java_alive() { kill -0 "$JAVA_PID" 2>/dev/null || die "the Java scenario ended early: $WORK/java/out"; }

stop_all() {
    for p in "${PIDS[@]}" ${NS_PID:-} ${JAVA_PID:-}; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    PIDS=()
}
trap stop_all EXIT

RESULTS=()
run_target() { # <target>
    local t=$1 backend
    case "$t" in
        apache-5.3.3) backend=apache ;;
        ours-file) backend=file ;;
        ours-rocksdb) backend=rocksdb ;;
        *) die "unknown target $t" ;;
    esac
    WORK=$(mktemp -d "$BASE_DIR/failover-$t.XXXX")
    java_home "$WORK/admin"
    echo "== $t in $WORK"
    start_ns "$t"
    write_broker_conf a "$A_PORT" "$backend"
    write_broker_conf b "$B_PORT" "$backend"
    start_broker a "$A_PORT" "$t"
    start_broker b "$B_PORT" "$t"
    mkdir -p "$WORK/java"
    (cd "$WORK/java" && exec java -Xmx1g -Duser.home="$WORK/java" -cp "$SUITE/classes:$SUITE/dependency/*" \
        rmqcheck.ClientSuite --namesrv "127.0.0.1:$NS_PORT" --scenario killloop --topic-prefix Bench \
        --poll-ms "$POLL_MS" --read-within-ms 120000 --timeout-ms 3600000 >"$WORK/java/out" 2>&1) &
    JAVA_PID=$!
    local last=0 elections=()
    for r in $(seq 1 "$ROUNDS"); do
        wait_until "round $r: $STEP more acknowledged sends" eval "java_alive; acked_at_least $((last + STEP))"
        wait_until "round $r: both brokers in sync" eval "java_alive; healthy"
        sleep "$(( (RANDOM * 32768 + RANDOM) % POLL_MS ))e-3"
        local port=${MASTER##*:} killed_at
        killed_at=$(now_ms)
        kill -9 "${PIDS[$port]}"
        echo "$killed_at" >>"$WORK/java/kills"
        wait_until "round $r: a new master" moved "$MASTER"
        elections+=($(($(now_ms) - killed_at)))
        echo "   round $r: killed $MASTER, new master named after ${elections[-1]} ms (mqadmin-coarse)"
        if [ "$port" = "$A_PORT" ]; then start_broker a "$A_PORT" "$t"; else start_broker b "$B_PORT" "$t"; fi
        last=$(acked)
    done
    wait_until "sends after the last round" eval "java_alive; acked_at_least $((last + STEP))"
    touch "$WORK/java/stop-sending"
    wait "$JAVA_PID" || true
    local summary pass
    summary=$(grep '^FAILOVER kills=' "$WORK/java/out" || echo "FAILOVER (none)")
    pass=$(grep -c '"check":"read after the kills","ok":true' "$WORK/java/out" || true)
    grep '^FAILOVER kill=' "$WORK/java/out" | sed 's/^/   /'
    RESULTS+=("$t | $ROUNDS | ${summary#FAILOVER } | $([ "$pass" = 1 ] && echo "all read" || echo "FAILED: see $WORK/java/out")")
    stop_all
}

IFS=, read -ra LIST <<<"$TARGETS"
for t in "${LIST[@]}"; do run_target "$t"; done
table="target | kills | send outage (longest pause between SEND_OKs) and route time (kill to new master in the route) | acknowledged messages"$'\n'"---|---|---|---"
for r in "${RESULTS[@]}"; do table+=$'\n'"$r"; done
echo
echo "pollNameServerInterval=$POLL_MS ms, $(nproc) cores"
echo "$table"
if [ -n "$OUT" ]; then mkdir -p "$OUT"; echo "$table" >"$OUT/failover.md"; fi
