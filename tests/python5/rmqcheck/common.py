"""What the scenarios share: the two kinds of failure, the output lines, the
client configuration for --endpoint, and the client's logger."""

import logging
import os

# Longest one request may take, in seconds (the client's default is 3).
REQUEST_TIMEOUT_S = 10


class CheckFailed(Exception):
    """A check that did not hold (exit 1)."""


class UsageError(Exception):
    """A missing or malformed argument (exit 64)."""


def out(text):
    """Writes to stdout at once (the process ends through os._exit)."""
    os.write(1, text.encode("utf-8"))


def line(kind, msg_id, tag, keys, body):
    out(f"{kind}\t{msg_id}\t{tag}\t{keys}\t{body}\n")


def keys_of(m):
    return " ".join(sorted(m.keys))


def body_of(m):
    return m.body.decode("utf-8")


def print_received(m):
    """Prints `RECV <tab> msgId <tab> tag <tab> keys <tab> body`."""
    line("RECV", m.message_id, m.tag or "", keys_of(m), body_of(m))


def required(args, key):
    v = args.get(key, "")
    if v == "":
        raise UsageError(f"missing --{key}")
    return v


def integer(args, key, default=None):
    """A whole number option, `default` when absent."""
    raw = args.get(key)
    if raw is None:
        if default is None:
            raise UsageError(f"missing --{key}")
        return default
    if not raw.isdigit():
        raise UsageError(f"--{key} is a whole number, not {raw}")
    return int(raw)


def seconds(ms):
    """A duration in ms as the client takes it (whole seconds, at least 1)."""
    return max(1, (ms + 999) // 1000)


def config(args):
    """The client configuration: the gRPC endpoint at --endpoint, plain TCP."""
    from rocketmq import ClientConfiguration, Credentials

    return ClientConfiguration(required(args, "endpoint"), Credentials(), request_timeout=REQUEST_TIMEOUT_S)


def quiet_client_log():
    """The client logs to ~/logs/rocketmq_python; its warnings and errors
    go to stderr too."""
    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.getLogger("rocketmq-python-client").addHandler(handler)
