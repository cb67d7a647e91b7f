package rmqcheck;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Delayed delivery and retries into the dead-letter queue. */
final class TimedScenarios {
    private TimedScenarios() {}

    /** Delay level the {@code delay} scenario sends with. */
    static final int DELAY_LEVEL = 2;
    /** Past its due time, how late a delayed message may still arrive. */
    static final long DELAY_SLACK_MS = 5_000;

    /**
     * A message with delayTimeLevel 2 arrives no earlier than the level's
     * delay ({@code --delay-ms}, default 5000: level 2 of RocketMQ's default
     * table "1s 5s ...") after the send began, and within
     * {@link #DELAY_SLACK_MS} of it. A plain message first shows the consumer
     * is already pulling, so lateness is the broker's.
     */
    static void delay(Env env) throws Exception {
        long delayMs = Long.parseLong(env.arg("delay-ms", "5000"));
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        DefaultMQProducer p = env.producer("p");
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        FilterScenarios.send(env, p, Env.message(topic, "T", "probe"));
        env.expectTrue("consumer ready", rec.awaitCount(1, Env.CONSUME_TIMEOUT_MS), "plain message consumed");

        Message m = Env.message(topic, "T", "delayed");
        m.setDelayTimeLevel(DELAY_LEVEL);
        long sendStart = System.currentTimeMillis();
        SendResult r = p.send(m);
        long sendEnd = System.currentTimeMillis();
        env.expectEq("delayed send", SendStatus.SEND_OK, r.getSendStatus());
        boolean arrived = rec.awaitCount(2, delayMs + DELAY_SLACK_MS + 1_000);
        if (!arrived) {
            throw env.fail("delayed delivery", "expected the level-" + DELAY_LEVEL + " message within "
                + (delayMs + DELAY_SLACK_MS) + " ms of the send, saw nothing");
        }
        Thread.sleep(Env.SETTLE_MS);
        List<Received.Msg> got = rec.snapshot();
        env.expectEq("deliveries", List.of("probe", "delayed"), got.stream().map(Received.Msg::key).toList());
        Received.Msg d = got.get(1);
        long after = d.receivedAt() - sendStart;
        env.expectTrue("not before its delay", after >= delayMs,
            "arrived " + after + " ms after the send began (send took " + (sendEnd - sendStart)
                + " ms), level delay " + delayMs + " ms");
        env.expectTrue("not much after its delay", after <= delayMs + DELAY_SLACK_MS + (sendEnd - sendStart),
            "arrived " + after + " ms after the send began, bound " + (delayMs + DELAY_SLACK_MS) + " ms");
        env.expectEq("real topic", topic, d.topic());
        env.expectEq("DELAY property removed", null, d.ext().getProperty(MessageConst.PROPERTY_DELAY_TIME_LEVEL));
        long stored = d.ext().getStoreTimestamp() - d.ext().getBornTimestamp();
        env.expectTrue("store time of the delivered copy", stored >= delayMs,
            "stored " + stored + " ms after it was born, level delay " + delayMs + " ms");
    }

    /** The group's maxReconsumeTimes in {@code dlq}. */
    static final int MAX_RECONSUME = 2;
    /** Longest wait for all deliveries and the DLQ put (two retries at levels 3 and 4). */
    static final long DLQ_TIMEOUT_MS = 30_000;

    /**
     * A consumer that always answers RECONSUME_LATER with maxReconsumeTimes 2:
     * the message comes 3 times (reconsumeTimes 0, 1, 2), then lands in
     * {@code %DLQ%<group>}, read back through the admin API and a pull.
     */
    static void dlq(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        String group = env.name("g");
        DefaultMQProducer p = env.producer("p");
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", group);
        c.setMaxReconsumeTimes(MAX_RECONSUME);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                rec.add(m, "c");
            }
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        env.start(c);
        FilterScenarios.send(env, p, Env.message(topic, "T", "always-fails"));
        int deliveries = MAX_RECONSUME + 1;
        boolean all = rec.awaitCount(deliveries, DLQ_TIMEOUT_MS);

        String dlq = MixAll.getDLQTopic(group);
        MessageQueue dlq0 = new MessageQueue(dlq, env.brokerName, 0);
        long max = -1;
        long deadline = System.currentTimeMillis() + (all ? Env.CONSUME_TIMEOUT_MS : 0);
        do {
            try {
                max = env.admin.maxOffset(dlq0);
            } catch (Exception e) {
                max = -1;
            }
            if (max >= 1) {
                break;
            }
            Thread.sleep(Env.PROBE_INTERVAL_MS);
        } while (System.currentTimeMillis() < deadline);
        // A fourth delivery would show by now: the DLQ put followed the third.
        Thread.sleep(Env.SETTLE_MS);
        List<Integer> times = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (Received.Msg m : rec.snapshot()) {
            times.add(m.reconsumeTimes());
            keys.add(m.key() + "@" + m.topic());
        }
        env.expectEq("reconsumeTimes of the deliveries", List.of(0, 1, 2), times);
        env.expectEq("delivered as", List.of("always-fails@" + topic, "always-fails@" + topic,
            "always-fails@" + topic), keys);
        env.expectEq("maxOffset of " + dlq + " queue 0", 1L, max);

        env.waitRoute(dlq, 1);
        DefaultLitePullConsumer reader = env.litePullConsumer("dlqreader", env.name("gdlq"));
        env.start(reader);
        reader.assign(List.of(dlq0));
        Received dl = new Received();
        boolean got = BasicScenarios.pollInto(reader, dl, "dlqreader", 1, Env.CONSUME_TIMEOUT_MS);
        BasicScenarios.pollInto(reader, dl, "dlqreader", 2, Env.SETTLE_MS);
        env.expectTrue("pull from " + dlq, got && dl.size() == 1, dl.size() + " message(s) read");
        Received.Msg m = dl.snapshot().get(0);
        env.expectEq("DLQ message key", "always-fails", m.key());
        env.expectEq("DLQ message body", Env.bodyOf("always-fails"), m.body());
        env.pass("DLQ message properties", "reconsumeTimes=" + m.reconsumeTimes() + " "
            + m.ext().getProperties());
    }
}
