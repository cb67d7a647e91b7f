package main

import (
	"context"
	"fmt"
	"sync"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// runSend sends --count messages with the producer: --mode sync one after
// the other, async all at once and then waits for every receipt. Message i
// has tag --tag, keys `<mode>-key-i` and body `<mode>-body-i`; with
// --message-groups K (FIFO topics) it is in message group `group-(i mod K)`.
func runSend(a args) error {
	topic, err := a.required("topic")
	if err != nil {
		return err
	}
	count, err := a.integer("count", 1)
	if err != nil {
		return err
	}
	groups, err := a.integer("message-groups", 0)
	if err != nil {
		return err
	}
	tag, mode := a["tag"], a["mode"]
	if tag == "" {
		tag = "TagA"
	}
	if mode == "" {
		mode = "sync"
	}
	if mode != "sync" && mode != "async" {
		return &usageError{"--mode is sync or async, not " + mode}
	}
	cfg, err := config(a)
	if err != nil {
		return err
	}
	producer, err := rmq.NewProducer(cfg, rmq.WithTopics(topic))
	if err != nil {
		return err
	}
	if err := producer.Start(); err != nil {
		return err
	}
	defer func() { _ = producer.GracefulStop() }()
	ids := make([]string, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		m := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("%s-body-%d", mode, i))}
		m.SetTag(tag)
		m.SetKeys(fmt.Sprintf("%s-key-%d", mode, i))
		if groups > 0 {
			m.SetMessageGroup(fmt.Sprintf("group-%d", i%groups))
		}
		if mode == "sync" {
			r, err := producer.Send(context.Background(), m)
			if err != nil {
				return err
			}
			ids[i] = r[0].MessageID
			continue
		}
		wg.Add(1)
		i := i
		producer.SendAsync(context.Background(), m, func(_ context.Context, r []*rmq.SendReceipt, err error) {
			defer wg.Done()
			if err != nil {
				errs[i] = err
				return
			}
			ids[i] = r[0].MessageID
		})
	}
	wg.Wait()
	for i := 0; i < count; i++ {
		if errs[i] != nil {
			return errs[i]
		}
		line("SENT", ids[i], tag, fmt.Sprintf("%s-key-%d", mode, i), fmt.Sprintf("%s-body-%d", mode, i))
	}
	return nil
}
