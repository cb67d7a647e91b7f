package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// runFifo is FIFO receive of a FIFO group: --count messages sent by `send
// --message-groups`, body `<mode>-body-i`. Each message group must arrive
// in send order (ascending i), each message on its first delivery, and no
// message may be handed out while an earlier one of its group is unacked:
// every round receives --batch (default 2), receives again with those still
// unacked, then acks everything.
func runFifo(a args) error {
	count, err := a.integer("count", -1)
	if err != nil {
		return err
	}
	batch, err := a.integer("batch", 2)
	if err != nil {
		return err
	}
	invisibleMs, err := a.integer("invisible-ms", 30000)
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
	lastOfGroup := map[string]int{}
	for len(seen) < count {
		var unacked []*rmq.MessageView
		busy := map[string]bool{}
		for pass := 0; pass < 2; pass++ {
			before := map[string]bool{}
			for g := range busy {
				before[g] = true
			}
			got, err := receive(c, int32(batch), invisible)
			if err != nil {
				return err
			}
			for _, m := range got {
				group, err := checkFifo(m, seen, lastOfGroup, before)
				if err != nil {
					return err
				}
				busy[group] = true
				unacked = append(unacked, m)
			}
		}
		for _, m := range unacked {
			if err := c.Ack(context.Background(), m); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFifo checks one received message; busy: groups with one unacked.
func checkFifo(m *rmq.MessageView, seen map[string]bool, lastOfGroup map[string]int, busy map[string]bool) (string, error) {
	printReceived(m)
	id := m.GetMessageId()
	g := m.GetMessageGroup()
	if g == nil || *g == "" {
		return "", failf("%s has no message group", id)
	}
	group := *g
	if seen[id] {
		return "", failf("received twice: %s", id)
	}
	seen[id] = true
	if m.GetDeliveryAttempt() != 1 {
		return "", failf("%s delivery attempt %d", id, m.GetDeliveryAttempt())
	}
	if busy[group] {
		return "", failf("%s of %s handed out while an earlier one of its group is unacked", id, group)
	}
	body := string(m.GetBody())
	index, err := strconv.Atoi(body[strings.LastIndex(body, "-")+1:])
	if err != nil {
		return "", failf("body %q does not end in -<index>", body)
	}
	if last, ok := lastOfGroup[group]; ok && last >= index {
		return "", failf("%s: %s after index %d", group, body, last)
	}
	lastOfGroup[group] = index
	return group, nil
}
