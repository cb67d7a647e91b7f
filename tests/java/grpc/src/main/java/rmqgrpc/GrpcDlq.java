package rmqgrpc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * Max attempts: a SimpleConsumer receives ({@code --invisible-ms}, default
 * 10 s, the least the broker allows) and never acks, printing each delivery
 * as a RECV line and {@code ATTEMPT <tab> msgId <tab> n}; it keeps receiving
 * (the broker moves a message past its group's max attempts to the DLQ when a
 * receive finds it) until {@code --stop-file} exists, which the caller creates
 * once the message is in {@code %DLQ%<group>}. Deliveries past {@code
 * --attempts} or out of attempt order fail the run.
 */
final class GrpcDlq {
    private GrpcDlq() {}

    static void run(Map<String, String> args) throws Exception {
        int attempts = Integer.parseInt(GrpcSuite.required(args, "attempts"));
        Path stop = Path.of(GrpcSuite.required(args, "stop-file"));
        Duration invisible = GrpcConsumers.millis(args, "invisible-ms", 10_000);
        int seen = 0;
        try (SimpleConsumer consumer = GrpcConsumers.simple(args)) {
            while (!Files.exists(stop)) {
                for (MessageView m : consumer.receive(16, invisible)) {
                    seen++;
                    GrpcConsumers.print(m);
                    GrpcSuite.tagged("ATTEMPT", m.getMessageId() + "\t" + m.getDeliveryAttempt());
                    if (seen > attempts) {
                        throw new GrpcSuite.CheckFailed("delivery " + seen + " of "
                            + m.getMessageId() + ", past the " + attempts + " attempts");
                    }
                    if (m.getDeliveryAttempt() != seen) {
                        throw new GrpcSuite.CheckFailed("delivery " + seen + " of "
                            + m.getMessageId() + " has attempt " + m.getDeliveryAttempt());
                    }
                }
            }
        }
        if (seen != attempts) {
            throw new GrpcSuite.CheckFailed(seen + " deliveries, not " + attempts);
        }
    }
}
