'use strict';
// A started SimpleConsumer of --group on --topic with the tag filter --filter
// (default `*`), for the consuming scenarios.

const { SimpleConsumer } = require('rocketmq-client-nodejs');
const { required, clientOptions } = require('./common');

/** Long polling of one receive (the proxy clamps it to 5..20 s). */
const AWAIT_MS = 5000;

module.exports = async function simpleConsumer(args) {
  const consumer = new SimpleConsumer({
    ...clientOptions(args),
    consumerGroup: required(args, 'group'),
    subscriptions: new Map([[required(args, 'topic'), args.filter ?? '*']]),
    awaitDuration: AWAIT_MS,
  });
  await consumer.startup();
  return consumer;
};
