#!/usr/bin/env bash
# Side by side: this broker against Apache RocketMQ's own broker, on this
# machine, under the same loads. A program, not a test: it prints one table
# (and writes it as markdown and JSON to --out) for a person to read.
#
#   scripts/bench-vs-apache.sh [--quick] [--targets a,b] [--loads L1,L2]
#                              [--out DIR] [--dir DIR]
#   scripts/bench-vs-apache.sh --meta [--targets a,b] [--out DIR] [--dir DIR]
#   scripts/bench-vs-apache.sh --pop [--quick] [--targets a,b] [--out DIR] [--dir DIR]
#   scripts/bench-vs-apache.sh --grpc [--quick] [--targets a,b] [--loads G1,G2,R1]
#                              [--out DIR] [--dir DIR]
#   scripts/bench-vs-apache.sh --lmq [--quick] [--targets a,b] [--out DIR] [--dir DIR]
#
# Targets, one at a time (never two brokers at once), each on a fresh store
# folder under --dir (default: the system temp folder), deleted after it:
#   apache-4.9.7          Apache broker + NameServer 4.9.7, file consume queue
#   apache-5.3.3          Apache broker + NameServer 5.3.3, file consume queue
#   apache-5.3.3-rocksdb  the same with storeType=defaultRocksDB
#   ours-file             target/release/rmq-broker, consumeQueueStore=file
#   ours-rocksdb          the same with consumeQueueStore=rocksdb
# (There is no 4.9.8 broker on Maven Central here; 4.9.7 stands for the 4.9
# line.)
#
# Loads, the same against every target (topics of 8 queues, 1 KiB bodies
# unless said):
#   L1  the Java load program (tools/apache, stock rocketmq-client 4.9.7):
#       64 threads, synchronous DefaultMQProducer.send, one producer instance
#   L2  the same with 128 B bodies
#   L3  rmq-bench produce --producers 4 --mode async --inflight 16 --batch 1
#   L4  the same with --batch 32
#   L5  rmq-bench produce --producers 64 --mode sync, under SYNC_FLUSH (the
#       broker is restarted with SYNC_FLUSH for it, on a fresh store)
# All produce only (no consumers). Each broker start is followed by a warm-up
# of WARM_S seconds with the Java load program (L1's shape) before anything
# is measured: Apache's JIT takes its CPU per message from ~70 to ~27 us in
# that time. Ours is warmed the same way so the runs are alike. The Java load
# program warms its own client for CLIENT_WARM_S more before its window.
#
# Measurement, the same way for every target:
#   msgs/s, p99   what the load tool reports (acknowledged sends per second of
#                 its measured window; per-request latency)
#   broker CPU    utime+stime of the broker process from /proc/PID/stat
#                 (clock ticks, getconf CLK_TCK) read right before and right
#                 after the measured interval, divided by the messages sent
#                 (sent+received when there are consumers). The interval is
#                 the Java program's window (it prints a line at each edge
#                 and this script reads /proc there) or the whole rmq-bench
#                 run (its only extra is one message per queue). For ours the
#                 PID is rmq-broker, whose NameServer is embedded; Apache's
#                 NameServer is a separate process, reported in its own
#                 column (it is idle during a run).
#   RSS max       VmHWM from /proc/PID/status at the end of each load (a
#                 high-water mark: it covers the loads before on that start).
# The load tools run on the same two cores as the broker; every target
# shares that handicap.
#
# Settings. Every broker: brokerClusterName=DefaultCluster,
# brokerName=broker-a, brokerId=0 (a master, no slaves), brokerIP1=127.0.0.1,
# listenPort=$BROKER_PORT, storePathRootDir=<fresh folder>,
# flushDiskType=ASYNC_FLUSH (SYNC_FLUSH for L5). Everything else at each
# broker's default, which ours copies from RocketMQ: 1 GiB CommitLog files,
# flushIntervalCommitLog=500 ms, flushCommitLogLeastPages=4,
# syncFlushTimeout=5 s, messageIndexEnable=true, autoCreateTopicEnable=true
# (the loads create their topics explicitly anyway),
# transientStorePoolEnable=false, warmMapedFileEnable=false.
# Apache only: storePathCommitLog=<root>/commitlog (4.9.7 would otherwise
# write to ~/store/commitlog); bindAddress=127.0.0.1 on 5.3.3 (4.9.7 has no
# such key and listens on every interface, and on 5.3.3 the HA port does
# too); ports used: NameServer $NAMESRV_PORT, broker $BROKER_PORT, its "fast"
# port $BROKER_PORT-2 and HA port $BROKER_PORT+1. 5.3.3 keeps its default
# timer wheel (timerWheelEnable=true). Ours: namesrvListenPort=$NAMESRV_PORT
# (embedded), metricsPort=$METRICS_PORT (not scraped during runs).
#
# JVMs (Java 17; every Java process gets --add-opens for java.nio,
# sun.nio.ch and jdk.internal.ref, which 4.9.7 needs to map and unmap files):
#   broker     -Xms8g -Xmx8g -Xmn4g, G1 with 16 MiB regions,
#              G1ReservePercent=25, InitiatingHeapOccupancyPercent=30,
#              SoftRefLRUPolicyMSPerMB=0, MaxDirectMemorySize=15g: Apache's
#              runbroker.sh, which fits this 24 GiB machine. Left out:
#              -XX:+AlwaysPreTouch, which would make the RSS column 8 GiB by
#              construction (the 4 GiB young generation is cycled through
#              under load anyway, so Java's RSS mostly reflects the heap
#              chosen), and -XX:-UseBiasedLocking (gone in 17).
#   NameServer -Xms1g -Xmx1g, G1: runserver.sh asks 4 GiB with CMS, which
#              Java 17 no longer has; it is idle here and 1 GiB is ample.
#   load       -Xms2g -Xmx2g, G1.
# Override with RMQ_BENCH_BROKER_JVM / RMQ_BENCH_NAMESRV_JVM /
# RMQ_BENCH_LOAD_JVM (whitespace-separated options).
#
# Fetching and building (skipped when already there): Apache's jars via
# Maven into ${RMQ_APACHE_CACHE:-$HOME/.cache/rmq-apache}/<version>/lib, the
# load program into .../load (classes and lib), a minimal ROCKETMQ_HOME
# (conf/logback_*.xml) into .../home; Maven's own cache is ~/.m2. Nothing of
# it is in the repository. Our binaries: cargo build --release when
# target/release/rmq-broker or rmq-bench is missing (build them yourself
# after changing code).
#
# Ports (fixed, high, 127.0.0.1): RMQ_BENCH_NAMESRV_PORT (29876),
# RMQ_BENCH_BROKER_PORT (30911; Apache also takes -2 and +1),
# RMQ_BENCH_METRICS_PORT (30957). The script stops if one is taken.
#
# Flags:
#   --quick          3 s warm-up, 3 s per load: checks the script, no figures
#   --targets LIST   a subset of the targets above, in that order
#   --loads LIST     a subset of L1..L5
#   --out DIR        where results.md, results.json, the load reports and the
#                    broker logs go (default: a new temp folder)
#   --dir DIR        parent folder of the temporary stores (the disk measured)
#   --meta           metadata instead of the loads: per target, after the
#                    warm-up, `rmq-bench meta` (100,000 single topic creates
#                    with rate and broker CPU per create at 1k, 10k and 100k,
#                    100,000 topics and 100,000 groups in batches of 1,000,
#                    first heartbeats of 3,000 groups from two clients with a
#                    probe beside them), then the broker restarted on that
#                    store: start-up time and RSS. RMQ_BENCH_META_ARGS adds
#                    rmq-bench meta arguments (e.g. "--topics 1000,10000").
#                    Broker CPU is the broker process's: Apache's NameServer
#                    is a process of its own, ours is inside the broker.
#   --pop            POP consumption through Apache's rocketmq-proxy 5.3.3
#                    (cluster mode, jars from Maven Central) instead of the
#                    loads, on apache-5.3.3, ours-file and ours-rocksdb
#                    (4.9.7 has no POP). Per target: the broker starts, its
#                    topic BenchTopic-0 (8 queues) is filled with
#                    RMQ_BENCH_POP_FILL (1,000,000) messages of 1 KiB by
#                    rmq-bench produce, the proxy starts in front of it
#                    (-Xms2g -Xmx2g G1, RMQ_BENCH_PROXY_JVM; gRPC port
#                    RMQ_BENCH_PROXY_PORT, 30981, remoting one below), then
#                    the POP load (rmqbench.PopLoad: the stock gRPC client
#                    5.0.7, 16 threads over 4 SimpleConsumers of one group,
#                    receive up to 32, ack each asynchronously) runs WARM_S
#                    of warm-up and a DURATION_S window. msgs/s are messages
#                    received and acked in the window; broker and proxy CPU
#                    per message are read at the window's edges. Ratios are
#                    to apache-5.3.3. A row with empty receives ran dry: fill
#                    more.
#   --grpc           the 5.x SDKs' gRPC API instead of the loads, served by
#                    apache-5.3.3 in LOCAL mode (broker and proxy in one JVM:
#                    rocketmq-proxy 5.3.3's ProxyStartup -pm local -bc
#                    broker.conf, the broker JVM's options, proxy gRPC port
#                    RMQ_BENCH_PROXY_PORT) and by ours-file and ours-rocksdb
#                    (the broker's own grpcServerPort, RMQ_BENCH_OURS_GRPC_PORT).
#                    Per target, after the usual warm-up:
#                      R1  the L1 Java load over remoting (4.9.7 client, 64
#                          threads, 1 KiB): the remoting send's broker CPU per
#                          message on the same start, for the gRPC/remoting
#                          ratio
#                      G1  rmqbench.GrpcLoad: the stock gRPC client 5.0.7, one
#                          Producer, 64 threads of synchronous 1 KiB sends,
#                          WARM_S of warm-up (the proxy's gRPC path needs its
#                          own JIT time) and a DURATION_S window
#                      G2  rmqbench.PopLoad on the same endpoint: 16 threads
#                          over 4 SimpleConsumers receive up to 32 and ack
#                          each, from BenchTopic-0 filled beforehand with
#                          RMQ_BENCH_GRPC_FILL (3,000,000) messages of 1 KiB by
#                          rmq-bench over remoting; WARM_S warm-up, DURATION_S
#                          window
#                    CPU per message is the broker process's (Apache's proxy is
#                    inside it), RSS its high-water mark after each load.
#                    Ratios are to apache-5.3.3; "gRPC/remoting" is G1's broker
#                    CPU per message over R1's on the same target.
#   --lmq            light message queues (multi-dispatch) instead of the
#                    loads, on apache-5.3.3-rocksdb, ours-file and
#                    ours-rocksdb, each with enableLmq=true,
#                    enableMultiDispatch=true and maxLmqConsumeQueueNum=2000000
#                    added to its settings. Per target, after the usual
#                    warm-up (refused below RMQ_BENCH_LMQ_MIN_FREE_GB, 20, GB
#                    free under --dir), rmqbench.LmqLoad (the 4.9.7 client):
#                    the parent topic LmqParent (8 queues) is created,
#                    CLIENT_WARM_S of plain sends to it, then
#                    RMQ_BENCH_LMQ_MESSAGES (100,000) messages of 256 B from
#                    RMQ_BENCH_LMQ_THREADS (16) synchronous senders, message i
#                    naming in INNER_MULTI_DISPATCH the RMQ_BENCH_LMQ_FANOUT
#                    (10) LMQs (i*10+k) mod L, L = RMQ_BENCH_LMQ_LMQS
#                    (1,000,000), so every LMQ gets one message. ours-file
#                    runs at L = RMQ_BENCH_LMQ_FILE_LMQS (100,000: ten
#                    messages per LMQ), because the file backend keeps a
#                    folder and a 6 MB file per queue (1,000,000 would need
#                    2 million inodes, 4 GiB and minutes of dispatch; see
#                    BENCHMARKS.md "queues"); its row says so. Then the
#                    program waits until the broker has dispatched every
#                    acknowledged message, and pulls RMQ_BENCH_LMQ_SAMPLE
#                    (1,000) sampled LMQs with a DefaultMQPullConsumer from
#                    offset 0, checking each LMQ's bodies exactly and in
#                    order (and each message's INNER_MULTI_QUEUE_OFFSET).
#                    Columns: send seconds, msgs/s, p99, broker CPU seconds
#                    in the send window (and per message), broker CPU from
#                    the window's start until everything was dispatched,
#                    how long after the last send that was, RSS max,
#                    sampled LMQs exact, and ratios to apache-5.3.3-rocksdb
#                    (msgs/s; CPU per message in the send window). A full
#                    run takes about 8 minutes, half of it ours-file's: its
#                    dispatch trails the sends (more LMQs than
#                    maxMappedConsumeQueueFiles), and its clean stop syncs
#                    every LMQ file, which at 100,000 outlasts STOP_TIMEOUT_S
#                    (it is then killed; its store is dropped anyway).
#                    --quick (2,000 messages over 20,000 LMQs, 2,000 for
#                    ours-file, 100 sampled) takes about 2 minutes.
#
# A full run takes about 20 minutes (about 3.5 per target); --quick about 5.
# Every process it starts is stopped on exit, whatever the exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_TARGETS=(apache-4.9.7 apache-5.3.3 apache-5.3.3-rocksdb ours-file ours-rocksdb)
ALL_LOADS=(L1 L2 L3 L4 L5)
# --grpc's loads, in the order they run on one broker start.
GRPC_LOADS=(R1 G1 G2)
# --lmq's targets, and the one its ratios are to.
LMQ_TARGETS=(apache-5.3.3-rocksdb ours-file ours-rocksdb)
LMQ_BASE=apache-5.3.3-rocksdb
# Ratios are to this target's row of the same load ...
BASE_TARGET=apache-4.9.7
# ... and ours-rocksdb's also to Apache's RocksDB consume queue.
ROCKS_PAIR=ours-rocksdb:apache-5.3.3-rocksdb

