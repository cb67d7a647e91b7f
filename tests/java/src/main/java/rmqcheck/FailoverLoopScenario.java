package rmqcheck;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * Masters killed again and again under sync sends (automatic failover): a
 * producer sends without pause while the test (or a script) SIGKILLs the
 * master of the one broker set, lets the controller elect another, restarts
 * the dead one as a slave, and does it again. The scenario and its driver
 * talk through files in the working directory:
 *
 * <ul>
 *   <li>{@code acked}: written here every 100 ms, the number of SEND_OK
 *       answers so far (the driver waits for it to grow between kills);</li>
 *   <li>{@code kills}: appended by the driver, one wall-clock ms per kill;</li>
 *   <li>{@code stop-sending}: written by the driver after the last round.</li>
 * </ul>
 *
 * <p>Then: no two acknowledged messages share a queue offset (a new master
 * never hands out an offset again), and a consumer of a new group reads every
 * acknowledged message, with its body, at the queue offset its send was
 * answered with, within {@code read-within-ms}. Printed per kill: the send
 * outage, the longest pause between two SEND_OKs from the last one before
 * the kill to the last one before the next kill (a send answered by the dying master just after
 * the kill does not end it), and the route time, from the kill until the
 * NameServer's route names another master (polled every 100 ms; the send
 * outage adds the client's wait for its next route poll). Messages stored but not
 * acknowledged may be read too (and a retried send twice): counted, not
 * failed.
 */
final class FailoverLoopScenario {
    private FailoverLoopScenario() {}

    static final int QUEUES = 2;
    /** Longest the scenario waits for the driver's last round. */
    static final long ROUNDS_TIMEOUT_MS = 1_800_000;
    /** Longest the sender may take to stop once told. */
    static final long SENDER_STOP_MS = 30_000;
    /** How often {@code acked} is written. */
    static final long PROGRESS_MS = 100;
    /** How often the route is read. */
    static final long ROUTE_POLL_MS = 100;

    /** Where a send was answered to be stored. */
    record Place(String broker, int queueId, long offset) {}

