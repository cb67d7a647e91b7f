package rmqbench;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * The load program, in the spirit of Apache RocketMQ's benchmark Producer:
 * N threads each call the stock client's synchronous send in a loop with an
 * S-byte body to one topic, W seconds of warm-up (not counted) and then a
 * measured window of D seconds; optionally push consumers count what arrives.
 *
 * <p>stdout carries only machine-readable lines, so a script can act at the
 * window's edges (bench-vs-apache.sh reads the broker's CPU time there):
 * {@code rmqbench window-start}, {@code rmqbench window-end}, then one JSON
 * object with sent, errors, msgs_per_s, p50_us, p99_us, received,
 * consume_msgs_per_s and a few more. Progress goes to stderr.
 *
 * <p>Settings that differ from the client's defaults: retries off (one send is
 * one request, so latency and errors are per request, as in rmq-bench) and
 * the VIP channel off (the "fast" port listenPort-2 is Apache-only and
 * would not be a like-for-like connection).
 */
public final class Load {
    private static final String PRODUCER_GROUP = "rmqbench_producer";
    /** Gap between progress lines on stderr, ms. */
    private static final long PROGRESS_MS = 5_000;
    /** Extra wait for a sender to finish its last send after the window, ms. */
    private static final long JOIN_MARGIN_MS = 5_000;

    private Load() {
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        int code = run(o);
        // The client leaves non-daemon threads (timers, Netty) behind.
        System.exit(code);
    }

    private static int run(Options o) throws Exception {
        DefaultMQProducer[] producers = new DefaultMQProducer[o.instances];
        for (int i = 0; i < o.instances; i++) {
            DefaultMQProducer p = new DefaultMQProducer(PRODUCER_GROUP);
            p.setNamesrvAddr(o.namesrv);
            p.setInstanceName("rmqbench-producer-" + i);
            p.setVipChannelEnabled(false);
            p.setRetryTimesWhenSendFailed(0);
            p.setSendMsgTimeout(o.sendTimeoutMs);
            p.start();
            producers[i] = p;
        }
        if (o.broker != null) {
            Topics.create(producers[0], o.broker, o.topic, o.queues);
        }
        Topics.awaitRoute(producers[0], o.topic, o.queues);

        Window window = new Window();
        Counter counter = null;
        if (o.consumers > 0) {
            counter = new Counter(o, window);
            counter.start();
        }
        byte[] body = body(o.size);
        Sender[] senders = new Sender[o.threads];
        Thread[] threads = new Thread[o.threads];
        LongAdder acked = new LongAdder();
        for (int i = 0; i < o.threads; i++) {
            senders[i] = new Sender(Sender.remoting(producers[i % o.instances], o.topic, body), window, acked);
            threads[i] = new Thread(senders[i], "sender-" + i);
        }
        long begin = System.nanoTime();
        for (Thread t : threads) {
            t.start();
        }
        System.err.printf(Locale.ROOT, "rmqbench: %d threads, %d B, topic %s: warm-up %.1f s%n",
            o.threads, o.size, o.topic, o.warmupSeconds);
        waitUntil(begin + seconds(o.warmupSeconds), acked, window);
        long start = System.nanoTime();
        long end = start;
        if (o.durationSeconds > 0 && !window.stop) {
            window.startNanos = start;
            mark("rmqbench window-start");
            waitUntil(start + seconds(o.durationSeconds), acked, window);
            end = System.nanoTime();
            window.endNanos = end;
            mark("rmqbench window-end");
        }
        window.stop = true;
        for (Thread t : threads) {
            t.join(o.sendTimeoutMs + JOIN_MARGIN_MS);
        }
        long received = counter == null ? 0 : counter.received();
        long receivedTotal = counter == null ? 0 : counter.receivedTotal();
        if (counter != null) {
            counter.shutdown();
        }
        for (DefaultMQProducer p : producers) {
            p.shutdown();
        }
        System.out.println(report(o, senders, (end - start) / 1e9, received, receivedTotal));
        System.out.flush();
        return 0;
    }

    /** A body of printable bytes (compression is off below 4 KiB anyway). */
    private static byte[] body(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) ('a' + i % 26);
        }
        return b;
    }

    private static long seconds(double s) {
        return (long) (s * 1e9);
    }

    private static void mark(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Sleeps until {@code deadline} (nanoTime), printing progress to stderr. */
    private static void waitUntil(long deadline, LongAdder acked, Window window)
            throws InterruptedException {
        long last = acked.sum();
        long lastAt = System.nanoTime();
        while (!window.stop) {
            long now = System.nanoTime();
            if (now >= deadline) {
                return;
            }
            long nap = Math.min(deadline - now, TimeUnit.MILLISECONDS.toNanos(PROGRESS_MS));
            TimeUnit.NANOSECONDS.sleep(nap);
            long sum = acked.sum();
            long at = System.nanoTime();
            System.err.printf(Locale.ROOT, "rmqbench: %d sent, %.0f msgs/s%n",
                sum, (sum - last) / ((at - lastAt) / 1e9));
            last = sum;
            lastAt = at;
        }
    }

    private static String report(Options o, Sender[] senders, double seconds,
            long received, long receivedTotal) {
        Histogram all = new Histogram();
        long sent = 0;
        long errors = 0;
        long sentTotal = 0;
        long errorsTotal = 0;
        String firstError = null;
        for (Sender s : senders) {
            all.merge(s.latencyUs);
            sent += s.sent;
            errors += s.errors;
            sentTotal += s.sentTotal;
            errorsTotal += s.errorsTotal;
            if (firstError == null) {
                firstError = s.firstError;
            }
        }
        StringBuilder j = new StringBuilder(512);
        j.append('{');
        field(j, "threads", o.threads);
        field(j, "size", o.size);
        field(j, "consumers", o.consumers);
        field(j, "seconds", round(seconds, 3));
        field(j, "sent", sent);
        field(j, "errors", errors);
        field(j, "msgs_per_s", round(seconds > 0 ? sent / seconds : 0, 1));
        field(j, "p50_us", all.percentile(0.50));
        field(j, "p99_us", all.percentile(0.99));
        field(j, "p999_us", all.percentile(0.999));
        field(j, "max_us", all.percentile(1.0));
        field(j, "received", received);
        field(j, "consume_msgs_per_s", round(seconds > 0 ? received / seconds : 0, 1));
        field(j, "sent_total", sentTotal);
        field(j, "errors_total", errorsTotal);
        field(j, "received_total", receivedTotal);
        j.append("\"first_error\":").append(firstError == null ? "null" : quote(firstError));
        j.append('}');
        return j.toString();
    }

    private static double round(double v, int places) {
        double f = Math.pow(10, places);
        return Math.round(v * f) / f;
    }

    private static void field(StringBuilder j, String name, Object value) {
        j.append('"').append(name).append("\":").append(value).append(',');
    }

    /** A JSON string literal. */
    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    static {
        // Keep stdout byte-for-byte ASCII/UTF-8 whatever the locale.
        System.setOut(new java.io.PrintStream(
            new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8));
    }
}
