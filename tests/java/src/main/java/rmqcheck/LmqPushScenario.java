package rmqcheck;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A push consumer on a light message queue as RocketMQ's LMQPushConsumer
 * example builds it: an ordinary group subscribed to {@code %LMQ%…}, started,
 * then the parent topic's route loaded, a hand-made route for the LMQ put
 * into the client's route table, the LMQ's one queue handed to the
 * rebalance (updateTopicSubscribeInfo) and a rebalance run. Half the
 * messages are sent before the consumer starts, half after (a held pull on
 * the LMQ must wake). Every message dispatched into the LMQ arrives once,
 * in LMQ order; messages not dispatched into it never; and the group's
 * committed offset on the LMQ ends at the LMQ's max offset.
 */
final class LmqPushScenario {
    private LmqPushScenario() {}

    static final int N = 40;
    /** Longest wait for the committed offset to reach the LMQ's max: the
     *  15 s a pull is held when nothing new comes, a persist, and slack. */
    static final long COMMIT_TIMEOUT_MS = 30_000;

    static void run(Env env) throws Exception {
        String parent = env.createTopic(env.name("parent"), 4);
        String lmq = LmqScenario.LMQ_PREFIX + env.prefix + "_push";
        String other = LmqScenario.LMQ_PREFIX + env.prefix + "_other";
        DefaultMQProducer p = env.producer("p");
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < N / 2; i++) {
            send(env, p, parent, lmq, other, i, expected);
        }

        Received got = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        // One thread, one message per call: deliveries keep queue order.
        c.setConsumeThreadMin(1);
        c.setConsumeThreadMax(1);
        c.setConsumeMessageBatchMaxSize(1);
        c.setPersistConsumerOffsetInterval(1_000);
        c.subscribe(lmq, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.add(m, "push");
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        env.start(c);
        MQClientInstance f = c.getDefaultMQPushConsumerImpl().getmQClientFactory();
        Compat.injectLmqRoute(f, parent, lmq);
        MessageQueue mq = new MessageQueue(lmq, env.brokerName, 0);
        Set<MessageQueue> queues = new HashSet<>();
        queues.add(mq);
        c.getDefaultMQPushConsumerImpl().updateTopicSubscribeInfo(lmq, queues);
        f.doRebalance();
        env.pass("lmq route injected", lmq + " -> " + env.brokerName);

        for (int i = N / 2; i < N; i++) {
            send(env, p, parent, lmq, other, i, expected);
        }
        env.expectExactly("lmq push consume", got, expected, Env.CONSUME_TIMEOUT_MS);
        List<String> order = new ArrayList<>();
        List<Long> lmqOffsets = new ArrayList<>();
        List<Long> wantOffsets = new ArrayList<>();
        for (Received.Msg m : got.snapshot()) {
            order.add(m.key());
            lmqOffsets.add(LmqScenario.lmqOffsetOf(m.ext(), lmq));
            wantOffsets.add((long) wantOffsets.size());
            if (!m.topic().equals(parent)) {
                throw env.fail("lmq message topic", m.key() + " came with topic " + m.topic() + ", not the parent");
            }
        }
        env.expectEq("lmq push order", expected, order);
        env.expectEq("lmq offsets of the deliveries", wantOffsets, lmqOffsets);
        List<String> qo = new ArrayList<>();
        for (Received.Msg m : got.snapshot()) {
            qo.add(m.queueId() + "/" + m.queueOffset());
        }
        // Shown, not checked: the parent's queue ids (4.9.8; 5.3.3 sets 0)
        // and offsets.
        env.pass("queue ids and offsets of the deliveries", String.valueOf(qo));

        long max = c.maxOffset(mq);
        env.expectEq("lmq max offset", (long) expected.size(), max);
        // A pulled LMQ message carries its parent queue's offset (the stored
        // bytes, as on Apache's broker), and the client's process queue
        // commits "last message's offset + 1" in those terms; the LMQ's own
        // next offset is taken only when a pull finds nothing new and the
        // process queue is empty (correctTagsOffset), i.e. once the held
        // pull after the last message returns: up to the broker's 15 s
        // suspend, then the 1 s persist.
        long[] last = {-2, -2};
        long committed = env.waitFor("the committed offset of the LMQ to reach " + max
            + " (see the last offsets read: stored, in memory)", COMMIT_TIMEOUT_MS, () -> {
                long o = c.getDefaultMQPushConsumerImpl().getOffsetStore().readOffset(mq, ReadOffsetType.READ_FROM_STORE);
                last[0] = o;
                last[1] = c.getDefaultMQPushConsumerImpl().getOffsetStore().readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
                if (o != max) {
                    throw new IllegalStateException("stored " + last[0] + ", in memory " + last[1]);
                }
                return o;
            });
        env.pass("lmq committed offset", String.valueOf(committed));
    }

    /** Message {@code i} of the parent: into {@code lmq} if i is even or
     *  i % 3 == 0, into {@code other} otherwise; also kept in
     *  {@code expected} when it goes into {@code lmq}. */
    static void send(Env env, DefaultMQProducer p, String parent, String lmq, String other, int i,
        List<String> expected) throws Exception {
        String key = "lmqpush-" + i;
        Message m = Env.message(parent, "T", key);
        boolean mine = i % 2 == 0 || i % 3 == 0;
        m.putUserProperty(LmqScenario.INNER_MULTI_DISPATCH, mine ? other + "," + lmq : other);
        SendResult r = p.send(m);
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw env.fail("multi-dispatch send", key + ": " + r);
        }
        if (mine) {
            expected.add(key);
        }
    }
}
