'use strict';
// What the scenarios share: the two kinds of failure, the output lines, the
// client options for --endpoint, and the client's logger.

const fs = require('node:fs');
const util = require('node:util');

/** A check that did not hold (exit 1). */
class CheckFailed extends Error {}

/** A missing or malformed argument (exit 64). */
class UsageError extends Error {}

/** Longest one request may take (the client's default is 3 s). */
const REQUEST_TIMEOUT_MS = 10000;

/** Writes to stdout at once (the process ends through process.exit). */
function out(text) {
  fs.writeSync(1, text);
}

/** One message line. */
function line(kind, id, tag, keys, body) {
  out(`${kind}\t${id}\t${tag}\t${keys}\t${body}\n`);
}

/** Prints `RECV <tab> msgId <tab> tag <tab> keys <tab> body`. */
function printReceived(m) {
  line('RECV', m.messageId, m.tag ?? '', m.keys.join(' '), m.body.toString('utf8'));
}

function required(args, key) {
  const v = args[key];
  if (v === undefined || v === '') {
    throw new UsageError(`missing --${key}`);
  }
  return v;
}

/** A whole number option, `dflt` when absent. */
function integer(args, key, dflt) {
  const raw = args[key];
  if (raw === undefined) {
    if (dflt === undefined) {
      throw new UsageError(`missing --${key}`);
    }
    return dflt;
  }
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    throw new UsageError(`--${key} is a whole number, not ${raw}`);
  }
  return n;
}

/**
 * The client logs printf-style to ~/logs by default; here to stderr instead:
 * warnings and errors, and info and debug too with GRPC_CHECK_VERBOSE=1.
 */
function logger() {
  const verbose = process.env.GRPC_CHECK_VERBOSE === '1';
  const write = level => (...args) => {
    process.stderr.write(`${new Date().toISOString()} ${level} ${util.format(...args)}\n`);
  };
  const quiet = () => {};
  return {
    info: verbose ? write('INFO') : quiet,
    debug: verbose ? write('DEBUG') : quiet,
    warn: write('WARN'),
    error: write('ERROR'),
  };
}

/** The options every client takes: the gRPC endpoint at --endpoint, plain TCP. */
function clientOptions(args) {
  return {
    endpoints: required(args, 'endpoint'),
    namespace: '',
    sslEnabled: false,
    requestTimeout: REQUEST_TIMEOUT_MS,
    logger: logger(),
  };
}

module.exports = {
  CheckFailed,
  UsageError,
  REQUEST_TIMEOUT_MS,
  out,
  line,
  printReceived,
  required,
  integer,
  clientOptions,
};
