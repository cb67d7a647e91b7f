package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// awaitDuration is the long polling of one receive.
const awaitDuration = 5 * time.Second

// checkFailed is a check that did not hold (exit 1).
type checkFailed struct{ why string }

func (e *checkFailed) Error() string { return e.why }

func failf(format string, a ...any) error { return &checkFailed{fmt.Sprintf(format, a...)} }

// usageError is a missing or malformed argument (exit 64).
type usageError struct{ why string }

func (e *usageError) Error() string { return e.why }

// args are the `--key value` pairs of the command line.
type args map[string]string

func parseArgs(argv []string) (args, error) {
	if len(argv)%2 != 0 {
		return nil, &usageError{"an option without a value: " + argv[len(argv)-1]}
	}
	a := args{}
	for i := 0; i < len(argv); i += 2 {
		if !strings.HasPrefix(argv[i], "--") {
			return nil, &usageError{"not an option: " + argv[i]}
		}
		a[argv[i][2:]] = argv[i+1]
	}
	return a, nil
}

func (a args) required(key string) (string, error) {
	v := a[key]
	if v == "" {
		return "", &usageError{"missing --" + key}
	}
	return v, nil
}

// integer is a whole number option, dflt when absent (-1: required).
func (a args) integer(key string, dflt int) (int, error) {
	raw, ok := a[key]
	if !ok {
		if dflt < 0 {
			return 0, &usageError{"missing --" + key}
		}
		return dflt, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, &usageError{fmt.Sprintf("--%s is a whole number, not %s", key, raw)}
	}
	return n, nil
}

var outMu sync.Mutex

// out writes to stdout at once (the process ends through os.Exit).
func out(text string) {
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = os.Stdout.WriteString(text)
}

func line(kind, id, tag, keys, body string) {
	out(fmt.Sprintf("%s\t%s\t%s\t%s\t%s\n", kind, id, tag, keys, body))
}

func tagOf(m *rmq.MessageView) string {
	if t := m.GetTag(); t != nil {
		return *t
	}
	return ""
}

func keysOf(m *rmq.MessageView) string { return strings.Join(m.GetKeys(), " ") }

// printReceived prints `RECV <tab> msgId <tab> tag <tab> keys <tab> body`.
func printReceived(m *rmq.MessageView) {
	line("RECV", m.GetMessageId(), tagOf(m), keysOf(m), string(m.GetBody()))
}

// config is the client configuration: the gRPC endpoint at --endpoint,
// plain TCP, no credentials.
func config(a args) (*rmq.Config, error) {
	endpoint, err := a.required("endpoint")
	if err != nil {
		return nil, err
	}
	return &rmq.Config{
		Endpoint:      endpoint,
		ConsumerGroup: a["group"],
		Credentials:   &credentials.SessionCredentials{},
	}, nil
}

// simpleConsumer is a started SimpleConsumer of --group on --topic with the
// tag filter --filter (default `*`).
func simpleConsumer(a args) (rmq.SimpleConsumer, error) {
	topic, err := a.required("topic")
	if err != nil {
		return nil, err
	}
	if _, err := a.required("group"); err != nil {
		return nil, err
	}
	cfg, err := config(a)
	if err != nil {
		return nil, err
	}
	filter := a["filter"]
	if filter == "" {
		filter = "*"
	}
	c, err := rmq.NewSimpleConsumer(cfg,
		rmq.WithAwaitDuration(awaitDuration),
		rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{
			topic: rmq.NewFilterExpression(filter),
		}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// receive is one receive; none found is an empty batch, not an error.
func receive(c rmq.SimpleConsumer, max int32, invisible time.Duration) ([]*rmq.MessageView, error) {
	got, err := c.Receive(context.Background(), max, invisible)
	var status *rmq.ErrRpcStatus
	if errors.As(err, &status) && status.GetCode() == int32(v2.Code_MESSAGE_NOT_FOUND) {
		return nil, nil
	}
	return got, err
}

// setUpClientLog points the client's log at ~/logs/rocketmqlogs, warnings
// and errors only unless GRPC_CHECK_VERBOSE=1.
func setUpClientLog() {
	home, _ := os.UserHomeDir()
	_ = os.Setenv(rmq.CLIENT_LOG_ROOT, filepath.Join(home, "logs", "rocketmqlogs"))
	if os.Getenv("GRPC_CHECK_VERBOSE") == "1" {
		_ = os.Setenv(rmq.CLIENT_LOG_LEVEL, "debug")
	} else {
		_ = os.Setenv(rmq.CLIENT_LOG_LEVEL, "warn")
	}
	rmq.ResetLogger()
}
