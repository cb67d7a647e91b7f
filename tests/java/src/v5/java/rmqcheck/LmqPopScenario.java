package rmqcheck;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.consumer.RebalanceImpl;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil;

/**
 * POP on a light message queue as RocketMQ's LMQPushPopConsumer example
 * does it with the 5.3.3 client: group {@code CID_…}, clientRebalance off,
 * the admin's setMessageRequestMode(broker, lmq, group, POP, 8, 3000) on a
 * group nobody created, the LMQ route injected; the broker's assignment
 * (QUERY_ASSIGNMENT) then hands the LMQ out in POP mode. Every message of
 * the LMQ is popped once and acked, with a receipt (POP_CK) naming queue 0
 * of the LMQ at the message's LMQ offset (the broker's startOffsetInfo /
 * msgOffsetInfo are in LMQ offsets, or the client's bookkeeping breaks);
 * one message refused once (RECONSUME_LATER) comes back after its
 * invisible time, and nothing else ever comes again.
 */
final class LmqPopScenario {
    private LmqPopScenario() {}

    static final int N = 24;
    /** The client's smallest allowed POP invisible time. */
    static final long INVISIBLE_MS = 5_000;
    /** A refused message is retried after the client's first POP delay
     *  level (10 s) plus the revive pass; the wait for it. */
    static final long RETRY_TIMEOUT_MS = 40_000;

    static void run(Env env) throws Exception {
        String parent = env.createTopic(env.name("parent"), 4);
        String lmq = LmqScenario.LMQ_PREFIX + env.prefix + "_pop";
        String other = LmqScenario.LMQ_PREFIX + env.prefix + "_popother";
        String group = "CID_" + env.name("g");
        DefaultMQProducer p = env.producer("p");
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            LmqPushScenario.send(env, p, parent, lmq, other, i, expected);
        }
        env.pass("multi-dispatch send", expected.size() + " of " + N + " into " + lmq);

        // The example's switchPop: the group does not exist yet (made on use).
        env.admin.setMessageRequestMode(env.brokerAddr, lmq, group, MessageRequestMode.POP, 8, 3_000);
        env.pass("setMessageRequestMode", lmq + " / " + group + " POP, share 8");

        String refused = expected.get(expected.size() / 2);
        Map<String, Integer> refusals = new ConcurrentHashMap<>();
        Received got = new Received();
        List<String> badReceipts = new ArrayList<>();
        DefaultMQPushConsumer c = env.pushConsumer("c", group);
        c.setClientRebalance(false);
        c.setPopInvisibleTime(INVISIBLE_MS);
        c.subscribe(lmq, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.add(m, "pop");
                String bad = receiptProblem(m, lmq);
                if (bad != null) {
                    synchronized (badReceipts) {
                        badReceipts.add(bad);
                    }
                }
            }
            if (msgs.size() == 1 && msgs.get(0).getKeys().equals(refused)
                && refusals.merge(refused, 1, Integer::sum) == 1) {
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.setConsumeMessageBatchMaxSize(1);
        env.start(c);
        MQClientInstance f = c.getDefaultMQPushConsumerImpl().getmQClientFactory();
        Compat.injectLmqRoute(f, parent, lmq);
        f.doRebalance();
        env.pass("lmq route injected", lmq + " -> " + env.brokerName);

        // Every message once, then the refused one again.
        List<String> twice = new ArrayList<>(expected);
        twice.add(refused);
        boolean all = got.awaitCount(twice.size(), Env.CONSUME_TIMEOUT_MS + RETRY_TIMEOUT_MS);
        // Acked ones never come again, not even after their invisible time.
        Thread.sleep(INVISIBLE_MS + 2_000);
        List<Received.Msg> seen = got.snapshot();
        List<String> keys = new ArrayList<>();
        int retried = 0;
        for (Received.Msg m : seen) {
            keys.add(m.key());
            if (m.key().equals(refused) && m.reconsumeTimes() > 0) {
                retried++;
            }
        }
        List<String> sortedSeen = new ArrayList<>(keys);
        sortedSeen.sort(null);
        twice.sort(null);
        if (!all || !sortedSeen.equals(twice)) {
            throw env.fail("lmq pop", "expected each of " + expected.size() + " keys once and " + refused
                + " twice; saw " + keys.size() + ": " + keys);
        }
        env.pass("lmq pop", expected.size() + " popped once, acked; the refused one came back once");
        env.expectEq("the refused message came back with reconsumeTimes > 0", 1, retried);
        env.expectEq("receipts name (lmq, 0) at the LMQ offset", List.of(), badReceipts);

        RebalanceImpl rb = c.getDefaultMQPushConsumerImpl().getRebalanceImpl();
        List<String> popQueues = new ArrayList<>();
        for (MessageQueue mq : rb.getPopProcessQueueTable().keySet()) {
            if (mq.getTopic().equals(lmq)) {
                popQueues.add(mq.getBrokerName() + ":" + mq.getQueueId());
            }
        }
        // One client, share 8: every queue as "any queue" (-1).
        env.expectEq("assigned in POP mode by the broker", List.of(env.brokerName + ":-1"), popQueues);
        long pulled = rb.getProcessQueueTable().keySet().stream().filter(mq -> mq.getTopic().equals(lmq)).count();
        env.expectEq("no queue of the LMQ read by PULL", 0L, pulled);
    }

    /** Why the receipt of a first delivery does not name (lmq, 0) at its LMQ offset; null if it does. */
    static String receiptProblem(MessageExt m, String lmq) {
        if (m.getReconsumeTimes() > 0) {
            return null;
        }
        String ck = m.getProperty(MessageConst.PROPERTY_POP_CK);
        if (ck == null) {
            return m.getKeys() + ": no " + MessageConst.PROPERTY_POP_CK;
        }
        String[] ei = ExtraInfoUtil.split(ck);
        long want = LmqScenario.lmqOffsetOf(m, lmq);
        long at = ExtraInfoUtil.getQueueOffset(ei);
        int queue = ExtraInfoUtil.getQueueId(ei);
        if (at != want || queue != 0) {
            return m.getKeys() + ": receipt " + ck + " (queue " + queue + ", offset " + at + "), LMQ offset " + want;
        }
        return null;
    }
}
