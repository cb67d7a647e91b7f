package rmqcheck;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * Nothing a SYNC_MASTER acknowledged is lost when it is killed: a producer
 * sends without pause; once it has {@code acks} SEND_OK answers the scenario
 * writes {@code ready-kill} and the test SIGKILLs the master, then writes
 * {@code go-kill} holding the kill's wall-clock time in ms. A consumer of a
 * new group then reads the topic, which only the slave serves now, and
 * every acknowledged key must arrive, with its body, within
 * {@code read-within-ms} (30 s) of the kill.
 *
 * <p>Messages stored but not acknowledged (in flight at the kill, or
 * answered FLUSH_SLAVE_TIMEOUT) may arrive too, and a send the client
 * retried may arrive twice: both are counted, neither fails the check.
 */
final class KillMasterScenario {
    private KillMasterScenario() {}

    static final int QUEUES = 2;
    /** Longest the scenario waits for the test's kill. */
    static final long KILL_TIMEOUT_MS = 90_000;
    /** Longest the sender may take to notice the kill. */
    static final long SENDER_STOP_MS = 30_000;

    static void run(Env env) throws Exception {
        int acksBeforeKill = Integer.parseInt(env.arg("acks", "200"));
        long readWithinMs = Long.parseLong(env.arg("read-within-ms", "30000"));
        String topic = env.createTopic(env.name("t"), QUEUES);
        DefaultMQProducer p = env.producer("p");

        Set<String> acked = Collections.synchronizedSet(new HashSet<>());
        SyncSender sender = new SyncSender(p, topic, "killmaster-sender", (key, r) -> acked.add(key));

        env.waitFor(acksBeforeKill + " acknowledged sends", KILL_TIMEOUT_MS,
            () -> acked.size() >= acksBeforeKill ? Boolean.TRUE : null);
        Path dir = Paths.get("").toAbsolutePath();
        Files.writeString(dir.resolve("ready-kill"), "");
        String killedAt = env.waitFor("the test's kill of the master", KILL_TIMEOUT_MS, () -> {
            Path go = dir.resolve("go-kill");
            if (!Files.exists(go)) {
                return null;
            }
            String s = Files.readString(go).trim();
            return s.isEmpty() ? null : s;
        });
        long killMs = Long.parseLong(killedAt);
        long deadline = killMs + readWithinMs;

        // A new group reads what the slave serves, while the sender learns
        // of the kill.
        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        if (!sender.stop(SENDER_STOP_MS)) {
            throw env.fail("sender stops", "still sending " + SENDER_STOP_MS + " ms after the kill");
        }
        List<String> expected;
        synchronized (acked) {
            expected = new ArrayList<>(acked);
        }
        env.pass("sends", expected.size() + " SEND_OK, " + sender.refused + " refused, " + sender.failures.get()
            + " failed (the master gone)");

        long lastAt = -1;
        List<String> missing = new ArrayList<>();
        while (true) {
            Set<String> got = new HashSet<>();
            List<String> badBodies = new ArrayList<>();
            for (Received.Msg m : rec.snapshot()) {
                got.add(m.key());
                if (!Env.bodyOf(m.key()).equals(m.body())) {
                    badBodies.add(m.key());
                }
            }
            if (!badBodies.isEmpty()) {
                throw env.fail("bodies", "wrong bodies for " + badBodies);
            }
            missing.clear();
            for (String k : expected) {
                if (!got.contains(k)) {
                    missing.add(k);
                }
            }
            if (missing.isEmpty()) {
                for (Received.Msg m : rec.snapshot()) {
                    if (expected.contains(m.key())) {
                        lastAt = Math.max(lastAt, m.receivedAt());
                    }
                }
                break;
            }
            if (System.currentTimeMillis() >= deadline) {
                break;
            }
            Thread.sleep(Env.PROBE_INTERVAL_MS);
        }
        if (!missing.isEmpty()) {
            Collections.sort(missing);
            throw env.fail("read from the slave", missing.size() + " of " + expected.size()
                + " acknowledged messages not read within " + readWithinMs + " ms of the kill: "
                + missing.subList(0, Math.min(20, missing.size())));
        }
        Set<String> distinct = new HashSet<>();
        int deliveries = 0;
        for (Received.Msg m : rec.snapshot()) {
            distinct.add(m.key());
            deliveries++;
        }
        distinct.removeAll(expected);
        env.pass("read from the slave", expected.size() + " acknowledged messages, all read "
            + (lastAt - killMs) + " ms after the kill (" + distinct.size()
            + " stored but unacknowledged read too, " + deliveries + " deliveries)");
        System.out.println("KILLMASTER acked=" + expected.size() + " read_ms=" + (lastAt - killMs));
    }
}
