"""Delay by delivery timestamp: a SimpleConsumer of --group on the DELAY
topic --topic is started, then one message per delay of --delays-ms (comma
separated) is sent with delivery timestamp now + delay. Message i has tag
`delay`, keys `delay-key-i` and body `delay-body-<delay>`. Each is printed
once sent (SENT line) and once received and acked as `RECV <tab> msgId <tab>
tag <tab> keys <tab> body <tab> sentMs <tab> dueMs <tab> receivedMs <tab>
deliveryTimestamp` (-1 when absent). A message received twice fails the
run, and so does one more after all arrived; the caller checks the times.

This client takes the delivery timestamp in whole seconds (it goes into
the protobuf Timestamp's seconds as given), so each message is sent on a
whole second and the delays are whole seconds too."""

import time

from rocketmq import Message, Producer

from .common import CheckFailed, UsageError, body_of, config, keys_of, line, out, required
from .consumer import simple_consumer

INVISIBLE_S = 15


def now_ms():
    return time.time_ns() // 1_000_000


def next_whole_second():
    """Sleeps to the next whole second; it, in ms."""
    at = (now_ms() // 1000 + 1) * 1000
    time.sleep(max(0, at - now_ms()) / 1000)
    while now_ms() < at:
        time.sleep(0.001)
    return at


def delays_of(args):
    delays = []
    for d in required(args, "delays-ms").split(","):
        if not d.strip().isdigit() or int(d.strip()) % 1000 != 0:
            raise UsageError(f"--delays-ms holds whole seconds in ms, not {d}")
        delays.append(int(d.strip()))
    return delays


def run(args):
    topic = required(args, "topic")
    delays = delays_of(args)
    times = {}
    consumer = simple_consumer(args)
    producer = Producer(config(args), (topic,))
    try:
        producer.startup()
        for i, delay in enumerate(delays):
            keys, body = f"delay-key-{i}", f"delay-body-{delay}"
            m = Message()
            m.topic = topic
            m.tag = "delay"
            m.keys = keys
            m.body = body.encode("utf-8")
            sent = next_whole_second()
            due = sent + delay
            m.delivery_timestamp = due // 1000
            receipt = producer.send(m)
            times[receipt.message_id] = (sent, due)
            line("SENT", receipt.message_id, "delay", keys, body)
        received = 0
        while received < len(delays):
            for m in consumer.receive(16, INVISIBLE_S):
                now = now_ms()
                t = times.pop(m.message_id, None)
                if t is None:
                    raise CheckFailed(f"received twice or never sent: {m.message_id}")
                received += 1
                ts = m.delivery_timestamp if m.delivery_timestamp is not None else -1
                out(f"RECV\t{m.message_id}\t{m.tag or ''}\t{keys_of(m)}\t{body_of(m)}\t{t[0]}\t{t[1]}\t{now}\t{ts}\n")
                consumer.ack(m)
        extra = consumer.receive(16, INVISIBLE_S)
        if extra:
            raise CheckFailed(f"{len(extra)} messages past the {len(delays)} sent, first {extra[0].message_id}")
    finally:
        producer.shutdown()
        consumer.shutdown()
