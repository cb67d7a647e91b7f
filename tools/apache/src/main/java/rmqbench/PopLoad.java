package rmqbench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * The POP load: the stock gRPC client (rocketmq-client-java 5.0.7) consuming
 * through Apache's rocketmq-proxy, whatever broker is behind it. N threads
 * share C SimpleConsumers of one group; each thread receives up to B messages
 * (invisible for I seconds), acks every one of them asynchronously and waits
 * for the acks before its next receive. The topic is filled beforehand; a
 * receive that comes back empty is counted (a run that ran dry says so).
 * With {@code --broker} (and {@code --namesrv}) the group is created there
 * first, through the 4.9.7 remoting client: the proxy refuses a group its
 * broker does not know.
 *
 * <p>stdout, as {@link Load}: {@code rmqbench window-start}, {@code rmqbench
 * window-end} at the edges of the measured window (the script reads the
 * broker's CPU there), then one JSON object: acked (messages received and
 * acked inside the window), msgs_per_s, receives, empty_receives, errors,
 * receive p50/p99 (us, one receive call) and first_error.
 */
public final class PopLoad {
    /** Gap between progress lines on stderr, ms. */
    private static final long PROGRESS_MS = 5_000;
    /** Longest wait for a thread's last receive and acks after the window, ms. */
    private static final long JOIN_MS = 30_000;
    /** Long polling of one receive (the proxy clamps it to 5..20 s). */
    private static final Duration AWAIT = Duration.ofSeconds(5);

    private PopLoad() {
    }

    /** One consuming thread and what it counted inside the window. */
    private static final class Worker implements Runnable {
        final SimpleConsumer consumer;
        final int batch;
        final Duration invisible;
        final Window window;
        final LongAdder total;
        final Histogram receiveUs = new Histogram();
        long acked;
        long receives;
        long empty;
        long errors;
        String firstError;

        Worker(SimpleConsumer consumer, int batch, Duration invisible, Window window, LongAdder total) {
            this.consumer = consumer;
            this.batch = batch;
            this.invisible = invisible;
            this.window = window;
            this.total = total;
        }

        @Override
        public void run() {
            while (!window.stop) {
                long t0 = System.nanoTime();
                try {
                    List<MessageView> got = consumer.receive(batch, invisible);
                    long t1 = System.nanoTime();
                    List<CompletableFuture<?>> acks = new ArrayList<>(got.size());
                    for (MessageView m : got) {
                        acks.add(consumer.ackAsync(m));
                    }
                    long ok = 0;
                    for (CompletableFuture<?> f : acks) {
                        try {
                            f.get();
                            ok++;
                        } catch (Exception e) {
                            fail(e);
                        }
                    }
                    long t2 = System.nanoTime();
                    total.add(ok);
                    if (window.contains(t0, t2)) {
                        receives++;
                        receiveUs.record((t1 - t0) / 1_000);
                        acked += ok;
                        if (got.isEmpty()) {
                            empty++;
                        }
                    }
                } catch (Exception e) {
                    fail(e);
                }
            }
        }

