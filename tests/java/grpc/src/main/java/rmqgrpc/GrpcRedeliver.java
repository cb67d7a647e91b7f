package rmqgrpc;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * Redelivery of an unacked message ({@code --topic} holds exactly one):
 * received invisible for {@code --short-ms} (default 10 s) and not acked, it
 * comes back no sooner, with delivery attempt 2; received then invisible for
 * {@code --long-ms} (default 60 s) and changed to {@code --short-ms}, it comes
 * back (attempt 3) well before {@code --long-ms}. It is acked at the end and
 * each delivery is printed as a RECV line.
 */
final class GrpcRedeliver {
    private GrpcRedeliver() {}

    /** Slack for clocks and the broker's revive scan. */
    static final long EARLY_SLACK_MS = 1_000;

    static void run(Map<String, String> args) throws Exception {
        Duration shortInvisible = GrpcConsumers.millis(args, "short-ms", 10_000);
        Duration longInvisible = GrpcConsumers.millis(args, "long-ms", 60_000);
        try (SimpleConsumer consumer = GrpcConsumers.simple(args)) {
            MessageView first = next(consumer, shortInvisible, null, 1);
            long shown = System.currentTimeMillis();
            MessageView second = next(consumer, longInvisible, first, 2);
            long waited = System.currentTimeMillis() - shown;
            if (waited + EARLY_SLACK_MS < shortInvisible.toMillis()) {
                throw new GrpcSuite.CheckFailed("came back after " + waited + " ms, invisible "
                    + shortInvisible.toMillis() + " ms");
            }
            consumer.changeInvisibleDuration(second, shortInvisible);
            long changed = System.currentTimeMillis();
            MessageView third = next(consumer, longInvisible, first, 3);
            waited = System.currentTimeMillis() - changed;
            if (waited + EARLY_SLACK_MS < shortInvisible.toMillis()
                || waited >= longInvisible.toMillis() - EARLY_SLACK_MS) {
                throw new GrpcSuite.CheckFailed("after the change it came back after " + waited
                    + " ms, changed to " + shortInvisible.toMillis() + " ms");
            }
            consumer.ack(third);
        }
    }

    /**
     * Receives until one message arrives: the one of {@code same} (when given)
     * on delivery {@code attempt}.
     */
    static MessageView next(SimpleConsumer consumer, Duration invisible, MessageView same,
        int attempt) throws Exception {
        while (true) {
            List<MessageView> got = consumer.receive(1, invisible);
            if (got.isEmpty()) {
                continue;
            }
            MessageView m = got.get(0);
            GrpcConsumers.print(m);
            if (same != null && !m.getMessageId().equals(same.getMessageId())) {
                throw new GrpcSuite.CheckFailed("expected " + same.getMessageId() + " again, got "
                    + m.getMessageId());
            }
            if (m.getDeliveryAttempt() != attempt) {
                throw new GrpcSuite.CheckFailed(m.getMessageId() + " delivery attempt "
                    + m.getDeliveryAttempt() + ", expected " + attempt);
            }
            return m;
        }
    }
}
