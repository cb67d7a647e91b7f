package rmqbench;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The LMQ load: a fixed number of messages, each multi-dispatched to K light
 * message queues out of L, sent by N threads with the stock client's
 * synchronous DefaultMQProducer.send to a parent topic (created first), then
 * a sample of the LMQs read back and checked exactly ({@link LmqCheck}).
 * Where each message goes and what it holds: {@link LmqPlan}.
 *
 * <p>Phases: W seconds of client warm-up (plain sends to the parent topic,
 * no LMQ property, not counted); the send window, from before the first LMQ
 * send to after the last; a wait (bounded) until the broker has dispatched
 * every acknowledged message (the parent topic's max offsets add up); the
 * sample check.
 *
 * <p>stdout, as {@link Load}: {@code rmqbench window-start} and {@code
 * rmqbench window-end} at the send window's edges, {@code rmqbench
 * dispatched} once everything is dispatched (bench-vs-apache.sh reads the
 * broker's CPU at each), then one JSON object: sent, errors, seconds,
 * msgs_per_s, p50/p99/p999/max_us, dispatch_s, sampled, exact,
 * first_mismatch, first_error and the shape. Progress goes to stderr. The
 * exit status is 0 whenever the load ran; the JSON says whether it was exact.
 */
public final class LmqLoad {
    private static final String PRODUCER_GROUP = "rmqbench_lmq_producer";
    private static final long PROGRESS_MS = 5_000;
    /** Gap between max-offset polls while waiting for dispatch, ms. */
    private static final long DISPATCH_POLL_MS = 50;

    static final String USAGE = String.join("\n",
        "usage: rmqbench.LmqLoad [--namesrv HOST:PORT] [--broker HOST:PORT] [--topic LmqParent]",
        "         [--queues 8] [--threads 16] [--size 256] [--warmup 5] [--send-timeout-ms 3000]",
        "         [--messages 100000] [--fan-out 10] [--lmqs 1000000] [--prefix bench]",
        "         [--sample 1000] [--seed 1] [--max-send-s 900] [--dispatch-timeout-s 300]",
        "Sends --messages messages to the parent topic, message i naming the LMQs",
        "%LMQ%<prefix>-<(i*fan-out+k) mod lmqs> for k < fan-out in INNER_MULTI_DISPATCH,",
        "then pulls --sample of the LMQs and checks their bodies exactly and in order.",
        "--broker: create the parent topic there first. stdout: 'rmqbench window-start',",
        "'rmqbench window-end', 'rmqbench dispatched', then one JSON line.");

    private LmqLoad() {
    }

    public static void main(String[] args) throws Exception {
        Options o;
        LmqPlan plan;
        int sample;
        long seed;
        long maxSendS;
        long dispatchTimeoutS;
        try {
            o = Options.parse(args, USAGE, Map.of("topic", "LmqParent", "threads", "16", "size", "256"));
            plan = new LmqPlan((int) o.count("messages", 100_000, 1), (int) o.count("fan-out", 10, 1),
                o.count("lmqs", 1_000_000, 1), o.text("prefix", "bench"), o.size);
            sample = (int) o.count("sample", 1_000, 0);
            seed = o.count("seed", 1, Long.MIN_VALUE);
            maxSendS = o.count("max-send-s", 900, 1);
            dispatchTimeoutS = o.count("dispatch-timeout-s", 300, 0);
            plan.sample(sample, seed);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        int code = run(o, plan, sample, seed, maxSendS, dispatchTimeoutS);
        // The client leaves non-daemon threads (timers, Netty) behind.
        System.exit(code);
    }

    private static int run(Options o, LmqPlan plan, int sample, long seed, long maxSendS, long dispatchTimeoutS)
            throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(PRODUCER_GROUP);
        producer.setNamesrvAddr(o.namesrv);
        producer.setInstanceName("rmqbench-lmq-producer");
        producer.setVipChannelEnabled(false);
        producer.setRetryTimesWhenSendFailed(0);
        producer.setSendMsgTimeout(o.sendTimeoutMs);
        producer.start();
        try {
            if (o.broker != null) {
                Topics.create(producer, o.broker, o.topic, o.queues);
            }
            Topics.awaitRoute(producer, o.topic, o.queues);
            long before = parentMaxOffsets(producer, o.topic);
            long warmAcked = warmUp(producer, o);

            LmqSends sends = new LmqSends(plan.messages);
            Window window = new Window();
            Sender[] senders = lmqSenders(producer, o, plan, sends, window);
            long start = System.nanoTime();
            window.startNanos = start;
            mark("rmqbench window-start");
            boolean complete = runAll(senders, "lmq-sender-", start + TimeUnit.SECONDS.toNanos(maxSendS),
                window, o.sendTimeoutMs);
            long end = System.nanoTime();
            window.endNanos = end;
            mark("rmqbench window-end");
            long acked = sends.acked();
            double seconds = (end - start) / 1e9;
            System.err.printf(Locale.ROOT, "rmqbench lmq: %d of %d messages acknowledged in %.2f s%s%n",
                acked, plan.messages, seconds, complete ? "" : " (stopped at --max-send-s)");

            long target = before + warmAcked + acked;
            long dispatchedAt = awaitDispatch(producer, o.topic, target,
                end + TimeUnit.SECONDS.toNanos(dispatchTimeoutS));
            Double dispatchS = null;
            if (dispatchedAt > 0) {
                mark("rmqbench dispatched");
                dispatchS = Math.max(0, dispatchedAt - end) / 1e9;
                System.err.printf(Locale.ROOT, "rmqbench lmq: dispatched %.2f s after the last send%n", dispatchS);
            } else {
                System.err.printf(Locale.ROOT, "rmqbench lmq: parent topic not dispatched to %d within %d s%n",
                    target, dispatchTimeoutS);
            }

            long checkStart = System.nanoTime();
            LmqCheck.Result checked = new LmqCheck(plan, sends, o.topic, o.namesrv)
                .run(plan.sample(sample, seed), checkStart + TimeUnit.SECONDS.toNanos(dispatchTimeoutS));
            double checkS = (System.nanoTime() - checkStart) / 1e9;
            System.err.printf(Locale.ROOT, "rmqbench lmq: %d of %d sampled LMQs exact (%.1f s)%n",
                checked.exact, checked.sampled, checkS);
            System.out.println(report(o, plan, senders, seconds, dispatchS, checked, checkS));
            System.out.flush();
            return 0;
        } finally {
            producer.shutdown();
        }
    }

    /** Plain sends to the parent topic for --warmup seconds; how many were acknowledged. */
    private static long warmUp(DefaultMQProducer producer, Options o) throws InterruptedException {
        if (o.warmupSeconds <= 0) {
            return 0;
        }
        Window window = new Window();
        LongAdder acked = new LongAdder();
        byte[] body = new byte[o.size];
        java.util.Arrays.fill(body, (byte) 'w');
        Sender[] senders = new Sender[o.threads];
        for (int t = 0; t < o.threads; t++) {
            senders[t] = new Sender(Sender.remoting(producer, o.topic, body), window, acked);
        }
        System.err.printf(Locale.ROOT, "rmqbench lmq: client warm-up %.1f s (%d threads, no LMQ)%n",
            o.warmupSeconds, o.threads);
        runAll(senders, "lmq-warmup-", System.nanoTime() + (long) (o.warmupSeconds * 1e9), window,
            o.sendTimeoutMs);
        long failed = 0;
        for (Sender s : senders) {
            failed += s.errorsTotal;
        }
        if (failed > 0) {
            System.err.printf(Locale.ROOT, "rmqbench lmq: %d warm-up sends failed%n", failed);
        }
        return acked.sum();
    }

    /** One Sender per thread, taking the next message index until none is left. */
    private static Sender[] lmqSenders(DefaultMQProducer producer, Options o, LmqPlan plan, LmqSends sends,
            Window window) {
        AtomicInteger next = new AtomicInteger();
        LongAdder acked = new LongAdder();
        Sender.Send send = () -> {
            int i = next.getAndIncrement();
            if (i >= plan.messages) {
                return Sender.EXHAUSTED;
            }
            Message m = new Message(o.topic, plan.body(i));
            m.putUserProperty(LmqPlan.DISPATCH_KEY, plan.dispatch(i));
            sends.started(i);
            boolean ok = false;
            try {
                SendResult r = producer.send(m);
                ok = r.getSendStatus() == SendStatus.SEND_OK;
                return ok ? null : "m" + i + ": send status " + r.getSendStatus();
            } finally {
                sends.ended(i, ok);
            }
        };
        Sender[] senders = new Sender[o.threads];
        for (int t = 0; t < o.threads; t++) {
            senders[t] = new Sender(send, window, acked);
        }
        return senders;
    }

    /**
     * Runs the senders until they end by themselves or {@code deadlineNanos}
     * passes (then they are told to stop); progress on stderr. True when they
     * ended by themselves.
     */
    private static boolean runAll(Sender[] senders, String name, long deadlineNanos, Window window,
            long sendTimeoutMs) throws InterruptedException {
        Thread[] threads = new Thread[senders.length];
        for (int t = 0; t < senders.length; t++) {
            threads[t] = new Thread(senders[t], name + t);
            threads[t].start();
        }
        boolean byThemselves = true;
        long lastAt = System.nanoTime();
        long last = 0;
        for (Thread t : threads) {
            while (t.isAlive()) {
                long now = System.nanoTime();
                if (now >= deadlineNanos) {
                    byThemselves = false;
                    window.stop = true;
                    break;
                }
                t.join(Math.max(1, Math.min(PROGRESS_MS, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - now))));
                long at = System.nanoTime();
                if (at - lastAt >= TimeUnit.MILLISECONDS.toNanos(PROGRESS_MS)) {
                    long sum = 0;
                    for (Sender s : senders) {
                        sum += s.sentTotal;
                    }
                    System.err.printf(Locale.ROOT, "rmqbench lmq: %d sent, %.0f msgs/s%n",
                        sum, (sum - last) / ((at - lastAt) / 1e9));
                    last = sum;
                    lastAt = at;
                }
            }
        }
        window.stop = true;
        for (Thread t : threads) {
            // A send in flight ends within its timeout.
            t.join(sendTimeoutMs + PROGRESS_MS);
        }
        return byThemselves;
    }

    /** The sum of the parent topic's max offsets (messages dispatched into it). */
    private static long parentMaxOffsets(DefaultMQProducer producer, String topic) throws Exception {
        List<MessageQueue> mqs = producer.fetchPublishMessageQueues(topic);
        long sum = 0;
        for (MessageQueue mq : mqs) {
            sum += producer.maxOffset(mq);
        }
        return sum;
    }

    /** nanoTime when the parent topic's max offsets reached {@code target}, or 0 at the deadline. */
    private static long awaitDispatch(DefaultMQProducer producer, String topic, long target, long deadlineNanos)
            throws Exception {
        while (true) {
            if (parentMaxOffsets(producer, topic) >= target) {
                return System.nanoTime();
            }
            if (System.nanoTime() >= deadlineNanos) {
                return 0;
            }
            Thread.sleep(DISPATCH_POLL_MS);
        }
    }

    private static void mark(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static String report(Options o, LmqPlan plan, Sender[] senders, double seconds, Double dispatchS,
            LmqCheck.Result checked, double checkS) {
        Histogram all = new Histogram();
        long sent = 0;
        long errors = 0;
        String firstError = null;
        for (Sender s : senders) {
            all.merge(s.latencyUs);
            sent += s.sent;
            errors += s.errors;
            if (firstError == null) {
                firstError = s.firstError;
            }
        }
        StringBuilder j = new StringBuilder(512).append('{');
        field(j, "messages", plan.messages);
        field(j, "fan_out", plan.fanOut);
        field(j, "lmqs", plan.lmqs);
        field(j, "threads", o.threads);
        field(j, "size", o.size);
        field(j, "seconds", String.format(Locale.ROOT, "%.3f", seconds));
        field(j, "sent", sent);
        field(j, "errors", errors);
        field(j, "msgs_per_s", String.format(Locale.ROOT, "%.1f", seconds > 0 ? sent / seconds : 0));
        field(j, "p50_us", all.percentile(0.50));
        field(j, "p99_us", all.percentile(0.99));
        field(j, "p999_us", all.percentile(0.999));
        field(j, "max_us", all.percentile(1.0));
        field(j, "dispatch_s", dispatchS == null ? "null" : String.format(Locale.ROOT, "%.3f", dispatchS));
        field(j, "sampled", checked.sampled);
        field(j, "exact", checked.exact);
        field(j, "check_s", String.format(Locale.ROOT, "%.3f", checkS));
        field(j, "first_mismatch", checked.firstMismatch == null ? "null" : Load.quote(checked.firstMismatch));
        j.append("\"first_error\":").append(firstError == null ? "null" : Load.quote(firstError));
        return j.append('}').toString();
    }

    private static void field(StringBuilder j, String name, Object value) {
        j.append('"').append(name).append("\":").append(value).append(',');
    }
}