# Seconds: broker warm-up after each start, measured window per load, and
# the Java client's own warm-up before its window.
WARM_S=30
DURATION_S=20
CLIENT_WARM_S=5
# Bounds on waiting: a JVM broker's start, and a process's exit after TERM.
START_TIMEOUT_S=120
STOP_TIMEOUT_S=60
# The Java load program's topic (rmq-bench uses BenchTopic-0), and queues.
JAVA_TOPIC=JavaBench
QUEUES=8

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "bench-vs-apache: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

TARGETS=("${ALL_TARGETS[@]}")
LOADS=("${ALL_LOADS[@]}")
OUT=""
META=0
POP=0
GRPC=0
LMQ=0
QUICK=0
LOADS_GIVEN=0
STORE_PARENT=${TMPDIR:-/tmp}
while [ "$#" -gt 0 ]; do
    case "$1" in
    --quick) WARM_S=3 DURATION_S=3 CLIENT_WARM_S=1 QUICK=1 ;;
    --targets) IFS=, read -r -a TARGETS <<<"${2:?--targets needs a list}"; shift ;;
    --loads) IFS=, read -r -a LOADS <<<"${2:?--loads needs a list}"; LOADS_GIVEN=1; shift ;;
    --out) OUT=${2:?--out needs a folder}; shift ;;
    --dir) STORE_PARENT=${2:?--dir needs a folder}; shift ;;
    --meta) META=1 ;;
    --pop) POP=1 ;;
    --grpc) GRPC=1 ;;
    --lmq) LMQ=1 ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done
contains() { # <word> <list...>
    local w=$1; shift
    local x
    for x in "$@"; do [ "$x" = "$w" ] && return 0; done
    return 1
}
for t in "${TARGETS[@]}"; do contains "$t" "${ALL_TARGETS[@]}" || die "unknown target $t"; done
if [ "$POP" = 1 ]; then
    contains apache-4.9.7 "${TARGETS[@]}" && [ "${#TARGETS[@]}" -lt "${#ALL_TARGETS[@]}" ] &&
        die "--pop: apache-4.9.7 has no POP"
    [ "${#TARGETS[@]}" -eq "${#ALL_TARGETS[@]}" ] && TARGETS=(apache-5.3.3 ours-file ours-rocksdb)
