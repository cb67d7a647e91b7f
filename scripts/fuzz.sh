#!/usr/bin/env bash
# Runs every fuzz target of common/fuzz for SECONDS (default 60) each,
# starting from the checked-in corpus (copied, so the repository's corpus
# stays minimal). A crash stops the script; its input lands in
# common/fuzz/artifacts/<target>/ and belongs, once fixed, in
# common/fuzz/regressions/<target>/ (replayed by `cargo test -p rmq-common`).
# Uses the stable toolchain without a sanitizer (--sanitizer none); Rust's
# own checks (bounds, overflow in debug assertions) catch the bugs.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# FUZZ_TARGETS="grpc_request" scripts/fuzz.sh 300: only the targets named.
TARGETS="${FUZZ_TARGETS:-frame header_json header_binary record batch properties json_body sql92 acl hostile_client grpc_request}"
# hostile_client and grpc_request drive a real broker process (see
# fuzz_targets/broker_child.rs): the release binary the test command builds.
if [ -z "${FUZZ_BROKER_BIN:-}" ]; then
    cargo build --release -q -p rmq-broker --bin rmq-broker
    export FUZZ_BROKER_BIN="$PWD/target/release/rmq-broker"
fi
cd common/fuzz
cargo fuzz build --sanitizer none --debug-assertions
for t in $TARGETS; do
    work="target/fuzz-corpus/$t"
    mkdir -p "$work"
    cp -n corpus/"$t"/* "$work"/ 2>/dev/null || true
    echo "== fuzz $t for ${SECONDS_PER_TARGET}s"
    cargo fuzz run --sanitizer none --debug-assertions "$t" "$work" -- \
        -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 2>&1 | tail -4
    # cargo fuzz run exits non-zero on a crash; pipefail stops the script.
done
echo "fuzzing: no crash in $TARGETS"
