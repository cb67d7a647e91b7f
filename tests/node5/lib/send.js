'use strict';
// Sends --count messages with the producer to --endpoint: --mode sync
// one after the other, async all at once and then waits for every receipt.
// Message i has tag --tag, keys `<mode>-key-i` and body `<mode>-body-i`;
// with --message-groups K (FIFO topics) it is in message group
// `group-(i mod K)`.

const { Producer } = require('rocketmq-client-nodejs');
const { UsageError, line, required, integer, clientOptions } = require('./common');

module.exports = async function send(args) {
  const topic = required(args, 'topic');
  const count = integer(args, 'count', 1);
  const tag = args.tag ?? 'TagA';
  const mode = args.mode ?? 'sync';
  const groups = integer(args, 'message-groups', 0);
  if (mode !== 'sync' && mode !== 'async') {
    throw new UsageError(`--mode is sync or async, not ${mode}`);
  }
  const messages = [];
  for (let i = 0; i < count; i++) {
    const m = {
      topic,
      tag,
      keys: [`${mode}-key-${i}`],
      body: Buffer.from(`${mode}-body-${i}`),
    };
    if (groups > 0) {
      m.messageGroup = `group-${i % groups}`;
    }
    messages.push(m);
  }
  const producer = new Producer({ ...clientOptions(args), topic });
  await producer.startup();
  try {
    let receipts = [];
    if (mode === 'sync') {
      for (const m of messages) {
        receipts.push(await producer.send(m));
      }
    } else {
      receipts = await Promise.all(messages.map(m => producer.send(m)));
    }
    messages.forEach((m, i) => {
      line('SENT', receipts[i].messageId, tag, m.keys.join(' '), m.body.toString('utf8'));
    });
  } finally {
    await producer.shutdown();
  }
};
