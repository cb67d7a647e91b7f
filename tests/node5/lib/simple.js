'use strict';
// SimpleConsumer receive and ack: receives (invisible for --invisible-ms,
// default 15 s) and acks until it has --count distinct messages, each on its
// first delivery and each once; then one more receive must find nothing, and
// so must every receive for --linger-ms more (default 0; longer than the
// invisible time, it shows that the acks held: an unacked message would come
// back).

const simpleConsumer = require('./consumer');
const { CheckFailed, integer, printReceived } = require('./common');

module.exports = async function simple(args) {
  const count = integer(args, 'count');
  const invisibleMs = integer(args, 'invisible-ms', 15000);
  const lingerMs = integer(args, 'linger-ms', 0);
  const seen = new Set();
  const consumer = await simpleConsumer(args);
  try {
    while (seen.size < count) {
      for (const m of await consumer.receive(16, invisibleMs)) {
        printReceived(m);
        if (seen.has(m.messageId)) {
          throw new CheckFailed(`received twice: ${m.messageId}`);
        }
        seen.add(m.messageId);
        if (m.deliveryAttempt !== 1) {
          throw new CheckFailed(`${m.messageId} delivery attempt ${m.deliveryAttempt}, not 1`);
        }
        await consumer.ack(m);
      }
    }
    if (seen.size !== count) {
      throw new CheckFailed(`received ${seen.size}, not ${count}`);
    }
    const quietUntil = Date.now() + lingerMs;
    do {
      const extra = await consumer.receive(16, invisibleMs);
      extra.forEach(printReceived);
      if (extra.length > 0) {
        throw new CheckFailed(`${extra.length} messages past the ${count} expected, first ${extra[0].messageId}`
          + ` (delivery attempt ${extra[0].deliveryAttempt})`);
      }
    } while (Date.now() < quietUntil);
  } finally {
    await consumer.shutdown();
  }
};
