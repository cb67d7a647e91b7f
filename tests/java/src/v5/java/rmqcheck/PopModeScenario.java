package rmqcheck;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.consumer.RebalanceImpl;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.body.ConsumerConnection;

/**
 * A stock 5.3.3 DefaultMQPushConsumer with clientRebalance off, on a group
 * the test switched to POP with mqadmin setConsumeMode beforehand (topic
 * {@code name("t")}, group {@code name("g")}, both created by the test):
 * it asks the broker for its queues (QUERY_ASSIGNMENT), gets them in POP
 * mode, pops every message once and acks it; after more than the
 * invisible time nothing comes again. With -Dcom.rocketmq.heartbeat.v2=true
 * it also checks that the client took the broker for a v2 one (it then
 * sends heartbeats without subscriptions) and that the broker still
 * lists the group's subscription.
 */
final class PopModeScenario {
    private PopModeScenario() {}

    static final int N = 32;
    static final int QUEUES = 4;
    /** The client's smallest allowed POP invisible time. */
    static final long INVISIBLE_MS = 5_000;

    static void run(Env env) throws Exception {
        String topic = env.name("t");
        String group = env.name("g");
        env.waitRoute(topic, QUEUES);

        Received got = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", group);
        c.setClientRebalance(false);
        c.setPopInvisibleTime(INVISIBLE_MS);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                got.add(m, "push");
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        env.start(c);

        DefaultMQProducer p = env.producer("p");
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < N; i++) {
            String key = "popmode-" + i;
            SendResult r = p.send(Env.message(topic, "T", key));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("send", key + ": " + r);
            }
            keys.add(key);
        }
        env.pass("send", N + " SEND_OK");

        if (!got.awaitCount(N, Env.CONSUME_TIMEOUT_MS)) {
            env.checkExactly("consume", got.snapshot(), keys, " (timed out)");
        }
        // Acked messages never come again, not even after their invisible time.
        Thread.sleep(INVISIBLE_MS + 2_000);
        List<Received.Msg> all = got.snapshot();
        env.checkExactly("consume by POP, once each, nothing after the acks", all, keys, "");
        // A popped message carries its receipt (POP_CK); a pulled one does not.
        List<String> pulledKeys = new ArrayList<>();
        for (Received.Msg m : all) {
            if (m.ext().getProperty(MessageConst.PROPERTY_POP_CK) == null) {
                pulledKeys.add(m.key());
            }
        }
        env.expectEq("every message popped (" + MessageConst.PROPERTY_POP_CK + " set), none pulled", List.of(), pulledKeys);

        RebalanceImpl rb = c.getDefaultMQPushConsumerImpl().getRebalanceImpl();
        List<String> popQueues = new ArrayList<>();
        for (MessageQueue mq : rb.getPopProcessQueueTable().keySet()) {
            if (mq.getTopic().equals(topic)) {
                popQueues.add(mq.getBrokerName() + ":" + mq.getQueueId());
            }
        }
        popQueues.sort(null);
        // Share all: each of the topic's queues as "any queue" (-1), one entry.
        env.expectEq("assigned in POP mode, any queue of the broker", List.of(env.brokerName + ":-1"), popQueues);
        long pulled = rb.getProcessQueueTable().keySet().stream().filter(mq -> mq.getTopic().equals(topic)).count();
        env.expectEq("no queue of the topic read by PULL", 0L, pulled);

        if (c.isUseHeartbeatV2()) {
            MQClientInstance inst = c.getDefaultMQPushConsumerImpl().getmQClientFactory();
            Set<?> v2 = (Set<?>) field(inst, "brokerSupportV2HeartbeatSet");
            Map<?, ?> fingerprints = (Map<?, ?>) field(inst, "brokerAddrHeartbeatFingerprintTable");
            env.expectTrue("heartbeat v2 supported", v2.contains(env.brokerAddr), String.valueOf(v2));
            env.expectTrue("heartbeat v2 fingerprint unchanged (heartbeats go without subscriptions)",
                fingerprints.containsKey(env.brokerAddr), String.valueOf(fingerprints));
            ConsumerConnection cc = env.admin.examineConsumerConnectionInfo(group);
            env.expectTrue("subscription kept through heartbeats without it",
                cc.getSubscriptionTable().containsKey(topic), String.valueOf(cc.getSubscriptionTable().keySet()));
            env.pass("heartbeat v2", "fingerprint " + fingerprints.get(env.brokerAddr));
        }
    }

    private static Object field(Object o, String name) throws Exception {
        Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }
}
