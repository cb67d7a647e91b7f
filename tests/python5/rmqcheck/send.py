"""Sends --count messages with the producer to --endpoint: --mode sync one
after the other, async all at once and then waits for every receipt.
Message i has tag --tag, keys `<mode>-key-i` and body `<mode>-body-i`; with
--message-groups K (FIFO topics) it is in message group `group-(i mod K)`."""

from rocketmq import Message, Producer

from .common import UsageError, config, integer, line, required


def run(args):
    topic = required(args, "topic")
    count = integer(args, "count", 1)
    tag = args.get("tag", "TagA")
    mode = args.get("mode", "sync")
    groups = integer(args, "message-groups", 0)
    if mode not in ("sync", "async"):
        raise UsageError(f"--mode is sync or async, not {mode}")
    messages = []
    for i in range(count):
        m = Message()
        m.topic = topic
        m.tag = tag
        m.keys = f"{mode}-key-{i}"
        m.body = f"{mode}-body-{i}".encode("utf-8")
        if groups > 0:
            m.message_group = f"group-{i % groups}"
        messages.append((m, f"{mode}-key-{i}", f"{mode}-body-{i}"))
    producer = Producer(config(args), (topic,))
    producer.startup()
    try:
        if mode == "sync":
            receipts = [producer.send(m) for m, _, _ in messages]
        else:
            futures = [producer.send_async(m) for m, _, _ in messages]
            receipts = [f.result() for f in futures]
        for (_, keys, body), r in zip(messages, receipts):
            line("SENT", r.message_id, tag, keys, body)
    finally:
        producer.shutdown()
