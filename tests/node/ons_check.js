#!/usr/bin/env node
// Real-client check: the stock `ali-ons` RocketMQ 4.x client (pure
// JavaScript) against our broker, on 127.0.0.1 only.
//
//   node ons_check.js --namesrv 127.0.0.1:PORT --phase 1|2|retry|send|acl|acl-refused
//                     --topic T --group G [--access-key AK --secret-key SK]
//
// With --access-key/--secret-key (both or neither) every producer and
// consumer signs its requests the way ali-ons does (AccessKey, OnsChannel and
// Signature = base64 HMAC-SHA1 over the sorted header values, then the body),
// which is what a broker with plain ACL checks.
//
// Phase 1 sends 1,000 messages (TagA/TagB alternating, distinct keys and
// bodies, a few above 4 KiB so the client zlib-compresses them) to a topic
// that does not exist yet, so the broker creates it on the first send. Then a
// consumer of group G subscribed to `TagA` must receive exactly the 500 TagA
// messages (right bodies and keys, no TagB, no duplicates); it is closed
// cleanly so its offsets are committed.
// Phase 2 (after a broker restart) sends 100 more (50 TagA) and the same group
// must receive exactly the 50 new TagA messages and none of the first 500.
//
// Phase retry sends RETRY_COUNT messages and consumes them as group G with
// maxReconsumeTimes = RETRY_MAX: the message keyed `retry-once` is failed
// (ACTION_RETRY) the first time and must come back once with reconsumeTimes
// 1 through the group's %RETRY% topic; the one keyed `retry-always` is
// failed every time and must be delivered exactly RETRY_MAX + 1 times, then
// go to the DLQ (the Rust test reads it there); the others are consumed once.
//
// Phase send sends SEND_ONLY_COUNT messages to an existing topic and reports
// which broker stored each (the failover test kills one of three brokers and
// runs it again: every send must still succeed, through the client's own
// retry on another broker).
//
// Phase acl (needs the credentials) sends ACL_COUNT messages to an existing
// topic and consumes them as group G (subscribed to `*`): every one must
// arrive once with its body, key and tag, and no request the client made may
// be refused by the broker (response code 16, NO_PERMISSION); messages left
// in the topic by earlier acl runs are counted, not flagged.
//
// Phase acl-refused sends ONE message with credentials the caller made wrong
// (wrong secret, unknown key, a topic the account may not publish to; or no
// credentials at all) and expects the broker to refuse it: ok when the send
// failed with NO_PERMISSION / an "ACL: ..." remark (or the producer could not
// even start for that reason), not ok when the send succeeded or failed for
// another reason. The client's send retries are turned off for this phase.
//
// Prints one JSON summary line on stdout; diagnostics go to stderr.
// Exit codes: 0 success, 1 check failed, 2 bad arguments, 3 a step timed out.
'use strict';

const { Producer, Consumer, Message } = require('ali-ons');

// ---- Bounds (every wait in this script is one of these) --------------------
/** Starting a producer or consumer (route lookup, first connections). */
const START_TIMEOUT_MS = 30_000;
/** Sending all the messages of a phase. */
const SEND_ALL_TIMEOUT_MS = 60_000;
/** Receiving all the expected messages once the consumer started. */
const RECEIVE_TIMEOUT_MS = 90_000;
/** After the expected messages: watch for duplicates/TagB in phase 1. */
const PHASE1_GRACE_MS = 3_000;
/** After the expected messages: watch for old (phase-1) messages in phase 2. */
const PHASE2_GRACE_MS = 5_000;
/** Closing the producer or consumer (offset commit, unregister). */
const CLOSE_TIMEOUT_MS = 20_000;
/** Watchdog over the whole run. */
const OVERALL_TIMEOUT_MS = 180_000;
/** How often the receive loop looks at what arrived. */
const POLL_INTERVAL_MS = 100;

/** Retry phase: messages sent, and the consumer's retry budget. */
const RETRY_COUNT = 4;
const RETRY_MAX = 2;
/** Retry phase: after the expected deliveries, watch for extra ones. */
const RETRY_GRACE_MS = 4_000;
/** Retry phase: how often the client re-reads routes (its default is 30 s;
 * the %RETRY% topic appears only after the consumer's first heartbeat). */
const RETRY_ROUTE_POLL_MS = 1_000;

const PHASE1_COUNT = 1000;
const PHASE2_COUNT = 100;
/** Every LARGE_EVERY-th message gets a body above the client's 4 KiB compression threshold. */
const LARGE_EVERY = 100;
const LARGE_BODY_BYTES = 6 * 1024;
/** The client's default queue count for a topic it creates. */
const QUEUE_SPREAD = 4;
/** ali-ons' response code for TOPIC_NOT_EXIST. */
const TOPIC_NOT_EXIST = 17;
/** The response code of a request the broker's ACL refused. */
const NO_PERMISSION = 16;

