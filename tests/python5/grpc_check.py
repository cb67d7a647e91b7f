"""Runs one scenario of the stock RocketMQ 5.x gRPC client for Python
(rocketmq-python-client) against a gRPC endpoint, with the arguments, the
output lines and the exit codes of tests/node5/grpc_check.js:

  python grpc_check.py --scenario send --endpoint 127.0.0.1:8081 --topic T \\
      --count 5 --tag TagA --mode sync|async [--message-groups 3]
  python grpc_check.py --scenario simple|fifo --endpoint 127.0.0.1:8081 \\
      --topic T --group G --count 10 [--filter TagA] [--invisible-ms 15000]
      [--linger-ms 0 (simple)] [--batch 2 (fifo)]
  python grpc_check.py --scenario delay ... --group G --delays-ms 3000,6000
  python grpc_check.py --scenario transaction ... --group G --commit 2
      --rollback 2 --check-commit 2 --check-rollback 2
  ... [--timeout-ms 60000]

Each message is one line `SENT|RECV <tab> msgId <tab> tag <tab> keys <tab>
body` (delay adds times to RECV, transaction prints CHECK lines); `PASS
<scenario>` ends a run that did what it was asked (exit 0). A failed check
prints `FAIL <scenario>: why` and exits 1, any other error exits 2, a bad
argument exits 64, and past --timeout-ms a watchdog exits 3. The client's
warnings and errors go to stderr, its whole log to ~/logs/rocketmq_python.
"""

import os
import sys
import threading
import traceback

from rmqcheck.common import CheckFailed, UsageError, out, quiet_client_log

DEFAULT_TIMEOUT_MS = 60000


def scenarios():
    from rmqcheck import delay, fifo, send, simple, transaction

    return {
        "send": send.run,
        "simple": simple.run,
        "fifo": fifo.run,
        "delay": delay.run,
        "transaction": transaction.run,
    }


def parse_args(argv):
    if len(argv) % 2 != 0:
        raise UsageError(f"an option without a value: {argv[-1]}")
    args = {}
    for i in range(0, len(argv), 2):
        if not argv[i].startswith("--"):
            raise UsageError(f"not an option: {argv[i]}")
        args[argv[i][2:]] = argv[i + 1]
    return args


def usage(known, why):
    sys.stderr.write(f"usage: --scenario {'|'.join(known)} ...; {why}\n")
    sys.stderr.flush()
    os._exit(64)


def main():
    known = scenarios()
    try:
        args = parse_args(sys.argv[1:])
        name = args.get("scenario", "")
        if name not in known:
            raise UsageError(f"unknown scenario {name}")
        raw = args.get("timeout-ms", str(DEFAULT_TIMEOUT_MS))
        if not raw.isdigit() or int(raw) <= 0:
            raise UsageError(f"--timeout-ms is a positive integer, not {raw}")
        timeout_ms = int(raw)
    except UsageError as e:
        usage(known, str(e))

    def expired():
        out(f"FAIL {name}: timed out after {timeout_ms} ms\n")
        os._exit(3)

    watchdog = threading.Timer(timeout_ms / 1000, expired)
    watchdog.daemon = True
    watchdog.start()
    quiet_client_log()
    try:
        known[name](args)
        out(f"PASS {name}\n")
        code = 0
    except UsageError as e:
        usage(known, str(e))
    except CheckFailed as e:
        out(f"FAIL {name}: {e}\n")
        code = 1
    except Exception:
        out(f"FAIL {name}: {traceback.format_exc()}\n")
        code = 2
    # The client's threads and channels linger after shutdown.
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
