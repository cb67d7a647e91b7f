package rmqcheck;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.admin.ConsumeStats;

/**
 * An offset reset while the stock push consumer is online (mqadmin
 * resetOffsetByTime with force): the admin API asks the broker
 * (INVOKE_BROKER_TO_RESET_OFFSET), the broker pushes the new offsets to the
 * consumer's connection (RESET_CONSUMER_CLIENT_OFFSET) and the consumer, which
 * had read every message, reads them all again from the reset point; the
 * broker's answer names every queue of the topic.
 */
final class ResetOnlineScenario {
    private ResetOnlineScenario() {}

    static final int MESSAGES = 20;
    static final int QUEUES = 4;

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("reset"), QUEUES);
        // The reset point: before the first message was stored.
        long before = System.currentTimeMillis() - 1_000;
        DefaultMQProducer p = env.producer("p");
        List<String> keys = BasicScenarios.sendPlain(env, p, topic, "reset-", MESSAGES);
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        env.expectExactly("the first reading", rec, keys, Env.CONSUME_TIMEOUT_MS);
        // The broker resets only queues the group has an offset for (as
        // Java's: "THe consumer group <g> not exist" otherwise); the client
        // commits every 5 s.
        env.waitFor("the group's offsets committed for every queue", Env.CONSUME_TIMEOUT_MS, () -> {
            ConsumeStats stats = env.admin.examineConsumeStats(c.getConsumerGroup());
            long done = stats.getOffsetTable().entrySet().stream()
                .filter(e -> e.getKey().getTopic().equals(topic))
                .filter(e -> e.getValue().getConsumerOffset() == e.getValue().getBrokerOffset())
                .count();
            return done == QUEUES ? Boolean.TRUE : null;
        });

        Map<MessageQueue, Long> reset = env.admin.resetOffsetByTimestamp(topic, c.getConsumerGroup(), before, true);
        env.expectEq("queues named in the reset answer", QUEUES, reset.size());
        env.pass("resetOffsetByTimestamp with the consumer online", "" + reset);
        env.waitFor("every message read again after the reset", Env.CONSUME_TIMEOUT_MS, () -> {
            Map<String, Integer> times = new HashMap<>();
            for (Received.Msg m : rec.snapshot()) {
                times.merge(m.key(), 1, Integer::sum);
            }
            for (String k : keys) {
                if (times.getOrDefault(k, 0) < 2) {
                    return null;
                }
            }
            return Boolean.TRUE;
        });
        env.pass("re-read from the reset point", rec.size() + " deliveries of " + MESSAGES + " messages");
    }
}
