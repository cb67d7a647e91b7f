package rmqcheck;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * RocketMQ 5.x timer messages through the 5.3.3 client: one message per
 * timer property (setDeliverTimeMs, setDelayTimeSec, setDelayTimeMs), each
 * consumed no earlier than its due time less the broker's precision and
 * within {@link #LATE_MS} after it; one more is recalled with the handle
 * its send answer carried and never arrives.
 */
final class TimerScenario {
    private TimerScenario() {}

    /** The broker's timerPrecisionMs (the default). */
    static final long PRECISION_MS = 1_000;
    /** Past its due time, how late a timer message may still arrive. */
    static final long LATE_MS = 4_000;
    /** Delay of every message of the scenario. */
    static final long DELAY_MS = 3_000;

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), BasicScenarios.QUEUES);
        DefaultMQProducer p = env.producer("p");
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        FilterScenarios.send(env, p, Env.message(topic, "T", "probe"));
        env.expectTrue("consumer ready", rec.awaitCount(1, Env.CONSUME_TIMEOUT_MS), "plain message consumed");

        // Earliest and latest due time of each key, from the client's clock
        // around the send (a delay counts from the broker's receive time).
        Map<String, long[]> due = new HashMap<>();
        long before = System.currentTimeMillis();
        Message deliver = Env.message(topic, "T", "deliver-ms");
        deliver.setDeliverTimeMs(before + DELAY_MS);
        send(env, p, deliver);
        due.put("deliver-ms", new long[] {before + DELAY_MS, before + DELAY_MS});

        for (String key : List.of("delay-sec", "delay-ms", "recalled")) {
            Message m = Env.message(topic, "T", key);
            if (key.equals("delay-sec")) {
                m.setDelayTimeSec(DELAY_MS / 1000);
            } else {
                m.setDelayTimeMs(DELAY_MS);
            }
            long sendStart = System.currentTimeMillis();
            SendResult r = send(env, p, m);
            long sendEnd = System.currentTimeMillis();
            due.put(key, new long[] {sendStart + DELAY_MS, sendEnd + DELAY_MS});
            if (key.equals("recalled")) {
                String handle = r.getRecallHandle();
                env.expectTrue("recall handle", handle != null && !handle.isEmpty(), "send answer carried " + handle);
                String id = p.recallMessage(topic, handle);
                env.expectEq("recalled id", r.getMsgId(), id);
            }
        }
        boolean arrived = rec.awaitCount(4, DELAY_MS + LATE_MS + 2_000);
        if (!arrived) {
            throw env.fail("timer delivery", "expected 3 timer messages within " + (DELAY_MS + LATE_MS)
                + " ms, saw " + rec.snapshot());
        }
        // The recalled one's slot has passed by now; give it time to show up.
        Thread.sleep(PRECISION_MS + Env.SETTLE_MS);
        List<Received.Msg> got = rec.snapshot();
        env.expectEq("deliveries", 4, got.size());
        for (Received.Msg m : got.subList(1, got.size())) {
            long[] window = due.get(m.key());
            env.expectTrue("known key", window != null, "delivered " + m.key());
            env.expectTrue(m.key() + " not early", m.receivedAt() >= window[0] - PRECISION_MS,
                "received " + (m.receivedAt() - window[0]) + " ms after its due time");
            env.expectTrue(m.key() + " not late", m.receivedAt() <= window[1] + LATE_MS,
                "received " + (m.receivedAt() - window[1]) + " ms after its due time, bound " + LATE_MS);
            env.expectEq(m.key() + " real topic", topic, m.topic());
            env.expectTrue(m.key() + " TIMER_OUT_MS kept", m.ext().getProperty("TIMER_OUT_MS") != null,
                "properties " + m.ext().getProperties());
            env.expectEq(m.key() + " REAL_TOPIC removed", null, m.ext().getProperty("REAL_TOPIC"));
            env.expectEq(m.key() + " body", Env.bodyOf(m.key()), m.body());
        }
    }

    static SendResult send(Env env, DefaultMQProducer p, Message m) throws Exception {
        SendResult r = p.send(m);
        env.expectEq("timer send " + m.getKeys(), SendStatus.SEND_OK, r.getSendStatus());
        return r;
    }
}