fi
if [ "$LMQ" = 1 ]; then
    [ "$POP" = 1 ] || [ "$META" = 1 ] || [ "$GRPC" = 1 ] && die "--lmq goes alone (not with --pop, --meta or --grpc)"
    [ "$LOADS_GIVEN" = 1 ] && die "--lmq has one load (no --loads)"
    for t in "${TARGETS[@]}"; do
        contains "$t" "${LMQ_TARGETS[@]}" ||
            [ "${#TARGETS[@]}" -eq "${#ALL_TARGETS[@]}" ] || die "--lmq: $t is not measured (${LMQ_TARGETS[*]})"
    done
    [ "${#TARGETS[@]}" -eq "${#ALL_TARGETS[@]}" ] && TARGETS=("${LMQ_TARGETS[@]}")
fi
if [ "$GRPC" = 1 ]; then
    [ "$POP" = 1 ] || [ "$META" = 1 ] && die "--grpc goes alone (not with --pop or --meta)"
    for t in "${TARGETS[@]}"; do
        contains "$t" apache-5.3.3 ours-file ours-rocksdb ||
            [ "${#TARGETS[@]}" -eq "${#ALL_TARGETS[@]}" ] || die "--grpc: no gRPC on $t"
    done
    [ "${#TARGETS[@]}" -eq "${#ALL_TARGETS[@]}" ] && TARGETS=(apache-5.3.3 ours-file ours-rocksdb)
    [ "$LOADS_GIVEN" = 1 ] || LOADS=("${GRPC_LOADS[@]}")
    for l in "${LOADS[@]}"; do contains "$l" "${GRPC_LOADS[@]}" || die "--grpc: unknown load $l"; done
else
    for l in "${LOADS[@]}"; do contains "$l" "${ALL_LOADS[@]}" || die "unknown load $l"; done
fi

CACHE=${RMQ_APACHE_CACHE:-$HOME/.cache/rmq-apache}
NAMESRV_PORT=${RMQ_BENCH_NAMESRV_PORT:-29876}
BROKER_PORT=${RMQ_BENCH_BROKER_PORT:-30911}
METRICS_PORT=${RMQ_BENCH_METRICS_PORT:-30957}
# Our broker's own gRPC port (grpcServerPort): off the default 8081, and
# apart from the proxy's.
OURS_GRPC_PORT=${RMQ_BENCH_OURS_GRPC_PORT:-30982}
CLK_TCK=$(getconf CLK_TCK)
JAVA_OPENS=(--add-opens java.base/java.nio=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED)
read -r -a BROKER_JVM <<<"${RMQ_BENCH_BROKER_JVM:--server -Xms8g -Xmx8g -Xmn4g -XX:+UseG1GC
    -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25 -XX:InitiatingHeapOccupancyPercent=30
    -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow -XX:MaxDirectMemorySize=15g
    -XX:-UseLargePages}"
read -r -a NAMESRV_JVM <<<"${RMQ_BENCH_NAMESRV_JVM:--server -Xms1g -Xmx1g -XX:+UseG1GC}"
read -r -a LOAD_JVM <<<"${RMQ_BENCH_LOAD_JVM:--Xms2g -Xmx2g -XX:+UseG1GC}"
read -r -a PROXY_JVM <<<"${RMQ_BENCH_PROXY_JVM:--server -Xms2g -Xmx2g -XX:+UseG1GC}"
PROXY_PORT=${RMQ_BENCH_PROXY_PORT:-30981}
POP_FILL=${RMQ_BENCH_POP_FILL:-1000000}
GRPC_FILL=${RMQ_BENCH_GRPC_FILL:-3000000}
PROXY_VERSION=5.3.3
# --lmq's shape (see the header); --quick makes it small.
if [ "$QUICK" = 1 ]; then q=1; else q=0; fi
LMQ_MESSAGES=${RMQ_BENCH_LMQ_MESSAGES:-$([ $q = 1 ] && echo 2000 || echo 100000)}
LMQ_LMQS=${RMQ_BENCH_LMQ_LMQS:-$([ $q = 1 ] && echo 20000 || echo 1000000)}
LMQ_FILE_LMQS=${RMQ_BENCH_LMQ_FILE_LMQS:-$([ $q = 1 ] && echo 2000 || echo 100000)}
LMQ_SAMPLE=${RMQ_BENCH_LMQ_SAMPLE:-$([ $q = 1 ] && echo 100 || echo 1000)}
LMQ_FANOUT=${RMQ_BENCH_LMQ_FANOUT:-10}
LMQ_THREADS=${RMQ_BENCH_LMQ_THREADS:-16}
LMQ_MIN_FREE_GB=${RMQ_BENCH_LMQ_MIN_FREE_GB:-20}
# Settings added to every broker of the run (key=value): broker.conf lines
# for Apache, --set for ours. --lmq fills it.
EXTRA_CONF=()

