package rmqgrpc;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * SimpleConsumer receive and ack: receives (invisible for {@code
 * --invisible-ms}, default 15 s) and acks until it has {@code --count}
 * distinct messages, each on its first delivery and each once; then one more
 * receive must find nothing.
 */
final class GrpcSimple {
    private GrpcSimple() {}

    static void run(Map<String, String> args) throws Exception {
        int count = Integer.parseInt(GrpcSuite.required(args, "count"));
        Duration invisible = GrpcConsumers.millis(args, "invisible-ms", 15_000);
        Set<String> seen = new HashSet<>();
        try (SimpleConsumer consumer = GrpcConsumers.simple(args)) {
            while (seen.size() < count) {
                for (MessageView m : consumer.receive(16, invisible)) {
                    String id = m.getMessageId().toString();
                    if (!seen.add(id)) {
                        throw new GrpcSuite.CheckFailed("received twice: " + id);
                    }
                    if (m.getDeliveryAttempt() != 1) {
                        throw new GrpcSuite.CheckFailed(
                            id + " delivery attempt " + m.getDeliveryAttempt() + ", not 1");
                    }
                    GrpcConsumers.print(m);
                    consumer.ack(m);
                }
            }
            if (seen.size() != count) {
                throw new GrpcSuite.CheckFailed("received " + seen.size() + ", not " + count);
            }
            List<MessageView> extra = consumer.receive(16, invisible);
            if (!extra.isEmpty()) {
                throw new GrpcSuite.CheckFailed(extra.size() + " messages past the "
                    + count + " expected, first " + extra.get(0).getMessageId());
            }
        }
    }
}
