package rmqbench;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The LMQ load's sample check, as Apache's LMQPullConsumer example reads an
 * LMQ: a DefaultMQPullConsumer whose client loads the parent topic's route
 * (so it knows the broker's address by name), then for each sampled LMQ
 * {@code MessageQueue(lmq, brokerName, 0)}: wait (bounded) until its max
 * offset reaches the number of acknowledged messages that named it, pull
 * from offset 0 in pages of 32, and compare.
 *
 * <p>An LMQ is exact when it holds every acknowledged message that named it,
 * each once, nothing else, in an order that agrees with the sends (a message
 * whose send ended before another's began comes first), every one with the
 * parent topic and with its own LMQ offset in INNER_MULTI_QUEUE_OFFSET at
 * this LMQ's position in INNER_MULTI_DISPATCH.
 */
final class LmqCheck {
    private static final String GROUP = "rmqbench_lmq_check";
    private static final int PAGE = 32;
    /** Gap between max-offset polls while an LMQ is behind, ms. */
    private static final long POLL_MS = 20;

    /** What the check found. */
    static final class Result {
        int sampled;
        int exact;
        /** The first LMQ that was not exact and why, or null. */
        String firstMismatch;
    }

    private final LmqPlan plan;
    private final LmqSends sends;
    private final String topic;
    private final String namesrv;

    LmqCheck(LmqPlan plan, LmqSends sends, String topic, String namesrv) {
        this.plan = plan;
        this.sends = sends;
        this.topic = topic;
        this.namesrv = namesrv;
    }

    /** Checks the LMQs {@code sample}; each may wait until {@code deadlineNanos} for its messages. */
    Result run(long[] sample, long deadlineNanos) throws Exception {
        Map<Long, int[]> members = plan.members(sample);
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(GROUP);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("rmqbench-lmq-check");
        consumer.setVipChannelEnabled(false);
        consumer.start();
        Result r = new Result();
        try {
            String brokerName = brokerName(consumer);
            for (long j : sample) {
                String lmq = plan.lmqName(j);
                String why = checkOne(consumer, new MessageQueue(lmq, brokerName, 0), members.get(j), deadlineNanos);
                // Each pull subscribes the consumer to the LMQ; drop it so its
                // heartbeats and route refreshes do not grow with the sample.
                consumer.getDefaultMQPullConsumerImpl().unsubscribe(lmq);
                r.sampled++;
                if (why == null) {
                    r.exact++;
                } else if (r.firstMismatch == null) {
                    r.firstMismatch = lmq + ": " + why;
                    System.err.println("rmqbench lmq: mismatch: " + r.firstMismatch);
                }
            }
        } finally {
            consumer.shutdown();
        }
        return r;
    }

    /** Loads the parent topic's route into the client; the one broker's name. */
    private String brokerName(DefaultMQPullConsumer consumer) throws MQClientException {
        consumer.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory()
            .updateTopicRouteInfoFromNameServer(topic);
        Set<String> names = new TreeSet<>();
        for (MessageQueue mq : consumer.fetchSubscribeMessageQueues(topic)) {
            names.add(mq.getBrokerName());
        }
        if (names.size() != 1) {
            throw new IllegalStateException("the check expects the parent topic " + topic
                + " on one broker, the route names " + names);
        }
        return names.iterator().next();
    }

    /** Null when the LMQ is exact, else the first thing wrong with it. */
    private String checkOne(DefaultMQPullConsumer consumer, MessageQueue mq, int[] named, long deadlineNanos)
            throws Exception {
        int expected = 0;
        for (int i : named) {
            if (sends.status(i) == LmqSends.ACKED) {
                expected++;
            }
        }
        long max = consumer.maxOffset(mq);
        while (max < expected && System.nanoTime() < deadlineNanos) {
            Thread.sleep(POLL_MS);
            max = consumer.maxOffset(mq);
        }
        if (max < expected) {
            return "max offset " + max + " after the wait, " + expected + " messages expected";
        }
        boolean[] seen = new boolean[named.length];
        long latestStart = Long.MIN_VALUE;
        int latestStartMsg = -1;
        long offset = 0;
        // Each page advances the offset or ends the loop: at most max/PAGE + 1 pages.
        while (offset < max) {
            PullResult p = consumer.pull(mq, "*", offset, PAGE);
            if (p.getPullStatus() != PullStatus.FOUND) {
                return "pull at offset " + offset + " answered " + p.getPullStatus() + " (max offset " + max + ")";
            }
            List<MessageExt> found = p.getMsgFoundList();
            for (MessageExt m : found) {
                int i = plan.messageOf(m.getBody());
                String where = "offset " + offset;
                if (i < 0) {
                    return where + ": a body not sent by this load: " + LmqPlan.show(m.getBody());
                }
                int slot = java.util.Arrays.binarySearch(named, i);
                if (slot < 0) {
                    return where + ": m" + i + ", which does not name this LMQ";
                }
                if (seen[slot]) {
                    return where + ": m" + i + " a second time";
                }
                seen[slot] = true;
                if (sends.status(i) != LmqSends.ACKED) {
                    return where + ": m" + i + ", whose send was not acknowledged";
                }
                if (sends.endNanos(i) < latestStart) {
                    return where + ": m" + i + " after m" + latestStartMsg
                        + ", though its send ended before that one's began";
                }
                if (sends.startNanos(i) > latestStart) {
                    latestStart = sends.startNanos(i);
                    latestStartMsg = i;
                }
                if (!topic.equals(m.getTopic())) {
                    return where + ": m" + i + " has topic " + m.getTopic() + ", not the parent " + topic;
                }
                String stored = storedOffset(m, mq.getTopic());
                if (!Long.toString(offset).equals(stored)) {
                    return where + ": m" + i + " carries LMQ offset " + stored + " in " + LmqPlan.OFFSETS_KEY
                        + " (" + m.getProperty(LmqPlan.OFFSETS_KEY) + ")";
                }
                offset++;
            }
            if (found.isEmpty() || p.getNextBeginOffset() != offset) {
                return "pull at offset " + (offset - found.size()) + " returned " + found.size()
                    + " messages and next offset " + p.getNextBeginOffset();
            }
        }
        if (offset != expected) {
            return offset + " messages, " + expected + " expected";
        }
        return null;
    }

    /** The message's stored offset in {@code lmq}, by the LMQ's position in its dispatch list. */
    private static String storedOffset(MessageExt m, String lmq) {
        String names = m.getProperty(LmqPlan.DISPATCH_KEY);
        String offsets = m.getProperty(LmqPlan.OFFSETS_KEY);
        if (names == null || offsets == null) {
            return "none";
        }
        String[] n = names.split(",");
        String[] o = offsets.split(",");
        for (int k = 0; k < n.length; k++) {
            if (n[k].equals(lmq)) {
                return k < o.length ? o[k] : "none";
            }
        }
        return "none (the LMQ is not in " + LmqPlan.DISPATCH_KEY + ")";
    }
}
