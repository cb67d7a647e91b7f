package rmqcheck;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;

/**
 * A consumer rides out its master's absence on the slave: messages sent to a
 * SYNC_MASTER are consumed from the slave while the master is stopped (the
 * route lists only the slave), the offsets are committed there, and once the
 * master is back the same consumer goes on with what is sent to it, nothing
 * delivered twice (its offsets did not move back) and nothing lost.
 *
 * <p>The test stops and restarts the master between stages: the scenario
 * writes {@code ready-<stage>} into its working folder and waits for the
 * test's {@code go-<stage>}.
 */
final class FailoverScenario {
    private FailoverScenario() {}

    static final int QUEUES = 2;
    static final int BEFORE = 20;
    static final int AFTER = 20;
    /** Longest the scenario waits for the test to stop or restart the master. */
    static final long STAGE_TIMEOUT_MS = 60_000;

    static void run(Env env) throws Exception {
        String topic = env.createTopic(env.name("t"), QUEUES);
        DefaultMQProducer p = env.producer("p");
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < BEFORE; i++) {
            String key = "before-" + i;
            SendResult r = p.send(Env.message(topic, "T", key));
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("send to the master", "expected SEND_OK for " + key + ", saw " + r);
            }
            keys.add(key);
        }
        env.pass("send to the master", BEFORE + " SEND_OK (the slave holds each)");

        stage(env, "master-down");
        env.waitFor("a route naming only the slave", Env.ROUTE_TIMEOUT_MS,
            () -> addrs(env, topic).containsKey(MixAll.MASTER_ID) || addrs(env, topic).isEmpty() ? null : Boolean.TRUE);
        env.pass("route without the master", String.valueOf(addrs(env, topic)));

        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.setPersistConsumerOffsetInterval(1_000);
        c.subscribe(topic, "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        env.expectExactly("consumed from the slave", rec, keys, Env.CONSUME_TIMEOUT_MS);

        stage(env, "master-back");
        env.waitFor("a route naming the master again", Env.ROUTE_TIMEOUT_MS,
            () -> addrs(env, topic).containsKey(MixAll.MASTER_ID) ? Boolean.TRUE : null);
        for (int i = 0; i < AFTER; i++) {
            String key = "after-" + i;
            SendResult r = sendOnceRouted(p, Env.message(topic, "T", key), Env.ROUTE_TIMEOUT_MS);
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                throw env.fail("send to the returned master", "expected SEND_OK for " + key + ", saw " + r);
            }
            keys.add(key);
        }
        env.pass("send to the returned master", AFTER + " SEND_OK");
        env.expectExactly("consumed on across the return", rec, keys, Env.CONSUME_TIMEOUT_MS);
    }

    /** Sends {@code m} once it can be sent: a send the client refuses for want
     *  of a route (its own route may lack the master for a second) is tried
     *  again; a send the broker answered is never repeated. */
    static SendResult sendOnceRouted(DefaultMQProducer p, Message m, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            try {
                return p.send(m);
            } catch (MQClientException e) {
                if (System.currentTimeMillis() >= deadline) {
                    throw e;
                }
                Thread.sleep(Env.PROBE_INTERVAL_MS);
            }
        }
    }

    /** The broker addresses the NameServer routes {@code topic} to, by broker id. */
    static Map<Long, String> addrs(Env env, String topic) throws Exception {
        TopicRouteData route = env.admin.examineTopicRouteInfo(topic);
        for (BrokerData bd : route.getBrokerDatas()) {
            if (bd.getBrokerName().equals(env.brokerName)) {
                return bd.getBrokerAddrs();
            }
        }
        return Map.of();
    }

    /** Tells the test this run reached {@code stage} and waits for its answer. */
    static void stage(Env env, String stage) throws Exception {
        Path dir = Paths.get("").toAbsolutePath();
        Files.writeString(dir.resolve("ready-" + stage), "");
        env.waitFor("the test's go for " + stage, STAGE_TIMEOUT_MS,
            () -> Files.exists(dir.resolve("go-" + stage)) ? Boolean.TRUE : null);
        env.pass("stage " + stage, "the test went on");
    }
}
