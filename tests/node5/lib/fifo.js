'use strict';
// FIFO receive of a FIFO group: --count messages sent by `send
// --message-groups`, body `<mode>-body-i`. Each message group must arrive in
// send order (ascending i), each message on its first delivery, and no
// message may be handed out while an earlier one of its group is unacked:
// every round receives --batch (default 2), receives again with those still
// unacked, then acks everything. One receive may hand out several messages
// of a group, in order.

const simpleConsumer = require('./consumer');
const { CheckFailed, integer, printReceived } = require('./common');

/** The i of body `<mode>-body-i`. */
function indexOf(body) {
  const i = Number(body.slice(body.lastIndexOf('-') + 1));
  if (!Number.isInteger(i)) {
    throw new CheckFailed(`body ${JSON.stringify(body)} does not end in -<index>`);
  }
  return i;
}

/** The checks on one received message; `busy`: groups with one unacked. */
function check(m, seen, lastOfGroup, busy) {
  printReceived(m);
  const id = m.messageId;
  const group = m.messageGroup;
  if (!group) {
    throw new CheckFailed(`${id} has no message group`);
  }
  if (seen.has(id)) {
    throw new CheckFailed(`received twice: ${id}`);
  }
  seen.add(id);
  if (m.deliveryAttempt !== 1) {
    throw new CheckFailed(`${id} delivery attempt ${m.deliveryAttempt}`);
  }
  if (busy.has(group)) {
    throw new CheckFailed(`${id} of ${group} handed out while an earlier one of its group is unacked`);
  }
  const body = m.body.toString('utf8');
  const index = indexOf(body);
  const last = lastOfGroup.get(group);
  if (last !== undefined && last >= index) {
    throw new CheckFailed(`${group}: ${body} after index ${last}`);
  }
  lastOfGroup.set(group, index);
}

module.exports = async function fifo(args) {
  const count = integer(args, 'count');
  const batch = integer(args, 'batch', 2);
  const invisibleMs = integer(args, 'invisible-ms', 30000);
  const lastOfGroup = new Map();
  const seen = new Set();
  const consumer = await simpleConsumer(args);
  try {
    while (seen.size < count) {
      const unacked = [];
      const busy = new Set();
      for (let pass = 0; pass < 2; pass++) {
        const before = new Set(busy);
        for (const m of await consumer.receive(batch, invisibleMs)) {
          check(m, seen, lastOfGroup, before);
          busy.add(m.messageGroup);
          unacked.push(m);
        }
      }
      for (const m of unacked) {
        await consumer.ack(m);
      }
    }
  } finally {
    await consumer.shutdown();
  }
};