# ---------------------------------------------------------------- processes
# Every process this script starts and has not yet reaped, stopped on exit
# (TERM, then KILL after STOP_TIMEOUT_S). A PID leaves the list once reaped,
# so a recycled PID is never signalled.
STARTED=()
BROKER_PID=""
NAMESRV_PID=""
PROXY_PID=""
track() { STARTED+=("$1"); }
untrack() { # <pid>
    local keep=() p
    for p in "${STARTED[@]}"; do
        if [ "$p" != "$1" ]; then keep+=("$p"); fi
    done
    STARTED=("${keep[@]}")
}
stop_pid() { # <pid>
    local pid=$1 i
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < STOP_TIMEOUT_S * 5; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "process $pid did not stop within ${STOP_TIMEOUT_S} s: killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    wait "$pid" 2>/dev/null || true
    untrack "$pid"
}
# Runs a command as a tracked background child and waits for it, returning
# its status: a script waiting in `wait` acts on INT/TERM at once, where one
# running a foreground command would wait for it to end first.
run_tracked() { # <command...>
    "$@" &
    local pid=$! rc=0
    track "$pid"
    wait "$pid" || rc=$?
    untrack "$pid"
    return "$rc"
}
cleanup() {
    local pid
    for pid in "${STARTED[@]}"; do stop_pid "$pid"; done
    if [ -n "${WORK:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Polls until <pid>'s port answers and its log has <line>; fails at once if
# the process dies, and after <timeout> seconds.
wait_ready() { # <name> <pid> <port> <log> <line> <timeout s>
    local name=$1 pid=$2 port=$3 logf=$4 line=$5 timeout=$6 i
    for ((i = 0; i < timeout * 5; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 30 "$logf" >&2
            die "$name exited during start-up (log: $logf)"
        fi
        if port_open "$port" && grep -q -- "$line" "$logf"; then
            return 0
        fi
        sleep 0.2
    done
    tail -n 30 "$logf" >&2
    die "$name not ready within $timeout s (log: $logf)"
}

# utime+stime of <pid> in clock ticks, into variable <var>, without a fork
# (the read happens at the edge of a measured window).
read_ticks() { # <var> <pid>
    local stat
    read -r stat <"/proc/$2/stat"
    stat=${stat##*) } # fields from 3 on; the name in (...) may hold spaces
    local -a f
    read -r -a f <<<"$stat"
    printf -v "$1" '%d' $((f[11] + f[12]))
}
rss_hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# ---------------------------------------------------------------- building
ensure_java_tools() {
    if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
        local sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get update -qq
        $sudo apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null
    fi
}

# Maven on tools/apache/pom.xml, quiet unless it fails.
maven() { # <mvn args...>
    mkdir -p "$CACHE"
    if ! mvn -q -B -f tools/apache/pom.xml "$@" >"$CACHE/mvn.log" 2>&1; then
        tail -n 40 "$CACHE/mvn.log" >&2
        die "mvn $* failed (log: $CACHE/mvn.log)"
    fi
}

# Apache's broker and NameServer jars with their dependencies.
fetch_apache() { # <version>
    local lib="$CACHE/$1/lib"
    [ -f "$lib/.complete" ] && return 0
    log "fetching Apache RocketMQ $1 into $lib"
    rm -rf "$lib"
    maven -Drocketmq.version="$1" dependency:copy-dependencies -DoutputDirectory="$lib"
    [ -f "$lib/rocketmq-broker-$1.jar" ] || die "no rocketmq-broker-$1.jar in $lib"
    touch "$lib/.complete"
}

# Apache's rocketmq-proxy jars (the folder scripts/setup.sh fills too).
fetch_proxy() {
    local lib="$CACHE/proxy-$PROXY_VERSION/lib"
    [ -f "$lib/.complete" ] && return 0
    log "fetching Apache rocketmq-proxy $PROXY_VERSION into $lib"
    rm -rf "$lib"
    maven -Drocketmq.proxy.version="$PROXY_VERSION" dependency:copy-dependencies -DoutputDirectory="$lib"
    touch "$lib/.complete"
}

# The load program: rebuilt when missing or older than a source.
build_load() {
    local out="$CACHE/load" stamp="$CACHE/load/.complete"
    if [ -f "$stamp" ] &&
        [ -z "$(find tools/apache/pom.xml tools/apache/src -newer "$stamp" 2>/dev/null | head -1)" ]; then
        return 0
    fi
    log "building the Java load program into $out"
    rm -rf "$out"
    maven -Dbench.out="$out" package dependency:copy-dependencies -DoutputDirectory="$out/lib"
    touch "$stamp"
}

# A minimal ROCKETMQ_HOME: 4.9.7 reads conf/logback_{broker,namesrv}.xml from
# it (5.3.3 carries its logging setup in its jars). One file each at INFO, in
# ${user.home}/logs, which this script points into each run's folder.
make_home() {
    local conf="$CACHE/home/conf" n
    mkdir -p "$conf"
    for n in broker namesrv; do
        cat >"$conf/logback_$n.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/logs/$n.log</file>
    <encoder><pattern>%d{yyyy-MM-dd HH:mm:ss,SSS} %p %t - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
    done
}

ensure_rust() {
    if [ ! -x target/release/rmq-broker ] || [ ! -x target/release/rmq-bench ]; then
        log "building rmq-broker and rmq-bench (release)"
        scripts/setup.sh
        cargo build --release -p rmq-broker -p rmq-tools --bins
    fi
}

# ---------------------------------------------------------------- targets
apache_version() { # <target> -> version
    case "$1" in
    apache-4.9.7) echo 4.9.7 ;;
    apache-5.3.3 | apache-5.3.3-rocksdb) echo 5.3.3 ;;
    esac
}

check_ports_free() {
    local p
    for p in "$NAMESRV_PORT" "$BROKER_PORT" "$((BROKER_PORT - 2))" "$((BROKER_PORT + 1))" "$METRICS_PORT"; do
        port_open "$p" && die "port $p on 127.0.0.1 is taken (set RMQ_BENCH_*_PORT)"
    done
    return 0
}

# Starts <target> with <flush> on a fresh store in $RUN; sets BROKER_PID
# (and NAMESRV_PID for Apache).
start_target() { # <target> <flush>
    local target=$1 flush=$2
    RUN="$WORK/$target-$flush"
    mkdir -p "$RUN/store" "$RUN/home"
    check_ports_free
    case "$target" in
    apache-*) start_apache "$target" "$flush" ;;
    ours-*) start_ours "$target" "$flush" ;;
    esac
}

start_apache() { # <target> <flush>
    start_apache_namesrv "$1" "$2"
    start_apache_broker "$(apache_version "$1")"
}

# Writes an Apache target's namesrv.conf and broker.conf (<flush>) into
# $RUN and starts its NameServer; sets NAMESRV_PID.
start_apache_namesrv() { # <target> <flush>
    local v
    v=$(apache_version "$1")
    local cp="$CACHE/$v/lib/*" bind=""
    [ "$v" != 4.9.7 ] && bind="bindAddress=127.0.0.1"
    cat >"$RUN/namesrv.conf" <<EOF
listenPort=$NAMESRV_PORT
kvConfigPath=$RUN/namesrv/kvConfig.json
configStorePath=$RUN/namesrv/namesrv.properties
$bind
EOF
    cat >"$RUN/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerIP1=127.0.0.1
listenPort=$BROKER_PORT
storePathRootDir=$RUN/store
storePathCommitLog=$RUN/store/commitlog
flushDiskType=$2
$bind
EOF
    [ "$1" = apache-5.3.3-rocksdb ] && echo "storeType=defaultRocksDB" >>"$RUN/broker.conf"
    if [ "${#EXTRA_CONF[@]}" -gt 0 ]; then printf '%s\n' "${EXTRA_CONF[@]}" >>"$RUN/broker.conf"; fi
    # user.home: Apache writes logs (and the client its log) under it.
    local common=("${JAVA_OPENS[@]}" -Duser.home="$RUN/home" -Drocketmq.home.dir="$CACHE/home")
    ROCKETMQ_HOME="$CACHE/home" java "${NAMESRV_JVM[@]}" "${common[@]}" -cp "$cp" \
        org.apache.rocketmq.namesrv.NamesrvStartup -c "$RUN/namesrv.conf" \
        >"$RUN/namesrv.out" 2>&1 &
    NAMESRV_PID=$!
    track "$NAMESRV_PID"
    wait_ready "NameServer $v" "$NAMESRV_PID" "$NAMESRV_PORT" "$RUN/namesrv.out" \
        "boot success" "$START_TIMEOUT_S"
}

# The broker of an Apache target whose NameServer runs ($RUN/broker.conf
# written); again on the same store for a restart.
start_apache_broker() { # <version>
    local v=$1
    local cp="$CACHE/$v/lib/*"
    local common=("${JAVA_OPENS[@]}" -Duser.home="$RUN/home" -Drocketmq.home.dir="$CACHE/home")
    ROCKETMQ_HOME="$CACHE/home" java "${BROKER_JVM[@]}" "${common[@]}" \
        -Xlog:gc:file="$RUN/gc.log" -cp "$cp" \
        org.apache.rocketmq.broker.BrokerStartup -c "$RUN/broker.conf" \
        -n "127.0.0.1:$NAMESRV_PORT" >"$RUN/broker.out" 2>&1 &
    BROKER_PID=$!
    track "$BROKER_PID"
    wait_ready "broker $v" "$BROKER_PID" "$BROKER_PORT" "$RUN/broker.out" \
        "boot success" "$START_TIMEOUT_S"
}

start_ours() { # <target> <flush>
    local cq=${1#ours-} v
    # rmq-broker takes RMQ_<KEY> variables as settings: none of this
    # script's own (RMQ_BENCH_*, RMQ_APACHE_CACHE) may reach it. env execs
    # the broker, so $! is the broker.
    local -a clean=() extra=()
    for v in $(compgen -e); do
        case "$v" in RMQ_BENCH_* | RMQ_APACHE_*) clean+=(-u "$v") ;; esac
    done
    for v in "${EXTRA_CONF[@]}"; do extra+=(--set "$v"); done
    env "${clean[@]}" target/release/rmq-broker \
        --set brokerClusterName=DefaultCluster --set brokerName=broker-a \
        --set brokerId=0 --set brokerIP1=127.0.0.1 \
        --set listenPort="$BROKER_PORT" --set namesrvListenPort="$NAMESRV_PORT" \
        --set metricsPort="$METRICS_PORT" --set storePathRootDir="$RUN/store" \
        --set grpcServerPort="$OURS_GRPC_PORT" \
        --set flushDiskType="$2" --set consumeQueueStore="$cq" "${extra[@]}" \
        >"$RUN/broker.out" 2>&1 &
    BROKER_PID=$!
    NAMESRV_PID=""
    track "$BROKER_PID"
    wait_ready "rmq-broker" "$BROKER_PID" "$BROKER_PORT" "$RUN/broker.out" \
        "listening on" "$START_TIMEOUT_S"
    port_open "$NAMESRV_PORT" || die "rmq-broker's NameServer is not on $NAMESRV_PORT"
}

# Stops the running target, keeps its logs in $OUT/logs, drops its store.
stop_target() { # <target> <flush>
    stop_pid "$BROKER_PID"
    if [ -n "$NAMESRV_PID" ]; then stop_pid "$NAMESRV_PID"; fi
    BROKER_PID="" NAMESRV_PID=""
    local logs="$OUT/logs/$1-$2"
    mkdir -p "$logs"
    cp "$RUN"/*.out "$RUN"/*.conf "$RUN"/gc.log "$logs/" 2>/dev/null || true
    if [ -d "$RUN/home/logs" ]; then cp -r "$RUN/home/logs" "$logs/"; fi
    rm -rf "$RUN"
}

# ---------------------------------------------------------------- loads
# The load program's command line against the running target, into LOAD_ARGV
# (an array, so that `"${LOAD_ARGV[@]}" &` makes $! the java process itself).
load_argv() { # <program args...>
    LOAD_ARGV=(java "${LOAD_JVM[@]}" "${JAVA_OPENS[@]}" -Duser.home="$RUN/home"
        -cp "$CACHE/load/classes:$CACHE/load/lib/*" rmqbench.Load
        --namesrv "127.0.0.1:$NAMESRV_PORT" --broker "127.0.0.1:$BROKER_PORT"
        --topic "$JAVA_TOPIC" --queues "$QUEUES" "$@")
}

warm_up() { # <target> <flush>
    log "$1 ($2): warm-up ${WARM_S} s (Java load, 64 threads, 1 KiB)"
    load_argv --threads 64 --size 1024 --warmup "$WARM_S" --duration 0
    run_tracked "${LOAD_ARGV[@]}" >"$OUT/logs/$1-$2-warmup.out" 2>&1 ||
        die "warm-up load failed (log: $OUT/logs/$1-$2-warmup.out)"
}

# Appends one record for the summary.
record() { # <load> <target> <tool> <flush> <report> <cpu ticks> <namesrv ticks|null>
    printf '{"load":"%s","target":"%s","tool":"%s","flush":"%s","report":"%s","broker_cpu_ticks":%d,"namesrv_cpu_ticks":%s,"clk_tck":%d,"rss_hwm_kib":%d}\n' \
        "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$CLK_TCK" "$(rss_hwm_kib "$BROKER_PID")" \
        >>"$OUT/records.jsonl"
}

ns_ticks() { # <var>: the NameServer's ticks, or "null" for ours (embedded)
    if [ -n "$NAMESRV_PID" ]; then read_ticks "$1" "$NAMESRV_PID"; else printf -v "$1" null; fi
}

# Runs a Java load program (<command...>), which prints 'rmqbench
# window-start' and 'rmqbench window-end' at the edges of its measured window
# and then one JSON line, kept as <report>. The broker's CPU ticks, and those
# of <other pid> ("" for none), are read right at the edges: the deltas go
# to WIN_BROKER_TICKS and WIN_OTHER_TICKS (null without <other pid>). A
# program that also prints 'rmqbench dispatched' (LmqLoad) gets the broker's
# ticks from the window's start to that line in WIN_DISPATCHED_TICKS (else
# null).
run_windowed() { # <what> <report> <log> <other pid> <command...>
    local what=$1 report=$2 logf=$3 other=$4
    shift 4
    local fifo="$RUN/load.fifo" line c0="" c1="" c2="" o0="" o1="" pid rc=0
    mkfifo "$fifo"
    "$@" >"$fifo" 2>"$logf" &
    pid=$!
    track "$pid"
    while IFS= read -r line; do
        case "$line" in
        "rmqbench window-start")
            read_ticks c0 "$BROKER_PID"
            if [ -n "$other" ]; then read_ticks o0 "$other"; fi
            ;;
        "rmqbench window-end")
            read_ticks c1 "$BROKER_PID"
            if [ -n "$other" ]; then read_ticks o1 "$other"; fi
            ;;
        "rmqbench dispatched") read_ticks c2 "$BROKER_PID" ;;
        "{"*) printf '%s\n' "$line" >"$report" ;;
        esac
    done <"$fifo"
    wait "$pid" || rc=$?
    untrack "$pid"
    rm -f "$fifo"
    [ "$rc" -eq 0 ] || die "$what: the load program failed (log: $logf)"
    if [ -z "$c0" ] || [ -z "$c1" ] || [ ! -s "$report" ]; then
        die "$what: no measured window in the load program's output (log: $logf)"
    fi
    WIN_BROKER_TICKS=$((c1 - c0))
    WIN_OTHER_TICKS=null
    if [ -n "$other" ]; then WIN_OTHER_TICKS=$((o1 - o0)); fi
    WIN_DISPATCHED_TICKS=null
    if [ -n "$c2" ]; then WIN_DISPATCHED_TICKS=$((c2 - c0)); fi
}

# L1/L2: the Java program's window; Apache's NameServer is read beside the
# broker (ours is embedded).
run_java_load() { # <load> <target> <flush> <size>
    local report="$OUT/reports/$1-$2.json" logf="$OUT/logs/$1-$2.err"
    load_argv --threads 64 --size "$4" --warmup "$CLIENT_WARM_S" --duration "$DURATION_S"
    run_windowed "$1 on $2" "$report" "$logf" "$NAMESRV_PID" "${LOAD_ARGV[@]}"
    record "$1" "$2" java "$3" "$report" "$WIN_BROKER_TICKS" "$WIN_OTHER_TICKS"
    log "$1 on $2: $(sed -E 's/.*"sent":([0-9]+).*"msgs_per_s":([0-9.]+).*"p99_us":([0-9]+).*/\1 sent, \2 msgs\/s, p99 \3 us/' "$report")"
}

# L3-L5: the whole rmq-bench run is the interval.
run_rmq_bench() { # <load> <target> <flush> <rmq-bench produce args...>
    local load=$1 target=$2 flush=$3
    shift 3
    local report="$OUT/reports/$load-$target.json" logf="$OUT/logs/$load-$target.out"
    local c0 c1 n0 n1
    read_ticks c0 "$BROKER_PID"
    ns_ticks n0
    RUST_LOG=warn run_tracked target/release/rmq-bench produce --broker "127.0.0.1:$BROKER_PORT" \
        --queues "$QUEUES" --consumers 0 --size 1024 --duration "${DURATION_S}s" --warmup \
        --json "$report" "$@" >"$logf" 2>&1 ||
        die "$load on $target: rmq-bench failed (log: $logf): $(tail -n 3 "$logf")"
    read_ticks c1 "$BROKER_PID"
    ns_ticks n1
    local ns=null
    [ "$n0" != null ] && ns=$((n1 - n0))
    record "$load" "$target" rmq-bench "$flush" "$report" $((c1 - c0)) "$ns"
    log "$load on $target: $(grep -E '^sent ' "$logf" | tr -s ' ')"
}

run_load() { # <load> <target> <flush>
    case "$1" in
    L1) run_java_load "$1" "$2" "$3" 1024 ;;
    L2) run_java_load "$1" "$2" "$3" 128 ;;
    L3) run_rmq_bench "$1" "$2" "$3" --producers 4 --mode async --inflight 16 --batch 1 ;;
    L4) run_rmq_bench "$1" "$2" "$3" --producers 4 --mode async --inflight 16 --batch 32 ;;
    L5) run_rmq_bench "$1" "$2" "$3" --producers 64 --mode sync ;;
    esac
}

