package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// runDelay is delay by delivery timestamp: a SimpleConsumer of --group on
// the DELAY topic --topic is started, then one message per delay of
// --delays-ms (comma separated) is sent with delivery timestamp now +
// delay. Message i has tag `delay`, keys `delay-key-i` and body
// `delay-body-<delay>`. Each is printed once sent (SENT line) and once
// received and acked as `RECV <tab> msgId <tab> tag <tab> keys <tab> body
// <tab> sentMs <tab> dueMs <tab> receivedMs <tab> deliveryTimestamp` (-1
// when absent). A message received twice fails the run, and so does one
// more after all arrived; the caller checks the times.
func runDelay(a args) error {
	topic, err := a.required("topic")
	if err != nil {
		return err
	}
	raw, err := a.required("delays-ms")
	if err != nil {
		return err
	}
	var delays []int64
	for _, d := range strings.Split(raw, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(d), 10, 64)
		if err != nil || n < 0 {
			return &usageError{"--delays-ms holds whole numbers, not " + d}
		}
		delays = append(delays, n)
	}
	c, err := simpleConsumer(a)
	if err != nil {
		return err
	}
	defer func() { _ = c.GracefulStop() }()
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
	times := map[string][2]int64{}
	for i, delay := range delays {
		keys, body := fmt.Sprintf("delay-key-%d", i), fmt.Sprintf("delay-body-%d", delay)
		m := &rmq.Message{Topic: topic, Body: []byte(body)}
		m.SetTag("delay")
		m.SetKeys(keys)
		sent := time.Now().UnixMilli()
		due := sent + delay
		m.SetDelayTimestamp(time.UnixMilli(due))
		r, err := producer.Send(context.Background(), m)
		if err != nil {
			return err
		}
		times[r[0].MessageID] = [2]int64{sent, due}
		line("SENT", r[0].MessageID, "delay", keys, body)
	}
	const invisible = 15 * time.Second
	for received := 0; received < len(delays); {
		got, err := receive(c, 16, invisible)
		if err != nil {
			return err
		}
		for _, m := range got {
			now := time.Now().UnixMilli()
			t, ok := times[m.GetMessageId()]
			if !ok {
				return failf("received twice or never sent: %s", m.GetMessageId())
			}
			delete(times, m.GetMessageId())
			received++
			ts := int64(-1)
			if d := m.GetDeliveryTimestamp(); d != nil {
				ts = d.UnixMilli()
			}
			out(fmt.Sprintf("RECV\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", m.GetMessageId(), tagOf(m), keysOf(m),
				string(m.GetBody()), t[0], t[1], now, ts))
			if err := c.Ack(context.Background(), m); err != nil {
				return err
			}
		}
	}
	extra, err := receive(c, 16, invisible)
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return failf("%d messages past the %d sent, first %s", len(extra), len(delays), extra[0].GetMessageId())
	}
	return nil
}
