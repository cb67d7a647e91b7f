package rmqcheck;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.constant.PermName;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * What every scenario shares: the arguments, an admin client, the broker found
 * through the NameServer, the clients to shut down, and the checks.
 */
final class Env {
    /** Longest wait for the broker to show in the NameServer's cluster info. */
    static final long CLUSTER_TIMEOUT_MS = 15_000;
    /** Longest wait for a created topic's route to show in the NameServer. */
    static final long ROUTE_TIMEOUT_MS = 15_000;
    /** Longest wait for messages a consumer should get (sent before or just now). */
    static final long CONSUME_TIMEOUT_MS = 20_000;
    /** How long a consumer keeps listening after the last expected message, so
     *  that duplicates and messages that must not come have a chance to show. */
    static final long SETTLE_MS = 1_500;
    /** How often a {@link #waitFor} probe is repeated. */
    static final long PROBE_INTERVAL_MS = 100;
    /** Send timeout of every producer. */
    static final int SEND_TIMEOUT_MS = 10_000;

    final String namesrv;
    final String scenario;
    final String prefix;
    final int phase;
    final Map<String, String> args;
    final DefaultMQAdminExt admin;
    final String brokerName;
    final String brokerAddr;
    private final Deque<Runnable> closers = new ArrayDeque<>();

    Env(Map<String, String> args) throws Exception {
        this.args = args;
        this.namesrv = args.get("namesrv");
        this.scenario = args.get("scenario");
        this.prefix = args.getOrDefault("topic-prefix", "Java");
        this.phase = Integer.parseInt(args.getOrDefault("phase", "1"));
        admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName(name("admin"));
        admin.setAdminExtGroup(name("admin"));
        admin.start();
        closers.push(admin::shutdown);
        String[] master = waitFor("a broker in the NameServer's cluster info", CLUSTER_TIMEOUT_MS,
            () -> Compat.firstMaster(admin));
        brokerName = master[0];
        brokerAddr = master[1];
        if (brokerAddr == null) {
            throw new CheckFailed("cluster info names no master (id 0) for " + brokerName + ": " + master[2]);
        }
        pass("cluster", brokerName + " at " + brokerAddr);
    }

    /** A name unique to this run's prefix and scenario: topic, group or instance. */
    String name(String role) {
        return prefix + "_" + scenario + "_" + role;
    }

    String arg(String key, String dflt) {
        return args.getOrDefault(key, dflt);
    }

    // ---- topics ----------------------------------------------------------

    /** Creates a topic with {@code queues} read and write queues on the broker
     *  and waits until the NameServer routes it. */
    String createTopic(String topic, int queues) throws Exception {
        TopicConfig tc = new TopicConfig(topic, queues, queues, PermName.PERM_READ | PermName.PERM_WRITE);
        admin.createAndUpdateTopicConfig(brokerAddr, tc);
        waitRoute(topic, queues);
        return topic;
    }

    /** Waits until the NameServer's route for {@code topic} has {@code queues} queues. */
    void waitRoute(String topic, int queues) {
        waitFor("route of " + topic + " with " + queues + " queues", ROUTE_TIMEOUT_MS,
            () -> Compat.routed(admin, topic, queues) ? Boolean.TRUE : null);
        pass("route " + topic, queues + " queues");
    }

    // ---- clients ---------------------------------------------------------

