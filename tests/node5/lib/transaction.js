'use strict';
// Transactions with check-back on the TRANSACTION topic --topic: a producer
// with a TransactionChecker sends, each in its own transaction, --commit
// messages it commits at once, --rollback it rolls back at once, and
// --check-commit and --check-rollback it leaves unknown, so that the
// broker's check-back asks its checker, which commits the first kind and
// rolls back the second. Message i of kind k has tag k, keys `tx-key-k-i`
// and body `tx-body-k-i`; each is printed once sent (SENT line) and each
// check as `CHECK <tab> msgId <tab> tag <tab> keys <tab> body <tab>
// resolution <tab> topic`. Once every unknown one was checked, a
// SimpleConsumer of --group receives and acks (RECV lines) until it has as
// many as were committed, then one more receive must find nothing. What was
// received is compared by the caller.

const { Producer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const simpleConsumer = require('./consumer');
const { CheckFailed, line, out, printReceived, required, integer, clientOptions } = require('./common');

const KINDS = ['commit', 'rollback', 'checkCommit', 'checkRollback'];
const OPTIONS = { commit: 'commit', rollback: 'rollback', checkCommit: 'check-commit', checkRollback: 'check-rollback' };
const INVISIBLE_MS = 15000;

/** What the checker answers for a message of tag `tag`, and its name. */
function resolutionOf(tag) {
  if (tag === 'checkCommit') {
    return [TransactionResolution.COMMIT, 'COMMIT'];
  }
  if (tag === 'checkRollback') {
    return [TransactionResolution.ROLLBACK, 'ROLLBACK'];
  }
  return [TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED, 'UNKNOWN'];
}

module.exports = async function transaction(args) {
  const topic = required(args, 'topic');
  const counts = Object.fromEntries(KINDS.map(k => [k, integer(args, OPTIONS[k], 0)]));
  // Ids of the halves left unknown, and of every message checked.
  const unknown = new Set();
  const checkedIds = new Set();
  let sendsDone = false;
  let allChecked;
  const checked = new Promise(resolve => { allChecked = resolve; });
  const settle = () => {
    if (sendsDone && [...unknown].every(id => checkedIds.has(id))) {
      allChecked();
    }
  };
  const checker = {
    async check(m) {
      const tag = m.tag ?? '';
      const [resolution, name] = resolutionOf(tag);
      out(`CHECK\t${m.messageId}\t${tag}\t${m.keys.join(' ')}\t${m.body.toString('utf8')}\t${name}\t${m.topic}\n`);
      checkedIds.add(m.messageId);
      settle();
      return resolution;
    },
  };
  const producer = new Producer({ ...clientOptions(args), topic, checker });
  await producer.startup();
  try {
    for (const kind of KINDS) {
      for (let i = 0; i < counts[kind]; i++) {
        const keys = `tx-key-${kind}-${i}`;
        const body = `tx-body-${kind}-${i}`;
        const tx = producer.beginTransaction();
        const receipt = await producer.send({ topic, tag: kind, keys: [keys], body: Buffer.from(body) }, tx);
        line('SENT', receipt.messageId, kind, keys, body);
        if (kind === 'commit') {
          await tx.commit();
        } else if (kind === 'rollback') {
          await tx.rollback();
        } else {
          unknown.add(receipt.messageId);
        }
      }
    }
    sendsDone = true;
    settle();
    await checked;
    const want = counts.commit + counts.checkCommit;
    const seen = new Set();
    const consumer = await simpleConsumer(args);
    try {
      while (seen.size < want) {
        for (const m of await consumer.receive(16, INVISIBLE_MS)) {
          printReceived(m);
          if (seen.has(m.messageId)) {
            throw new CheckFailed(`received twice: ${m.messageId}`);
          }
          seen.add(m.messageId);
          await consumer.ack(m);
        }
      }
      const extra = await consumer.receive(16, INVISIBLE_MS);
      extra.forEach(printReceived);
      if (extra.length > 0) {
        throw new CheckFailed(`${extra.length} messages past the ${want} committed, first ${extra[0].messageId}`);
      }
    } finally {
      await consumer.shutdown();
    }
  } finally {
    await producer.shutdown();
  }
};