# One broker start: warm up, then the given loads.
session() { # <target> <flush> <loads...>
    local target=$1 flush=$2 l
    shift 2
    log "$target ($flush): starting"
    start_target "$target" "$flush"
    warm_up "$target" "$flush"
    for l in "$@"; do run_load "$l" "$target" "$flush"; done
    stop_target "$target" "$flush"
}

# --meta: rmq-bench meta against the running target, then a restart on the
# same store, timed from launch to ready (polled every 0.2 s).
meta_session() { # <target>
    local target=$1 flush=ASYNC_FLUSH
    local report="$OUT/reports/meta-$target.json" logf="$OUT/logs/meta-$target.out"
    log "$target: starting (metadata)"
    start_target "$target" "$flush"
    warm_up "$target" "$flush"
    local -a extra=()
    read -r -a extra <<<"${RMQ_BENCH_META_ARGS:-}"
    RUST_LOG=warn run_tracked target/release/rmq-bench meta --broker "127.0.0.1:$BROKER_PORT" \
        --pid "$BROKER_PID" --json "$report" "${extra[@]}" >"$logf" 2>&1 ||
        die "meta on $target: rmq-bench failed (log: $logf): $(tail -n 3 "$logf")"
    sed "s/^/  $target: /" "$logf" >&2
    stop_pid "$BROKER_PID"
    local t0 t1
    t0=$(date +%s.%N)
    case "$target" in
    apache-*) start_apache_broker "$(apache_version "$target")" ;;
    ours-*) start_ours "$target" "$flush" ;;
    esac
    t1=$(date +%s.%N)
    local rss
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$BROKER_PID/status")
    printf '{"target":"%s","startup_s":%s,"rss_kib":%d}\n' "$target" \
        "$(echo "$t1 - $t0" | bc)" "$rss" >>"$OUT/meta-startup.jsonl"
    log "$target: restarted on its store in $(echo "$t1 - $t0" | bc) s, RSS ${rss} KiB"
    stop_target "$target" "$flush"
}

