package main

import (
	"context"
	"time"
)

// runSimple receives (invisible for --invisible-ms, default 15 s) and acks
// until it has --count distinct messages, each on its first delivery and
// each once; then one more receive must find nothing, and so must every
// receive for --linger-ms more (default 0; longer than the invisible time,
// it shows that the acks held).
func runSimple(a args) error {
	count, err := a.integer("count", -1)
	if err != nil {
		return err
	}
	invisibleMs, err := a.integer("invisible-ms", 15000)
	if err != nil {
		return err
	}
	lingerMs, err := a.integer("linger-ms", 0)
	if err != nil {
		return err
	}
	invisible := time.Duration(invisibleMs) * time.Millisecond
	c, err := simpleConsumer(a)
	if err != nil {
		return err
	}
	defer func() { _ = c.GracefulStop() }()
	seen := map[string]bool{}
	for len(seen) < count {
		got, err := receive(c, 16, invisible)
		if err != nil {
			return err
		}
		for _, m := range got {
			printReceived(m)
			id := m.GetMessageId()
			if seen[id] {
				return failf("received twice: %s", id)
			}
			seen[id] = true
			if m.GetDeliveryAttempt() != 1 {
				return failf("%s delivery attempt %d, not 1", id, m.GetDeliveryAttempt())
			}
			if err := c.Ack(context.Background(), m); err != nil {
				return err
			}
		}
	}
	quietUntil := time.Now().Add(time.Duration(lingerMs) * time.Millisecond)
	for {
		extra, err := receive(c, 16, invisible)
		if err != nil {
			return err
		}
		for _, m := range extra {
			printReceived(m)
		}
		if len(extra) > 0 {
			return failf("%d messages past the %d expected, first %s (delivery attempt %d)",
				len(extra), count, extra[0].GetMessageId(), extra[0].GetDeliveryAttempt())
		}
		if !time.Now().Before(quietUntil) {
			return nil
		}
	}
}
