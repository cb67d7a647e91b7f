// Command grpc_check runs one scenario of the stock RocketMQ 5.x gRPC client
// for Go (github.com/apache/rocketmq-clients/golang/v5) against a gRPC
// endpoint, with the arguments, the output lines and the exit codes of
// tests/node5/grpc_check.js:
//
//	grpc_check --scenario send --endpoint 127.0.0.1:8081 --topic T \
//	    --count 5 --tag TagA --mode sync|async [--message-groups 3]
//	grpc_check --scenario simple|fifo --endpoint 127.0.0.1:8081 \
//	    --topic T --group G --count 10 [--filter TagA] [--invisible-ms 15000]
//	    [--linger-ms 0 (simple)] [--batch 2 (fifo)]
//	grpc_check --scenario delay ... --group G --delays-ms 3000,6000
//	grpc_check --scenario transaction ... --group G --commit 2 --rollback 2
//	    --check-commit 2 --check-rollback 2
//	... [--timeout-ms 60000]
//
// Each message is one line `SENT|RECV <tab> msgId <tab> tag <tab> keys <tab>
// body` (delay adds times to RECV, transaction prints CHECK lines); `PASS
// <scenario>` ends a run that did what it was asked (exit 0). A failed check
// prints `FAIL <scenario>: why` and exits 1, any other error exits 2, a bad
// argument exits 64, and past --timeout-ms a watchdog exits 3. The client
// logs to ~/logs/rocketmqlogs (warnings and errors; everything with
// GRPC_CHECK_VERBOSE=1).
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

const defaultTimeoutMs = 60000

var scenarios = map[string]func(args) error{
	"send":        runSend,
	"simple":      runSimple,
	"fifo":        runFifo,
	"delay":       runDelay,
	"transaction": runTransaction,
}

func usage(why string) {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: --scenario %s ...; %s\n", strings.Join(names, "|"), why)
	os.Exit(64)
}

func main() {
	a, err := parseArgs(os.Args[1:])
	if err != nil {
		usage(err.Error())
	}
	name := a["scenario"]
	run, ok := scenarios[name]
	if !ok {
		usage("unknown scenario " + name)
	}
	timeoutMs, err := a.integer("timeout-ms", defaultTimeoutMs)
	if err != nil || timeoutMs <= 0 {
		usage(fmt.Sprintf("--timeout-ms is a positive integer, not %s", a["timeout-ms"]))
	}
	setUpClientLog()
	time.AfterFunc(time.Duration(timeoutMs)*time.Millisecond, func() {
		out(fmt.Sprintf("FAIL %s: timed out after %d ms\n", name, timeoutMs))
		os.Exit(3)
	})
	err = run(a)
	var usageErr *usageError
	var failed *checkFailed
	switch {
	case err == nil:
		out("PASS " + name + "\n")
		os.Exit(0)
	case errors.As(err, &usageErr):
		usage(err.Error())
	case errors.As(err, &failed):
		out(fmt.Sprintf("FAIL %s: %v\n", name, err))
		os.Exit(1)
	default:
		out(fmt.Sprintf("FAIL %s: %v\n", name, err))
		os.Exit(2)
	}
}
