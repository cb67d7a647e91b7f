package rmqcheck;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A push consumer of group {@code --group} on an existing topic {@code
 * --topic} (every tag, new groups from the first offset) that someone else
 * sends to, for instance a gRPC producer while a gRPC consumer group reads
 * the same topic: every delivery is printed as {@code RECV <tab> msgId <tab>
 * tag <tab> keys <tab> body}, duplicates included, so the caller can check
 * exactly-once. Returns once {@code --count} distinct messages came and
 * {@link Env#SETTLE_MS} passed with no new delivery.
 */
final class ConsumeScenario {
    private ConsumeScenario() {}

    /** Longest wait for all {@code --count} messages. */
    static final long ALL_TIMEOUT_MS = 45_000;

    static void run(Env env) throws Exception {
        String topic = env.arg("topic", null);
        String group = env.arg("group", null);
        if (topic == null || group == null) {
            throw new CheckFailed("consume needs --topic and --group");
        }
        int count = Integer.parseInt(env.arg("count", "1"));
        Received rec = new Received();
        Map<String, Boolean> distinct = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = env.pushConsumer("c", group);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                distinct.put(m.getMsgId(), Boolean.TRUE);
                System.out.println("RECV\t" + m.getMsgId() + "\t" + m.getTags() + "\t" + m.getKeys()
                    + "\t" + new String(m.getBody(), StandardCharsets.UTF_8));
                System.out.flush();
                rec.add(m, "c");
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        env.start(c);
        env.waitFor(count + " distinct messages of " + topic, ALL_TIMEOUT_MS,
            () -> distinct.size() >= count ? Boolean.TRUE : null);
        int seen = rec.size();
        while (true) {
            Thread.sleep(Env.SETTLE_MS);
            int now = rec.size();
            if (now == seen) {
                break;
            }
            seen = now;
        }
        env.pass("consume " + topic, rec.size() + " deliveries, " + distinct.size() + " distinct");
    }
}