# The --meta table: one row per target.
meta_summary() {
    local t r
    {
        echo "| target | single creates /s at 1k / 10k / 100k | broker CPU per create at 1k / 10k / 100k | 100k single creates | 100k topics in batches | 100k groups in batches | first heartbeats (max) | probe worst | restart | RSS after restart |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        for t in "${TARGETS[@]}"; do
            r="$OUT/reports/meta-$t.json"
            [ -s "$r" ] || continue
            jq -r --arg t "$t" --slurpfile s <(grep "\"$t\"" "$OUT/meta-startup.jsonl") '
                def f0: if . == null then "-" else (. | round | tostring) end;
                def batch(p): if p == null then "-" elif p.refused != null then "refused" else "\(p.seconds * 10 | round / 10) s" end;
                "| \($t) | \([.checkpoints[].creates_per_s | f0] | join(" / ")) | \([.checkpoints[].cpu_us_per_create | f0] | join(" / ")) us | \(.single.seconds * 10 | round / 10) s\(if .single.refused != null then " (\(.single.created) only)" else "" end) | \(batch(.batch)) | \(batch(.batch_groups)) | \(if .heartbeats == null then "-" else "\(.heartbeats.answer_ms | max | round) ms" end) | \(if .heartbeats == null then "-" else "\(.heartbeats.probe_max_ms | round) ms" end) | \($s[0].startup_s * 100 | round / 100) s | \($s[0].rss_kib / 1024 | round) MiB |"' "$r"
        done
    } | tee "$OUT/meta.md"
}

# ---------------------------------------------------------------- POP
# Apache's proxy in cluster mode in front of the running target.
start_proxy() {
    local conf="$RUN/proxy.json"
    port_open "$PROXY_PORT" && die "port $PROXY_PORT on 127.0.0.1 is taken (set RMQ_BENCH_PROXY_PORT)"
    printf '{"rocketMQClusterName":"DefaultCluster","grpcServerPort":%d,"remotingListenPort":%d}\n' \
        "$PROXY_PORT" "$((PROXY_PORT - 1))" >"$conf"
    ROCKETMQ_HOME="$RUN/home" java "${PROXY_JVM[@]}" "${JAVA_OPENS[@]}" -Duser.home="$RUN/home" \
        -Drocketmq.home.dir="$RUN/home" -cp "$CACHE/proxy-$PROXY_VERSION/lib/*" \
        org.apache.rocketmq.proxy.ProxyStartup -pm cluster -pc "$conf" \
        -n "127.0.0.1:$NAMESRV_PORT" >"$RUN/proxy.out" 2>&1 &
    PROXY_PID=$!
    track "$PROXY_PID"
    wait_ready "rocketmq-proxy" "$PROXY_PID" "$PROXY_PORT" "$RUN/proxy.out" \
        "rocketmq-proxy startup successfully" "$START_TIMEOUT_S"
}

# One target: fill its topic, put the proxy in front, run the POP load.
pop_session() { # <target>
    local target=$1 flush=ASYNC_FLUSH
    local report="$OUT/reports/pop-$target.json" logf="$OUT/logs/pop-$target.err"
    log "$target: starting (POP through the proxy)"
    start_target "$target" "$flush"
    log "$target: filling BenchTopic-0 with $POP_FILL messages"
    RUST_LOG=warn run_tracked target/release/rmq-bench produce --broker "127.0.0.1:$BROKER_PORT" \
        --queues "$QUEUES" --consumers 0 --size 1024 --messages "$POP_FILL" --producers 4 \
        --mode async --inflight 16 --warmup >"$OUT/logs/pop-$target-fill.out" 2>&1 ||
        die "filling $target failed (log: $OUT/logs/pop-$target-fill.out)"
    start_proxy
    run_windowed "POP load on $target" "$report" "$logf" "$PROXY_PID" \
        java "${LOAD_JVM[@]}" -Duser.home="$RUN/home" -cp "$CACHE/load/classes:$CACHE/load/lib/*" \
        rmqbench.PopLoad --endpoint "127.0.0.1:$PROXY_PORT" --topic BenchTopic-0 \
        --namesrv "127.0.0.1:$NAMESRV_PORT" --broker "127.0.0.1:$BROKER_PORT" \
        --warmup "$WARM_S" --duration "$DURATION_S"
    printf '{"target":"%s","broker_cpu_ticks":%d,"proxy_cpu_ticks":%d,"clk_tck":%d,"rss_hwm_kib":%d}\n' \
        "$target" "$WIN_BROKER_TICKS" "$WIN_OTHER_TICKS" "$CLK_TCK" "$(rss_hwm_kib "$BROKER_PID")" \
        >>"$OUT/pop-cpu.jsonl"
    log "$target: $(jq -r '"\(.acked) acked, \(.msgs_per_s) msgs/s, \(.empty_receives) empty receives, \(.errors) errors"' "$report")"
    stop_pid "$PROXY_PID"
    PROXY_PID=""
    stop_target "$target" "$flush"
}

# The --pop table: one row per target, ratios to apache-5.3.3.
pop_summary() {
    local t r
    {
        echo "| target | msgs/s | broker CPU per msg | proxy CPU per msg | receive p99 | empty receives | errors | msgs/s vs apache-5.3.3 | broker CPU vs apache-5.3.3 |"
        echo "|---|---|---|---|---|---|---|---|---|"
        for t in "${TARGETS[@]}"; do
            r="$OUT/reports/pop-$t.json"
            [ -s "$r" ] || continue
            jq -r --arg t "$t" \
                --slurpfile c <(grep "\"$t\"" "$OUT/pop-cpu.jsonl") \
                --slurpfile b <(if [ -s "$OUT/reports/pop-apache-5.3.3.json" ]; then
                    cat "$OUT/reports/pop-apache-5.3.3.json"; else echo null; fi) \
                --slurpfile bc <(grep '"apache-5.3.3"' "$OUT/pop-cpu.jsonl" || echo null) '
                def us(ticks): if .acked > 0 then ticks / $c[0].clk_tck * 1e6 / .acked else null end;
                def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
                us($c[0].broker_cpu_ticks) as $bus
                | (if $b[0] == null or $b[0].acked == 0 then null else $bc[0].broker_cpu_ticks / $bc[0].clk_tck * 1e6 / $b[0].acked end) as $base_us
                | "| \($t) | \(.msgs_per_s | round) | \($bus | r2) us | \(us($c[0].proxy_cpu_ticks) | r2) us | \(.receive_p99_us / 1000 | r2) ms | \(.empty_receives) | \(.errors) | \(if $b[0] == null then "-" else (.msgs_per_s / $b[0].msgs_per_s | r2) + "x" end) | \(if $base_us == null or $bus == null then "-" else ($bus / $base_us | r2) + "x" end) |"' "$r"
        done
    } | tee "$OUT/pop.md"
}

# ---------------------------------------------------------------- gRPC
# apache-5.3.3 in local mode: its NameServer as for the other loads, then
# broker and proxy in one JVM (ProxyStartup -pm local) on $RUN/broker.conf.
start_apache_local() {
    local v=5.3.3
    local common=("${JAVA_OPENS[@]}" -Duser.home="$RUN/home" -Drocketmq.home.dir="$RUN/home")
    port_open "$PROXY_PORT" && die "port $PROXY_PORT on 127.0.0.1 is taken (set RMQ_BENCH_PROXY_PORT)"
    start_apache_namesrv apache-5.3.3 ASYNC_FLUSH
    printf '{"rocketMQClusterName":"DefaultCluster","grpcServerPort":%d,"remotingListenPort":%d}\n' \
        "$PROXY_PORT" "$((PROXY_PORT - 1))" >"$RUN/proxy.json"
    ROCKETMQ_HOME="$RUN/home" java "${BROKER_JVM[@]}" "${common[@]}" \
        -Xlog:gc:file="$RUN/gc.log" -cp "$CACHE/proxy-$PROXY_VERSION/lib/*" \
        org.apache.rocketmq.proxy.ProxyStartup -pm local -pc "$RUN/proxy.json" \
        -bc "$RUN/broker.conf" -n "127.0.0.1:$NAMESRV_PORT" >"$RUN/broker.out" 2>&1 &
    BROKER_PID=$!
    track "$BROKER_PID"
    wait_ready "broker + proxy $v (local mode)" "$BROKER_PID" "$PROXY_PORT" "$RUN/broker.out" \
        "rocketmq-proxy startup successfully" "$START_TIMEOUT_S"
    port_open "$BROKER_PORT" || die "the local-mode broker is not on $BROKER_PORT (log: $RUN/broker.out)"
}

