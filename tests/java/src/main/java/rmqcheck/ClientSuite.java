package rmqcheck;

import java.io.File;
import java.util.HashMap;
import java.util.Map;

/**
 * Runs one scenario of the stock RocketMQ 4.9.8 Java client against a broker.
 *
 * <pre>
 * java -cp target/classes:target/dependency/* rmqcheck.ClientSuite \
 *     --namesrv 127.0.0.1:9876 --scenario send [--phase 1] [--topic-prefix Java]
 *     [--delay-ms 5000] [--timeout-ms 60000]
 * </pre>
 *
 * Prints one JSON line per check and {@code PASS <scenario>} at the end, exit
 * 0; on a failed check {@code FAIL <scenario>: <what was expected vs seen>},
 * exit 1; on an unexpected exception exit 2; past {@code --timeout-ms} the
 * watchdog prints the threads and halts with exit 3. Client threads can linger
 * after shutdown, so the JVM always ends through {@link System#exit}.
 */
public final class ClientSuite {
    private ClientSuite() {}

    /** What a scenario runs. */
    interface Scenario {
        void run(Env env) throws Exception;
    }

    static final Map<String, Scenario> SCENARIOS = new HashMap<>();

    static {
        SCENARIOS.put("send", BasicScenarios::send);
        SCENARIOS.put("litepull", BasicScenarios::litePull);
        SCENARIOS.put("broadcast", BasicScenarios::broadcast);
        SCENARIOS.put("resume", BasicScenarios::resume);
        SCENARIOS.put("orderly", OrderlyScenario::run);
        SCENARIOS.put("tags", FilterScenarios::tags);
        SCENARIOS.put("sql92", FilterScenarios::sql92);
        SCENARIOS.put("delay", TimedScenarios::delay);
        SCENARIOS.put("dlq", TimedScenarios::dlq);
        SCENARIOS.put("transaction", TransactionScenario::run);
        SCENARIOS.put("request", RequestReplyScenario::run);
        SCENARIOS.put("consume", ConsumeScenario::run);
        SCENARIOS.put("lmq", LmqScenario::run);
        SCENARIOS.put("lmqpush", LmqPushScenario::run);
        SCENARIOS.put("killmaster", KillMasterScenario::run);
        SCENARIOS.put("killloop", FailoverLoopScenario::run);
        Compat.addScenarios(SCENARIOS);
    }

    public static void main(String[] argv) {
        Map<String, String> args;
        try {
            args = parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("usage: --namesrv HOST:PORT --scenario NAME [--phase N] [--topic-prefix P]"
                + " [--delay-ms MS] [--timeout-ms MS]; " + e.getMessage()
                + "; scenarios: " + SCENARIOS.keySet());
            System.exit(64);
            return;
        }
        // Read by client classes in static initialisers: set before any loads.
        // Rebalance every second (default 20 s) so queues of a topic whose
        // route appears late (the group's retry topic) are pulled soon.
        defaultProperty("rocketmq.client.rebalance.waitInterval", "1000");
        File tmp = new File(System.getProperty("java.io.tmpdir"));
        defaultProperty("rocketmq.client.logRoot", new File(tmp, "rmqcheck-logs").getPath());
        defaultProperty("rocketmq.client.logLevel", "INFO");
        // Broadcasting consumers keep offsets in ${user.home}/.rocketmq_offsets
        // (the Rust runner points user.home at the test's temp folder).

        String scenarioName = args.get("scenario");
        Scenario scenario = SCENARIOS.get(scenarioName);
        if (scenario == null) {
            System.err.println("unknown scenario " + scenarioName + "; scenarios: " + SCENARIOS.keySet());
            System.exit(64);
            return;
        }
        long timeoutMs = Long.parseLong(args.getOrDefault("timeout-ms", "60000"));
        startWatchdog(scenarioName, timeoutMs);

        long started = System.nanoTime();
        int code;
        Env env = null;
        try {
            env = new Env(args);
            scenario.run(env);
            code = 0;
        } catch (CheckFailed e) {
            System.out.println("FAIL " + scenarioName + ": " + e.getMessage());
            code = 1;
        } catch (Throwable t) {
            System.out.println("FAIL " + scenarioName + ": unexpected " + t);
            t.printStackTrace(System.out);
            code = 2;
        }
        if (env != null) {
            env.close();
        }
        if (code == 0) {
            System.out.printf("PASS %s%s (%.1f s)%n", scenarioName,
                args.containsKey("phase") ? " phase " + args.get("phase") : "",
                (System.nanoTime() - started) / 1e9);
        }
        System.out.flush();
        System.exit(code);
    }

    private static void defaultProperty(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    /** Halts the JVM once the scenario's own deadline has passed. */
    private static void startWatchdog(String scenario, long timeoutMs) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(timeoutMs);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("FAIL " + scenario + ": timed out after " + timeoutMs + " ms; threads:");
            for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                System.out.println("  " + e.getKey().getName());
                StackTraceElement[] st = e.getValue();
                for (int i = 0; i < Math.min(st.length, 8); i++) {
                    System.out.println("    at " + st[i]);
                }
            }
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "rmqcheck-watchdog");
        t.setDaemon(true);
        t.start();
    }

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("bad argument " + argv[i]);
            }
            m.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String required : new String[] {"namesrv", "scenario"}) {
            if (!m.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is required");
            }
        }
        return m;
    }
}