/** Acl phase: messages sent (TagA/TagB alternating, distinct keys). */
const ACL_COUNT = 20;
/** Acl phase: after the expected messages, watch for duplicates. */
const ACL_GRACE_MS = 2_000;
/** Acl-refused phase: the whole phase (start, one send, close). */
const ACL_REFUSED_TIMEOUT_MS = 30_000;
/** Acl-refused phase: the one send (the client's own send timeout is 3 s). */
const ACL_REFUSED_SEND_TIMEOUT_MS = 10_000;
/** Acl-refused phase: the client's own send timeout. */
const ACL_REFUSED_SEND_MSG_TIMEOUT_MS = 3_000;
/** What a credential may look like on the command line. */
const CREDENTIAL_RE = /^[\x21-\x7e]{1,256}$/;

const EXIT_OK = 0;
const EXIT_CHECK_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_TIMEOUT = 3;

class CheckError extends Error {}
class StepTimeout extends Error {}

const verbose = process.env.ONS_CHECK_VERBOSE === '1';
const clientErrors = [];

function log(...args) {
  console.error(`[ons_check ${new Date().toISOString()}]`, ...args);
}

// The client logs through this; warnings and errors always go to stderr.
const logger = {
  debug(...args) { if (verbose) console.error('[ali-ons debug]', ...args); },
  info(...args) { if (verbose) console.error('[ali-ons info]', ...args); },
  warn(...args) { console.error('[ali-ons warn]', ...args); },
  error(...args) { console.error('[ali-ons error]', ...args); },
};

// Only used by ali-ons to look up cloud NameServer addresses; with `nameSrv`
// set it is never called, and it must never reach the network.
const httpclient = {
  request(url) {
    return Promise.reject(new Error(`ons_check: no HTTP allowed (asked for ${url})`));
  },
};

function usage(msg) {
  console.error(`ons_check: ${msg}`);
  console.error('usage: node ons_check.js --namesrv 127.0.0.1:PORT --phase 1|2|retry|send|acl|acl-refused ' +
    '--topic T --group G [--access-key AK --secret-key SK]');
  process.exit(EXIT_USAGE);
}

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    const value = argv[i + 1];
    if (!name.startsWith('--') || value === undefined) usage(`bad argument near ${name}`);
    out[name.slice(2)] = value;
  }
  for (const k of [ 'namesrv', 'phase', 'topic', 'group' ]) {
    if (!out[k]) usage(`--${k} is required`);
  }
  if (!/^127\.0\.0\.1:\d{1,5}$/.test(out.namesrv)) usage('--namesrv must be 127.0.0.1:PORT');
  if (![ '1', '2', 'retry', 'send', 'acl', 'acl-refused' ].includes(out.phase)) {
    usage('--phase must be 1, 2, retry, send, acl or acl-refused');
  }
  if (!/^[a-zA-Z0-9_-]+$/.test(out.topic)) usage('--topic must match [a-zA-Z0-9_-]+');
  if (!/^[a-zA-Z0-9_-]+$/.test(out.group)) usage('--group must match [a-zA-Z0-9_-]+');
  const known = [ 'namesrv', 'phase', 'topic', 'group', 'access-key', 'secret-key' ];
  for (const k of Object.keys(out)) {
    if (!known.includes(k)) usage(`unknown argument --${k}`);
  }
  const hasAk = out['access-key'] !== undefined;
  const hasSk = out['secret-key'] !== undefined;
  if (hasAk !== hasSk) usage('--access-key and --secret-key go together (both or neither)');
  if (hasAk && !CREDENTIAL_RE.test(out['access-key'])) usage('--access-key must be 1-256 printable ASCII characters, no spaces');
  if (hasSk && !CREDENTIAL_RE.test(out['secret-key'])) usage('--secret-key must be 1-256 printable ASCII characters, no spaces');
  if (out.phase === 'acl' && !hasAk) usage('--phase acl needs --access-key and --secret-key');
  const phase = [ '1', '2' ].includes(out.phase) ? Number(out.phase) : out.phase;
  const args = { namesrv: out.namesrv, phase, topic: out.topic, group: out.group };
  if (hasAk) {
    args.accessKey = out['access-key'];
    args.secretKey = out['secret-key'];
  }
  return args;
}