# The target's gRPC endpoint.
grpc_endpoint() { # <target>
    case "$1" in
    apache-*) echo "127.0.0.1:$PROXY_PORT" ;;
    ours-*) echo "127.0.0.1:$OURS_GRPC_PORT" ;;
    esac
}

# One --grpc load on the running target (see the header for each).
run_grpc_load() { # <load> <target>
    local load=$1 target=$2 flush=ASYNC_FLUSH endpoint
    endpoint=$(grpc_endpoint "$target")
    local report="$OUT/reports/$load-$target.json" logf="$OUT/logs/$load-$target.err"
    local java=(java "${LOAD_JVM[@]}" -Duser.home="$RUN/home" -cp "$CACHE/load/classes:$CACHE/load/lib/*")
    case "$load" in
    R1)
        run_java_load R1 "$target" "$flush" 1024
        return
        ;;
    G1)
        run_windowed "G1 on $target" "$report" "$logf" "$NAMESRV_PID" "${java[@]}" rmqbench.GrpcLoad \
            --endpoint "$endpoint" --topic GrpcBench --queues "$QUEUES" --threads 64 --size 1024 \
            --namesrv "127.0.0.1:$NAMESRV_PORT" --broker "127.0.0.1:$BROKER_PORT" \
            --warmup "$WARM_S" --duration "$DURATION_S"
        ;;
    G2)
        log "$target: filling BenchTopic-0 with $GRPC_FILL messages"
        RUST_LOG=warn run_tracked target/release/rmq-bench produce --broker "127.0.0.1:$BROKER_PORT" \
            --queues "$QUEUES" --consumers 0 --size 1024 --messages "$GRPC_FILL" --producers 4 \
            --mode async --inflight 16 --warmup >"$OUT/logs/G2-$target-fill.out" 2>&1 ||
            die "filling $target failed (log: $OUT/logs/G2-$target-fill.out)"
        run_windowed "G2 on $target" "$report" "$logf" "$NAMESRV_PID" "${java[@]}" rmqbench.PopLoad \
            --endpoint "$endpoint" --topic BenchTopic-0 \
            --namesrv "127.0.0.1:$NAMESRV_PORT" --broker "127.0.0.1:$BROKER_PORT" \
            --warmup "$WARM_S" --duration "$DURATION_S"
        ;;
    esac
    record "$load" "$target" java "$flush" "$report" "$WIN_BROKER_TICKS" "$WIN_OTHER_TICKS"
    log "$load on $target: $(jq -r '"\(.sent // .acked) messages, \(.msgs_per_s) msgs/s, p99 \(.p99_us // .receive_p99_us) us, \(.errors) errors"' "$report")"
}

# One target: start, warm up over remoting, then the gRPC loads in order.
grpc_session() { # <target>
    local target=$1 flush=ASYNC_FLUSH l
    log "$target: starting (gRPC)"
    RUN="$WORK/$target-grpc"
    mkdir -p "$RUN/store" "$RUN/home"
    check_ports_free
    case "$target" in
    apache-*) start_apache_local ;;
    ours-*) start_ours "$target" "$flush" ;;
    esac
    warm_up "$target" "$flush"
    for l in "${GRPC_LOADS[@]}"; do
        contains "$l" "${LOADS[@]}" || continue
        run_grpc_load "$l" "$target"
    done
    stop_target "$target" grpc
}

