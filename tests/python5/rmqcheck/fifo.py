"""FIFO receive of a FIFO group: --count messages sent by `send
--message-groups`, body `<mode>-body-i`. Each message group must arrive in
send order (ascending i), each message on its first delivery, and no
message may be handed out while an earlier one of its group is unacked:
every round receives --batch (default 2), receives again with those still
unacked, then acks everything."""

from .common import CheckFailed, body_of, integer, print_received, seconds
from .consumer import simple_consumer


def index_of(body):
    tail = body.rsplit("-", 1)[-1]
    if not tail.isdigit():
        raise CheckFailed(f"body {body!r} does not end in -<index>")
    return int(tail)


def check(m, seen, last_of_group, busy):
    print_received(m)
    group = m.message_group
    if not group:
        raise CheckFailed(f"{m.message_id} has no message group")
    if m.message_id in seen:
        raise CheckFailed(f"received twice: {m.message_id}")
    seen.add(m.message_id)
    if m.delivery_attempt != 1:
        raise CheckFailed(f"{m.message_id} delivery attempt {m.delivery_attempt}")
    if group in busy:
        raise CheckFailed(f"{m.message_id} of {group} handed out while an earlier one of its group is unacked")
    index = index_of(body_of(m))
    last = last_of_group.get(group)
    if last is not None and last >= index:
        raise CheckFailed(f"{group}: {body_of(m)} after index {last}")
    last_of_group[group] = index


def run(args):
    count = integer(args, "count")
    batch = integer(args, "batch", 2)
    invisible = seconds(integer(args, "invisible-ms", 30000))
    last_of_group = {}
    seen = set()
    consumer = simple_consumer(args)
    try:
        while len(seen) < count:
            unacked = []
            busy = set()
            for _ in range(2):
                before = set(busy)
                for m in consumer.receive(batch, invisible):
                    check(m, seen, last_of_group, before)
                    busy.add(m.message_group)
                    unacked.append(m)
            for m in unacked:
                consumer.ack(m)
    finally:
        consumer.shutdown()