function withTimeout(promise, ms, step) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new StepTimeout(`${step} did not finish within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/** The messages of a phase: key, tag and body of each. */
function plan(phase, count) {
  const out = [];
  for (let i = 0; i < count; i++) {
    // TagA/TagB alternate; the pair order flips every QUEUE_SPREAD messages
    // so that the client's round-robin over 4 queues still puts both tags,
    // interleaved, into every queue (plain alternation would give queues
    // holding only TagA and queues holding only TagB).
    const tag = (i + Math.floor(i / QUEUE_SPREAD)) % 2 === 0 ? 'TagA' : 'TagB';
    const key = `p${phase}-${String(i).padStart(4, '0')}`;
    let body = `ons-check phase ${phase} message ${i} ${tag} ${key}`;
    if (i % LARGE_EVERY === 7) {
      body = (body + ' ').repeat(Math.ceil(LARGE_BODY_BYTES / (body.length + 1))).slice(0, LARGE_BODY_BYTES);
    }
    out.push({ key, tag, body });
  }
  return out;
}

function clientOptions(args, extra) {
  const credentials = args.accessKey ? { accessKey: args.accessKey, secretKey: args.secretKey } : {};
  return Object.assign({ nameSrv: args.namesrv, httpclient, logger }, credentials, extra);
}

function recordError(source, err) {
  const entry = { source, name: err && err.name, code: err && err.code, message: String(err && err.message).slice(0, 300) };
  clientErrors.push(entry);
  log(`client error from ${source}:`, entry.message);
}

/**
 * Sends one message. ali-ons cannot send to a topic the NameServer does not
 * know: its first route lookup throws TOPIC_NOT_EXIST (a known client
 * limitation, ali-sdk/ali-ons#90), where the Java client falls back to the
 * route of the auto-create topic TBW102. We do that fallback with the
 * client's own call, once, and retry: the send then carries
 * defaultTopic=TBW102 and the broker creates the topic on it.
 */
async function sendOne(producer, state, item, topic) {
  const msg = new Message(topic, item.tag, item.body);
  msg.keys = [ item.key ];
  try {
    return await producer.send(msg);
  } catch (err) {
    if (err.code !== TOPIC_NOT_EXIST || state.bootstrapped) throw err;
    state.bootstrapped = true;
    log(`topic ${topic} has no route yet (TOPIC_NOT_EXIST): using the TBW102 route, as the Java client does`);
    await producer._mqClient.updateTopicRouteInfoFromNameServer(topic, true, producer);
    const again = new Message(topic, item.tag, item.body);
    again.keys = [ item.key ];
    return await producer.send(again);
  }
}

async function sendPhase(args, items, progress = {}) {
  const producer = new Producer(clientOptions(args, { producerGroup: `${args.group}-producer` }));
  producer.on('error', err => recordError('producer', err));
  const refusals = watchRequests(producer._mqClient, 'producer');
  await withTimeout(producer.ready(), START_TIMEOUT_MS, 'producer start');
  const state = { bootstrapped: false };
  const byQueue = {};
  const started = Date.now();
  await withTimeout((async () => {
    for (const item of items) {
      const r = await sendOne(producer, state, item, args.topic);
      if (r.sendStatus !== 'SEND_OK') {
        throw new CheckError(`send of ${item.key} returned ${r.sendStatus}`);
      }
      const q = r.messageQueue.queueId;
      byQueue[q] = (byQueue[q] || 0) + 1;
      progress.sent = (progress.sent || 0) + 1;
    }
  })(), SEND_ALL_TIMEOUT_MS, `sending ${items.length} messages`);
  const sendMs = Date.now() - started;
  const addrs = channelAddrs(producer._mqClient);
  await withTimeout(producer.close(), CLOSE_TIMEOUT_MS, 'producer close');
  return { sendMs, byQueue, bootstrapped: state.bootstrapped, addrs, refusals };
}

/** Request codes the client sent (by code), over every client watched. */
const requestCodes = {};
/** Every request the broker refused with NO_PERMISSION, over every client watched. */
const allRefusals = [];

/**
 * Observes, without changing anything, every request an ali-ons client
 * (its MQClient, a RemotingClient) sends: counts them by request code
 * (`requestCodes`) and returns the list of those the broker refused with
 * NO_PERMISSION (code 16), with the broker's remark. Oneway requests (offset
 * updates) get no answer, so only the broker can tell about those.
 */
function watchRequests(mqClient, source) {
  if (mqClient._onsCheckRefusals) return mqClient._onsCheckRefusals;
  const refusals = [];
  mqClient._onsCheckRefusals = refusals;
  const invoke = mqClient.invoke;
  const invokeOneway = mqClient.invokeOneway;
  const count = (command, oneway) => {
    const key = `${command.code}${oneway ? ' (oneway)' : ''}`;
    requestCodes[key] = (requestCodes[key] || 0) + 1;
  };
  mqClient.invoke = async function(addr, command, timeout) {
    count(command, false);
    const response = await invoke.call(this, addr, command, timeout);
    if (response && response.code === NO_PERMISSION) {
      const r = { source, request: command.code, addr: addr || 'namesrv', remark: String(response.remark).slice(0, 300) };
      refusals.push(r);
      allRefusals.push(r);
      log(`${source}: the broker refused request code ${command.code}: ${response.remark}`);
    }
    return response;
  };
  mqClient.invokeOneway = async function(addr, command) {
    count(command, true);
    return invokeOneway.call(this, addr, command);
  };
  return refusals;
}

/** Does this error show the broker's ACL refusal? */
function isAclRefusal(err) {
  if (!err) return false;
  return err.code === NO_PERMISSION || /\bACL\b|NO_PERMISSION|no permission/i.test(String(err.message));
}

function channelAddrs(mqClient) {
  return Array.from((mqClient && mqClient._channels && mqClient._channels.keys()) || []);
}

/**
 * Consumes as group G until every expected message arrived (bounded), then
 * watches graceMs more. `subExpression` defaults to the TagA-only
 * subscription of phases 1 and 2; a key for which `isEarlier(key)` holds is a
 * leftover of an earlier run: counted, not a problem.
 */
async function consumePhase(args, expected, oldKeys, graceMs, subExpression = 'TagA', isEarlier = () => false) {
  const received = [];
  const consumer = new Consumer(clientOptions(args, {
    consumerGroup: args.group,
    // A new group starts at the head of the queues; a known group continues
    // from its committed offsets (which is what phase 2 checks).
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
  }));
  consumer.on('error', err => recordError('consumer', err));
  const refusals = watchRequests(consumer._mqClient, 'consumer');
  const started = Date.now();
  consumer.subscribe(args.topic, subExpression, async msg => {
    received.push({
      key: msg.keys,
      tag: msg.tags,
      body: msg.body ? msg.body.toString() : '',
      topic: msg.topic,
      queueId: msg.queueId,
      queueOffset: msg.queueOffset,
      reconsumeTimes: msg.reconsumeTimes,
    });
  });
  await withTimeout(consumer.ready(), START_TIMEOUT_MS, 'consumer start');

  const deadline = started + RECEIVE_TIMEOUT_MS;
  while (received.length < expected.size && Date.now() < deadline) {
    await sleep(POLL_INTERVAL_MS);
  }
  const receiveMs = Date.now() - started;
  const timedOut = received.length < expected.size;
  if (!timedOut) await sleep(graceMs);

  const addrs = channelAddrs(consumer._mqClient);
  const closeStarted = Date.now();
  await withTimeout(consumer.close(), CLOSE_TIMEOUT_MS, 'consumer close');
  const closeMs = Date.now() - closeStarted;

  // Verdict.
  const problems = [];
  const seen = new Map();
  let duplicates = 0;
  let old = 0;
  let unexpected = 0;
  let earlier = 0;
  for (const m of received) {
    if (!expected.has(m.key) && isEarlier(m.key)) {
      earlier++;
      continue;
    }
    if (seen.has(m.key)) {
      duplicates++;
      problems.push(`duplicate delivery of ${m.key} (queue ${m.queueId} offset ${m.queueOffset})`);
      continue;
    }
    seen.set(m.key, m);
    const want = expected.get(m.key);
    if (!want) {
      if (oldKeys.has(m.key)) {
        old++;
        problems.push(`old message ${m.key} delivered again (queue ${m.queueId} offset ${m.queueOffset})`);
      } else {
        unexpected++;
        problems.push(`unexpected message key=${m.key} tag=${m.tag} (queue ${m.queueId} offset ${m.queueOffset})`);
      }
      continue;
    }
    if (m.tag !== want.tag) problems.push(`${m.key} arrived with tag ${m.tag}`);
    if (m.topic !== args.topic) problems.push(`${m.key} arrived with topic ${m.topic}`);
    if (m.body !== want.body) problems.push(`${m.key} has a wrong body (${m.body.length} bytes, want ${want.body.length})`);
  }
  const missing = [];
  for (const key of expected.keys()) {
    if (!seen.has(key)) missing.push(key);
  }
  if (missing.length) {
    problems.push(`${missing.length} of ${expected.size} expected messages never arrived within ` +
      `${RECEIVE_TIMEOUT_MS} ms (first: ${missing.slice(0, 5).join(', ')})`);
  }
  const byQueue = {};
  for (const m of received) byQueue[m.queueId] = (byQueue[m.queueId] || 0) + 1;
  return {
    received: received.length, distinct: seen.size, duplicates, old, unexpected, earlier, missing: missing.length,
    byQueue, receiveMs, closeMs, problems, addrs, refusals,
  };
}

async function closeInnerProducer() {
  // ali-ons starts a shared inner producer (for send-back) with every client.
  const inner = Producer.defaultProducer;
  if (inner) {
    Producer.defaultProducer = null;
    await withTimeout(inner.close(), CLOSE_TIMEOUT_MS, 'inner producer close');
  }
}

/** The retry phase (see the header). */
async function runRetry(args) {
  const t0 = Date.now();
  const items = [];
  for (let i = 0; i < RETRY_COUNT; i++) {
    const key = i === 0 ? 'retry-once' : i === 1 ? 'retry-always' : `retry-ok-${i}`;
    items.push({ key, tag: 'TagA', body: `ons-check retry ${key}` });
  }
  const sent = await sendPhase(args, items);
  log(`retry: sent ${items.length} in ${sent.sendMs} ms`);

  const deliveries = [];
  const consumer = new Consumer(clientOptions(args, {
    consumerGroup: args.group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    maxReconsumeTimes: RETRY_MAX,
    pollNameServerInteval: RETRY_ROUTE_POLL_MS,
  }));
  consumer.on('error', err => recordError('consumer', err));
  consumer.subscribe(args.topic, '*', async msg => {
    deliveries.push({
      key: msg.keys,
      reconsumeTimes: msg.reconsumeTimes,
      topic: msg.topic,
      retryTopic: msg.properties && msg.properties.RETRY_TOPIC,
      body: msg.body ? msg.body.toString() : '',
    });
    const key = msg.keys;
    if (key === 'retry-always') {
      // ali-ons hands retried messages to the handler through a wrapper
      // that drops its return value, so ACTION_RETRY only works the first
      // time; a retried message is failed by throwing, which the client
      // treats the same way (send-back).
      if (msg.reconsumeTimes > 0) throw new Error(`ons_check: failing ${key} again on purpose`);
      return Consumer.ACTION_RETRY;
    }
    if (key === 'retry-once' && msg.reconsumeTimes === 0) return Consumer.ACTION_RETRY;
    return null;
  });
  await withTimeout(consumer.ready(), START_TIMEOUT_MS, 'consumer start');
  const count = key => deliveries.filter(d => d.key === key).length;
  const done = () => count('retry-once') >= 2 && count('retry-always') >= RETRY_MAX + 1 &&
    items.every(i => count(i.key) >= 1);
  const deadline = Date.now() + RECEIVE_TIMEOUT_MS;
  while (!done() && Date.now() < deadline) await sleep(POLL_INTERVAL_MS);
  const receiveMs = Date.now() - t0;
  if (done()) await sleep(RETRY_GRACE_MS);
  await withTimeout(consumer.close(), CLOSE_TIMEOUT_MS, 'consumer close');
  await closeInnerProducer();

  const problems = [];
  const once = deliveries.filter(d => d.key === 'retry-once');
  const always = deliveries.filter(d => d.key === 'retry-always');
  if (once.length !== 2) problems.push(`retry-once delivered ${once.length} times, want 2`);
  if (once[1] && once[1].reconsumeTimes !== 1) problems.push(`retry-once came back with reconsumeTimes ${once[1].reconsumeTimes}, want 1`);
  if (once[1] && once[1].retryTopic !== args.topic) problems.push(`retry-once came back with RETRY_TOPIC ${once[1].retryTopic}`);
  if (always.length !== RETRY_MAX + 1) problems.push(`retry-always delivered ${always.length} times, want ${RETRY_MAX + 1}`);
  const times = always.map(d => d.reconsumeTimes);
  if (times.join(',') !== [ ...Array(RETRY_MAX + 1).keys() ].join(',')) problems.push(`retry-always reconsumeTimes ${times.join(',')}`);
  for (const d of deliveries) {
    if (d.topic !== args.topic) problems.push(`${d.key} handed to the handler with topic ${d.topic}`);
    if (d.body !== `ons-check retry ${d.key}`) problems.push(`${d.key} has a wrong body`);
  }
  for (const i of items.slice(2)) {
    if (count(i.key) !== 1) problems.push(`${i.key} delivered ${count(i.key)} times, want 1`);
  }
  const foreign = sent.addrs.filter(a => !a.startsWith('127.0.0.1:'));
  if (foreign.length) problems.push(`the client connected beyond 127.0.0.1: ${foreign.join(', ')}`);
  const summary = {
    phase: 'retry', ok: problems.length === 0, topic: args.topic, group: args.group,
    deliveries: deliveries.map(d => `${d.key}@${d.reconsumeTimes}`),
    clientErrors: clientErrors.length,
    timingsMs: { send: sent.sendMs, receive: receiveMs, total: Date.now() - t0 },
    problems,
  };
  console.log(JSON.stringify(summary));
  if (problems.length) {
    log(`FAILED: ${problems.join('\n  ')}`);
    return EXIT_CHECK_FAILED;
  }
  log('retry: OK');
  return EXIT_OK;
}

/** Messages of the send phase. */
const SEND_ONLY_COUNT = 60;

/** The send phase (see the header). */
async function runSendOnly(args) {
  const producer = new Producer(clientOptions(args, { producerGroup: `${args.group}-producer` }));
  producer.on('error', err => recordError('producer', err));
  try {
    await withTimeout(producer.ready(), START_TIMEOUT_MS, 'producer start');
  } catch (err) {
    throw new CheckError(`producer start failed: ${err && err.message}`);
  }
  const byBroker = {};
  const problems = [];
  await withTimeout((async () => {
    for (let i = 0; i < SEND_ONLY_COUNT; i++) {
      const msg = new Message(args.topic, 'TagA', `failover ${i}`);
      msg.keys = [ `send-${i}` ];
      let r;
      try {
        r = await producer.send(msg);
      } catch (err) {
        throw new CheckError(`send ${i} failed: ${err && err.name} ${err && err.code} ${err && err.message}`);
      }
      if (r.sendStatus !== 'SEND_OK') problems.push(`send ${i} returned ${r.sendStatus}`);
      const b = r.messageQueue.brokerName;
      byBroker[b] = (byBroker[b] || 0) + 1;
    }
  })(), SEND_ALL_TIMEOUT_MS, `sending ${SEND_ONLY_COUNT} messages`);
  const foreign = channelAddrs(producer._mqClient).filter(a => !a.startsWith('127.0.0.1:'));
  if (foreign.length) problems.push(`the client connected beyond 127.0.0.1: ${foreign.join(', ')}`);
  log(`send: ${JSON.stringify(byBroker)}; closing`);
  try {
    await withTimeout(producer.close(), CLOSE_TIMEOUT_MS, 'producer close');
  } catch (err) {
    // ali-ons unregisters from every broker it knows on close and rejects
    // when one is dead; the sends are what this phase checks.
    if (err instanceof StepTimeout) throw err;
    recordError('producer close', err);
  }
  console.log(JSON.stringify({ phase: 'send', ok: problems.length === 0, sent: SEND_ONLY_COUNT, byBroker, clientErrors: clientErrors.length, problems }));
  if (problems.length) {
    log(`FAILED: ${problems.join('\n  ')}`);
    return EXIT_CHECK_FAILED;
  }
  log('send: OK');
  return EXIT_OK;
}

/** The acl phase (see the header). */
async function runAcl(args) {
  const t0 = Date.now();
  // Keys carry a run id so that they are distinct across runs too.
  const run = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  const items = [];
  for (let i = 0; i < ACL_COUNT; i++) {
    const tag = i % 2 === 0 ? 'TagA' : 'TagB';
    const key = `acl-${run}-${String(i).padStart(4, '0')}`;
    items.push({ key, tag, body: `ons-check acl message ${i} ${tag} ${key}` });
  }
  const expected = new Map(items.map(i => [ i.key, i ]));
  const isEarlier = key => typeof key === 'string' && key.startsWith('acl-') && !key.startsWith(`acl-${run}-`);

  log(`acl: sending ${items.length} messages to ${args.topic} as ${args.accessKey}`);
  const progress = { sent: 0 };
  let sent;
  let got;
  try {
    sent = await sendPhase(args, items, progress);
    log(`acl: sent in ${sent.sendMs} ms, by queue ${JSON.stringify(sent.byQueue)}`);
    log(`acl: consuming as ${args.group}, subscribed to *, expecting ${expected.size}`);
    got = await consumePhase(args, expected, new Set(), ACL_GRACE_MS, '*', isEarlier);
    await closeInnerProducer();
  } catch (err) {
    if (err instanceof StepTimeout) throw err;
    // A refused send surfaces from ali-ons only as "Send [n] times, still
    // failed"; the broker's reason is in the refusals the watch recorded.
    const problems = [ `${got ? 'closing' : sent ? 'consuming' : 'sending'} failed: ${err && err.message}` ];
    for (const r of allRefusals) {
      problems.push(`the broker refused a signed request: code ${r.request} from the ${r.source} to ${r.addr}: ${r.remark}`);
    }
    console.log(JSON.stringify({
      phase: 'acl', ok: false, topic: args.topic, group: args.group, accessKey: args.accessKey,
      sent: progress.sent, received: got ? got.received : 0, requestCodes, refusedRequests: allRefusals.length,
      clientErrors: clientErrors.length, problems: problems.slice(0, 20),
    }));
    log(`FAILED: ${problems.slice(0, 20).join('\n  ')}`);
    if (clientErrors.length) log(`client errors: ${JSON.stringify(clientErrors.slice(0, 20))}`);
    return EXIT_CHECK_FAILED;
  }

  const problems = got.problems.slice();
  const refusals = allRefusals;
  for (const r of refusals) {
    problems.push(`the broker refused a signed request: code ${r.request} from the ${r.source} to ${r.addr}: ${r.remark}`);
  }
  for (const e of clientErrors) {
    if (isAclRefusal(e)) problems.push(`client error from ${e.source} shows an ACL refusal: ${e.message}`);
  }
  const foreign = sent.addrs.concat(got.addrs).filter(a => !a.startsWith('127.0.0.1:'));
  if (foreign.length) problems.push(`the client connected beyond 127.0.0.1: ${foreign.join(', ')}`);

  const summary = {
    phase: 'acl',
    ok: problems.length === 0,
    topic: args.topic,
    group: args.group,
    accessKey: args.accessKey,
    sent: items.length,
    sentByQueue: sent.byQueue,
    expected: expected.size,
    received: got.received,
    distinct: got.distinct,
    duplicates: got.duplicates,
    unexpected: got.unexpected,
    earlierRuns: got.earlier,
    missing: got.missing,
    requestCodes,
    refusedRequests: refusals.length,
    clientErrors: clientErrors.length,
    timingsMs: { send: sent.sendMs, receive: got.receiveMs, consumerClose: got.closeMs, total: Date.now() - t0 },
    problems: problems.slice(0, 20),
  };
  console.log(JSON.stringify(summary));
  if (clientErrors.length) log(`client errors: ${JSON.stringify(clientErrors.slice(0, 20))}`);
  if (problems.length) {
    log(`FAILED: ${problems.length} problem(s):\n  ${problems.slice(0, 20).join('\n  ')}`);
    return EXIT_CHECK_FAILED;
  }
  log('acl: OK');
  return EXIT_OK;
}

/**
 * The acl-refused phase (see the header). ali-ons' `send` swallows a
 * NO_PERMISSION answer and, its retries spent, throws a generic "Send [n]
 * times, still failed" error; the broker's own answer (code 16 and its
 * "ACL: ..." remark) is taken from the client's per-attempt call
 * (`sendKernelImpl`), which is observed, not changed.
 */
async function runAclRefused(args) {
  const t0 = Date.now();
  const who = args.accessKey ? `as ${args.accessKey}` : 'without credentials';
  const producer = new Producer(clientOptions(args, {
    producerGroup: `${args.group}-producer`,
    retryTimesWhenSendFailed: 0,
    sendMsgTimeout: ACL_REFUSED_SEND_MSG_TIMEOUT_MS,
  }));
  producer.on('error', err => recordError('producer', err));
  const refusals = watchRequests(producer._mqClient, 'producer');
  const attemptErrors = [];
  const sendKernelImpl = producer.sendKernelImpl;
  producer.sendKernelImpl = async function(...a) {
    try {
      return await sendKernelImpl.apply(this, a);
    } catch (err) {
      attemptErrors.push(err);
      throw err;
    }
  };

  const outcome = await withTimeout((async () => {
    try {
      await withTimeout(producer.ready(), START_TIMEOUT_MS, 'producer start');
    } catch (err) {
      if (err instanceof StepTimeout) throw err;
      return { stage: 'start', err };
    }
    const msg = new Message(args.topic, 'TagA', `ons-check acl-refused ${who}`);
    msg.keys = [ `acl-refused-${Date.now().toString(36)}${process.pid.toString(36)}` ];
    log(`acl-refused: sending one message to ${args.topic} ${who}, expecting a refusal`);
    try {
      const r = await withTimeout(producer.send(msg), ACL_REFUSED_SEND_TIMEOUT_MS, 'the send');
      return { stage: 'send', result: r };
    } catch (err) {
      if (err instanceof StepTimeout) throw err;
      return { stage: 'send', err };
    }
  })(), ACL_REFUSED_TIMEOUT_MS, 'the acl-refused phase');

  try {
    await withTimeout(producer.close(), CLOSE_TIMEOUT_MS, 'producer close');
  } catch (err) {
    // With wrong credentials the unregister is refused too.
    if (err instanceof StepTimeout) throw err;
    recordError('producer close', err);
  }
  try {
    await closeInnerProducer();
  } catch (err) {
    if (err instanceof StepTimeout) throw err;
    recordError('inner producer close', err);
  }

  const problems = [];
  let refused = false;
  let error = null;
  let code = null;
  if (outcome.err) {
    // The most telling error: the broker's answer to an attempt, else what
    // the client threw.
    const telling = attemptErrors.find(isAclRefusal) || (isAclRefusal(outcome.err) ? outcome.err : null);
    const shown = telling || attemptErrors[attemptErrors.length - 1] || outcome.err;
    error = String(shown && shown.message).slice(0, 300);
    code = shown && shown.code !== undefined ? shown.code : null;
    refused = Boolean(telling);
    if (!refused) {
      problems.push(`the ${outcome.stage === 'start' ? 'producer start' : 'send'} failed, but not with an ACL refusal: ` +
        `${outcome.err && outcome.err.name} ${outcome.err && outcome.err.code} ${error}`);
    }
  } else {
    const r = outcome.result;
    problems.push(`the send was not refused: ${r.sendStatus} to ${r.messageQueue && r.messageQueue.brokerName} ` +
      `queue ${r.messageQueue && r.messageQueue.queueId} offset ${r.queueOffset} (msgId ${r.msgId})`);
  }
  const summary = {
    phase: 'acl-refused',
    ok: problems.length === 0,
    refused,
    error,
    code,
    stage: outcome.stage,
    clientError: outcome.err ? String(outcome.err.message).slice(0, 300) : null,
    topic: args.topic,
    accessKey: args.accessKey || null,
    attempts: attemptErrors.length + (outcome.result ? 1 : 0),
    refusedRequests: refusals.map(r => r.request),
    requestCodes,
    clientErrors: clientErrors.length,
    timingsMs: { total: Date.now() - t0 },
    problems,
  };
  console.log(JSON.stringify(summary));
  if (clientErrors.length) log(`client errors: ${JSON.stringify(clientErrors.slice(0, 20))}`);
  if (problems.length) {
    log(`FAILED: ${problems.join('\n  ')}`);
    return EXIT_CHECK_FAILED;
  }
  log(`acl-refused: OK, refused: ${error}`);
  return EXIT_OK;
}

async function run(args) {
  if (args.phase === 'retry') return runRetry(args);
  if (args.phase === 'send') return runSendOnly(args);
  if (args.phase === 'acl') return runAcl(args);
  if (args.phase === 'acl-refused') return runAclRefused(args);
  const t0 = Date.now();
  const phase1 = plan(1, PHASE1_COUNT);
  const phase2 = plan(2, PHASE2_COUNT);
  const items = args.phase === 1 ? phase1 : phase2;
  const expected = new Map(items.filter(i => i.tag === 'TagA').map(i => [ i.key, i ]));
  const oldKeys = new Set(args.phase === 2 ? phase1.map(i => i.key) : []);

  log(`phase ${args.phase}: sending ${items.length} messages to ${args.topic} via ${args.namesrv}`);
  const sent = await sendPhase(args, items);
  log(`phase ${args.phase}: sent in ${sent.sendMs} ms, by queue ${JSON.stringify(sent.byQueue)}`);

  log(`phase ${args.phase}: consuming as ${args.group}, TagA only, expecting ${expected.size}`);
  const got = await consumePhase(args, expected, oldKeys, args.phase === 1 ? PHASE1_GRACE_MS : PHASE2_GRACE_MS);
  await closeInnerProducer();

  const problems = got.problems.slice();
  if (args.phase === 1 && Object.keys(sent.byQueue).length < 2) {
    problems.push(`all messages went to one queue (${JSON.stringify(sent.byQueue)}); expected several`);
  }
  const foreign = sent.addrs.concat(got.addrs).filter(a => !a.startsWith('127.0.0.1:'));
  if (foreign.length) problems.push(`the client connected beyond 127.0.0.1: ${foreign.join(', ')}`);

  const summary = {
    phase: args.phase,
    ok: problems.length === 0,
    topic: args.topic,
    group: args.group,
    sent: items.length,
    sentByQueue: sent.byQueue,
    topicBootstrappedFromTBW102: sent.bootstrapped,
    expected: expected.size,
    received: got.received,
    distinct: got.distinct,
    duplicates: got.duplicates,
    oldRedelivered: got.old,
    unexpected: got.unexpected,
    missing: got.missing,
    receivedByQueue: got.byQueue,
    clientErrors: clientErrors.length,
    timingsMs: { send: sent.sendMs, receive: got.receiveMs, consumerClose: got.closeMs, total: Date.now() - t0 },
    problems: problems.slice(0, 20),
  };
  console.log(JSON.stringify(summary));
  if (clientErrors.length) log(`client errors (not fatal by themselves): ${JSON.stringify(clientErrors.slice(0, 20))}`);
  if (problems.length) {
    log(`FAILED: ${problems.length} problem(s):\n  ${problems.slice(0, 20).join('\n  ')}`);
    return EXIT_CHECK_FAILED;
  }
  log(`phase ${args.phase}: OK`);
  return EXIT_OK;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const watchdog = setTimeout(() => {
    console.log(JSON.stringify({ phase: args.phase, ok: false, problems: [ `watchdog: the run exceeded ${OVERALL_TIMEOUT_MS} ms` ] }));
    log(`FAILED: the whole run exceeded ${OVERALL_TIMEOUT_MS} ms`);
    process.exit(EXIT_TIMEOUT);
  }, OVERALL_TIMEOUT_MS);
  watchdog.unref();
  run(args).then(code => {
    // The client keeps scheduled tasks alive; exit explicitly.
    process.exit(code);
  }, err => {
    const timeout = err instanceof StepTimeout;
    console.log(JSON.stringify({ phase: args.phase, ok: false, problems: [ String(err && err.message) ] }));
    log(`FAILED: ${timeout ? 'timeout' : 'error'}: ${err && err.stack}`);
    if (clientErrors.length) log(`client errors: ${JSON.stringify(clientErrors.slice(0, 20))}`);
    process.exit(timeout ? EXIT_TIMEOUT : EXIT_CHECK_FAILED);
  });
}

main();