# Each --grpc record with its report's figures: messages/s, p99 and the
# broker's CPU per message (us).
grpc_rows() {
    local rec
    while IFS= read -r rec; do
        jq -c --argjson rec "$rec" '
            (.sent // .acked) as $n
            | $rec + {rate: .msgs_per_s, p99_us: (.p99_us // .receive_p99_us),
                cpu_us: (if $n > 0 then $rec.broker_cpu_ticks / $rec.clk_tck * 1e6 / $n else null end)}' \
            "$(jq -r .report <<<"$rec")"
    done <"$OUT/records.jsonl"
}

# The --grpc table: a row per load and target; ratios to apache-5.3.3's row
# of the same load, and G1's CPU per message over R1's on the same target.
grpc_summary() {
    {
        echo "| load | target | msgs/s | p99 | broker CPU per msg | RSS max | msgs/s vs apache-5.3.3 | CPU vs apache-5.3.3 | RSS vs apache-5.3.3 | gRPC/remoting CPU |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        grpc_rows | jq -rs '
            def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
            def ratio(a; b): if a == null or b == null or b == 0 then "-" else (a / b | r2) + "x" end;
            . as $rows
            | $rows[]
            | . as $r
            | ([ $rows[] | select(.load == $r.load and .target == "apache-5.3.3") ][0]) as $base
            | ([ $rows[] | select(.load == "R1" and .target == $r.target) ][0]) as $rem
            | "| \($r.load) | \($r.target) | \($r.rate | round) | \($r.p99_us / 1000 | r2) ms | \($r.cpu_us | r2) us | \($r.rss_hwm_kib / 1024 | round) MiB | \(ratio($r.rate; $base.rate)) | \(ratio($r.cpu_us; $base.cpu_us)) | \(ratio($r.rss_hwm_kib; $base.rss_hwm_kib)) | \(if $r.load == "G1" then ratio($r.cpu_us; $rem.cpu_us) else "-" end) |"'
    } | tee "$OUT/grpc.md"
}

# ---------------------------------------------------------------- LMQ
# Refuses to fill a store with less than LMQ_MIN_FREE_GB free under it.
check_free_disk() { # <folder>
    local kib
    kib=$(df -Pk "$1" | awk 'NR == 2 { print $4 }')
    [ -n "$kib" ] || die "cannot read the free space under $1"
    if [ "$kib" -lt $((LMQ_MIN_FREE_GB * 1024 * 1024)) ]; then
        die "--lmq: $((kib / 1024 / 1024)) GB free under $1, less than $LMQ_MIN_FREE_GB GB (RMQ_BENCH_LMQ_MIN_FREE_GB)"
    fi
}

# How many LMQs <target> is measured with.
lmq_count() { # <target>
    if [ "$1" = ours-file ]; then echo "$LMQ_FILE_LMQS"; else echo "$LMQ_LMQS"; fi
}

# One target: start with LMQ on, warm up, run LmqLoad (send window,
# dispatch, sample check).
lmq_session() { # <target>
    local target=$1 flush=ASYNC_FLUSH lmqs
    lmqs=$(lmq_count "$target")
    local report="$OUT/reports/lmq-$target.json" logf="$OUT/logs/lmq-$target.err"
    log "$target: starting (LMQ: $LMQ_MESSAGES messages x $LMQ_FANOUT of $lmqs LMQs)"
    start_target "$target" "$flush"
    warm_up "$target" "$flush"
    check_free_disk "$RUN"
    run_windowed "LMQ load on $target" "$report" "$logf" "$NAMESRV_PID" \
        java "${LOAD_JVM[@]}" "${JAVA_OPENS[@]}" -Duser.home="$RUN/home" \
        -cp "$CACHE/load/classes:$CACHE/load/lib/*" rmqbench.LmqLoad \
        --namesrv "127.0.0.1:$NAMESRV_PORT" --broker "127.0.0.1:$BROKER_PORT" \
        --topic LmqParent --queues "$QUEUES" --threads "$LMQ_THREADS" --size 256 \
        --warmup "$CLIENT_WARM_S" --messages "$LMQ_MESSAGES" --fan-out "$LMQ_FANOUT" \
        --lmqs "$lmqs" --sample "$LMQ_SAMPLE"
    printf '{"target":"%s","lmqs":%d,"broker_cpu_ticks":%d,"dispatched_cpu_ticks":%s,"namesrv_cpu_ticks":%s,"clk_tck":%d,"rss_hwm_kib":%d}\n' \
        "$target" "$lmqs" "$WIN_BROKER_TICKS" "$WIN_DISPATCHED_TICKS" "$WIN_OTHER_TICKS" "$CLK_TCK" \
        "$(rss_hwm_kib "$BROKER_PID")" >>"$OUT/lmq-cpu.jsonl"
    log "$target: $(jq -r '"\(.sent) sent in \(.seconds) s, \(.msgs_per_s) msgs/s, \(.errors) errors, \(.exact) of \(.sampled) sampled LMQs exact\(if .first_mismatch then "; first mismatch: \(.first_mismatch)" else "" end)"' "$report")"
    stop_target "$target" "$flush"
}

# The --lmq table: one row per target, ratios to LMQ_BASE.
lmq_summary() {
    local t r
    {
        echo "| target | LMQs | send s | msgs/s | send p99 | broker CPU s (send window) | CPU per msg | CPU s to dispatched | dispatched after last send | RSS max | sampled LMQs exact | msgs/s vs $LMQ_BASE | CPU vs $LMQ_BASE |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        for t in "${TARGETS[@]}"; do
            r="$OUT/reports/lmq-$t.json"
            [ -s "$r" ] || continue
            jq -r --arg t "$t" --arg base "$LMQ_BASE" \
                --slurpfile c <(grep "\"$t\"" "$OUT/lmq-cpu.jsonl") \
                --slurpfile b <(if [ -s "$OUT/reports/lmq-$LMQ_BASE.json" ]; then
                    cat "$OUT/reports/lmq-$LMQ_BASE.json"; else echo null; fi) \
                --slurpfile bc <(grep "\"$LMQ_BASE\"" "$OUT/lmq-cpu.jsonl" || echo null) '
                def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
                def r1: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
                def sec(ticks): if ticks == null then null else ticks / $c[0].clk_tck end;
                (if .sent > 0 then sec($c[0].broker_cpu_ticks) * 1e6 / .sent else null end) as $us
                | (if $b[0] == null or $b[0].sent == 0 then null
                   else $bc[0].broker_cpu_ticks / $bc[0].clk_tck * 1e6 / $b[0].sent end) as $base_us
                | "| \($t) | \(.lmqs) | \(.seconds | r2) | \(.msgs_per_s | round) | \(.p99_us / 1000 | r2) ms | \(sec($c[0].broker_cpu_ticks) | r1) | \($us | r2) us | \(sec($c[0].dispatched_cpu_ticks) | r1) | \(if .dispatch_s == null then "not within the timeout" else "\(.dispatch_s | r2) s" end) | \($c[0].rss_hwm_kib / 1024 | round) MiB | \(.exact) of \(.sampled)\(if .errors > 0 then " (\(.errors) send errors)" else "" end) | \(if $b[0] == null or $t == $base then "-" else (.msgs_per_s / $b[0].msgs_per_s | r2) + "x" end) | \(if $base_us == null or $us == null or $t == $base then "-" else ($us / $base_us | r2) + "x" end) |"' "$r"
        done
        echo
        echo "$LMQ_MESSAGES messages of 256 B, each to $LMQ_FANOUT LMQs, $LMQ_THREADS synchronous senders (4.9.7 client); $LMQ_SAMPLE LMQs sampled."
        if contains ours-file "${TARGETS[@]}" && [ "$LMQ_FILE_LMQS" != "$LMQ_LMQS" ]; then
            echo "ours-file ran with $LMQ_FILE_LMQS LMQs, not $LMQ_LMQS (RMQ_BENCH_LMQ_FILE_LMQS): the file backend keeps a folder and a 6 MB file per queue."
        fi
        for t in "${TARGETS[@]}"; do
            r="$OUT/reports/lmq-$t.json"
            [ -s "$r" ] || continue
            jq -r --arg t "$t" 'select(.first_mismatch != null) | "\($t): first mismatch: \(.first_mismatch)"' "$r"
        done
    } | tee "$OUT/lmq.md"
}

# ---------------------------------------------------------------- main
[ -n "$OUT" ] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/bench-vs-apache.XXXXXX")
mkdir -p "$OUT/reports" "$OUT/logs" "$STORE_PARENT"
OUT=$(cd "$OUT" && pwd)
: >"$OUT/records.jsonl"
WORK=$(mktemp -d "$(cd "$STORE_PARENT" && pwd)/bench-vs-apache-run.XXXXXX")

ensure_java_tools
build_load
make_home
for t in "${TARGETS[@]}"; do
    case "$t" in apache-*) fetch_apache "$(apache_version "$t")" ;; esac
done
if [ "$POP" = 1 ] || [ "$GRPC" = 1 ]; then fetch_proxy; fi
ensure_rust

if [ "$LMQ" = 1 ]; then
    command -v jq >/dev/null || die "--lmq needs jq for its table"
    : >"$OUT/lmq-cpu.jsonl"
    EXTRA_CONF=(enableLmq=true enableMultiDispatch=true maxLmqConsumeQueueNum=2000000)
    check_free_disk "$WORK"
    log "LMQ on targets: ${TARGETS[*]}; warm-up ${WARM_S} s; $LMQ_MESSAGES messages x $LMQ_FANOUT LMQs of $LMQ_LMQS (ours-file: $LMQ_FILE_LMQS); out: $OUT"
    for t in "${ALL_TARGETS[@]}"; do
        contains "$t" "${TARGETS[@]}" || continue
        lmq_session "$t"
    done
    echo
    lmq_summary
    exit 0
fi

if [ "$GRPC" = 1 ]; then
    command -v jq >/dev/null || die "--grpc needs jq for its table"
    log "gRPC on targets: ${TARGETS[*]}; loads: ${LOADS[*]}; warm-up ${WARM_S} s, window ${DURATION_S} s; out: $OUT"
    for t in "${ALL_TARGETS[@]}"; do
        contains "$t" "${TARGETS[@]}" || continue
        grpc_session "$t"
    done
    echo
    grpc_summary
    exit 0
fi

if [ "$POP" = 1 ]; then
    : >"$OUT/pop-cpu.jsonl"
    log "POP through the proxy on targets: ${TARGETS[*]}; warm-up ${WARM_S} s, window ${DURATION_S} s; out: $OUT"
    for t in "${ALL_TARGETS[@]}"; do
        contains "$t" "${TARGETS[@]}" || continue
        pop_session "$t"
    done
    echo
    pop_summary
    exit 0
fi

if [ "$META" = 1 ]; then
    : >"$OUT/meta-startup.jsonl"
    log "metadata on targets: ${TARGETS[*]}; warm-up ${WARM_S} s; out: $OUT"
    for t in "${ALL_TARGETS[@]}"; do
        contains "$t" "${TARGETS[@]}" || continue
        meta_session "$t"
    done
    echo
    meta_summary
    exit 0
fi

ASYNC_LOADS=()
SYNC_LOADS=()
for l in "${ALL_LOADS[@]}"; do
    contains "$l" "${LOADS[@]}" || continue
    if [ "$l" = L5 ]; then SYNC_LOADS+=("$l"); else ASYNC_LOADS+=("$l"); fi
done
log "targets: ${TARGETS[*]}; loads: ${LOADS[*]}; warm-up ${WARM_S} s, ${DURATION_S} s a load; out: $OUT"
for t in "${ALL_TARGETS[@]}"; do
    contains "$t" "${TARGETS[@]}" || continue
    if [ "${#ASYNC_LOADS[@]}" -gt 0 ]; then session "$t" ASYNC_FLUSH "${ASYNC_LOADS[@]}"; fi
    if [ "${#SYNC_LOADS[@]}" -gt 0 ]; then session "$t" SYNC_FLUSH "${SYNC_LOADS[@]}"; fi
done

echo
java -cp "$CACHE/load/classes:$CACHE/load/lib/*" rmqbench.Summary \
    "$OUT/records.jsonl" "$OUT" --base "$BASE_TARGET" --pair "$ROCKS_PAIR"
