"""Transactions with check-back on the TRANSACTION topic --topic: a producer
with a TransactionChecker sends, each in its own transaction, --commit
messages it commits at once, --rollback it rolls back at once, and
--check-commit and --check-rollback it leaves unknown, so that the broker's
check-back asks its checker, which commits the first kind and rolls back the
second. Message i of kind k has tag k, keys `tx-key-k-i` and body
`tx-body-k-i`; each is printed once sent (SENT line) and each check as
`CHECK <tab> msgId <tab> tag <tab> keys <tab> body <tab> resolution <tab>
topic`. Once every unknown one was checked, a SimpleConsumer of --group
receives and acks (RECV lines) until it has as many as were committed, then
one more receive must find nothing."""

import threading

from rocketmq import Message, Producer, TransactionChecker, TransactionResolution

from .common import CheckFailed, body_of, config, integer, keys_of, line, out, print_received, required
from .consumer import simple_consumer

KINDS = (("commit", "commit"), ("rollback", "rollback"), ("checkCommit", "check-commit"), ("checkRollback", "check-rollback"))
INVISIBLE_S = 15


class Checker(TransactionChecker):
    """Commits `checkCommit`, rolls back `checkRollback`; records each id."""

    def __init__(self):
        self.lock = threading.Condition()
        self.checked = set()

    def check(self, message):
        tag = message.tag or ""
        if tag == "checkCommit":
            resolution, name = TransactionResolution.COMMIT, "COMMIT"
        elif tag == "checkRollback":
            resolution, name = TransactionResolution.ROLLBACK, "ROLLBACK"
        else:
            resolution, name = TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED, "UNKNOWN"
        out(f"CHECK\t{message.message_id}\t{tag}\t{keys_of(message)}\t{body_of(message)}\t{name}\t{message.topic}\n")
        with self.lock:
            self.checked.add(message.message_id)
            self.lock.notify_all()
        return resolution

    def wait_for(self, ids):
        """Until every one of `ids` was checked (the run's watchdog bounds it)."""
        with self.lock:
            self.lock.wait_for(lambda: ids <= self.checked)


def run(args):
    topic = required(args, "topic")
    counts = {kind: integer(args, option, 0) for kind, option in KINDS}
    checker = Checker()
    unknown = set()
    producer = Producer(config(args), (topic,), checker)
    producer.startup()
    try:
        for kind, _ in KINDS:
            for i in range(counts[kind]):
                keys, body = f"tx-key-{kind}-{i}", f"tx-body-{kind}-{i}"
                m = Message()
                m.topic = topic
                m.tag = kind
                m.keys = keys
                m.body = body.encode("utf-8")
                tx = producer.begin_transaction()
                receipt = producer.send(m, tx)
                line("SENT", receipt.message_id, kind, keys, body)
                if kind == "commit":
                    tx.commit()
                elif kind == "rollback":
                    tx.rollback()
                else:
                    unknown.add(receipt.message_id)
        checker.wait_for(unknown)
        want = counts["commit"] + counts["checkCommit"]
        seen = set()
        consumer = simple_consumer(args)
        try:
            while len(seen) < want:
                for m in consumer.receive(16, INVISIBLE_S):
                    print_received(m)
                    if m.message_id in seen:
                        raise CheckFailed(f"received twice: {m.message_id}")
                    seen.add(m.message_id)
                    consumer.ack(m)
            extra = consumer.receive(16, INVISIBLE_S)
            for m in extra:
                print_received(m)
            if extra:
                raise CheckFailed(f"{len(extra)} messages past the {want} committed, first {extra[0].message_id}")
        finally:
            consumer.shutdown()
    finally:
        producer.shutdown()
