package rmqcheck;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Light message queues as RocketMQ's own LMQ examples use them: a send to a
 * parent topic whose {@code INNER_MULTI_DISPATCH} property names several
 * {@code %LMQ%} queues, then a DefaultMQPullConsumer reading each LMQ's queue 0
 * straight from the broker (the parent topic's route gives its address).
 * Every LMQ must hold exactly its messages, in send order, at offsets 0..n-1;
 * min/max offset, search by time and consumer offsets work on LMQs too.
 */
final class LmqScenario {
    private LmqScenario() {}

    static final String LMQ_PREFIX = "%LMQ%";
    static final String INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH";
    static final String INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET";
    /** LMQs, messages, and LMQs per message (each LMQ gets MESSAGES * FAN_OUT / LMQS). */
    static final int LMQS = 100;
    static final int MESSAGES = 400;
    static final int FAN_OUT = 3;
    static final int BATCH = 10;
    /** Longest the LMQs' dispatch may run behind the last answered send. */
    static final long DISPATCH_WAIT_MS = 30_000;

    static void run(Env env) throws Exception {
        String parent = env.createTopic(env.name("parent"), 4);
        DefaultMQProducer p = env.producer("p");
        List<List<String>> expected = new ArrayList<>();
        for (int q = 0; q < LMQS; q++) {
            expected.add(new ArrayList<>());
        }
        long beforeSend = System.currentTimeMillis();
        // Sync sends, then the rest as batches (each message keeps its own
        // properties inside a batch).
        int syncSends = MESSAGES - 5 * BATCH;
        for (int i = 0; i < syncSends; i++) {
            SendResult r = p.send(lmqMessage(env, parent, i, expected));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("multi-dispatch send", "expected SEND_OK for message " + i + ", saw " + r);
            }
        }
        env.pass("multi-dispatch send", syncSends + " SEND_OK");
        for (int b = 0; b < 5; b++) {
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < BATCH; i++) {
                batch.add(lmqMessage(env, parent, syncSends + b * BATCH + i, expected));
            }
            // A batch goes to one queue of the parent: its order is kept.
            MessageQueue mq = new MessageQueue(parent, env.brokerName, 0);
            SendResult r = p.send(batch, mq);
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("multi-dispatch batch", "expected SEND_OK for batch " + b + ", saw " + r);
            }
        }
        env.pass("multi-dispatch batch", "5 batches of " + BATCH + " SEND_OK");

        DefaultMQPullConsumer c = new DefaultMQPullConsumer(env.name("g"));
        env.configure(c, "c");
        Set<String> register = new HashSet<>();
        register.add(parent);
        c.setRegisterTopics(register);
        c.start();
        env.onClose(c::shutdown);
        // The LMQs have no route: the parent's route fills the client's
        // broker address table, as RocketMQ's LMQPullConsumer example does.
        c.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory()
            .updateTopicRouteInfoFromNameServer(parent);

        int perLmq = MESSAGES * FAN_OUT / LMQS;
        for (int q = 0; q < LMQS; q++) {
            MessageQueue lmq = new MessageQueue(lmqName(env, q), env.brokerName, 0);
            List<String> want = expected.get(q);
            if (want.size() != perLmq) {
                throw env.fail("expectation", lmq + " expects " + want.size() + " messages, not " + perLmq);
            }
            // Dispatch into the LMQs runs behind the answered sends (as in
            // RocketMQ's own broker): wait, bounded, for it to reach them.
            long min = c.minOffset(lmq);
            long max = c.maxOffset(lmq);
            long dispatchDeadline = System.currentTimeMillis() + DISPATCH_WAIT_MS;
            while (max < want.size() && System.currentTimeMillis() < dispatchDeadline) {
                Thread.sleep(50);
                min = c.minOffset(lmq);
                max = c.maxOffset(lmq);
            }
            if (min != 0 || max != want.size()) {
                throw env.fail("lmq offsets", lmq + ": expected min 0 max " + want.size() + ", saw " + min + "/" + max);
            }
            List<String> seen = new ArrayList<>();
            long offset = 0;
            for (int round = 0; round < 10 && offset < max; round++) {
                PullResult r = c.pull(lmq, "*", offset, 32);
                if (r.getPullStatus() != PullStatus.FOUND) {
                    throw env.fail("lmq pull", lmq + " at " + offset + ": " + r);
                }
                for (MessageExt m : r.getMsgFoundList()) {
                    // The record's own queue offset is its parent queue's;
                    // its offset in this LMQ is in INNER_MULTI_QUEUE_OFFSET.
                    long at = lmqOffsetOf(m, lmq.getTopic());
                    if (at != seen.size()) {
                        throw env.fail("lmq queue offset", lmq + ": message " + seen.size() + " says offset " + at
                            + " (" + m.getProperty(INNER_MULTI_DISPATCH) + " / "
                            + m.getProperty(INNER_MULTI_QUEUE_OFFSET) + ")");
                    }
                    seen.add(new String(m.getBody(), StandardCharsets.UTF_8));
                }
                offset = r.getNextBeginOffset();
            }
            if (!want.equals(seen)) {
                throw env.fail("lmq contents", lmq + ": expected " + want + ", saw " + seen);
            }
        }
        env.pass("lmq contents", LMQS + " LMQs, " + perLmq + " messages each, exact and in order");

        MessageQueue first = new MessageQueue(lmqName(env, 0), env.brokerName, 0);
        env.expectEq("lmq search by time", 0L, c.searchOffset(first, beforeSend));
        env.expectEq("lmq search after the sends", (long) perLmq,
            c.searchOffset(first, System.currentTimeMillis() + 60_000));
        c.updateConsumeOffset(first, 7);
        // persist() sends a oneway UPDATE_CONSUMER_OFFSET, which a broker
        // (Java's too: both codes go to a pool of threads) may apply after
        // the QUERY that follows it; the two-way form is answered once the
        // offset is stored.
        c.getOffsetStore().updateConsumeOffsetToBroker(first, 7, false);
        env.expectEq("lmq consumer offset", 7L, c.fetchConsumeOffset(first, true));
        MessageQueue unknown = new MessageQueue(lmqName(env, LMQS + 1), env.brokerName, 0);
        env.expectEq("unknown lmq max offset", 0L, c.maxOffset(unknown));
        PullResult none = c.pull(unknown, "*", 0, 32);
        env.expectTrue("unknown lmq pull", none.getPullStatus() != PullStatus.FOUND, none.toString());
    }

    /** The offset {@code m} took in {@code lmq}, from its two multi-dispatch properties; -1 if absent. */
    static long lmqOffsetOf(MessageExt m, String lmq) {
        String names = m.getProperty(INNER_MULTI_DISPATCH);
        String offsets = m.getProperty(INNER_MULTI_QUEUE_OFFSET);
        if (names == null || offsets == null) {
            return -1;
        }
        String[] n = names.split(",");
        String[] o = offsets.split(",", -1);
        for (int i = 0; i < n.length && i < o.length; i++) {
            if (n[i].equals(lmq) && !o[i].isEmpty()) {
                return Long.parseLong(o[i]);
            }
        }
        return -1;
    }

    static String lmqName(Env env, int q) {
        return LMQ_PREFIX + env.prefix + "_lmq_" + q;
    }

    /** Message {@code i} of the parent, dispatched into LMQs i, i+33 and i+66 (mod LMQS). */
    static Message lmqMessage(Env env, String parent, int i, List<List<String>> expected) {
        String key = "lmq-" + i;
        Message m = Env.message(parent, "T", key);
        List<String> names = new ArrayList<>();
        for (int k = 0; k < FAN_OUT; k++) {
            int q = (i + k * 33) % LMQS;
            names.add(lmqName(env, q));
            expected.get(q).add(Env.bodyOf(key));
        }
        m.putUserProperty(INNER_MULTI_DISPATCH, String.join(",", names));
        return m;
    }
}
