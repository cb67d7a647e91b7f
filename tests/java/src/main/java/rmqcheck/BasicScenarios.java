package rmqcheck;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Plain sends and consumption: send, litepull, broadcast, resume. */
final class BasicScenarios {
    private BasicScenarios() {}

    /** Messages per send style in {@code send}. */
    static final int PER_STYLE = 10;
    static final int QUEUES = 4;

    /** Sync, async, oneway and batch sends; a push consumer reads back exactly that set. */
    static void send(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), QUEUES);
        DefaultMQProducer p = env.producer("p");
        List<String> keys = new ArrayList<>();

        for (int i = 0; i < PER_STYLE; i++) {
            String key = "sync-" + i;
            SendResult r = p.send(Env.message(topic, "T", key));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("sync send", "expected SEND_OK for " + key + ", saw " + r);
            }
            keys.add(key);
        }
        env.pass("sync send", PER_STYLE + " SEND_OK");

        CountDownLatch done = new CountDownLatch(PER_STYLE);
        ConcurrentLinkedQueue<String> asyncErrors = new ConcurrentLinkedQueue<>();
        for (int i = 0; i < PER_STYLE; i++) {
            String key = "async-" + i;
            p.send(Env.message(topic, "T", key), new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    if (r.getSendStatus() != SendStatus.SEND_OK) {
                        asyncErrors.add(key + ": " + r.getSendStatus());
                    }
                    done.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    asyncErrors.add(key + ": " + e);
                    done.countDown();
                }
            });
            keys.add(key);
        }
        boolean completed = done.await(Env.SEND_TIMEOUT_MS + 5_000L, TimeUnit.MILLISECONDS);
        env.expectTrue("async send", completed && asyncErrors.isEmpty(),
            (PER_STYLE - done.getCount()) + "/" + PER_STYLE + " callbacks, errors " + asyncErrors);

        for (int i = 0; i < PER_STYLE; i++) {
            String key = "oneway-" + i;
            p.sendOneway(Env.message(topic, "T", key));
            keys.add(key);
        }
        env.pass("oneway send", PER_STYLE + " sent (checked by the consumer)");

        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < PER_STYLE; i++) {
            String key = "batch-" + i;
            batch.add(Env.message(topic, "T", key));
            keys.add(key);
        }
        SendResult br = p.send(batch);
        env.expectEq("batch send status", SendStatus.SEND_OK, br.getSendStatus());
        env.expectEq("batch send ids", PER_STYLE, br.getMsgId().split(",").length);

        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(collect(rec, "c"));
        env.start(c);
        env.expectExactly("consume all sent", rec, keys, Env.CONSUME_TIMEOUT_MS);
    }

    /** Subscribe mode reads everything; assign + seek starts queue 0 at offset k. */
    static void litePull(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), QUEUES);
        DefaultMQProducer p = env.producer("p");
        List<MessageQueue> mqs = new ArrayList<>(p.fetchPublishMessageQueues(topic));
        mqs.sort(null);
        List<String> keys = new ArrayList<>();
        int perQueue = 5;
        for (int i = 0; i < QUEUES * perQueue; i++) {
            String key = "lite-" + i;
            MessageQueue mq = mqs.get(i % QUEUES);
            SendResult r = p.send(Env.message(topic, "T", key), mq);
            if (r.getSendStatus() != SendStatus.SEND_OK || r.getQueueOffset() != i / QUEUES) {
                throw env.fail("send to queue", "expected SEND_OK at " + mq.getQueueId() + "@" + (i / QUEUES)
                    + " for " + key + ", saw " + r);
            }
            keys.add(key);
        }
        env.pass("send to queue", keys.size() + " messages, " + perQueue + " per queue at offsets 0.."
            + (perQueue - 1));

        Received rec = new Received();
        DefaultLitePullConsumer sub = env.litePullConsumer("sub", env.name("gsub"));
        sub.subscribe(topic, "*");
        env.start(sub);
        boolean all = pollInto(sub, rec, "sub", keys.size(), Env.CONSUME_TIMEOUT_MS);
        pollInto(sub, rec, "sub", Integer.MAX_VALUE, Env.SETTLE_MS);
        env.checkExactly("subscribe reads all", rec.snapshot(), keys, all ? "" : " (timed out)");
        sub.shutdown();

        DefaultLitePullConsumer asg = env.litePullConsumer("asg", env.name("gasg"));
        env.start(asg);
        Collection<MessageQueue> queues = asg.fetchMessageQueues(topic);
        env.expectEq("fetchMessageQueues", QUEUES, queues.size());
        MessageQueue q0 = null;
        for (MessageQueue mq : queues) {
            if (mq.getQueueId() == 0) {
                q0 = mq;
            }
        }
        if (q0 == null) {
            throw env.fail("fetchMessageQueues", "no queue 0 in " + queues);
        }
        asg.assign(queues);
        // Read queue 0 to its end first: a pull still in flight when seek
        // is called can hand its (older) messages over after the seek (the
        // 4.9 client's race, seen under load), whereas the pull held at the
        // queue's end brings nothing.
        Set<Long> before = new HashSet<>();
        long warmDeadline = System.currentTimeMillis() + Env.CONSUME_TIMEOUT_MS;
        while (before.size() < perQueue && System.currentTimeMillis() < warmDeadline) {
            for (MessageExt m : asg.poll(500)) {
                if (m.getQueueId() == 0) {
                    before.add(m.getQueueOffset());
                }
            }
        }
        env.expectEq("assign reads queue 0 from its start", (long) perQueue, (long) before.size());
        long k = 3;
        asg.seek(q0, k);
        List<Long> q0Offsets = new ArrayList<>();
        long deadline = System.currentTimeMillis() + Env.CONSUME_TIMEOUT_MS;
        while (q0Offsets.size() < perQueue - k && System.currentTimeMillis() < deadline) {
            for (MessageExt m : asg.poll(500)) {
                if (m.getQueueId() == 0) {
                    q0Offsets.add(m.getQueueOffset());
                }
            }
        }
        List<Long> want = new ArrayList<>();
        for (long o = k; o < perQueue; o++) {
            want.add(o);
        }
        env.expectEq("assign + seek(queue 0, " + k + ") reads offsets", want, q0Offsets);
    }

    /** Two members of one BROADCASTING group each get every message. */
    static void broadcast(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), QUEUES);
        Received r1 = new Received();
        Received r2 = new Received();
        // Broadcasting members keep offsets in local files keyed by client id
        // and group: a group new to every run never reads an old run's file.
        String group = env.name("g" + Long.toString(System.currentTimeMillis(), 36));
        for (Object[] member : new Object[][] {{"c1", r1}, {"c2", r2}}) {
            DefaultMQPushConsumer c = env.pushConsumer((String) member[0], group);
            Compat.broadcasting(c);
            c.subscribe(topic, "*");
            c.registerMessageListener(collect((Received) member[1], (String) member[0]));
            env.start(c);
        }
        DefaultMQProducer p = env.producer("p");
        List<String> keys = sendPlain(env, p, topic, "bc-", 20);
        env.expectExactly("member c1 gets all", r1, keys, Env.CONSUME_TIMEOUT_MS);
        env.expectExactly("member c2 gets all", r2, keys, Env.CONSUME_TIMEOUT_MS);
    }

    /**
     * Phase 1: N messages consumed by a group that then shuts down cleanly
     * (persisting its offsets). Phase 2, after a broker restart on the same
     * store: M more, and the same group gets exactly the M new ones.
     */
    static void resume(Env env) throws Exception {
        String topic = env.name("t");
        int n = 20;
        int m = 10;
        if (env.phase == 1) {
            env.createTopic(topic, QUEUES);
        } else {
            env.waitRoute(topic, QUEUES);
        }
        DefaultMQProducer p = env.producer("p" + env.phase);
        List<String> keys = sendPlain(env, p, topic, "phase" + env.phase + "-", env.phase == 1 ? n : m);
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c" + env.phase, env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(collect(rec, "c" + env.phase));
        env.start(c);
        env.expectExactly("phase " + env.phase + " consumes only its own messages", rec, keys,
            Env.CONSUME_TIMEOUT_MS);
        // Shutdown persists the consumed offsets (UPDATE_CONSUMER_OFFSET).
        c.shutdown();
        env.pass("consumer shutdown", "offsets persisted by the client");
    }

    static List<String> sendPlain(Env env, DefaultMQProducer p, String topic, String keyPrefix, int count)
        throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String key = keyPrefix + i;
            SendResult r = p.send(Env.message(topic, "T", key));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("send", "expected SEND_OK for " + key + ", saw " + r);
            }
            keys.add(key);
        }
        env.pass("send", count + " SEND_OK");
        return keys;
    }

    static MessageListenerConcurrently collect(Received rec, String by) {
        return (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                rec.add(m, by);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    /** Polls until {@code rec} holds {@code n} messages or {@code timeoutMs} passed. */
    static boolean pollInto(DefaultLitePullConsumer c, Received rec, String by, int n, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (rec.size() < n) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            for (MessageExt m : c.poll(Math.min(left, 500))) {
                rec.add(m, by);
            }
        }
        return true;
    }
}
