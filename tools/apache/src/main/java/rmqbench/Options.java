package rmqbench;

import java.util.HashMap;
import java.util.Map;

/** The load program's command line: {@code --key value} pairs, defaults below. */
final class Options {
    /** NameServer address (host:port), where the client finds the topic's route. */
    final String namesrv;
    /** Broker address to create the topic on; null: the topic must exist. */
    final String broker;
    final String topic;
    /** Read and write queues of the topic when it is created. */
    final int queues;
    /** Sending threads, each one synchronous send at a time. */
    final int threads;
    /** Producer instances the threads share round-robin (one connection each). */
    final int instances;
    /** Body size, bytes. */
    final int size;
    /** Seconds of load before the measured window (not counted). */
    final double warmupSeconds;
    /** Length of the measured window, seconds (0: warm-up only). */
    final double durationSeconds;
    /** Push consumers (one group) counting what they receive; 0: none. */
    final int consumers;
    /** Timeout of one send, ms (the client's default). */
    final int sendTimeoutMs;
    /** Every --key value given (defaults included), for a load's own keys. */
    private final Map<String, String> given;
    private final String usage;

    private Options(Map<String, String> m, String usage) {
        given = m;
        this.usage = usage;
        namesrv = m.getOrDefault("namesrv", "127.0.0.1:9876");
        broker = m.get("broker");
        topic = m.getOrDefault("topic", "JavaBench");
        queues = Integer.parseInt(m.getOrDefault("queues", "8"));
        threads = Integer.parseInt(m.getOrDefault("threads", "64"));
        instances = Integer.parseInt(m.getOrDefault("instances", "1"));
        size = Integer.parseInt(m.getOrDefault("size", "1024"));
        warmupSeconds = Double.parseDouble(m.getOrDefault("warmup", "5"));
        durationSeconds = Double.parseDouble(m.getOrDefault("duration", "20"));
        consumers = Integer.parseInt(m.getOrDefault("consumers", "0"));
        sendTimeoutMs = Integer.parseInt(m.getOrDefault("send-timeout-ms", "3000"));
    }

    static final String USAGE = String.join("\n",
        "usage: rmqbench.Load [--namesrv HOST:PORT] [--broker HOST:PORT] [--topic T]",
        "         [--queues 8] [--threads 64] [--instances 1] [--size 1024]",
        "         [--warmup 5] [--duration 20] [--consumers 0] [--send-timeout-ms 3000]",
        "N threads send synchronously to one topic for --warmup s (not counted), then",
        "for --duration s (measured). stdout: 'rmqbench window-start', 'rmqbench",
        "window-end' at the edges of the measured window, then one JSON line.",
        "--broker: create the topic there first (UPDATE_AND_CREATE_TOPIC).");

    static Options parse(String[] args) {
        return parse(args, USAGE, Map.of());
    }

    /**
     * Parses {@code args} over {@code defaults} (a load's own defaults for
     * the keys above or its own keys); errors and --help carry {@code usage}.
     */
    static Options parse(String[] args, String usage, Map<String, String> defaults) {
        Map<String, String> m = new HashMap<>(defaults);
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                throw new IllegalArgumentException(usage);
            }
            if (!a.startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --key value, got " + a + "\n" + usage);
            }
            m.put(a.substring(2), args[++i]);
        }
        Options o;
        try {
            o = new Options(m, usage);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a number: " + e.getMessage() + "\n" + usage, e);
        }
        if (o.threads < 1 || o.instances < 1 || o.size < 1 || o.queues < 1
                || o.warmupSeconds < 0 || o.durationSeconds < 0 || o.consumers < 0) {
            throw new IllegalArgumentException("counts must be positive, times not negative\n" + usage);
        }
        return o;
    }

    /** A load's own whole-number option: at least {@code min}, {@code def} when not given. */
    long count(String key, long def, long min) {
        String v = given.get(key);
        long n;
        try {
            n = v == null ? def : Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " " + v + ": not a whole number\n" + usage, e);
        }
        if (n < min) {
            throw new IllegalArgumentException("--" + key + " " + n + ": must be at least " + min + "\n" + usage);
        }
        return n;
    }

    /** A load's own text option, {@code def} when not given. */
    String text(String key, String def) {
        return given.getOrDefault(key, def);
    }
}
