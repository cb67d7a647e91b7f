'use strict';
// Delay by delivery timestamp: a SimpleConsumer of --group on the DELAY
// topic --topic is started, then one message per delay of --delays-ms
// (comma separated) is sent with deliveryTimestamp now + delay. Message i
// has tag `delay`, keys `delay-key-i` and body `delay-body-<delay>`. Each is
// printed once sent (SENT line) and once received and acked as
// `RECV <tab> msgId <tab> tag <tab> keys <tab> body <tab> sentMs <tab> dueMs
// <tab> receivedMs <tab> deliveryTimestamp` (the last as the consumer sees
// it, -1 when absent). A message received twice fails the run, and so does
// one more after all arrived; the timing bounds are checked by the caller.

const { Producer } = require('rocketmq-client-nodejs');
const simpleConsumer = require('./consumer');
const { CheckFailed, UsageError, line, out, required, clientOptions } = require('./common');

/** Invisible time of a received message (acked at once). */
const INVISIBLE_MS = 15000;

function delaysOf(args) {
  return required(args, 'delays-ms').split(',').map(d => {
    const n = Number(d.trim());
    if (!Number.isInteger(n) || n < 0) {
      throw new UsageError(`--delays-ms holds whole numbers, not ${d}`);
    }
    return n;
  });
}

module.exports = async function delay(args) {
  const topic = required(args, 'topic');
  const delays = delaysOf(args);
  const times = new Map();
  const consumer = await simpleConsumer(args);
  const producer = new Producer({ ...clientOptions(args), topic });
  try {
    await producer.startup();
    for (let i = 0; i < delays.length; i++) {
      const keys = `delay-key-${i}`;
      const body = `delay-body-${delays[i]}`;
      const sent = Date.now();
      const due = sent + delays[i];
      const receipt = await producer.send({
        topic,
        tag: 'delay',
        keys: [keys],
        body: Buffer.from(body),
        deliveryTimestamp: new Date(due),
      });
      times.set(receipt.messageId, [sent, due]);
      line('SENT', receipt.messageId, 'delay', keys, body);
    }
    let received = 0;
    while (received < delays.length) {
      for (const m of await consumer.receive(16, INVISIBLE_MS)) {
        const now = Date.now();
        const t = times.get(m.messageId);
        if (t === undefined) {
          throw new CheckFailed(`received twice or never sent: ${m.messageId}`);
        }
        times.delete(m.messageId);
        received++;
        const ts = m.deliveryTimestamp ? m.deliveryTimestamp.getTime() : -1;
        out(`RECV\t${m.messageId}\t${m.tag ?? ''}\t${m.keys.join(' ')}\t${m.body.toString('utf8')}`
          + `\t${t[0]}\t${t[1]}\t${now}\t${ts}\n`);
        await consumer.ack(m);
      }
    }
    const extra = await consumer.receive(16, INVISIBLE_MS);
    if (extra.length > 0) {
      throw new CheckFailed(`${extra.length} messages past the ${delays.length} sent, first ${extra[0].messageId}`);
    }
  } finally {
    await producer.shutdown();
    await consumer.shutdown();
  }
};
