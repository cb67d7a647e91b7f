"""SimpleConsumer receive and ack: receives (invisible for --invisible-ms,
default 15 s) and acks until it has --count distinct messages, each on its
first delivery and each once; then one more receive must find nothing, and
so must every receive for --linger-ms more (default 0; longer than the
invisible time, it shows that the acks held)."""

import time

from .common import CheckFailed, integer, print_received, seconds
from .consumer import simple_consumer


def run(args):
    count = integer(args, "count")
    invisible = seconds(integer(args, "invisible-ms", 15000))
    linger_ms = integer(args, "linger-ms", 0)
    seen = set()
    consumer = simple_consumer(args)
    try:
        while len(seen) < count:
            for m in consumer.receive(16, invisible):
                print_received(m)
                if m.message_id in seen:
                    raise CheckFailed(f"received twice: {m.message_id}")
                seen.add(m.message_id)
                if m.delivery_attempt != 1:
                    raise CheckFailed(f"{m.message_id} delivery attempt {m.delivery_attempt}, not 1")
                consumer.ack(m)
        quiet_until = time.monotonic() + linger_ms / 1000
        while True:
            extra = consumer.receive(16, invisible)
            for m in extra:
                print_received(m)
            if extra:
                raise CheckFailed(
                    f"{len(extra)} messages past the {count} expected, first {extra[0].message_id}"
                    f" (delivery attempt {extra[0].delivery_attempt})"
                )
            if time.monotonic() >= quiet_until:
                break
    finally:
        consumer.shutdown()