    static void run(Env env) throws Exception {
        long readWithinMs = Long.parseLong(env.arg("read-within-ms", "60000"));
        long pollMs = Long.parseLong(env.arg("poll-ms", "1000"));
        String topic = env.createTopic(env.name("t"), QUEUES);
        DefaultMQProducer p = new DefaultMQProducer(env.name("p"));
        env.configure(p, "p");
        p.setPollNameServerInterval((int) pollMs);
        p.start();
        env.onClose(p::shutdown);

        Map<String, Place> acked = Collections.synchronizedMap(new HashMap<>());
        List<Long> ackTimes = Collections.synchronizedList(new ArrayList<>());
        SyncSender sender = new SyncSender(p, topic, "failover-sender", (key, r) -> {
            acked.put(key, new Place(r.getMessageQueue().getBrokerName(),
                r.getMessageQueue().getQueueId(), r.getQueueOffset()));
            ackTimes.add(System.currentTimeMillis());
        });

        RouteWatch routes = new RouteWatch(env, topic);
        Path dir = Paths.get("").toAbsolutePath();
        env.waitFor("the driver's stop-sending", ROUNDS_TIMEOUT_MS, () -> {
            Path tmp = dir.resolve("acked.tmp");
            Files.writeString(tmp, String.valueOf(acked.size()));
            Files.move(tmp, dir.resolve("acked"), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
            if (!Files.exists(dir.resolve("stop-sending"))) {
                Thread.sleep(PROGRESS_MS);
                return null;
            }
            return Boolean.TRUE;
        });
        routes.stop();
        if (!sender.stop(SENDER_STOP_MS)) {
            throw env.fail("sender stops", "still sending " + SENDER_STOP_MS + " ms after stop-sending");
        }
        long stoppedAt = System.currentTimeMillis();
        Map<String, Place> expected;
        synchronized (acked) {
            expected = new HashMap<>(acked);
        }
        env.pass("sends", expected.size() + " SEND_OK, " + sender.refused + " refused, " + sender.failures.get()
            + " failed");
        reportOutages(env, readKills(dir), ackTimes, routes.changes());

        Map<Place, String> byPlace = new HashMap<>();
        for (Map.Entry<String, Place> e : expected.entrySet()) {
            String other = byPlace.put(e.getValue(), e.getKey());
            if (other != null) {
                throw env.fail("offsets never reused", e.getKey() + " and " + other
                    + " were both acknowledged at " + e.getValue());
            }
        }
        env.pass("offsets never reused", expected.size() + " acknowledged sends, " + byPlace.size()
            + " distinct queue offsets");

        Received rec = new Received();
        DefaultMQPushConsumer c = env.pushConsumer("c", env.name("g"));
        c.subscribe(topic, "*");
        c.registerMessageListener(BasicScenarios.collect(rec, "c"));
        env.start(c);
        long deadline = stoppedAt + readWithinMs;
        List<String> missing = new ArrayList<>();
        while (true) {
            missing = missingAtTheirOffsets(env, rec, expected);
            if (missing.isEmpty() || System.currentTimeMillis() >= deadline) {
                break;
            }
            Thread.sleep(Env.PROBE_INTERVAL_MS);
        }
        if (!missing.isEmpty()) {
            Collections.sort(missing);
            throw env.fail("read after the kills", missing.size() + " of " + expected.size()
                + " acknowledged messages not read at their offsets within " + readWithinMs + " ms: "
                + missing.subList(0, Math.min(20, missing.size())));
        }
        Set<String> unacked = new HashSet<>();
        for (Received.Msg m : rec.snapshot()) {
            unacked.add(m.key());
        }
        unacked.removeAll(expected.keySet());
        env.pass("read after the kills", expected.size() + " acknowledged messages read at their offsets ("
            + unacked.size() + " stored but unacknowledged read too, " + rec.size() + " deliveries)");
    }

    /**
     * Acknowledged keys not (yet) delivered at the queue offset their send was
     * answered with (the topic lives on one broker set, so queue id and offset
     * name the place).
     */
    static List<String> missingAtTheirOffsets(Env env, Received rec, Map<String, Place> expected) {
        Map<String, Set<String>> seen = new HashMap<>();
        for (Received.Msg m : rec.snapshot()) {
            if (!Env.bodyOf(m.key()).equals(m.body())) {
                throw env.fail("bodies", "wrong body for " + m.key() + ": " + m.body());
            }
            seen.computeIfAbsent(m.key(), k -> new HashSet<>()).add(m.queueId() + ":" + m.queueOffset());
        }
        List<String> missing = new ArrayList<>();
        for (Map.Entry<String, Place> e : expected.entrySet()) {
            String place = e.getValue().queueId() + ":" + e.getValue().offset();
            Set<String> at = seen.get(e.getKey());
            if (at == null || !at.contains(place)) {
                missing.add(e.getKey() + "@" + place);
            }
        }
        return missing;
    }

    static List<Long> readKills(Path dir) throws Exception {
        Path kills = dir.resolve("kills");
        List<Long> out = new ArrayList<>();
        if (Files.exists(kills)) {
            for (String line : Files.readAllLines(kills)) {
                if (!line.isBlank()) {
                    out.add(Long.parseLong(line.trim()));
                }
            }
        }
        return out;
    }

    /**
     * Prints each kill's send outage (the longest pause between consecutive
     * SEND_OKs from the last one before the kill to the last one before the
     * next kill) and
     * route time (kill to the first route naming another master), and their
     * summary.
     */
    static void reportOutages(Env env, List<Long> kills, List<Long> ackTimes, List<RouteWatch.Change> routes) {
        List<Long> acks;
        synchronized (ackTimes) {
            acks = new ArrayList<>(ackTimes);
        }
        Collections.sort(acks);
        List<Long> outages = new ArrayList<>();
        List<Long> routeTimes = new ArrayList<>();
        for (int i = 0; i < kills.size(); i++) {
            long kill = kills.get(i);
            long end = i + 1 < kills.size() ? kills.get(i + 1) : Long.MAX_VALUE;
            int at = Collections.binarySearch(acks, kill);
            int from = Math.max(0, (at >= 0 ? at : -at - 1) - 1);
            if (from + 1 >= acks.size() || acks.get(acks.size() - 1) <= kill) {
                throw env.fail("sends resume", "no SEND_OK after kill " + (i + 1));
            }
            long outage = 0;
            // Gaps ending before the next kill: one spanning it is that kill's.
            for (int j = from; j + 1 < acks.size() && acks.get(j + 1) < end; j++) {
                outage = Math.max(outage, acks.get(j + 1) - acks.get(j));
            }
            outages.add(outage);
            String before = RouteWatch.masterAt(routes, kill);
            long route = -1;
            for (RouteWatch.Change c : routes) {
                if (c.atMs() > kill && c.atMs() < end && c.master() != null && !c.master().equals(before)) {
                    route = c.atMs() - kill;
                    break;
                }
            }
            if (route >= 0) {
                routeTimes.add(route);
            }
            System.out.println("FAILOVER kill=" + (i + 1) + " outage_ms=" + outage + " route_ms=" + route);
        }
        if (outages.isEmpty()) {
            return;
        }
        String summary = "kills=" + outages.size() + " " + stats("", outages) + " " + stats("route_", routeTimes);
        System.out.println("FAILOVER " + summary);
        env.pass("sends resume after every kill", summary);
    }

    /** {@code <p>mean_ms=.. <p>p50_ms=.. <p>max_ms=..} of {@code values}. */
    static String stats(String prefix, List<Long> values) {
        if (values.isEmpty()) {
            return prefix + "none";
        }
        List<Long> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        long sum = 0;
        for (long v : sorted) {
            sum += v;
        }
        return prefix + "mean_ms=" + (sum / sorted.size()) + " " + prefix + "p50_ms=" + sorted.get(sorted.size() / 2)
            + " " + prefix + "max_ms=" + sorted.get(sorted.size() - 1);
    }
}
