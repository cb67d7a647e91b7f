package rmqbench;

import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * The gRPC send load: the stock gRPC client (rocketmq-client-java 5.0.7)
 * sending to a gRPC endpoint (Apache's proxy, or this broker's own port).
 * N threads share P Producers (one gRPC channel each); each thread calls the
 * synchronous {@code send} in a loop with an S-byte NORMAL message, W seconds
 * of warm-up and then a measured window of D seconds: {@link Load}'s shape on
 * the 5.x API.
 *
 * <p>With {@code --broker} (and {@code --namesrv}) the topic is created there
 * first through the 4.9.7 remoting client, and the NameServer's route is
 * awaited: a gRPC endpoint refuses a topic its NameServer does not route.
 *
 * <p>stdout, as {@link Load}: {@code rmqbench window-start}, {@code rmqbench
 * window-end}, then one JSON object: sent, errors, msgs_per_s, p50_us,
 * p99_us, p999_us, max_us, sent_total, errors_total and first_error.
 * Retries are off (one send is one request), as in {@link Load}.
 */
public final class GrpcLoad {
    /** Gap between progress lines on stderr, ms. */
    private static final long PROGRESS_MS = 5_000;
    /** Timeout of one send, and the extra wait for a thread's last one. */
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(10);

    private GrpcLoad() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> m = new HashMap<>();
        if (args.length % 2 != 0) {
            usage("an option without a value: " + args[args.length - 1]);
        }
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                usage("not an option: " + args[i]);
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        String endpoint = m.get("endpoint");
        if (endpoint == null) {
            usage("--endpoint is required");
        }
        String topic = m.getOrDefault("topic", "GrpcBench");
        int queues = Integer.parseInt(m.getOrDefault("queues", "8"));
        int threads = Integer.parseInt(m.getOrDefault("threads", "64"));
        int producers = Integer.parseInt(m.getOrDefault("producers", "1"));
        int size = Integer.parseInt(m.getOrDefault("size", "1024"));
        double warmup = Double.parseDouble(m.getOrDefault("warmup", "5"));
        double duration = Double.parseDouble(m.getOrDefault("duration", "20"));
        if (threads < 1 || producers < 1 || queues < 1 || size < 1 || warmup < 0 || duration < 0) {
            usage("counts must be positive, times not negative");
        }
        if (m.containsKey("broker")) {
            createTopic(m.getOrDefault("namesrv", "127.0.0.1:9876"), m.get("broker"), topic, queues);
        }
        System.exit(run(endpoint, topic, threads, producers, size, warmup, duration));
    }

    private static void createTopic(String namesrv, String broker, String topic, int queues)
            throws Exception {
        DefaultMQProducer admin = new DefaultMQProducer("rmqbench_grpc_admin");
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("rmqbench-grpc-admin");
        admin.setVipChannelEnabled(false);
        admin.start();
        try {
            Topics.create(admin, broker, topic, queues);
            Topics.awaitRoute(admin, topic, queues);
        } finally {
            admin.shutdown();
        }
    }

    private static void usage(String why) {
        System.err.println(why + "\nusage: rmqbench.GrpcLoad --endpoint HOST:PORT [--topic GrpcBench]"
            + " [--queues 8] [--threads 64] [--producers 1] [--size 1024] [--warmup 5]"
            + " [--duration 20] [--namesrv HOST:PORT --broker HOST:PORT]");
        System.exit(2);
    }

    private static int run(String endpoint, String topic, int threadCount, int producerCount, int size,
            double warmup, double duration) throws Exception {
        ClientConfiguration config = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(SEND_TIMEOUT)
            .build();
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        Producer[] producers = new Producer[producerCount];
        for (int i = 0; i < producerCount; i++) {
            producers[i] = provider.newProducerBuilder()
                .setClientConfiguration(config)
                .setTopics(topic)
                .setMaxAttempts(1)
                .build();
        }
        Message message = provider.newMessageBuilder()
            .setTopic(topic)
            .setBody(body(size))
            .build();
        Window window = new Window();
        LongAdder acked = new LongAdder();
        Sender[] workers = new Sender[threadCount];
        Thread[] running = new Thread[threadCount];
        for (int i = 0; i < threadCount; i++) {
            Producer producer = producers[i % producerCount];
            // The client gives every send its own message id, so one
            // Message object serves every send (as Load's shared body).
            Sender.Send send = () -> {
                producer.send(message);
                return null;
            };
            workers[i] = new Sender(send, window, acked);
            running[i] = new Thread(workers[i], "grpc-sender-" + i);
        }
        long begin = System.nanoTime();
        for (Thread t : running) {
            t.start();
        }
        System.err.printf(Locale.ROOT, "rmqbench grpc: %d threads, %d producers, %d B, topic %s:"
            + " warm-up %.1f s%n", threadCount, producerCount, size, topic, warmup);
        waitUntil(begin + (long) (warmup * 1e9), acked, window);
        long start = System.nanoTime();
        long end = start;
        if (duration > 0 && !window.stop) {
            window.startNanos = start;
            mark("rmqbench window-start");
            waitUntil(start + (long) (duration * 1e9), acked, window);
            end = System.nanoTime();
            window.endNanos = end;
            mark("rmqbench window-end");
        }
        window.stop = true;
        for (Thread t : running) {
            t.join(SEND_TIMEOUT.toMillis() + 5_000);
        }
        for (Producer p : producers) {
            p.close();
        }
        System.out.println(report(workers, threadCount, producerCount, size, (end - start) / 1e9));
        System.out.flush();
        return 0;
    }

    private static byte[] body(int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = (byte) ('a' + i % 26);
        }
        return b;
    }

    private static void mark(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private static void waitUntil(long deadline, LongAdder acked, Window window) throws InterruptedException {
        long last = acked.sum();
        long lastAt = System.nanoTime();
        while (!window.stop) {
            long now = System.nanoTime();
            if (now >= deadline) {
                return;
            }
            TimeUnit.NANOSECONDS.sleep(Math.min(deadline - now, TimeUnit.MILLISECONDS.toNanos(PROGRESS_MS)));
            long sum = acked.sum();
            long at = System.nanoTime();
            System.err.printf(Locale.ROOT, "rmqbench grpc: %d sent, %.0f msgs/s%n",
                sum, (sum - last) / ((at - lastAt) / 1e9));
            last = sum;
            lastAt = at;
        }
    }

    private static String report(Sender[] workers, int threads, int producers, int size, double seconds) {
        Histogram all = new Histogram();
        long sent = 0;
        long errors = 0;
        long sentTotal = 0;
        long errorsTotal = 0;
        String firstError = null;
        for (Sender w : workers) {
            all.merge(w.latencyUs);
            sent += w.sent;
            errors += w.errors;
            sentTotal += w.sentTotal;
            errorsTotal += w.errorsTotal;
            if (firstError == null) {
                firstError = w.firstError;
            }
        }
        double rate = seconds > 0 ? sent / seconds : 0;
        return String.format(Locale.ROOT, "{\"threads\":%d,\"producers\":%d,\"size\":%d,\"seconds\":%.3f,"
            + "\"sent\":%d,\"errors\":%d,\"msgs_per_s\":%.1f,\"p50_us\":%d,\"p99_us\":%d,\"p999_us\":%d,"
            + "\"max_us\":%d,\"sent_total\":%d,\"errors_total\":%d,\"first_error\":%s}",
            threads, producers, size, seconds, sent, errors, rate, all.percentile(0.50),
            all.percentile(0.99), all.percentile(0.999), all.percentile(1.0), sentTotal, errorsTotal,
            firstError == null ? "null" : Load.quote(firstError));
    }
}
