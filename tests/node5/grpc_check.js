'use strict';
// Runs one scenario of the stock RocketMQ 5.x gRPC client for Node
// (rocketmq-client-nodejs) against a gRPC endpoint (Apache's rocketmq-proxy
// or the broker's own):
//
//   node grpc_check.js --scenario send --endpoint 127.0.0.1:8081 --topic T \
//       --count 5 --tag TagA --mode sync|async [--message-groups 3]
//   node grpc_check.js --scenario simple|fifo --endpoint 127.0.0.1:8081 \
//       --topic T --group G --count 10 [--filter TagA] [--invisible-ms 15000]
//       [--linger-ms 0 (simple)] [--batch 2 (fifo)]
//   node grpc_check.js --scenario delay --endpoint 127.0.0.1:8081 --topic T \
//       --group G --delays-ms 3000,6000
//   node grpc_check.js --scenario transaction --endpoint 127.0.0.1:8081 \
//       --topic T --group G --commit 2 --rollback 2 --check-commit 2
//       --check-rollback 2
//   ... [--timeout-ms 60000]
//
// Each message sent or received is one line
// `SENT|RECV <tab> msgId <tab> tag <tab> keys <tab> body` (delay adds times
// to RECV, transaction prints CHECK lines: see lib/); `PASS <scenario>`
// ends a run that did what it was asked (exit 0). A failed check prints
// `FAIL <scenario>: why` and exits 1, any other error exits 2, a bad
// argument exits 64, and past --timeout-ms a watchdog exits 3 (the exit codes
// of tests/java/grpc's GrpcSuite). The client's own log goes to stderr
// (warnings and errors; everything with GRPC_CHECK_VERBOSE=1).

const { CheckFailed, UsageError, out } = require('./lib/common');

const SCENARIOS = {
  send: require('./lib/send'),
  simple: require('./lib/simple'),
  fifo: require('./lib/fifo'),
  delay: require('./lib/delay'),
  transaction: require('./lib/transaction'),
};

const DEFAULT_TIMEOUT_MS = 60000;

function parseArgs(argv) {
  if (argv.length % 2 !== 0) {
    throw new UsageError(`an option without a value: ${argv[argv.length - 1]}`);
  }
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--')) {
      throw new UsageError(`not an option: ${argv[i]}`);
    }
    args[argv[i].slice(2)] = argv[i + 1];
  }
  return args;
}

function usage(why) {
  process.stderr.write(`usage: --scenario ${Object.keys(SCENARIOS).join('|')} ...; ${why}\n`);
  process.exit(64);
}

async function main() {
  let args;
  let timeoutMs;
  try {
    args = parseArgs(process.argv.slice(2));
    if (!Object.hasOwn(SCENARIOS, args.scenario ?? '')) {
      throw new UsageError(`unknown scenario ${args.scenario}`);
    }
    timeoutMs = Number(args['timeout-ms'] ?? DEFAULT_TIMEOUT_MS);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      throw new UsageError(`--timeout-ms is a positive integer, not ${args['timeout-ms']}`);
    }
  } catch (e) {
    usage(e.message);
  }
  const name = args.scenario;
  // Kept referenced: a promise that never settles must not let node exit 0.
  setTimeout(() => {
    out(`FAIL ${name}: timed out after ${timeoutMs} ms\n`);
    process.exit(3);
  }, timeoutMs);
  let code;
  try {
    await SCENARIOS[name](args);
    out(`PASS ${name}\n`);
    code = 0;
  } catch (e) {
    if (e instanceof UsageError) {
      usage(e.message);
    }
    if (e instanceof CheckFailed) {
      out(`FAIL ${name}: ${e.message}\n`);
      code = 1;
    } else {
      out(`FAIL ${name}: ${e && e.stack ? e.stack : e}\n`);
      code = 2;
    }
  }
  // The client's gRPC channels and timers linger after shutdown.
  process.exit(code);
}

main();
