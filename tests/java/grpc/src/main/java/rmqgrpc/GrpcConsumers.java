package rmqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * What the consuming scenarios share: the client configuration for {@code
 * --endpoint}, a SimpleConsumer of {@code --group} on {@code --topic} with the
 * filter {@code --filter} (default {@code *}), a tag expression or, with
 * {@code --filter-type sql92}, an SQL92 one; and the RECV line of a received
 * message.
 */
final class GrpcConsumers {
    private GrpcConsumers() {}

    /** Long polling of one receive (the proxy clamps it to 5..20 s). */
    static final Duration AWAIT = Duration.ofSeconds(5);

    static ClientConfiguration config(Map<String, String> args) {
        return ClientConfiguration.newBuilder()
            .setEndpoints(GrpcSuite.required(args, "endpoint"))
            .enableSsl(false)
            .setRequestTimeout(GrpcSend.REQUEST_TIMEOUT)
            .build();
    }

    static FilterExpression filter(Map<String, String> args) {
        String type = args.getOrDefault("filter-type", "tag");
        FilterExpressionType t = switch (type) {
            case "tag" -> FilterExpressionType.TAG;
            case "sql92" -> FilterExpressionType.SQL92;
            default -> throw new IllegalArgumentException("--filter-type is tag or sql92, not " + type);
        };
        return new FilterExpression(args.getOrDefault("filter", "*"), t);
    }

    static SimpleConsumer simple(Map<String, String> args) throws Exception {
        String topic = GrpcSuite.required(args, "topic");
        return ClientServiceProvider.loadService().newSimpleConsumerBuilder()
            .setClientConfiguration(config(args))
            .setConsumerGroup(GrpcSuite.required(args, "group"))
            .setSubscriptionExpressions(Collections.singletonMap(topic, filter(args)))
            .setAwaitDuration(AWAIT)
            .build();
    }

    static String body(MessageView m) {
        return StandardCharsets.UTF_8.decode(m.getBody().duplicate()).toString();
    }

    /** Prints {@code RECV <tab> msgId <tab> tag <tab> keys <tab> body}. */
    static void print(MessageView m) {
        GrpcSuite.line("RECV", m.getMessageId().toString(), m.getTag().orElse(""),
            String.join(" ", m.getKeys()), body(m));
    }

    static Duration millis(Map<String, String> args, String key, long dflt) {
        return Duration.ofMillis(Long.parseLong(args.getOrDefault(key, Long.toString(dflt))));
    }
}
