package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// runTransaction is transactions with check-back on the TRANSACTION topic
// --topic: a producer with a TransactionChecker sends, each in its own
// transaction, --commit messages it commits at once, --rollback it rolls
// back at once, and --check-commit and --check-rollback it leaves unknown,
// so that the broker's check-back asks its checker, which commits the first
// kind and rolls back the second. Message i of kind k has tag k, keys
// `tx-key-k-i` and body `tx-body-k-i`; each is printed once sent (SENT
// line) and each check as `CHECK <tab> msgId <tab> tag <tab> keys <tab>
// body <tab> resolution <tab> topic`. Once every unknown one was checked, a
// SimpleConsumer of --group receives and acks (RECV lines) until it has as
// many as were committed, then one more receive must find nothing.
func runTransaction(a args) error {
	topic, err := a.required("topic")
	if err != nil {
		return err
	}
	kinds := []struct{ kind, option string }{
		{"commit", "commit"}, {"rollback", "rollback"},
		{"checkCommit", "check-commit"}, {"checkRollback", "check-rollback"},
	}
	counts := map[string]int{}
	for _, k := range kinds {
		if counts[k.kind], err = a.integer(k.option, 0); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	checked := map[string]bool{}
	changed := make(chan struct{}, 1)
	checker := &rmq.TransactionChecker{Check: func(m *rmq.MessageView) rmq.TransactionResolution {
		tag := tagOf(m)
		resolution, name := rmq.UNKNOWN, "UNKNOWN"
		switch tag {
		case "checkCommit":
			resolution, name = rmq.COMMIT, "COMMIT"
		case "checkRollback":
			resolution, name = rmq.ROLLBACK, "ROLLBACK"
		}
		out(fmt.Sprintf("CHECK\t%s\t%s\t%s\t%s\t%s\t%s\n", m.GetMessageId(), tag, keysOf(m), string(m.GetBody()), name, m.GetTopic()))
		mu.Lock()
		checked[m.GetMessageId()] = true
		mu.Unlock()
		select {
		case changed <- struct{}{}:
		default:
		}
		return resolution
	}}
	cfg, err := config(a)
	if err != nil {
		return err
	}
	producer, err := rmq.NewProducer(cfg, rmq.WithTopics(topic), rmq.WithTransactionChecker(checker))
	if err != nil {
		return err
	}
	if err := producer.Start(); err != nil {
		return err
	}
	defer func() { _ = producer.GracefulStop() }()
	var unknown []string
	for _, k := range kinds {
		for i := 0; i < counts[k.kind]; i++ {
			keys, body := fmt.Sprintf("tx-key-%s-%d", k.kind, i), fmt.Sprintf("tx-body-%s-%d", k.kind, i)
			m := &rmq.Message{Topic: topic, Body: []byte(body)}
			m.SetTag(k.kind)
			m.SetKeys(keys)
			tx := producer.BeginTransaction()
			r, err := producer.SendWithTransaction(context.Background(), m, tx)
			if err != nil {
				return err
			}
			line("SENT", r[0].MessageID, k.kind, keys, body)
			switch k.kind {
			case "commit":
				err = tx.Commit()
			case "rollback":
				err = tx.RollBack()
			default:
				unknown = append(unknown, r[0].MessageID)
			}
			if err != nil {
				return err
			}
		}
	}
	// Until every unknown half was checked (the run's watchdog bounds it).
	for {
		mu.Lock()
		all := true
		for _, id := range unknown {
			all = all && checked[id]
		}
		mu.Unlock()
		if all {
			break
		}
		<-changed
	}
	want := counts["commit"] + counts["checkCommit"]
	c, err := simpleConsumer(a)
	if err != nil {
		return err
	}
	defer func() { _ = c.GracefulStop() }()
	const invisible = 15 * time.Second
	seen := map[string]bool{}
	for len(seen) < want {
		got, err := receive(c, 16, invisible)
		if err != nil {
			return err
		}
		for _, m := range got {
			printReceived(m)
			if seen[m.GetMessageId()] {
				return failf("received twice: %s", m.GetMessageId())
			}
			seen[m.GetMessageId()] = true
			if err := c.Ack(context.Background(), m); err != nil {
				return err
			}
		}
	}
	extra, err := receive(c, 16, invisible)
	if err != nil {
		return err
	}
	for _, m := range extra {
		printReceived(m)
	}
	if len(extra) > 0 {
		return failf("%d messages past the %d committed, first %s", len(extra), want, extra[0].GetMessageId())
	}
	return nil
}