    DefaultMQProducer producer(String role) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(name(role));
        configure(p, role);
        p.start();
        closers.push(p::shutdown);
        return p;
    }

    /** Applies the settings every client of the suite shares. */
    void configure(org.apache.rocketmq.client.ClientConfig c, String role) {
        c.setNamesrvAddr(namesrv);
        // Own client instance (and connections) per role, so two consumers of
        // one group in this JVM are two members, as in two processes.
        c.setInstanceName(name(role));
        c.setPollNameServerInterval(1_000);
        c.setHeartbeatBrokerInterval(1_000);
        if (c instanceof DefaultMQProducer p) {
            p.setSendMsgTimeout(SEND_TIMEOUT_MS);
        }
    }

    /** A push consumer of {@code group}, reading new groups from the first offset (not started). */
    DefaultMQPushConsumer pushConsumer(String role, String group) {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        configure(c, role);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        return c;
    }

    DefaultLitePullConsumer litePullConsumer(String role, String group) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        configure(c, role);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(1_000);
        return c;
    }

    /** Starts a push consumer and registers its shutdown. */
    void start(DefaultMQPushConsumer c) throws Exception {
        c.start();
        closers.push(c::shutdown);
    }

    void start(DefaultLitePullConsumer c) throws Exception {
        c.start();
        closers.push(c::shutdown);
    }

    /** Registers a shutdown for {@link #close}. */
    void onClose(Runnable r) {
        closers.push(r);
    }

    /** Shuts every client down, last started first; a second shutdown is a no-op. */
    void close() {
        while (!closers.isEmpty()) {
            try {
                closers.pop().run();
            } catch (Throwable t) {
                System.out.println("{\"shutdown\":\"failed\",\"error\":" + json(String.valueOf(t)) + "}");
            }
        }
    }

    // ---- messages --------------------------------------------------------

    static Message message(String topic, String tags, String key) {
        return new Message(topic, tags, key, bodyOf(key).getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** The body every message of the suite carries for its key. */
    static String bodyOf(String key) {
        return "body of " + key;
    }

    // ---- checks ----------------------------------------------------------

    void pass(String check, String detail) {
        System.out.println("{\"scenario\":" + json(scenario) + ",\"phase\":" + phase + ",\"check\":" + json(check)
            + ",\"ok\":true,\"detail\":" + json(detail) + "}");
    }

    CheckFailed fail(String check, String detail) {
        System.out.println("{\"scenario\":" + json(scenario) + ",\"phase\":" + phase + ",\"check\":" + json(check)
            + ",\"ok\":false,\"detail\":" + json(detail) + "}");
        return new CheckFailed(check + ": " + detail);
    }

    void expectEq(String check, Object expected, Object seen) {
        if (!java.util.Objects.equals(expected, seen)) {
            throw fail(check, "expected " + expected + ", saw " + seen);
        }
        pass(check, String.valueOf(seen));
    }

    void expectTrue(String check, boolean ok, String detail) {
        if (!ok) {
            throw fail(check, detail);
        }
        pass(check, detail);
    }

    /**
     * Waits until {@code rec} holds as many deliveries as {@code expectedKeys},
     * listens {@link #SETTLE_MS} longer, then checks the deliveries are exactly
     * the expected keys, each once, with its body.
     */
    void expectExactly(String check, Received rec, Collection<String> expectedKeys, long timeoutMs)
        throws InterruptedException {
        boolean all = rec.awaitCount(expectedKeys.size(), timeoutMs);
        Thread.sleep(SETTLE_MS);
        checkExactly(check, rec.snapshot(), expectedKeys, all ? "" : " (timed out after " + timeoutMs + " ms)");
    }

    /** Checks {@code got} holds exactly the expected keys, each once, with its body. */
    void checkExactly(String check, List<Received.Msg> got, Collection<String> expectedKeys, String note) {
        Map<String, Integer> counts = new TreeMap<>();
        List<String> badBodies = new ArrayList<>();
        for (Received.Msg m : got) {
            counts.merge(String.valueOf(m.key()), 1, Integer::sum);
            if (!bodyOf(m.key()).equals(m.body())) {
                badBodies.add(m.key() + "=" + m.body());
            }
        }
        List<String> missing = new ArrayList<>();
        for (String k : expectedKeys) {
            if (!counts.containsKey(k)) {
                missing.add(k);
            }
        }
        List<String> unexpected = new ArrayList<>();
        List<String> duplicated = new ArrayList<>();
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            if (!expectedKeys.contains(e.getKey())) {
                unexpected.add(e.getKey());
            }
            if (e.getValue() > 1) {
                duplicated.add(e.getKey() + "x" + e.getValue());
            }
        }
        if (!missing.isEmpty() || !unexpected.isEmpty() || !duplicated.isEmpty() || !badBodies.isEmpty()) {
            throw fail(check, "expected exactly " + expectedKeys.size() + " keys once each"
                + note
                + "; saw " + got.size() + " deliveries; missing " + missing + ", unexpected " + unexpected
                + ", duplicated " + duplicated + ", wrong bodies " + badBodies);
        }
        pass(check, expectedKeys.size() + " messages, each once, bodies match");
    }

    /** Polls {@code probe} until it returns non-null; fails after {@code timeoutMs}. */
    <T> T waitFor(String what, long timeoutMs, Callable<T> probe) throws CheckFailed {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Object last = null;
        while (true) {
            try {
                T v = probe.call();
                if (v != null) {
                    return v;
                }
            } catch (Exception e) {
                last = e;
            }
            if (System.currentTimeMillis() >= deadline) {
                throw fail("wait", what + " did not happen within " + timeoutMs + " ms"
                    + (last == null ? "" : "; last error: " + last));
            }
            try {
                Thread.sleep(PROBE_INTERVAL_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw fail("wait", "interrupted while waiting for " + what);
            }
        }
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
