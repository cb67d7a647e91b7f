package rmqgrpc;

import java.util.HashMap;
import java.util.Map;

/**
 * Runs one scenario of the stock gRPC client (through Apache's proxy) or of
 * the 4.9.8 remoting client (on the broker itself).
 *
 * <pre>
 * java -cp target/classes:target/dependency/* rmqgrpc.GrpcSuite \
 *     --scenario send --endpoint 127.0.0.1:8081 --topic T --count 5 --tag TagA --mode sync
 * java ... rmqgrpc.GrpcSuite --scenario consume4 --namesrv 127.0.0.1:9876 \
 *     --topic T --group G --count 10 [--timeout-ms 60000]
 * java ... rmqgrpc.GrpcSuite --scenario simple|redeliver|fifo|push --endpoint 127.0.0.1:8081 \
 *     --topic T --group G [--filter TagA] [--filter-type tag|sql92] [--count 10]
 * java ... rmqgrpc.GrpcSuite --scenario typed --endpoint 127.0.0.1:8081 --normal-topic N \
 *     --topic F --ready-file PATH --go-file PATH
 * java ... rmqgrpc.GrpcSuite --scenario dlq --endpoint 127.0.0.1:8081 --topic T --group G \
 *     --attempts 2 --stop-file PATH
 * java ... rmqgrpc.GrpcSuite --scenario delay --endpoint 127.0.0.1:8081 --topic T --group G \
 *     --delays-ms 3000,6000
 * java ... rmqgrpc.GrpcSuite --scenario transaction --endpoint 127.0.0.1:8081 --topic T \
 *     --group G --commit 2 --rollback 2 --check-commit 2 --check-rollback 2
 * </pre>
 *
 * Each message sent or received is one line {@code SENT|RECV <tab> msgId
 * <tab> tag <tab> keys <tab> body}; {@code PASS <scenario>} ends a run that
 * did what it was asked (exit 0). A failure prints {@code FAIL <scenario>:
 * why} and exits 1; a bad argument exits 64; past {@code --timeout-ms} a
 * watchdog exits 3. Client threads linger after shutdown, so the JVM always
 * ends through {@link System#exit}.
 */
public final class GrpcSuite {
    private GrpcSuite() {}

    interface Scenario {
        void run(Map<String, String> args) throws Exception;
    }

    static final Map<String, Scenario> SCENARIOS = new HashMap<>();

    static {
        SCENARIOS.put("send", GrpcSend::run);
        SCENARIOS.put("consume4", RemotingConsume::run);
        SCENARIOS.put("simple", GrpcSimple::run);
        SCENARIOS.put("redeliver", GrpcRedeliver::run);
        SCENARIOS.put("fifo", GrpcFifo::run);
        SCENARIOS.put("push", GrpcPush::run);
        SCENARIOS.put("delay", GrpcDelay::run);
        SCENARIOS.put("transaction", GrpcTransaction::run);
        SCENARIOS.put("typed", GrpcTyped::run);
        SCENARIOS.put("dlq", GrpcDlq::run);
    }

    public static void main(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                usage("not an option: " + argv[i]);
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        if (argv.length % 2 != 0) {
            usage("an option without a value: " + argv[argv.length - 1]);
        }
        String name = args.get("scenario");
        Scenario scenario = SCENARIOS.get(name);
        if (scenario == null) {
            usage("unknown scenario " + name + "; scenarios: " + SCENARIOS.keySet());
        }
        long timeoutMs = Long.parseLong(args.getOrDefault("timeout-ms", "60000"));
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(timeoutMs);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println("FAIL " + name + ": timed out after " + timeoutMs + " ms; threads:");
            for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                System.out.println("  " + e.getKey().getName());
                StackTraceElement[] st = e.getValue();
                for (int i = 0; i < Math.min(st.length, 10); i++) {
                    System.out.println("    at " + st[i]);
                }
            }
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        int code;
        try {
            scenario.run(args);
            System.out.println("PASS " + name);
            code = 0;
        } catch (CheckFailed e) {
            System.out.println("FAIL " + name + ": " + e.getMessage());
            code = 1;
        } catch (Throwable t) {
            System.out.println("FAIL " + name + ": " + t);
            t.printStackTrace(System.out);
            code = 2;
        }
        System.out.flush();
        System.exit(code);
    }

    static String required(Map<String, String> args, String key) {
        String v = args.get(key);
        if (v == null || v.isEmpty()) {
            usage("missing --" + key);
        }
        return v;
    }

    static void usage(String why) {
        System.err.println("usage: --scenario send|consume4|simple|redeliver|fifo|push|delay|transaction|typed|dlq ...; " + why);
        System.exit(64);
    }

    /** One message line. */
    static void line(String kind, String id, String tag, String keys, String body) {
        System.out.println(kind + "\t" + id + "\t" + tag + "\t" + keys + "\t" + body);
        System.out.flush();
    }

    /** One line {@code kind <tab> text}. */
    static void tagged(String kind, String text) {
        System.out.println(kind + "\t" + text);
        System.out.flush();
    }

    /** Longest wait for the caller's side of a {@link #handshake}. */
    static final long HANDSHAKE_TIMEOUT_MS = 30_000;

    /** Creates {@code ready}, then waits (bounded) until the caller creates {@code go}. */
    static void handshake(java.nio.file.Path ready, java.nio.file.Path go) throws Exception {
        java.nio.file.Files.writeString(ready, "ready");
        long deadline = System.currentTimeMillis() + HANDSHAKE_TIMEOUT_MS;
        while (!java.nio.file.Files.exists(go)) {
            if (System.currentTimeMillis() >= deadline) {
                throw new CheckFailed(go + " did not appear within " + HANDSHAKE_TIMEOUT_MS + " ms");
            }
            Thread.sleep(50);
        }
    }

    /** A check that did not hold. */
    static final class CheckFailed extends Exception {
        CheckFailed(String what) {
            super(what);
        }
    }
}