        private void fail(Exception e) {
            if (window.isOpenAt(System.nanoTime())) {
                errors++;
            }
            if (firstError == null) {
                firstError = e.toString();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                usage("not an option: " + args[i]);
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        if (args.length % 2 != 0) {
            usage("an option without a value: " + args[args.length - 1]);
        }
        String endpoint = m.get("endpoint");
        if (endpoint == null) {
            usage("--endpoint is required");
        }
        String topic = m.getOrDefault("topic", "BenchTopic-0");
        String group = m.getOrDefault("group", "rmqbench_pop");
        int threads = Integer.parseInt(m.getOrDefault("threads", "16"));
        int consumers = Integer.parseInt(m.getOrDefault("consumers", "4"));
        int batch = Integer.parseInt(m.getOrDefault("batch", "32"));
        Duration invisible = Duration.ofSeconds(Long.parseLong(m.getOrDefault("invisible-s", "60")));
        double warmup = Double.parseDouble(m.getOrDefault("warmup", "5"));
        double duration = Double.parseDouble(m.getOrDefault("duration", "20"));
        if (threads < 1 || consumers < 1 || batch < 1 || warmup < 0 || duration <= 0) {
            usage("counts must be positive, times not negative");
        }
        if (m.containsKey("broker")) {
            createGroup(m.getOrDefault("namesrv", "127.0.0.1:9876"), m.get("broker"), group);
        }
        System.exit(run(endpoint, topic, group, threads, consumers, batch, invisible, warmup, duration));
    }

    private static void createGroup(String namesrv, String broker, String group) throws Exception {
        DefaultMQProducer admin = new DefaultMQProducer("rmqbench_pop_admin");
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("rmqbench-pop-admin");
        admin.setVipChannelEnabled(false);
        admin.start();
        try {
            Topics.createGroup(admin, broker, group);
        } finally {
            admin.shutdown();
        }
    }

    private static void usage(String why) {
        System.err.println(why + "\nusage: rmqbench.PopLoad --endpoint HOST:PORT [--topic BenchTopic-0]"
            + " [--group rmqbench_pop] [--threads 16] [--consumers 4] [--batch 32] [--invisible-s 60]"
            + " [--warmup 5] [--duration 20] [--namesrv HOST:PORT --broker HOST:PORT]");
        System.exit(2);
    }

    private static int run(String endpoint, String topic, String group, int threads, int consumerCount,
            int batch, Duration invisible, double warmup, double duration) throws Exception {
        ClientConfiguration config = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        List<SimpleConsumer> consumers = new ArrayList<>();
        for (int i = 0; i < consumerCount; i++) {
            consumers.add(provider.newSimpleConsumerBuilder()
                .setClientConfiguration(config)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, FilterExpression.SUB_ALL))
                .setAwaitDuration(AWAIT)
                .build());
        }
        Window window = new Window();
        LongAdder total = new LongAdder();
        Worker[] workers = new Worker[threads];
        Thread[] running = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Worker(consumers.get(i % consumerCount), batch, invisible, window, total);
            running[i] = new Thread(workers[i], "pop-" + i);
            running[i].start();
        }
        System.err.printf(Locale.ROOT, "rmqbench pop: %d threads, %d consumers, batch %d, topic %s:"
            + " warm-up %.1f s%n", threads, consumerCount, batch, topic, warmup);
        long begin = System.nanoTime();
        waitUntil(begin + (long) (warmup * 1e9), total);
        long start = System.nanoTime();
        window.startNanos = start;
        mark("rmqbench window-start");
        waitUntil(start + (long) (duration * 1e9), total);
        long end = System.nanoTime();
        window.endNanos = end;
        mark("rmqbench window-end");
        window.stop = true;
        for (Thread t : running) {
            t.join(JOIN_MS);
        }
        for (SimpleConsumer c : consumers) {
            c.close();
        }
        System.out.println(report(workers, threads, consumerCount, batch, (end - start) / 1e9));
        System.out.flush();
        return 0;
    }

    private static void mark(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void waitUntil(long deadline, LongAdder total) throws InterruptedException {
        long last = total.sum();
        long lastAt = System.nanoTime();
        while (true) {
            long now = System.nanoTime();
            if (now >= deadline) {
                return;
            }
            TimeUnit.NANOSECONDS.sleep(Math.min(deadline - now, TimeUnit.MILLISECONDS.toNanos(PROGRESS_MS)));
            long sum = total.sum();
            long at = System.nanoTime();
            System.err.printf(Locale.ROOT, "rmqbench pop: %d acked, %.0f msgs/s%n",
                sum, (sum - last) / ((at - lastAt) / 1e9));
            last = sum;
            lastAt = at;
        }
    }

    private static String report(Worker[] workers, int threads, int consumers, int batch, double seconds) {
        Histogram all = new Histogram();
        long acked = 0;
        long receives = 0;
        long empty = 0;
        long errors = 0;
        String firstError = null;
        for (Worker w : workers) {
            all.merge(w.receiveUs);
            acked += w.acked;
            receives += w.receives;
            empty += w.empty;
            errors += w.errors;
            if (firstError == null) {
                firstError = w.firstError;
            }
        }
        double rate = seconds > 0 ? acked / seconds : 0;
        return String.format(Locale.ROOT, "{\"threads\":%d,\"consumers\":%d,\"batch\":%d,\"seconds\":%.3f,"
                + "\"acked\":%d,\"msgs_per_s\":%.1f,\"receives\":%d,\"empty_receives\":%d,\"errors\":%d,"
                + "\"receive_p50_us\":%d,\"receive_p99_us\":%d,\"first_error\":%s}",
            threads, consumers, batch, seconds, acked, rate, receives, empty, errors,
            all.percentile(0.50), all.percentile(0.99), firstError == null ? "null" : Load.quote(firstError));
    }
}
